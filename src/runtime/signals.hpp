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
  /// Whether SIGUSR2 arrived since the last call.
  bool take_checkpoint_request();
};

/// "SIGTERM", "SIGUSR1", "SIGKILL", ... ("a signal" for the others).
const char* signal_name(int sig);

}  // namespace gmi::runtime
