#pragma once
/// \file
/// \brief `gmi_drl bench --kernel-times`: the time of every Kokkos kernel, deep copy and BLAS call
/// by name, each fenced at its start and end (so slower than an unprofiled run, and without the
/// overlap of host and device work).  BLAS calls are the Kokkos profiling regions kernels/nn/blas
/// opens around them ("gmi::blas::gemm NT 256x376x65536", inclusive of any conversion kernel they
/// launch).  A tool loaded through KOKKOS_TOOLS_LIBS is set aside while the timer lives (and
/// back afterwards); PPO's rollout launches directly then (no CUDA graph), as under any tool.
#include <string>
#include <vector>

namespace gmi::tools {

struct KernelTime {
  std::string name;
  double calls = 0;    ///< launches while the timer lived
  double seconds = 0;  ///< their total fenced time
};

/// Times what runs while it lives (one at a time; installs Kokkos Tools callbacks).
class KernelTimer {
 public:
  KernelTimer();
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;
  /// Every name seen so far, the longest total first.
  std::vector<KernelTime> sorted() const;
};

}  // namespace gmi::tools
