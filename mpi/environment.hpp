#pragma once
/// \file
/// \brief MPI start-up and shutdown, the world communicator, and the few collectives the
/// application layer needs for metrics and agreement on errors.
#include <mpi.h>

#include <string>

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

  /// End every rank of the job (a failure on one rank, STYLE.md practice 6).
  [[noreturn]] static void abort(int code);

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
  bool finalize_ = false;
};

/// Sum of `n` doubles over the ranks of `comm`, in place (a bounded wait, mpi/deadline.hpp).
void allreduce_sum(double* values, int n, MPI_Comm comm = MPI_COMM_WORLD);
/// Maximum of `n` doubles over all ranks, in place (a bounded wait).
void allreduce_max(double* values, int n);
/// `root`'s value of `s` on every rank of `comm` (default: rank 0 of the world; a bounded wait).
std::string broadcast_string(const std::string& s, MPI_Comm comm = MPI_COMM_WORLD, int root = 0);

}  // namespace gmi::mpi
