#include "mpi/abort.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace gmi::mpi {

void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace gmi::mpi
