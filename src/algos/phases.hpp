#pragma once
/// \file
/// \brief Where an iteration's time goes (`gmi_drl bench`'s per-phase table): a trainer given a
/// PhaseClock fences its execution space at every phase boundary and charges the time since the
/// previous boundary to the phase that ended.  The fences serialise host and device, so profiled
/// iterations are slower than plain ones; the benchmark's headline numbers come from plain ones.
#include <array>
#include <chrono>

#include "kernels/core/kokkos.hpp"

namespace gmi::algos {

enum class Phase : int {
  EnvStep,         ///< the environments' step (and resets)
  Inference,       ///< the policy acting during the rollout (and V(s_T))
  Advantages,      ///< reward scaling, truncation bootstrap, GAE, explained variance
  UpdateForward,   ///< minibatch gather and forward passes (layered kernels)
  UpdateBackward,  ///< loss and backward passes (layered kernels)
  UpdateFused,     ///< gather, forward, loss and backward in the fused kernels
  Reduction,       ///< gradient averaging over GMIs
  Optimizer,       ///< gradient norm and Adam
  Other,           ///< statistics, copies, normaliser updates
  kCount
};
inline constexpr int kNumPhases = int(Phase::kCount);

/// Snake-case name (JSON keys, table rows).
const char* phase_name(Phase p);

class PhaseClock {
 public:
  /// Fence and start timing from now.
  void start(const ExecSpace& space);
  /// Fence; the time since the last start or mark goes to `p`.
  void mark(const ExecSpace& space, Phase p);
  double seconds(Phase p) const { return seconds_[std::size_t(p)]; }
  void clear() { seconds_.fill(0.0); }

 private:
  std::array<double, kNumPhases> seconds_{};
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace gmi::algos
