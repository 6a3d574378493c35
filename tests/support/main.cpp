// GoogleTest main for gmi_drl: MPI (for tests that need it) and Kokkos around the test run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "mpi/environment.hpp"
#include "mpi/topology.hpp"
#include "src/algos/registry.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/session.hpp"
#include "src/runtime/logging.hpp"
#include "tests/support/mpi_util.hpp"

namespace {

/// The GPU of this rank: with GMI_TEST_GPUS=g > 1 (GPU builds), its GPU in the layout of the
/// job's ranks spread over g GPUs per node, as the MPI tests plan it; else -1 (device 0).
int test_device(int rank) {
#if defined(GMI_HAVE_CUDA)
  const int want = gmi::test::requested_gpus();
  if (want <= 1) return -1;
  gmi::test::visible_gpus() = gmi::instances::detect_gpus_per_node();
  if (gmi::test::visible_gpus() < want) {
    if (rank == 0)
      std::printf("GMI_TEST_GPUS=%d but this node shows %d GPU(s): the multi-GPU tests skip\n", want,
                  gmi::test::visible_gpus());
    return -1;
  }
  return gmi::mpi::plan_layout(gmi::mpi::gather_node_names(0), gmi::mpi::LayoutRequest{want, 0}).places[rank].gpu;
#else
  (void)rank;
  return -1;
#endif
}

}  // namespace

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
    gmi::instances::KokkosScope kokkos(test_device(mpi.rank()));
    status = RUN_ALL_TESTS();
  }
  // A test failing on any rank fails the job.
  int global = 0;
  MPI_Allreduce(&status, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return global;
}
