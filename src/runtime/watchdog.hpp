#pragma once
/// \file
/// \brief The stalled-GMI watchdog (train.stall_timeout_s): a thread that ends the job when this
/// GMI has made no progress for too long, whatever it is stuck in: a kernel that never returns, a
/// deadlock, a file system that does not answer.  Progress is what mpi::progress() records (a
/// phase of an iteration ending, a rollout step, a minibatch).  On a stall it prints one line naming the
/// GMI, the phase and the iteration, and aborts the job (MPI_Abort, exit status 4).
///
/// `auto` allows max(300 s, 20 x the slowest iteration so far): long enough for the first
/// iteration (CUDA loads its modules) and for checkpoint writes, short enough that a 120-hour job
/// loses minutes, not its time limit.  Waits on other GMIs end earlier (reduce.timeout_s).
#include <condition_variable>
#include <mutex>
#include <thread>

#include "src/config/config.hpp"

namespace gmi::runtime {

class StallWatchdog {
 public:
  /// Starts the thread (none with `off`).
  explicit StallWatchdog(const config::AutoSeconds& setting);
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

  /// An iteration took `seconds` (the auto limit follows the slowest).
  void iteration_took(double seconds);
  /// Seconds without progress that end the job now (infinity when off).
  double limit() const;

 private:
  void loop();
  double limit_locked() const;

  config::AutoSeconds setting_;
  double slowest_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gmi::runtime
