#pragma once
/// \file
/// \brief Fault injection for the fault-tolerance tests, from the environment variable
/// GMI_DRL_FAULT: a comma-separated list of WHAT@N[:RANK] (RANK defaults to 0):
///
///   kill@N:R                 GMI R sends itself SIGKILL before iteration N starts
///   segv@N:R                 GMI R raises SIGSEGV before iteration N
///   sigterm@N:R              GMI R receives SIGTERM before iteration N (only that GMI: a stop
///                            that the others learn of at the iteration boundary)
///   nan@N:R                  every gradient of iteration N on GMI R gets a NaN
///   kill-in-checkpoint@N:R   GMI R sends itself SIGKILL while the checkpoint of iteration N is
///                            being written (all data written, file not yet flushed or renamed)
///   hang@N:R                 GMI R stops taking part before iteration N: it sleeps forever in
///                            host code (alive, but silent)
///   hang-kernel@N:R          GMI R queues a device kernel that never returns before iteration N
///                            (its host thread blocks at the next fence; host builds: at once)
///   hang-setup@0:R           GMI R sleeps forever in host code before the job's set-up (its
///                            placement, MPS, communicators)
///   fill-in-checkpoint@N:R   GMI R fills the checkpoint directory's file system (a file of zeros,
///                            fill-in-checkpoint.filler, up to 256 MiB) while the checkpoint of
///                            iteration N is being written, before the file is flushed
///   slow-checkpoint@S        every GMI sleeps S seconds inside every checkpoint write
///   slow@S:R                 GMI R sleeps S seconds before every iteration (a slow trainer; on a
///                            serving GMI under async, before every rollout)
///
/// Unset, nothing happens.  A malformed value is an input error.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gmi::runtime {

class Faults {
 public:
  /// Parse GMI_DRL_FAULT for GMI `rank`.  Throws gmi::InputError on a malformed value.
  static Faults from_environment(int rank);
  static Faults parse(const std::string& spec, int rank);

  /// Before iteration `iteration` (1-based): kill or segv here; returns true when this GMI's
  /// gradient should get a NaN in this iteration.
  bool before_iteration(std::int64_t iteration) const;
  /// Before the set-up (start_session): hang-setup stops here.
  void before_setup() const;
  /// What to run inside the write of the checkpoint of `iteration` to `path` (may be empty).
  std::function<void()> in_checkpoint(std::int64_t iteration, const std::string& path) const;
  bool empty() const { return items_.empty(); }

 private:
  struct Item {
    std::string what;
    double n = 0;
    int rank = 0;
  };
  std::vector<Item> items_;
  int rank_ = 0;
};

}  // namespace gmi::runtime
