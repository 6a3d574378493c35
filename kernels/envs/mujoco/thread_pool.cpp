#include "kernels/envs/mujoco/thread_pool.hpp"

#include <algorithm>

namespace gmi::envs::mujoco {
namespace {
/// Slice `slot` of `slots` over [0, n): the first n % slots slices take one more.
void slice(int n, int slots, int slot, int& begin, int& end) {
  const int base = n / slots, extra = n % slots;
  begin = slot * base + std::min(slot, extra);
  end = begin + base + (slot < extra ? 1 : 0);
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int s = 0; s < std::max(1, threads); ++s) workers_.emplace_back([this, s] { work(s); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(int n, std::function<void(int, int)> f) {
  if (workers_.size() == 1) {  // no hand-off for one thread
    f(0, n);
    return;
  }
  start(n, std::move(f));
  wait();
}

void ThreadPool::start(int n, std::function<void(int, int)> f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(f);
    n_ = n;
    pending_ = int(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
}

void ThreadPool::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::work(int slot) {
  unsigned seen = 0;
  for (;;) {
    int n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      n = n_;
    }
    int begin, end;
    slice(n, size(), slot, begin, end);
    std::exception_ptr e;
    try {
      if (begin < end) job_(begin, end);  // job_ is not replaced before every worker is done
    } catch (...) {
      e = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (e && !error_) error_ = e;
      if (--pending_ == 0) done_.notify_all();
    }
  }
}

}  // namespace gmi::envs::mujoco
