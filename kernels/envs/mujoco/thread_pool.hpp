#pragma once
/// \file
/// \brief A fixed set of worker threads that run one function over disjoint slices of [0, n) and
/// return when every slice is done (the calling thread takes the first slice).  For stepping a
/// GMI's host-simulated environments in parallel (env.threads).
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

  int size() const { return int(workers_.size()) + 1; }
  /// f(begin, end) for size() contiguous slices of [0, n); rethrows the first exception.
  void run(int n, const std::function<void(int, int)>& f);

 private:
  void work(int slot);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int n_ = 0, pending_ = 0;
  unsigned generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace gmi::envs::mujoco
