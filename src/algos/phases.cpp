#include "src/algos/phases.hpp"

namespace gmi::algos {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::EnvStep: return "env_step";
    case Phase::Inference: return "inference";
    case Phase::Advantages: return "advantages";
    case Phase::UpdateForward: return "update_forward";
    case Phase::UpdateBackward: return "update_backward";
    case Phase::UpdateFused: return "update_fused";
    case Phase::Reduction: return "reduction";
    case Phase::Optimizer: return "optimizer";
    case Phase::Other: return "other";
    case Phase::kCount: break;
  }
  return "?";
}

void PhaseClock::start(const ExecSpace& space) {
  space.fence();
  last_ = std::chrono::steady_clock::now();
}

void PhaseClock::mark(const ExecSpace& space, Phase p) {
  space.fence();
  const auto now = std::chrono::steady_clock::now();
  seconds_[std::size_t(p)] += std::chrono::duration<double>(now - last_).count();
  last_ = now;
}

}  // namespace gmi::algos
