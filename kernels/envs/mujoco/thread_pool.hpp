#pragma once
/// \file
/// \brief A fixed set of worker threads that run one function over disjoint slices of [0, n):
/// synchronously (run: the call returns when every slice is done; with one thread the caller
/// does the work itself), or in the background (start, then wait).  For stepping a GMI's
/// host-simulated environments in parallel (env.threads), and beside the device
/// (env.async_halves).
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gmi::envs::mujoco {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()); }
  /// f(begin, end) for size() contiguous slices of [0, n); rethrows the first exception.
  void run(int n, std::function<void(int, int)> f);
  /// The same in the background; one job at a time.
  void start(int n, std::function<void(int, int)> f);
  /// Wait for the job started last; rethrows the first exception.
  void wait();

 private:
  void work(int slot);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  std::function<void(int, int)> job_;
  int n_ = 0, pending_ = 0;
  unsigned generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace gmi::envs::mujoco
