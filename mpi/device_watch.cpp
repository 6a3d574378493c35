#include "mpi/device_watch.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "kernels/core/error.hpp"
#include "mpi/abort.hpp"
#include "mpi/deadline.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

#include <cuda_runtime.h>
#endif

namespace gmi::mpi {

const char* gate_kind_name(std::uint32_t kind) {
  switch (kind) {
    case std::uint32_t(GateKind::arrive): return "arrive";
    case std::uint32_t(GateKind::done): return "done";
    case std::uint32_t(GateKind::ready): return "ready";
    default: return "?";
  }
}

std::string gate_wait_text(std::uint32_t kind, int world_rank, std::uint32_t call) {
  return fmt::format("the within-GPU '{}' flag of rank {} (call {})", gate_kind_name(kind), world_rank, call);
}

std::uint64_t device_timeout_ns() { return std::uint64_t(timeout() * 1e9); }

namespace {

std::mutex g_hooks_mu;
int g_next_hook = 1;
std::map<int, std::function<void()>> g_abort_hooks;
std::map<int, std::function<std::string()>> g_error_polls;

#if defined(KOKKOS_ENABLE_CUDA)
/// Every abort hook once, each on a thread of its own: ncclCommAbort synchronises the device
/// and can wait on another communicator's kernel that only its own abort ends.
void run_abort_hooks() {
  std::map<int, std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(g_hooks_mu);
    hooks.swap(g_abort_hooks);  // once
  }
  for (auto& [id, h] : hooks) std::thread(h).detach();
}

using Clock = std::chrono::steady_clock;

/// The thread that watches device work (see the header).
class Watcher {
 public:
  static Watcher& get() {
    static Watcher w;
    return w;
  }

  /// The word, and the thread that reads it: whoever asks for the word runs gates.
  DeviceAbort* word() {
    std::lock_guard<std::mutex> lock(mu_);
    start();
    return device_word_;
  }

  void watch(const ExecSpace& space, const std::string& what, const std::vector<int>& peers) {
    std::lock_guard<std::mutex> lock(mu_);
    start();
    cudaEvent_t ev = nullptr;
    if (!free_.empty()) {
      ev = free_.back();
      free_.pop_back();
    } else {
      GMI_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    }
    GMI_CUDA_CHECK(cudaEventRecord(ev, space.cuda_stream()));
    queue_.push_back({ev, what, peers, Clock::now()});
  }

