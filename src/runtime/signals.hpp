#pragma once
/// \file
/// \brief Signals as requests acted on at the next iteration boundary: SIGTERM, SIGINT and
/// SIGUSR1 ask for a checkpoint and a clean exit (Slurm sends SIGTERM at the time limit and,
/// with --signal, SIGUSR1 earlier; mpirun forwards SIGUSR1 and SIGUSR2 to the ranks); SIGUSR2
/// asks for a checkpoint and training goes on.  The handlers only set flags, so a signal that
/// arrives while a checkpoint is written cannot interrupt or corrupt it.
namespace gmi::runtime {

class SignalRequests {
 public:
  /// Installs the handlers (one instance at a time); the destructor restores the previous ones.
  SignalRequests();
  ~SignalRequests();
  SignalRequests(const SignalRequests&) = delete;
  SignalRequests& operator=(const SignalRequests&) = delete;

  /// The first stop signal received (SIGTERM, SIGINT or SIGUSR1), or 0.
  int stop_signal() const;
  /// SIGUSR2 deliveries so far on this rank.  mpirun forwards a signal to the ranks one by one, so
  /// one rank may see it an iteration later than another: the ranks agree on the largest count
  /// (MPI max) and checkpoint_requested() says whether that count is new.
  int checkpoint_requests() const;
  /// Whether the agreed count of SIGUSR2 deliveries (`agreed`, the ranks' largest) is more than
  /// the last one acted on: true once per signal, however late it reached each rank.
  bool checkpoint_requested(int agreed);

 private:
  int handled_ = 0;
};

/// "SIGTERM", "SIGUSR1", "SIGKILL", ... ("a signal" for the others).
const char* signal_name(int sig);

}  // namespace gmi::runtime
