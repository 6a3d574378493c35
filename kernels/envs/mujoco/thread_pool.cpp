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
  for (int s = 1; s < std::max(1, threads); ++s) workers_.emplace_back([this, s] { work(s); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(int n, const std::function<void(int, int)>& f) {
  if (workers_.empty()) {
    f(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &f;
    n_ = n;
    pending_ = int(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  int begin, end;
  slice(n, size(), 0, begin, end);
  std::exception_ptr mine;
  try {
    f(begin, end);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::work(int slot) {
  unsigned seen = 0;
  for (;;) {
    const std::function<void(int, int)>* job;
    int n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = n_;
    }
    int begin, end;
    slice(n, size(), slot, begin, end);
    std::exception_ptr e;
    try {
      (*job)(begin, end);
    } catch (...) {
      e = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (e && !error_) error_ = e;
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace gmi::envs::mujoco
