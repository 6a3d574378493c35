// GoogleTest main for gmi_drl: MPI (for tests that need it) and Kokkos around the test run.
#include <gtest/gtest.h>
#include <mpi.h>

#include "mpi/environment.hpp"
#include "src/algos/registry.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/runtime/logging.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  gmi::algos::register_algorithms();
  gmi::mpi::Environment mpi(&argc, &argv);
  gmi::runtime::setup_logging(mpi.rank(), "warn");
  // Only rank 0 reports, so that mpiexec output stays readable.
  if (mpi.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int status = 0;
  {
    gmi::instances::KokkosScope kokkos;
    status = RUN_ALL_TESTS();
  }
  // A test failing on any rank fails the job.
  int global = 0;
  MPI_Allreduce(&status, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return global;
}
