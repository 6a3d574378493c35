#pragma once
/// \file
/// \brief Worker threads that step a GMI's host-simulated environments (env.threads): jobs over
/// [0, n) cut into small chunks and balanced as they run, queued in order, waited for one by one.
///
/// A job's range is cut into one slice per thread; each worker starts on its own slice (its envs
/// stay in its caches from step to step) and takes `grain` indices at a time, then takes what is
/// left of the others' slices (a shared cursor per slice), so no thread idles on a slow one while
/// work is left (an env that resets, or whose contacts cost more, no longer holds up the step).
/// Several jobs may be queued (env.batch_size groups): a worker done with one moves on to the
/// next, so the threads stay busy while the caller computes a group's actions on the device.
/// The caller waiting for a job works on it too (slice 0), so run() uses the caller and
/// threads - 1 workers.  Idle workers spin for a short while before they sleep, so a step that
/// follows within that window starts without a wake-up; they only spin where every thread has a
/// CPU of its own.  With `pin`, each worker runs on one CPU of the process's affinity mask (the
/// caller's NUMA node first, distinct physical cores before second hardware threads, the
/// caller's own CPU left to it).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/envs/mujoco/options.hpp"

namespace gmi::envs::mujoco {

class ThreadPool {
 public:
  struct Options {
    int threads = 1;   ///< threads stepping: threads - 1 workers and the waiting caller
    bool pin = false;  ///< each worker on one CPU of the affinity mask
    int grain = 1;     ///< indices taken at a time
  };
  using Job = std::uint64_t;

  explicit ThreadPool(int threads) : ThreadPool(Options{threads}) {}
  explicit ThreadPool(const Options& o);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }
  /// f(begin, end) over chunks that cover [0, n) exactly once, on the caller and the workers;
  /// rethrows the first exception (the other chunks still run).
  void run(int n, const std::function<void(int, int)>& f);
  /// Queue f over [0, n) behind the jobs already queued; the caller is free until it waits.
  /// At most kMaxQueuedSteps jobs may be queued and not yet waited for (gmi::Error beyond).
  Job submit(int n, std::function<void(int, int)> f);
  /// Work on job `j` and wait until it is done (spinning up to 2 ms before it sleeps, where
  /// threads have CPUs of their own); rethrows its first exception.  Jobs are waited for in the
  /// order they were submitted.
  void wait(Job j);
  /// The CPUs the workers run on when pinned (empty when not), in worker order.
  const std::vector<int>& pinned_cpus() const { return cpus_; }

 private:
  struct alignas(64) Slice {
    std::atomic<int> next{0};
    int end = 0;
  };
  struct Entry;  // a queued job
  static constexpr int kRing = kMaxQueuedSteps;  ///< jobs queued and not yet waited for, at most

  Job publish(int n, const std::function<void(int, int)>* f, std::function<void(int, int)> owned);
  /// Take chunks of `e` from slice `slot` on, then from the others'.
  void take_part(Entry& e, int slot);
  void work(int index);

  int threads_ = 1, grain_ = 1;
  bool spin_ = false;
  std::vector<int> cpus_;
  std::unique_ptr<Entry[]> ring_;
  std::atomic<Job> published_{0};  ///< jobs published (the next job's number)
  Job waited_ = 0;                 ///< jobs the caller waited for (all before this one)
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_, done_;
  int sleepers_ = 0;      ///< workers waiting on wake_ (under mu_)
  bool waiting_ = false;  ///< the caller waits on done_ (under mu_)
  std::vector<std::thread> workers_;
};

}  // namespace gmi::envs::mujoco
