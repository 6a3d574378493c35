#pragma once
/// \file
/// \brief DQN on the device (CleanRL dqn.py, with double and dueling options): epsilon-greedy
/// actions from a Q network's outputs, and the TD loss of a sampled batch with its gradient with
/// respect to the network outputs.
///
/// A Q network's output row for one state has n values Q(s, a), or with the dueling head 1 + n
/// values [V, A_0 .. A_{n-1}] read as Q(s, a) = V + A_a - mean_b A_b (Wang et al. 2016, their
/// Eq. 9; V and A are linear heads on the last hidden layer).  Rows are contiguous per state
/// ([B][out], the MLP's layout).
///
///   y   = r + gamma * (1 - terminated) * Q_target(s', a*),
///   a*  = argmax_a Q_target(s', a)          (DQN), or argmax_a Q(s', a)   (double DQN)
///   L   = mean_i (Q(s_i, a_i) - y_i)^2       (F.mse_loss, as CleanRL; y carries no gradient)
#include <cstdint>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"

namespace gmi::rl {

/// Per-update sums of an off-policy loss (divide by the batch for means): up to four values,
/// each algorithm naming its own.
struct Sums4 {
  double v[4] = {0, 0, 0, 0};
  KOKKOS_INLINE_FUNCTION Sums4() {}
  KOKKOS_INLINE_FUNCTION void operator+=(const Sums4& o) {
    for (int k = 0; k < 4; ++k) v[k] += o.v[k];
  }
  // Kokkos 3.4 joins reductions through volatile references.
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile Sums4& o) volatile {
    for (int k = 0; k < 4; ++k) v[k] += o.v[k];
  }
};

}  // namespace gmi::rl

namespace Kokkos {
template <>
struct reduction_identity<gmi::rl::Sums4> {
  KOKKOS_FORCEINLINE_FUNCTION static gmi::rl::Sums4 sum() { return gmi::rl::Sums4(); }
};
}  // namespace Kokkos

namespace gmi::rl {

/// Width of a Q network's output for n actions.
KOKKOS_INLINE_FUNCTION int q_outputs(int n, bool dueling) { return dueling ? n + 1 : n; }

/// Q(s, a) from one output row.
KOKKOS_INLINE_FUNCTION float q_value(const float* y, int n, bool dueling, int a) {
  if (!dueling) return y[a];
  float mean = 0;
  for (int k = 0; k < n; ++k) mean += y[1 + k];
  return y[0] + y[1 + a] - mean / float(n);
}

/// argmax_a Q(s, a) (the first of equal maxima, as torch.argmax).  With the dueling head the
/// argmax of Q is the argmax of A.
KOKKOS_INLINE_FUNCTION int q_argmax(const float* y, int n, bool dueling) {
  const float* q = dueling ? y + 1 : y;
  int best = 0;
  for (int k = 1; k < n; ++k)
    if (q[k] > q[best]) best = k;
  return best;
}

struct EpsilonGreedyArgs {
  int N = 0;                  ///< environments
  int num_actions = 0;
  bool dueling = false;
  float epsilon = 0;          ///< probability of a uniformly random action
  std::uint64_t seed = 0;
  std::uint64_t step = 0;     ///< global vector-step index (the same on every GMI)
  std::uint64_t env_offset = 0;  ///< global index of env 0 of this GMI
  const float* q_out = nullptr;  ///< [N][out]
  float* actions = nullptr;      ///< [N] exact float indices
};

/// With probability epsilon a uniform action, else the greedy one; bits from
/// philox(seed, {step << 8, tag(kExplore, env)}).
inline void epsilon_greedy(const ExecSpace& space, const EpsilonGreedyArgs& args) {
  const EpsilonGreedyArgs a = args;
  Kokkos::parallel_for(
      "gmi::rl::epsilon_greedy", Range(space, 0, a.N), KOKKOS_LAMBDA(const int i) {
        const auto bits = rng::philox(a.seed, a.step << 8, rng::tag(rng::kExplore, a.env_offset + i));
        int act;
        if (rng::uniform01(bits.v[0]) < a.epsilon) {
          act = int(rng::uniform01(bits.v[1]) * float(a.num_actions));
          if (act >= a.num_actions) act = a.num_actions - 1;
        } else {
          act = q_argmax(a.q_out + std::size_t(i) * q_outputs(a.num_actions, a.dueling), a.num_actions, a.dueling);
        }
        a.actions[i] = float(act);
      });
}

struct DqnLossArgs {
  int B = 0;
  int num_actions = 0;
  bool dueling = false;
  bool double_q = false;
  float gamma = 0.99f;
  const float* q_out = nullptr;        ///< [B][out] online network at s (kept for the backward pass)
  const float* next_target = nullptr;  ///< [B][out] target network at s'
  const float* next_online = nullptr;  ///< [B][out] online network at s' (double DQN only)
  const float* actions = nullptr;      ///< [B] exact float indices
  const float* rewards = nullptr;      ///< [B]
  const std::uint8_t* terminated = nullptr;  ///< [B]
  float* d_out = nullptr;              ///< [B][out] dL/d(outputs at s)
};

/// The TD loss's gradient with respect to the online outputs; stats (device memory) receives
/// {sum of squared TD errors, sum of Q(s, a), sum of targets y, 0}.
inline void dqn_loss(const ExecSpace& space, const DqnLossArgs& args, Sums4* stats) {
  Kokkos::View<Sums4, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  const DqnLossArgs a = args;
  Kokkos::parallel_reduce(
      "gmi::rl::dqn_loss", Range(space, 0, a.B),
      KOKKOS_LAMBDA(const int i, Sums4& s) {
        const int n = a.num_actions, out = q_outputs(n, a.dueling);
        const std::size_t row = std::size_t(i) * out;
        const int next = q_argmax(a.double_q ? a.next_online + row : a.next_target + row, n, a.dueling);
        const float boot = a.terminated[i] ? 0.0f : a.gamma * q_value(a.next_target + row, n, a.dueling, next);
        const float y = a.rewards[i] + boot;
        const int act = int(a.actions[i]);
        const float q = q_value(a.q_out + row, n, a.dueling, act);
        const float g = 2.0f * (q - y) / float(a.B);  // dL/dQ(s, a)
        float* d = a.d_out + row;
        if (!a.dueling) {
          for (int k = 0; k < n; ++k) d[k] = k == act ? g : 0.0f;
        } else {
          // Q_a = V + A_a - mean(A): dQ_a/dV = 1, dQ_a/dA_k = [k == a] - 1/n
          d[0] = g;
          for (int k = 0; k < n; ++k) d[1 + k] = g * ((k == act ? 1.0f : 0.0f) - 1.0f / float(n));
        }
        s.v[0] += double(q - y) * double(q - y);
        s.v[1] += double(q);
        s.v[2] += double(y);
      },
      Kokkos::Sum<Sums4, MemSpace>(r));
}

}  // namespace gmi::rl
