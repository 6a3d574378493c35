#pragma once
/// \file
/// \brief What every trainer's save_state, load_state and load_shared_state do, written once:
/// the device buffers a TrainerState holds (parameters, Adam moments, normalisers, this GMI's
/// observations and return accumulators) copied each way with their sizes checked, the envs'
/// state, and the checked look-ups of the named tensors an algorithm keeps besides.  A trainer
/// lists its buffers (StateBuffers); its counters, random-stream positions and own tensors stay
/// in its own file.  The checkpoint format is TrainerState's (src/checkpoint/), unchanged by this.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/envs/vec_env.hpp"
#include "src/algos/trainer.hpp"

namespace gmi::algos {

/// A trainer's device buffers behind TrainerState's fields, each kept in the field of its name.
/// An empty view is a buffer the trainer does not have (its field stays empty and is not read).
struct StateBuffers {
  // ---- identical on every GMI: restored by load_shared_state ----
  View1<float> params, adam_m, adam_v;  ///< flat parameters and Adam moments
  View1<double> obs_rms, ret_rms;       ///< normaliser states (RunningMeanStd::state())
  // ---- this GMI's: restored by load_state only ----
  View1<float> obs;                 ///< [N][obs_dim]: the observation the next step starts from
  View1<float> return_acc;          ///< [N]: discounted return so far (zeroed by a fresh start)
  envs::VecEnvBase* env = nullptr;  ///< the envs (nullptr: none of its own, a multi-agent role)
};

/// save_state's copies: fences `space`, then every buffer of `b` and the envs' state on the host.
TrainerState save_buffers(const ExecSpace& space, const StateBuffers& b);
/// load_shared_state's copies: fences `space`, then the shared buffers from `s`; throws gmi::Error
/// naming a buffer whose size differs.
void load_shared_buffers(const ExecSpace& space, const StateBuffers& b, const TrainerState& s);
/// load_shared_state's fresh start: return accumulators zeroed, and new episodes in every env,
/// from episode index `first_episode`, their observations into b.obs.
void restart_episodes(const ExecSpace& space, const StateBuffers& b, std::uint64_t first_episode);
/// load_state's copies after load_shared_state: this GMI's buffers and the envs' state from `s`
/// (gmi::Error naming what is missing or of another size), then fences `space`.
void load_own_buffers(const ExecSpace& space, const StateBuffers& b, const TrainerState& s);

/// The tensor `name` of `s`, of `size` elements (any size: kAnySize, the reader checks it); throws
/// gmi::Error "`who` state: `name` missing or of the wrong size".
inline constexpr std::size_t kAnySize = ~std::size_t(0);
const std::vector<float>& required_tensor(const TrainerState& s, const std::string& name, std::size_t size,
                                          const std::string& who);
const std::vector<double>& required_tensor64(const TrainerState& s, const std::string& name, std::size_t size,
                                             const std::string& who);

}  // namespace gmi::algos
