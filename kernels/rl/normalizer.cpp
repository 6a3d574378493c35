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

namespace {

/// Chan et al.'s merge of a batch (mean bmean, variance bvar, n samples) into running statistics.
KOKKOS_INLINE_FUNCTION void merge(double& mean, double& var, double& count, double bmean, double bvar,
                                  double n) {
  const double tot = count + n;
  const double delta = bmean - mean;
  const double new_mean = mean + delta * n / tot;
  var = (var * count + bvar * n + delta * delta * count * n / tot) / tot;
  mean = new_mean;
  count = tot;
}

}  // namespace

void RunningMeanStd::update(const ExecSpace& space, const float* X, std::int64_t n, const HostSum& sum) {
  const bool local = !sum;
  if (local && n <= 0) return;
  auto st = state_;
  const int d = dim_;
  // Per feature, in one team: two-pass batch mean and variance; then Chan's merge right there, or
  // (with `sum`) the batch sum and sum of squares for the merge over the group.
  View1<double> part("gmi::rl::RunningMeanStd::part", local ? 0 : 2 * std::size_t(d));
  using Team = gmi::TeamPolicy;
  if (n > 0)
    Kokkos::parallel_for(
        "gmi::rl::RunningMeanStd::update", Team(space, d, Kokkos::AUTO),
        KOKKOS_LAMBDA(const Team::member_type& team) {
          const int k = team.league_rank();
          double s = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, n), [&](const std::int64_t i, double& a) { a += X[i * d + k]; }, s);
          const double bmean = s / double(n);
          double m2 = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, n),
              [&](const std::int64_t i, double& a) {
                const double dx = X[i * d + k] - bmean;
                a += dx * dx;
              },
              m2);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            if (local) {
              merge(st(k), st(d + k), st(2 * d + k), bmean, m2 / double(n), double(n));
            } else {
              part(k) = s;
              part(d + k) = m2 + s * bmean;  // sum of squares
            }
          });
        });
  if (local) return;
  auto hp = Kokkos::create_mirror_view_and_copy(HostSpace(), part);
  std::vector<double> v(2 * std::size_t(d) + 1, 0.0);
  if (n > 0)
    for (int i = 0; i < 2 * d; ++i) v[i] = hp(i);
  v[2 * d] = double(std::max<std::int64_t>(n, 0));
  sum(v.data(), int(v.size()));
  const double total = v[2 * d];
  if (total <= 0) return;
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), state_);
  for (int k = 0; k < d; ++k) {
    const double bmean = v[k] / total;
    merge(h(k), h(d + k), h(2 * d + k), bmean, std::max(0.0, v[d + k] / total - bmean * bmean), total);
  }
  Kokkos::deep_copy(state_, h);
}

void RunningMeanStd::normalize(const ExecSpace& space, const float* X, float* out, std::int64_t n,
                               float clip) const {
  const double* st = state_.data();
  const int d = dim_;
  Kokkos::parallel_for(
      "gmi::rl::RunningMeanStd::normalize",
      Range64(space, 0, n * d),
      KOKKOS_LAMBDA(const std::int64_t i) { out[i] = normalize_feature(X[i], st, d, int(i % d), clip); });
}

}  // namespace gmi::rl
