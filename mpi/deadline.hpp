#pragma once
/// \file
/// \brief Bounded waits (`reduce.timeout_s`): every wait of a GMI on other GMIs ends at the
/// latest that many seconds after it began, and then the job ends with one line that says who
/// was waiting for whom.
///
///  - Non-blocking MPI operations are completed by wait(), which tests them against the clock.
///  - Spins on flags in shared memory (the intra-GPU step on host builds) test a Deadline and
///    interrupted().
///  - Device-side waits carry their own deadline, and NCCL calls (device work and the host part)
///    are timed; both are watched from a thread (mpi/device_watch.hpp), which flags a failure
///    here; the main thread acts on it in check(), wait() and interrupted().
///
/// When a wait runs out, a *census* finds which GMIs still answer: the GMI sends one small
/// message to every other and collects theirs for census_grace() seconds; a GMI that sees a
/// census message while it waits joins at once.  Every GMI that is not stuck is waiting too (data
/// parallelism: every GMI takes part in every reduction), so the ones that do not answer are the
/// stuck or dead ones.  The lowest-ranked GMI that answered prints the line and aborts the job
/// (TimeoutError, caught in src/runtime/mpi_command.hpp); the others follow a few seconds later
/// if the abort has not reached them.  Ranks are MPI_COMM_WORLD ranks, as mpiexec and
/// GMI_DRL_FAULT name them.
#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"

namespace gmi::mpi {

/// A wait on other GMIs ran out or was ended by a census: the job must end (exit status 3).
class TimeoutError : public Error {
 public:
  using Error::Error;
};

/// Seconds a GMI waits for the others before it gives up (reduce.timeout_s, > 0; default 120).
void set_timeout(double seconds);
double timeout();
/// Seconds a census waits for answers: min(10, max(2, timeout() / 4)).
double census_grace();

/// The clock of one wait, started on construction.
class Deadline {
 public:
  Deadline() : start_(std::chrono::steady_clock::now()) {}
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  bool expired() const { return elapsed() >= timeout(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// Complete `req`, a non-blocking operation `op` ("MPI_Iallreduce") on `comm`; give_up() when
/// timeout() has passed or the wait is interrupted().  Main thread only.
void wait(MPI_Request& req, MPI_Comm comm, const char* op);
/// The same for a wait on particular GMIs: `peers` (MPI_COMM_WORLD ranks) and `what` (what was
/// waited for: "batch 12 of channel 'obs' from rank 3") are called only if the wait runs out.
void wait(MPI_Request& req, const std::function<std::vector<int>()>& peers, const std::function<std::string()>& what);

/// Whether a wait should end now: another GMI started a census, or a wait watched from another
/// thread ran out.  For spins; main thread only.
bool interrupted();

/// End a wait of `waited_s` seconds for `what` (e.g. "the within-GPU 'arrive' flag of rank 3"),
/// which depended on `peers` (MPI_COMM_WORLD ranks): run the census, then the GMI that reports
/// prints its line and aborts the job on the spot (no unwinding: collectives left in flight may
/// still write into their buffers); the others wait census_grace() + 5 s for that abort, and
/// print and abort themselves only if it does not come.  With set_abort_on_timeout(false)
/// (tests) it throws TimeoutError with the line instead.  Main thread only.
[[noreturn]] void give_up(const std::string& what, const std::vector<int>& peers, double waited_s);
/// Whether this process's main thread has entered give_up (the device watch then leaves the
/// ending of the job to it).
bool giving_up();
/// false: give_up throws TimeoutError instead of aborting (tests of the census).
void set_abort_on_timeout(bool abort);

/// A barrier over `comm` that is a bounded wait.
void barrier(MPI_Comm comm, const char* what);

/// give_up() if a wait watched from another thread ran out (flag()).  Main thread only; cheap.
void check();

/// Record that a wait watched from another thread ran out (any thread): what and for whom.
/// The first record wins.
void flag(const std::string& what, const std::vector<int>& peers, double waited_s);
/// Whether flag() was called.
bool flagged();

/// The members of `comm` as MPI_COMM_WORLD ranks, in `comm` rank order.
std::vector<int> world_ranks(MPI_Comm comm);
/// "rank 3", "ranks 0, 2-5".
std::string ranks_text(const std::vector<int>& ranks);

namespace detail {
/// The census communicator and its standing receive (mpi::Environment, after MPI_Init).
void census_init();
/// Before MPI_Finalize.
void census_finalize();
}  // namespace detail

}  // namespace gmi::mpi
