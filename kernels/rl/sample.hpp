#pragma once
/// \file
/// \brief Choosing actions from the policy's outputs on the device: sampled during a rollout, or
/// the distribution's mode (argmax of the logits, the Gaussian's mean) when deterministic.  Random bits for env
/// e at global step s come from philox(seed, {s << 8 | block, tag(kAction, e)}): cuRAND's Philox
/// on GPUs, Random123's on hosts.
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"
#include "kernels/rl/heads.hpp"

namespace gmi::rl {

struct SampleArgs {
  int N = 0;
  int num_actions = 0;  ///< > 0: categorical (logits per row, every group's)
  Categories categories;  ///< the categorical head's groups (act_dim of them: one action index each)
  int act_dim = 1;
  std::uint64_t seed = 0;
  std::uint64_t step = 0;        ///< global step index of this rollout step
  const std::uint64_t* step_base = nullptr;  ///< if set, the step is *step_base + step (device memory)
  std::uint64_t env_offset = 0;  ///< global index of env 0 of this rank
  bool clip_actions = true;
  bool deterministic = false;  ///< the mode instead of a sample (evaluation)
  const float* actor_out = nullptr;  ///< [N][out]
  const float* log_std = nullptr;    ///< [act_dim]
  const float* act_low = nullptr;    ///< [act_dim] action-space bounds (continuous)
  const float* act_high = nullptr;
  const float* critic_out = nullptr;  ///< [N] values (nullptr: none, with values nullptr)
  // outputs
  float* actions = nullptr;      ///< [N][act_dim] as chosen (stored for the update)
  float* env_actions = nullptr;  ///< [N][act_dim] sent to the env (clipped); may equal actions
  float* logp = nullptr;         ///< [N] (nullptr: not wanted)
  float* values = nullptr;       ///< [N] copy of critic_out into the rollout storage (or nullptr)
};

inline void sample_actions(const ExecSpace& space, const SampleArgs& args) {
  const SampleArgs a = args;
  Kokkos::parallel_for(
      "gmi::rl::sample_actions", Range(space, 0, a.N), KOKKOS_LAMBDA(const int i) {
        const std::uint64_t hi = rng::tag(rng::kAction, a.env_offset + i);
        const std::uint64_t step = a.step_base ? *a.step_base + a.step : a.step;
        if (a.values) a.values[i] = a.critic_out[i];
        if (a.num_actions > 0) {
          // Group g draws lane g % 4 of counter (step << 8 | g / 4), as the Gaussian's dimensions.
          const float* y = a.actor_out + std::size_t(i) * a.num_actions;
          const int G = a.categories.groups();
          float lp = 0;
          rng::Bits4 bits{};
          for (int g = 0, at = 0; g < G; ++g) {
            const int n = a.categories.size_of(g, a.num_actions);
            const float lse = logsumexp(y + at, n);
            int act = 0;
            if (a.deterministic) {
              for (int k = 1; k < n; ++k)
                if (y[at + k] > y[at + act]) act = k;
            } else {
              if (g % 4 == 0) bits = rng::philox(a.seed, (step << 8) | std::uint64_t(g / 4), hi);
              act = categorical_sample(y + at, n, lse, rng::uniform01(bits.v[g % 4]));
            }
            a.actions[std::size_t(i) * G + g] = float(act);
            if (a.env_actions != a.actions) a.env_actions[std::size_t(i) * G + g] = float(act);
            lp += y[at + act] - lse;
            at += n;
          }
          if (a.logp) a.logp[i] = lp;
        } else {
          const float* mean = a.actor_out + std::size_t(i) * a.act_dim;
          float* out = a.actions + std::size_t(i) * a.act_dim;
          float* env_out = a.env_actions + std::size_t(i) * a.act_dim;
          float lp = 0;
          for (int j0 = 0; j0 < a.act_dim; j0 += 4) {
            const auto bits = rng::philox(a.seed, (step << 8) | std::uint64_t(j0 / 4), hi);
            float z[4] = {0, 0, 0, 0};
            if (!a.deterministic) {
              rng::normal2(bits.v[0], bits.v[1], z[0], z[1]);
              rng::normal2(bits.v[2], bits.v[3], z[2], z[3]);
            }
            for (int k = 0; k < 4 && j0 + k < a.act_dim; ++k) {
              const int j = j0 + k;
              const float act = mean[j] + math::exp(a.log_std[j]) * z[k];
              out[j] = act;
              env_out[j] = a.clip_actions ? math::clamp(act, a.act_low[j], a.act_high[j]) : act;
              lp += -0.5f * z[k] * z[k] - a.log_std[j] - float(kHalfLog2Pi);
            }
          }
          if (a.logp) a.logp[i] = lp;
        }
      });
}

}  // namespace gmi::rl