  void ensure_started() {
    std::lock_guard<std::mutex> lock(mu_);
    start();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) return;
      stop_ = true;
    }
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : queue_) cudaEventDestroy(w.ev);
    for (auto ev : free_) cudaEventDestroy(ev);
    queue_.clear();
    free_.clear();
    stop_ = false;
  }

 private:
  struct Watched {
    cudaEvent_t ev;
    std::string what;
    std::vector<int> peers;
    Clock::time_point queued;
  };

  void init_word() {
    if (host_word_) return;
    GMI_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_word_), sizeof(DeviceAbort),
                                 cudaHostAllocMapped | cudaHostAllocPortable));
    *host_word_ = DeviceAbort{0, -1, 0, 0, 0};
    GMI_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_word_), host_word_, 0));
  }

  void start() {
    init_word();
    if (thread_.joinable()) return;
    GMI_CUDA_CHECK(cudaGetDevice(&device_));
    thread_ = std::thread([this] { loop(); });
  }

  /// The word as the host sees it (written by kernels through the mapping).
  DeviceAbort read_word() const {
    volatile DeviceAbort* w = host_word_;
    DeviceAbort a;
    a.flag = w->flag;
    a.peer = w->peer;
    a.kind = w->kind;
    a.call = w->call;
    a.waited_ns = w->waited_ns;
    return a;
  }

  void fail(const std::string& what, const std::vector<int>& peers, double waited_s) {
    if (!flagged()) flag(what, peers, waited_s);
    // The last resort, on its own thread (nothing below may hold it up): if the main thread has
    // not ended the job by then, it is blocked where nothing releases it.  Once it is in the
    // census it ends the job itself, so wait longer then.
    std::thread([] {
      const double grace = census_grace();
      std::this_thread::sleep_for(std::chrono::duration<double>(grace + 3.0));
      if (giving_up()) std::this_thread::sleep_for(std::chrono::duration<double>(grace + 8.0));
      std::fprintf(stderr,
                   "gmi_drl: error: reduce.timeout_s (%g s) ran out and this GMI's main thread is blocked "
                   "(%s); ending the job\n",
                   timeout(), error_context().c_str());
      abort_job(3);
    }).detach();
    // Release every gate (they test the word), then end NCCL's waits.
    volatile DeviceAbort* w = host_word_;
    if (w->flag == 0) w->flag = 2;
    run_abort_hooks();
  }

  void loop() {
    cudaSetDevice(device_);
    bool failed = false;
    Clock::time_point last_done = Clock::now();
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
      }
      if (!failed) {
        // 1. A gate ran out: it knows whom it waited for.
        const DeviceAbort a = read_word();
        if (a.flag == 1) {
          fail(gate_wait_text(a.kind, a.peer, a.call), {a.peer}, double(a.waited_ns) * 1e-9);
          failed = true;
        }
      }
      if (!failed) {
        // 2. The oldest watched work: its clock starts when the work before it completed.
        std::unique_lock<std::mutex> lock(mu_);
        while (!queue_.empty()) {
          Watched& w = queue_.front();
          const cudaError_t st = cudaEventQuery(w.ev);
          if (st == cudaSuccess) {
            free_.push_back(w.ev);
            queue_.pop_front();
            last_done = Clock::now();
            continue;
          }
          const auto began = std::max(w.queued, last_done);
          const double waited = std::chrono::duration<double>(Clock::now() - began).count();
          if (st != cudaErrorNotReady) {
            const std::string what = fmt::format("{} (CUDA: {})", w.what, cudaGetErrorString(st));
            const auto peers = w.peers;
            lock.unlock();
            fail(what, peers, waited);
            failed = true;
          } else if (waited > timeout() + 1.0) {  // a gate's own deadline, more precise, comes first
            const std::string what = fmt::format("{} on the device, not complete", w.what);
            const auto peers = w.peers;
            lock.unlock();
            fail(what, peers, waited);
            failed = true;
          }
          break;
        }
      }
      if (!failed) {
        // 3. Asynchronous errors (NCCL).
        std::vector<std::function<std::string()>> polls;
        {
          std::lock_guard<std::mutex> lock(g_hooks_mu);
          for (auto& [id, p] : g_error_polls) polls.push_back(p);
        }
        for (auto& p : polls) {
          const std::string e = p();
          if (!e.empty()) {
            fail(e, {}, 0);
            failed = true;
            break;
          }
        }
      }
      if (failed) return;  // the last-resort thread takes it from here
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::mutex mu_;
  std::thread thread_;
  bool stop_ = false;
  int device_ = 0;
  DeviceAbort* host_word_ = nullptr;
  DeviceAbort* device_word_ = nullptr;
  std::deque<Watched> queue_;
  std::vector<cudaEvent_t> free_;
};

#else

DeviceAbort g_host_word{0, -1, 0, 0, 0};

#endif

}  // namespace

DeviceAbort* device_abort() {
#if defined(KOKKOS_ENABLE_CUDA)
  return Watcher::get().word();
#else
  return &g_host_word;
#endif
}

void watch(const ExecSpace& space, const std::string& what, const std::vector<int>& peers) {
#if defined(KOKKOS_ENABLE_CUDA)
  Watcher::get().watch(space, what, peers);
#endif
}

namespace {
template <class F>
int add_hook(std::map<int, F>& hooks, F f) {
  std::lock_guard<std::mutex> lock(g_hooks_mu);
  hooks[g_next_hook] = std::move(f);
#if defined(KOKKOS_ENABLE_CUDA)
  Watcher::get().ensure_started();
#endif
  return g_next_hook++;
}
}  // namespace

int add_abort_hook(std::function<void()> hook) { return add_hook(g_abort_hooks, std::move(hook)); }

int add_error_poll(std::function<std::string()> poll) { return add_hook(g_error_polls, std::move(poll)); }

void remove_hook(int id) {
  std::lock_guard<std::mutex> lock(g_hooks_mu);
  g_abort_hooks.erase(id);
  g_error_polls.erase(id);
}

void stop_device_watch() {
#if defined(KOKKOS_ENABLE_CUDA)
  Watcher::get().stop();
#endif
}

}  // namespace gmi::mpi
