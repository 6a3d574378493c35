#include "kernels/rl/normalizer.hpp"

#include <algorithm>
#include <vector>

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

void RunningMeanStd::update(const ExecSpace& space, const float* X, std::int64_t n, const HostSum& sum) {
  const int d = dim_;
  // Per feature: the local sum and the sum of squares about the local mean (two passes).
  View1<double> part("gmi::rl::RunningMeanStd::part", 2 * std::size_t(d));
  using Team = Kokkos::TeamPolicy<ExecSpace>;
  if (n > 0)
    Kokkos::parallel_for(
        "gmi::rl::RunningMeanStd::batch_moments", Team(space, d, Kokkos::AUTO),
        KOKKOS_LAMBDA(const Team::member_type& team) {
          const int k = team.league_rank();
          double s = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, n), [&](const std::int64_t i, double& a) { a += X[i * d + k]; }, s);
          const double mean = s / double(n);
          double m2 = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, n),
              [&](const std::int64_t i, double& a) {
                const double dx = X[i * d + k] - mean;
                a += dx * dx;
              },
              m2);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            part(k) = s;
            part(d + k) = m2 + s * mean;  // sum of squares
          });
        });
  auto hp = Kokkos::create_mirror_view_and_copy(HostSpace(), part);
  std::vector<double> v(2 * std::size_t(d) + 1);
  for (int i = 0; i < 2 * d; ++i) v[i] = hp(i);
  v[2 * d] = double(n);
  sum(v.data(), int(v.size()));
  const double total = v[2 * d];
  if (total <= 0) return;
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), state_);
  for (int k = 0; k < d; ++k) {
    const double bmean = v[k] / total;
    const double bvar = std::max(0.0, v[d + k] / total - bmean * bmean);
    const double mean = h(k), var = h(d + k), count = h(2 * d + k);
    const double tot = count + total;
    const double delta = bmean - mean;
    h(k) = mean + delta * total / tot;
    h(d + k) = (var * count + bvar * total + delta * delta * count * total / tot) / tot;
    h(2 * d + k) = tot;
  }
  Kokkos::deep_copy(state_, h);
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
