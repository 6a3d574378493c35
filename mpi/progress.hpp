#pragma once
/// \file
/// \brief Where this GMI is in its work, for the error line of a wait that ran out
/// (mpi/deadline.hpp) and for the stalled-GMI watchdog (src/runtime/watchdog.hpp): the phase
/// (set-up, rollout, update, checkpoint, ...), iteration, epoch and minibatch, the operation a
/// reduction is in, and when the GMI last moved on.  One per process (a process is one GMI).
/// The training loop writes it; the watchdog reads it from its own thread, so every field is
/// atomic (the operation's name is behind a mutex).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace gmi::mpi {

class Progress {
 public:
  /// Enter a phase; `name` must outlive the process (a string literal).  Counts as progress.
  void phase(const char* name);
  const char* phase() const { return phase_.load(std::memory_order_relaxed); }
  /// The iteration being run (1-based); 0 before the first.  Counts as progress.
  void iteration(std::int64_t i);
  std::int64_t iteration() const { return iteration_.load(std::memory_order_relaxed); }
  /// The minibatch being reduced (epoch and index, 0-based); -1, -1 outside the update.
  void minibatch(int epoch, int mb);
  /// The operation a wait belongs to ("har (ipc)", "metrics"), "" when none.
  void operation(const std::string& what);
  std::string operation() const;
  /// Progress without a change of phase.
  void beat();
  /// Seconds since the last progress.
  double idle_seconds() const;
  /// "iteration 5, epoch 1, minibatch 3" (what is known), or "set-up".
  std::string where() const;

 private:
  std::atomic<const char*> phase_{"set-up"};
  std::atomic<std::int64_t> iteration_{0};
  std::atomic<int> epoch_{-1}, minibatch_{-1};
  std::atomic<std::int64_t> last_beat_ns_{0};
  mutable std::mutex mu_;
  std::string operation_;
};

/// This process's progress.
Progress& progress();

}  // namespace gmi::mpi
