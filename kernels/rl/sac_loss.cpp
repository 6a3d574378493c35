// The SAC kernels SAC and TD3 share (kernels/rl/sac_loss.hpp), compiled once.
#include "kernels/rl/sac_loss.hpp"

namespace gmi::rl {

void uniform_actions(const ExecSpace& space, int N, int A, std::uint64_t seed, std::uint64_t step,
                     std::uint64_t env_offset, const float* low, const float* high, float* actions) {
  Kokkos::parallel_for(
      "gmi::rl::uniform_actions", Range(space, 0, N), KOKKOS_LAMBDA(const int i) {
        const std::uint64_t hi = rng::tag(rng::kExplore, env_offset + std::uint64_t(i));
        for (int j0 = 0; j0 < A; j0 += 4) {
          const auto bits = rng::philox(seed, (step << 8) | std::uint64_t(j0 / 4), hi);
          for (int k = 0; k < 4 && j0 + k < A; ++k)
            actions[std::size_t(i) * A + j0 + k] = rng::uniform(bits.v[k], low[j0 + k], high[j0 + k]);
        }
      });
}

void concat_rows(const ExecSpace& space, int B, const float* x, int dx, const float* y, int dy, float* out) {
  Kokkos::parallel_for(
      "gmi::rl::concat_rows", Range64(space, 0, std::int64_t(B) * (dx + dy)), KOKKOS_LAMBDA(const std::int64_t k) {
        const std::int64_t i = k / (dx + dy), c = k % (dx + dy);
        out[k] = c < dx ? x[i * dx + c] : y[i * dy + (c - dx)];
      });
}

void sac_critic_loss(const ExecSpace& space, const SacCriticArgs& args, Sums4* stats) {
  Kokkos::View<Sums4, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> r(stats);
  const SacCriticArgs a = args;
  Kokkos::parallel_reduce(
      "gmi::rl::sac_critic_loss", Range(space, 0, a.B),
      KOKKOS_LAMBDA(const int i, Sums4& s) {
        // TD3 (no log_alpha): no entropy term
        const float soft = a.log_alpha ? math::min(a.q1_next[i], a.q2_next[i]) - math::exp(*a.log_alpha) * a.logp_next[i]
                                       : math::min(a.q1_next[i], a.q2_next[i]);
        const float y = a.rewards[i] + (a.terminated[i] ? 0.0f : a.gamma * soft);
        const float e1 = a.q1[i] - y, e2 = a.q2[i] - y;
        a.d_q1[i] = 2.0f * e1 / float(a.B);
        a.d_q2[i] = 2.0f * e2 / float(a.B);
        s.v[0] += double(e1) * e1;
        s.v[1] += double(e2) * e2;
        s.v[2] += a.q1[i];
        s.v[3] += a.q2[i];
      },
      Kokkos::Sum<Sums4, MemSpace>(r));
}

}  // namespace gmi::rl
