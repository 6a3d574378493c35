#pragma once
/// \file
/// \brief Ending the whole job from one rank (a failure on one rank, STYLE.md practice 6).  Its
/// own unit so that the bounded waits (deadline), the device watch and mpi::Environment can all
/// end the job without depending on each other.

namespace gmi::mpi {

/// Flush stdout and stderr, MPI_Abort(MPI_COMM_WORLD, code), and should that return, _Exit(code).
/// Any thread.
[[noreturn]] void abort_job(int code);

}  // namespace gmi::mpi
