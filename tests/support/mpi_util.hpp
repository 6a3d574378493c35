#pragma once
// Helpers for tests run under mpiexec.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

namespace gmi::test {

/// GPUs an MPI test's GMIs are on, as GMI_TEST_GPUS asks (default 1); GPU builds only.  With
/// more than one, the test main has put every rank on its GPU of plan_layout({that many, 0}),
/// the ranks spread evenly in rank order (the gpu-labelled ctest entries *_2gpus set 2).
inline int requested_gpus() {
  const char* v = std::getenv("GMI_TEST_GPUS");
  return v ? std::max(1, std::atoi(v)) : 1;
}
/// GPUs this node shows (set by the test main; -1: not asked).
inline int& visible_gpus() {
  static int n = -1;
  return n;
}
/// The GPUs a test lays its GMIs over: `host_gpus` emulated ones on host builds; on GPU builds
/// requested_gpus(), or 0 when the node has fewer (the test then skips).
inline int test_gpus([[maybe_unused]] int host_gpus) {
#if defined(GMI_HAVE_CUDA)
  const int want = requested_gpus();
  return want > 1 && visible_gpus() < want ? 0 : want;
#else
  return host_gpus;
#endif
}

/// Whether the GMIs of a GPU run side by side as gmi_drl runs them (src/gmi/session.cpp:
/// ReducerOptions::concurrent_gmis): always on host builds; on GPU builds when an MPS daemon
/// serves this process (CUDA_MPS_PIPE_DIRECTORY's, or the default /tmp/nvidia-mps, control pipe
/// exists).  Time-sliced GMIs synchronise on the host instead.
inline bool gmis_run_side_by_side() {
#if defined(GMI_HAVE_CUDA)
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control = std::string(dir && *dir ? dir : "/tmp/nvidia-mps") + "/control";
  return ::access(control.c_str(), F_OK) == 0;
#else
  return true;
#endif
}

}  // namespace gmi::test

/// In a TEST: skip when GMI_TEST_GPUS asks for more GPUs than the node shows (GPU builds).
#define GMI_SKIP_WITHOUT_TEST_GPUS() \
  if (::gmi::test::test_gpus(1) == 0) GTEST_SKIP() << "GMI_TEST_GPUS asks for more GPUs than this node shows"

namespace gmi::test {

/// True when every rank of MPI_COMM_WORLD holds the same bytes in `v` (FNV-1a hash, min == max).
/// Collective.
template <class T>
bool same_on_all_ranks(const std::vector<T>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ b[i]) * 1099511628211ull;
  unsigned long long lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

}  // namespace gmi::test
