#pragma once
/// \file
/// \brief MPI start-up and shutdown, the world communicator, and the few collectives the
/// application layer needs for metrics and agreement on errors.
#include <mpi.h>

#include <string>
#include <vector>

#include "mpi/abort.hpp"

namespace gmi::mpi {

/// \brief MPI_Init_thread(FUNNELED) on construction, MPI_Finalize on destruction.
/// Works without mpirun (singleton start).  Sets the rank/host shown in error messages.
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& host() const { return host_; }

  /// End every rank of the job (a failure on one rank, STYLE.md practice 6): abort_job.
  [[noreturn]] static void abort(int code) { abort_job(code); }

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
  bool finalize_ = false;
};

/// Sum of `n` doubles over the ranks of `comm`, in place (a bounded wait, mpi/deadline.hpp).
void allreduce_sum(double* values, int n, MPI_Comm comm = MPI_COMM_WORLD);
/// Maximum of `n` doubles over the ranks of `comm`, in place (a bounded wait).
void allreduce_max(double* values, int n, MPI_Comm comm = MPI_COMM_WORLD);
/// `root`'s value of `s` on every rank of `comm` (default: rank 0 of the world; a bounded wait).
std::string broadcast_string(const std::string& s, MPI_Comm comm = MPI_COMM_WORLD, int root = 0);

/// Agreement on an error found on some ranks (STYLE.md practice 6): on every rank of `comm`, the
/// text of the highest-ranked rank whose `error` is not empty, or "" when there is none.  An
/// MPI_Iallreduce (max of the failing rank), then broadcast_string from that rank; bounded waits.
std::string agree_on_error(const std::string& error, MPI_Comm comm = MPI_COMM_WORLD);
/// `root`'s `value` on every rank of `comm` (MPI_Ibcast; a bounded wait).
void broadcast(int& value, MPI_Comm comm = MPI_COMM_WORLD, int root = 0);
/// `root`'s `n` doubles on every rank of `comm` (MPI_Ibcast; a bounded wait).
void broadcast(double* values, int n, MPI_Comm comm = MPI_COMM_WORLD, int root = 0);

// Blocking collectives (not bounded waits) for the benchmarks' timing fences and what follows
// them.  Each is one MPI call with its error checked.

/// Sum and maximum of one value over the ranks of `comm` (MPI_Allreduce).
double sum_over(MPI_Comm comm, double value);
double max_over(MPI_Comm comm, double value);
/// Every rank's `n` values, in `comm` rank order, on `root` (MPI_Gather); the vector has
/// n * comm_size entries on every rank, filled on `root` only.
std::vector<double> gather(const double* mine, int n, MPI_Comm comm, int root = 0);
/// MPI_Barrier over `comm`.
void blocking_barrier(MPI_Comm comm = MPI_COMM_WORLD);
/// `root`'s `s` on every rank of `comm` (MPI_Bcast, no time limit): for a root that waits on
/// something outside the job (bench --more-from-stdin reading the next count from its input).
std::string blocking_broadcast_string(const std::string& s, MPI_Comm comm = MPI_COMM_WORLD, int root = 0);

}  // namespace gmi::mpi
