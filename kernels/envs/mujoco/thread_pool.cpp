#include "kernels/envs/mujoco/thread_pool.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include "kernels/core/cpus.hpp"
#include "kernels/core/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GMI_CPU_RELAX() _mm_pause()
#else
#define GMI_CPU_RELAX() std::this_thread::yield()
#endif

namespace gmi::envs::mujoco {
namespace {

using Clock = std::chrono::steady_clock;
/// How long an idle worker spins for the next job before it sleeps: longer than the device's part
/// of a step (a policy's forward pass and the copies), so that back-to-back steps never sleep.
constexpr auto kWorkerSpin = std::chrono::microseconds(300);
/// How long run()'s caller spins for the last chunks before it sleeps.
constexpr auto kCallerSpin = std::chrono::milliseconds(2);

/// Slice `slot` of `slots` over [0, n): the first n % slots slices take one more.
void slice(int n, int slots, int slot, int& begin, int& end) {
  const int base = n / slots, extra = n % slots;
  begin = slot * base + std::min(slot, extra);
  end = begin + base + (slot < extra ? 1 : 0);
}

/// The first number of a sysfs list file ("3" of "3,67" or "3-4"), or -1.
int first_listed(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return -1;
  int v = -1;
  if (std::fscanf(f, "%d", &v) != 1) v = -1;
  std::fclose(f);
  return v;
}

/// The NUMA node of `cpu` (its nodeK entry in sysfs), or 0.
int numa_node(int cpu) {
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int node = 0;
  while (const dirent* e = ::readdir(d))
    if (std::strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
      node = std::atoi(e->d_name + 4);
      break;
    }
  ::closedir(d);
  return node;
}

/// The CPUs of this thread's affinity mask in the order workers take them: the caller's NUMA node
/// first, one hardware thread per physical core before the cores' second ones, the caller's own
/// CPU last.
std::vector<int> worker_cpus() {
  const int here = ::sched_getcpu();
  const int home = here >= 0 ? numa_node(here) : 0;
  std::vector<std::tuple<int, int, int, int>> keyed;  // (caller's, other node, sibling, cpu)
  for (int c : allowed_cpus()) {
    const int first = first_listed("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/thread_siblings_list");
    keyed.emplace_back(c == here, numa_node(c) != home, first >= 0 && first != c, c);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> cpus;
  for (const auto& k : keyed) cpus.push_back(std::get<3>(k));
  return cpus;
}

}  // namespace

struct ThreadPool::Entry {
  std::unique_ptr<Slice[]> slices;  ///< one per thread: the caller's is slice 0, worker w's w + 1
  int n = 0;
  const std::function<void(int, int)>* fn = nullptr;
  std::function<void(int, int)> owned;  ///< submit()'s copy
  std::atomic<int> done{0};             ///< indices finished
  std::atomic<int> passed{0};           ///< workers that moved past this job
  std::exception_ptr error;             ///< the first exception (under mu_)
};

ThreadPool::ThreadPool(const Options& o)
    : threads_(std::max(1, o.threads)), grain_(std::max(1, o.grain)), spin_(threads_ <= allowed_cpu_count()),
      ring_(new Entry[kRing]) {
  const int workers = threads_ - 1;
  for (int k = 0; k < kRing; ++k) {
    ring_[k].slices.reset(new Slice[std::size_t(threads_)]);
    ring_[k].passed.store(workers);
  }
  if (o.pin) {
    const std::vector<int> order = worker_cpus();
    for (int w = 0; w < workers && !order.empty(); ++w) cpus_.push_back(order[std::size_t(w) % order.size()]);
  }
  for (int w = 0; w < workers; ++w) workers_.emplace_back([this, w] { work(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool::Job ThreadPool::publish(int n, const std::function<void(int, int)>* f, std::function<void(int, int)> owned) {
  const Job id = published_.load(std::memory_order_relaxed);
  if (id - waited_ >= Job(kRing))
    throw Error(fmt::format("ThreadPool: {} jobs are queued; wait for the oldest before submitting more", kRing));
  Entry& e = ring_[id % kRing];
  // The job that held this entry kRing jobs ago: done (the caller finishes it if it never waited
  // for it), and every worker past it, so nothing reads it any more.
  const int workers = threads_ - 1;
  if (e.done.load(std::memory_order_acquire) < e.n) take_part(e, 0);
  while (e.passed.load(std::memory_order_acquire) < workers || e.done.load(std::memory_order_acquire) < e.n)
    std::this_thread::yield();
  e.n = n;
  e.owned = std::move(owned);
  e.fn = f ? f : &e.owned;
  e.error = nullptr;
  e.done.store(0, std::memory_order_relaxed);
  e.passed.store(0, std::memory_order_relaxed);
  for (int s = 0; s < threads_; ++s) {
    int b, end;
    slice(n, threads_, s, b, end);
    e.slices[s].next.store(b, std::memory_order_relaxed);
    e.slices[s].end = end;
  }
  published_.store(id + 1, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  if (sleepers_ > 0) wake_.notify_all();
  return id;
}

void ThreadPool::run(int n, const std::function<void(int, int)>& f) {
  if (n <= 0) return;
  if (threads_ == 1 || n == 1) {  // no hand-off
    f(0, n);
    return;
  }
  wait(publish(n, &f, {}));
}

ThreadPool::Job ThreadPool::submit(int n, std::function<void(int, int)> f) {
  return publish(std::max(0, n), nullptr, std::move(f));
}

void ThreadPool::wait(Job j) {
  if (j >= published_.load(std::memory_order_relaxed)) return;  // never submitted
  Entry& e = ring_[j % kRing];
  take_part(e, 0);
  if (spin_) {
    const auto until = Clock::now() + kCallerSpin;
    while (e.done.load(std::memory_order_acquire) < e.n && Clock::now() < until) GMI_CPU_RELAX();
  }
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    waiting_ = true;
    done_.wait(lock, [&] { return e.done.load(std::memory_order_acquire) >= e.n; });
    waiting_ = false;
    std::swap(error, e.error);
  }
  waited_ = std::max(waited_, j + 1);
  if (error) std::rethrow_exception(error);
}

void ThreadPool::take_part(Entry& e, int slot) {
  const std::function<void(int, int)>& f = *e.fn;
  for (int k = 0; k < threads_; ++k) {
    Slice& s = e.slices[(slot + k) % threads_];
    for (;;) {
      const int b = s.next.fetch_add(grain_, std::memory_order_relaxed);
      if (b >= s.end) break;
      const int end = std::min(b + grain_, s.end);
      try {
        f(b, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!e.error) e.error = std::current_exception();
      }
      if (e.done.fetch_add(end - b, std::memory_order_acq_rel) + (end - b) == e.n) {
        std::lock_guard<std::mutex> lock(mu_);
        if (waiting_) done_.notify_all();
      }
    }
  }
}

void ThreadPool::work(int index) {
  if (std::size_t(index) < cpus_.size()) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus_[std::size_t(index)], &one);
    ::sched_setaffinity(0, sizeof one, &one);  // this thread only; a refusal leaves it unpinned
  }
  Job next = 0;
  for (;;) {
    for (Job p = published_.load(std::memory_order_acquire); next < p; ++next) {
      Entry& e = ring_[next % kRing];
      take_part(e, index + 1);
      e.passed.fetch_add(1, std::memory_order_release);
    }
    if (spin_) {
      const auto until = Clock::now() + kWorkerSpin;
      while (published_.load(std::memory_order_acquire) == next && !stop_.load(std::memory_order_relaxed) &&
             Clock::now() < until)
        GMI_CPU_RELAX();
    }
    if (published_.load(std::memory_order_acquire) == next) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      wake_.wait(lock, [&] { return stop_.load() || published_.load(std::memory_order_acquire) != next; });
      --sleepers_;
      if (stop_.load() && published_.load() == next) return;
    }
  }
}

}  // namespace gmi::envs::mujoco
