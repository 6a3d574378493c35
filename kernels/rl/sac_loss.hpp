#pragma once
/// \file
/// \brief Soft actor-critic on the device (Haarnoja et al. 2018; CleanRL sac_continuous_action.py):
/// the tanh-squashed Gaussian policy, the twin-Q target and losses, the actor loss's gradient with
/// respect to the actor's outputs (reparameterised), and the entropy coefficient's gradient.
///
/// The actor's output row for a state is [mean (A) | raw log-std (A)]; as CleanRL,
///   log_std = kLogStdMin + (kLogStdMax - kLogStdMin) * (tanh(raw) + 1) / 2,
///   x = mean + exp(log_std) * z, z ~ N(0, 1),   y = tanh(x),   action = y * scale + bias,
///   log pi = sum_j [ -z_j^2 / 2 - log_std_j - log(2 pi) / 2 - log(scale_j (1 - y_j^2) + 1e-6) ].
/// The quadratic term's total derivative through x = mean + std z is zero, so only -log_std and
/// the squashing term carry gradient (what autograd computes for CleanRL's rsample).
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/rl/heads.hpp"
#include "kernels/rl/q_learning.hpp"
#include "kernels/rl/sac_limits.hpp"

// The kernels SAC and TD3 share (uniform_actions, concat_rows, sac_critic_loss) are defined once,
// in sac_loss.cpp: an extended lambda in an inline function that several translation units
// instantiate may launch through a null host stub (nvcc), so shared launchers are not inline.

