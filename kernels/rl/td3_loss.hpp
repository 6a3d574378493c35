#pragma once
/// \file
/// \brief TD3 on the device (Fujimoto et al. 2018; CleanRL td3_continuous_action.py): the
/// deterministic actor's actions with clipped Gaussian noise (exploration and target policy
/// smoothing), and the actor loss's gradient with respect to the actor's outputs.  The twin-Q
/// target and losses are SAC's without the entropy term (sac_critic_loss with no log_alpha).
///
/// The actor's output row for a state is mu (A values, linear); as CleanRL,
///   action = tanh(mu) * scale + bias + clamp(z * sigma, -clip, clip) * scale,  z ~ N(0, 1),
/// clipped to [low, high]: exploration has sigma = exploration_noise and no clip, the target
/// policy's smoothing sigma = policy_noise and clip = noise_clip.
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/rl/q_learning.hpp"
#include "kernels/rl/sac_loss.hpp"

namespace gmi::rl {

struct Td3ActionArgs {
  int B = 0;        ///< rows
  int act_dim = 0;  ///< A
  float sigma = 0;  ///< noise standard deviation in units of the action scale (0: the mean action)
  float clip = -1;  ///< the noise (before scaling) is clamped to [-clip, clip]; < 0: not clamped
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;  ///< low counter word; its low 4 bits are the block index (must be 0)
  /// Where set (device memory), the counter word is counter | *device_counter << 8 (captured launches).
  const std::int64_t* device_counter = nullptr;
  rng::Stream stream = rng::kAction;
  std::uint64_t index = 0;           ///< high counter index of row 0 (row i uses index + i)
  const float* actor_out = nullptr;  ///< [B][A] mu
  const float* scale = nullptr;      ///< [A] (high - low) / 2
  const float* bias = nullptr;       ///< [A] (high + low) / 2
  const float* low = nullptr;        ///< [A]
  const float* high = nullptr;       ///< [A]
  float* actions = nullptr;          ///< [B][A]
};

/// The actions above: z for row i, dimensions 4b..4b+3, from philox(seed, {counter | b,
/// tag(stream, index + i)}) through Box-Muller.
inline void td3_actions(const ExecSpace& space, const Td3ActionArgs& args) {
  const Td3ActionArgs a = args;
  Kokkos::parallel_for(
      "gmi::rl::td3_actions", Range(space, 0, a.B), KOKKOS_LAMBDA(const int i) {
        const int A = a.act_dim;
        const float* mu = a.actor_out + std::size_t(i) * A;
        const std::uint64_t hi = rng::tag(a.stream, a.index + std::uint64_t(i));
        const std::uint64_t counter =
            a.device_counter ? a.counter | (std::uint64_t(*a.device_counter) << 8) : a.counter;
        for (int j0 = 0; j0 < A; j0 += 4) {
          float z[4] = {0, 0, 0, 0};
          if (a.sigma > 0.0f) {
            const auto bits = rng::philox(a.seed, counter | std::uint64_t(j0 / 4), hi);
            rng::normal2(bits.v[0], bits.v[1], z[0], z[1]);
            rng::normal2(bits.v[2], bits.v[3], z[2], z[3]);
          }
          for (int k = 0; k < 4 && j0 + k < A; ++k) {
            const int j = j0 + k;
            float n = z[k] * a.sigma;
            if (a.clip >= 0.0f) n = math::clamp(n, -a.clip, a.clip);
            const float act = math::tanh(mu[j]) * a.scale[j] + a.bias[j] + n * a.scale[j];
            a.actions[std::size_t(i) * A + j] = math::clamp(act, a.low[j], a.high[j]);
          }
        }
      });
}

struct Td3ActorArgs {
  int B = 0;
  int act_dim = 0;
  int obs_dim = 0;                   ///< the Q input's action part starts here
  const float* actor_out = nullptr;  ///< [B][A] mu
  const float* scale = nullptr;      ///< [A]
  const float* q1 = nullptr;         ///< [B] Q1(s, pi(s))
  float* d_q1 = nullptr;             ///< [B] dL/dQ1 = -1/B
  const float* d_qin = nullptr;      ///< [B][obs_dim + A] dL/d(Q1 input), after the backward pass
  float* d_actor_out = nullptr;      ///< [B][A]
};

/// L = -mean(Q1(s, pi(s))), pi(s) = tanh(mu) * scale + bias: dL/dQ1 into d_q1; stats {L sum, 0, 0, 0}.
inline void td3_actor_q_grad(const ExecSpace& space, const Td3ActorArgs& args, Sums4* stats) {
  Kokkos::View<Sums4, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  const Td3ActorArgs a = args;
  Kokkos::parallel_reduce(
      "gmi::rl::td3_actor_q_grad", Range(space, 0, a.B),
      KOKKOS_LAMBDA(const int i, Sums4& s) {
        a.d_q1[i] = -1.0f / float(a.B);
        s.v[0] += -double(a.q1[i]);
      },
      Kokkos::Sum<Sums4, MemSpace>(r));
}

/// dL/dmu from dL/da (the action part of d_qin) through tanh and the scale.
inline void td3_actor_out_grad(const ExecSpace& space, const Td3ActorArgs& args) {
  const Td3ActorArgs a = args;
  Kokkos::parallel_for(
      "gmi::rl::td3_actor_out_grad", Range(space, 0, a.B), KOKKOS_LAMBDA(const int i) {
        const int A = a.act_dim, in = a.obs_dim + A;
        for (int j = 0; j < A; ++j) {
          const float y = math::tanh(a.actor_out[std::size_t(i) * A + j]);
          a.d_actor_out[std::size_t(i) * A + j] = a.d_qin[std::size_t(i) * in + a.obs_dim + j] * a.scale[j] * (1.0f - y * y);
        }
      });
}

}  // namespace gmi::rl
