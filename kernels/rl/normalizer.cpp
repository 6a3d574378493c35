#include "kernels/rl/normalizer.hpp"

namespace gmi::rl {

RunningMeanStd::RunningMeanStd(int dim)
    : dim_(dim), state_("gmi::rl::RunningMeanStd::state", 3 * std::size_t(dim)) {
  auto h = Kokkos::create_mirror_view(state_);
  for (int k = 0; k < dim; ++k) {
    h(k) = 0.0;
    h(dim + k) = 1.0;
    h(2 * dim + k) = 1e-4;
  }
  Kokkos::deep_copy(state_, h);
}

void RunningMeanStd::update(const ExecSpace& space, const float* X, std::int64_t n) {
  if (n <= 0) return;
  auto st = state_;
  const int d = dim_;
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  // One team per dimension: two-pass batch mean and variance, then Chan's merge.
  Kokkos::parallel_for(
      "gmi::rl::RunningMeanStd::update", Team(space, d, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team::member_type& team) {
        const int k = team.league_rank();
        double sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const std::int64_t i, double& s) { s += X[i * d + k]; }, sum);
        const double bmean = sum / double(n);
        double m2 = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const std::int64_t i, double& s) {
              const double dx = X[i * d + k] - bmean;
              s += dx * dx;
            },
            m2);
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          const double bvar = m2 / double(n);
          const double mean = st(k), var = st(d + k), count = st(2 * d + k);
          const double tot = count + double(n);
          const double delta = bmean - mean;
          st(k) = mean + delta * double(n) / tot;
          st(d + k) = (var * count + bvar * double(n) + delta * delta * count * double(n) / tot) / tot;
          st(2 * d + k) = tot;
        });
      });
}

void RunningMeanStd::normalize(const ExecSpace& space, const float* X, float* out, std::int64_t n,
                               float clip) const {
  const double* st = state_.data();
  const int d = dim_;
  Kokkos::parallel_for(
      "gmi::rl::RunningMeanStd::normalize",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n * d),
      KOKKOS_LAMBDA(const std::int64_t i) { out[i] = normalize_feature(X[i], st, d, int(i % d), clip); });
}

}  // namespace gmi::rl