namespace gmi::rl {

constexpr float kLogStdMin = -5.0f, kLogStdMax = 2.0f;

KOKKOS_INLINE_FUNCTION float sac_log_std(float raw) {
  return kLogStdMin + 0.5f * (kLogStdMax - kLogStdMin) * (math::tanh(raw) + 1.0f);
}

struct SquashedGaussianArgs {
  int B = 0;        ///< rows
  int act_dim = 0;  ///< A
  bool deterministic = false;  ///< the mean action tanh(mean) * scale + bias, z = 0
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;  ///< low counter word; its low 4 bits are the block index (must be 0)
  /// Where set (device memory), the counter word is counter | *device_counter << 8, read when the
  /// kernel runs (launches captured once and replayed).
  const std::int64_t* device_counter = nullptr;
  rng::Stream stream = rng::kAction;
  std::uint64_t index = 0;    ///< high counter index of row 0 (row i uses index + i)
  const float* actor_out = nullptr;  ///< [B][2A]
  const float* scale = nullptr;      ///< [A] (high - low) / 2
  const float* bias = nullptr;       ///< [A] (high + low) / 2
  float* actions = nullptr;  ///< [B][A]
  float* logp = nullptr;     ///< [B] (nullptr: not wanted)
  float* noise = nullptr;    ///< [B][A] the z drawn (nullptr: not kept)
};

/// Sample (or take the mean of) the squashed Gaussian: z for row i, dimensions 4b..4b+3, from
/// philox(seed, {counter | b, tag(stream, index + i)}) through Box-Muller.
inline void squashed_gaussian(const ExecSpace& space, const SquashedGaussianArgs& args) {
  const SquashedGaussianArgs a = args;
  Kokkos::parallel_for(
      "gmi::rl::squashed_gaussian", Range(space, 0, a.B), KOKKOS_LAMBDA(const int i) {
        const int A = a.act_dim;
        const float* mean = a.actor_out + std::size_t(i) * 2 * A;
        const float* raw = mean + A;
        const std::uint64_t hi = rng::tag(a.stream, a.index + std::uint64_t(i));
        const std::uint64_t counter =
            a.device_counter ? a.counter | (std::uint64_t(*a.device_counter) << 8) : a.counter;
        float lp = 0;
        for (int j0 = 0; j0 < A; j0 += 4) {
          float z[4] = {0, 0, 0, 0};
          if (!a.deterministic) {
            const auto bits = rng::philox(a.seed, counter | std::uint64_t(j0 / 4), hi);
            rng::normal2(bits.v[0], bits.v[1], z[0], z[1]);
            rng::normal2(bits.v[2], bits.v[3], z[2], z[3]);
          }
          for (int k = 0; k < 4 && j0 + k < A; ++k) {
            const int j = j0 + k;
            const float log_std = sac_log_std(raw[j]);
            const float x = mean[j] + math::exp(log_std) * z[k];
            const float y = math::tanh(x);
            a.actions[std::size_t(i) * A + j] = y * a.scale[j] + a.bias[j];
            if (a.noise) a.noise[std::size_t(i) * A + j] = z[k];
            lp += -0.5f * z[k] * z[k] - log_std - float(kHalfLog2Pi) - math::log(a.scale[j] * (1.0f - y * y) + 1e-6f);
          }
        }
        if (a.logp) a.logp[i] = lp;
      });
}

/// Uniform actions in [low, high) per dimension (CleanRL's action_space.sample() before
/// learning starts): row i, dimensions 4b..4b+3 from philox(seed, {step << 8 | b, tag(kExplore,
/// env_offset + i)}).
void uniform_actions(const ExecSpace& space, int N, int A, std::uint64_t seed, std::uint64_t step,
                     std::uint64_t env_offset, const float* low, const float* high, float* actions);

/// out[i] = [x_i (dx values) | y_i (dy values)]: the Q networks' input (state, action).
void concat_rows(const ExecSpace& space, int B, const float* x, int dx, const float* y, int dy, float* out);

struct SacCriticArgs {
  int B = 0;
  float gamma = 0.99f;
  const float* log_alpha = nullptr;  ///< device scalar; nullptr: no entropy term (TD3)
  const float* q1 = nullptr;         ///< [B] Q1(s, a)
  const float* q2 = nullptr;
  const float* q1_next = nullptr;    ///< [B] target Q1(s', a'), a' ~ pi(s')
  const float* q2_next = nullptr;
  const float* logp_next = nullptr;  ///< [B] log pi(a'|s') (unread without log_alpha)
  const float* rewards = nullptr;
  const std::uint8_t* terminated = nullptr;
  float* d_q1 = nullptr;  ///< [B] dL/dQ1 of L = mse(Q1, y) + mse(Q2, y)
  float* d_q2 = nullptr;
};

/// y = r + gamma (1 - d) (min(Q1', Q2') - alpha log pi(a'|s')); stats {sum (Q1 - y)^2,
/// sum (Q2 - y)^2, sum Q1, sum Q2}.
void sac_critic_loss(const ExecSpace& space, const SacCriticArgs& args, Sums4* stats);

struct SacActorArgs {
  int B = 0;
  int act_dim = 0;
  int obs_dim = 0;                   ///< the Q input's action part starts here
  const float* log_alpha = nullptr;  ///< device scalar
  const float* actor_out = nullptr;  ///< [B][2A]
  const float* noise = nullptr;      ///< [B][A] the z of the sample
  const float* scale = nullptr;      ///< [A]
  const float* q1 = nullptr;         ///< [B] Q1(s, pi(s))
  const float* q2 = nullptr;
  const float* logp = nullptr;       ///< [B]
  float* d_q1 = nullptr;             ///< [B] dL/dQ1 (-1/B where Q1 is the minimum, -1/2B on a tie)
  float* d_q2 = nullptr;
  const float* d_qin1 = nullptr;     ///< [B][obs_dim + A] dL/d(Q1 input), after the backward pass
  const float* d_qin2 = nullptr;
  float* d_actor_out = nullptr;      ///< [B][2A]
};

/// L = mean(alpha log pi - min(Q1, Q2)) at a = pi(s): the gradient to send back through the Q
/// networks (d_q1, d_q2; as torch.min(a, b), i.e. torch.minimum: the whole gradient to the
/// smaller, half to each on a tie);
/// stats {sum (alpha log pi - min Q), sum log pi, 0, 0}.
inline void sac_actor_q_grad(const ExecSpace& space, const SacActorArgs& args, Sums4* stats) {
  Kokkos::View<Sums4, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  const SacActorArgs a = args;
  Kokkos::parallel_reduce(
      "gmi::rl::sac_actor_q_grad", Range(space, 0, a.B),
      KOKKOS_LAMBDA(const int i, Sums4& s) {
        const float alpha = math::exp(*a.log_alpha);
        const float g = -1.0f / float(a.B), q1 = a.q1[i], q2 = a.q2[i];
        a.d_q1[i] = q1 < q2 ? g : q1 == q2 ? 0.5f * g : 0.0f;
        a.d_q2[i] = q2 < q1 ? g : q1 == q2 ? 0.5f * g : 0.0f;
        s.v[0] += double(alpha * a.logp[i] - math::min(q1, q2));
        s.v[1] += a.logp[i];
      },
      Kokkos::Sum<Sums4, MemSpace>(r));
}

/// dL/d(actor outputs) of the actor loss, from dL/da (the action parts of d_qin1 + d_qin2) and
/// the alpha log pi term, through the squashing and the reparameterisation.
inline void sac_actor_out_grad(const ExecSpace& space, const SacActorArgs& args) {
  const SacActorArgs a = args;
  Kokkos::parallel_for(
      "gmi::rl::sac_actor_out_grad", Range(space, 0, a.B), KOKKOS_LAMBDA(const int i) {
        const int A = a.act_dim, in = a.obs_dim + A;
        const float c = math::exp(*a.log_alpha) / float(a.B);  // dL/dlogp for this row
        const float* mean = a.actor_out + std::size_t(i) * 2 * A;
        const float* raw = mean + A;
        float* dmean = a.d_actor_out + std::size_t(i) * 2 * A;
        float* draw = dmean + A;
        for (int j = 0; j < A; ++j) {
          const float z = a.noise[std::size_t(i) * A + j];
          const float log_std = sac_log_std(raw[j]), std = math::exp(log_std);
          const float y = math::tanh(mean[j] + std * z);
          const float s = a.scale[j], omy2 = 1.0f - y * y;
          const float da = a.d_qin1[std::size_t(i) * in + a.obs_dim + j] + a.d_qin2[std::size_t(i) * in + a.obs_dim + j];
          // d/dx of -log(s (1 - y^2) + 1e-6) = 2 s y (1 - y^2) / (s (1 - y^2) + 1e-6)
          const float dx = da * s * omy2 + c * 2.0f * s * y * omy2 / (s * omy2 + 1e-6f);
          const float dlog_std = -c + dx * std * z;
          const float t = math::tanh(raw[j]);
          dmean[j] = dx;
          draw[j] = dlog_std * 0.5f * (kLogStdMax - kLogStdMin) * (1.0f - t * t);
        }
      });
}

/// Entropy coefficient: L = mean(-exp(log_alpha) (log pi + target_entropy)), whose derivative
/// with respect to log_alpha is L itself.  Writes it to *grad and stats {L, 0, 0, 0}.
inline void sac_alpha_grad(const ExecSpace& space, int B, const float* logp, float target_entropy,
                           const float* log_alpha, float* grad, Sums4* stats) {
  Kokkos::View<Sums4, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  Kokkos::parallel_reduce(
      "gmi::rl::sac_alpha_loss", Range(space, 0, B),
      KOKKOS_LAMBDA(const int i, Sums4& s) {
        s.v[0] += -double(math::exp(*log_alpha)) * (double(logp[i]) + target_entropy) / B;
      },
      Kokkos::Sum<Sums4, MemSpace>(r));
  Kokkos::parallel_for(
      "gmi::rl::sac_alpha_grad", Range(space, 0, 1), KOKKOS_LAMBDA(const int) { *grad = float(stats->v[0]); });
}

}  // namespace gmi::rl
