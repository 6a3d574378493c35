#include "mpi/channel_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/core/error.hpp"

namespace gmi::mpi {

bool can_share(const PackageType& a, const PackageType& b) {
  return a.rows == b.rows;
}

double top_mov(const std::vector<PackageType>& types, const Grouping& groups) {
  if (groups.empty()) return 0.0;
  const double grp = double(groups.size());
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& g : groups) {
    double bytes = 0;
    for (int t : g) bytes += double(types[std::size_t(t)].bytes());
    worst = std::min(worst, bytes / (double(g.size()) * grp));
  }
  return worst;
}

namespace {

// Backtracking over restricted growth strings: type i joins one of the groups opened by types
// 0..i-1 (only one whose types it can share with) or opens a new one.  Every set partition is
// reached exactly once.
struct Search {
  const std::vector<PackageType>& types;
  Grouping current, best;
  double best_score = -1;
  long visited = 0;

  void run(std::size_t i) {
    if (i == types.size()) {
      ++visited;
      const double s = top_mov(types, current);
      const bool better = s > best_score * (1 + 1e-12) ||
                          (s >= best_score * (1 - 1e-12) && current.size() < best.size());
      if (best_score < 0 || better) {
        best_score = s;
        best = current;
      }
      return;
    }
    // By index: the recursion below opens groups, which may move `current`'s elements.
    for (std::size_t j = 0; j < current.size(); ++j) {
      if (!can_share(types[std::size_t(current[j].front())], types[i])) continue;
      current[j].push_back(int(i));
      run(i + 1);
      current[j].pop_back();
    }
    current.push_back({int(i)});
    run(i + 1);
    current.pop_back();
  }
};

std::string names(const std::vector<PackageType>& types) {
  std::string s;
  for (const auto& t : types) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

Grouping parse_list(const std::string& spec, const std::vector<PackageType>& types, const std::string& key) {
  Grouping groups;
  std::vector<int> seen(types.size(), 0);
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t end = std::min(spec.find(';', start), spec.size());
    std::vector<int> g;
    std::size_t a = start;
    while (a <= end) {
      const std::size_t b = std::min(spec.find(',', a), end);
      std::string name = spec.substr(a, b - a);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      const auto it = std::find_if(types.begin(), types.end(), [&](const PackageType& t) { return t.name == name; });
      if (it == types.end())
        throw InputError(fmt::format("{}: '{}' is not a package type here (expected auto, per-type, single, or "
                                     "groups of {} separated by ',' and ';')",
                                     key, name, names(types)));
      const int idx = int(it - types.begin());
      if (seen[std::size_t(idx)]++)
        throw InputError(fmt::format("{}: '{}' appears twice (expected every package type in exactly one channel)",
                                     key, name));
      g.push_back(idx);
      a = b + 1;
    }
    std::sort(g.begin(), g.end());
    groups.push_back(std::move(g));
    start = end + 1;
  }
  for (std::size_t i = 0; i < types.size(); ++i)
    if (!seen[i])
      throw InputError(fmt::format("{}: '{}' is in no channel (expected every package type in exactly one: {})",
                                   key, types[i].name, names(types)));
  std::sort(groups.begin(), groups.end());
  return groups;
}

}  // namespace

Grouping best_grouping(const std::vector<PackageType>& types, long* visited) {
  Search s{types, {}, {}, -1, 0};
  s.run(0);
  if (visited) *visited = s.visited;
  return s.best;
}

std::size_t ChannelPlan::step_bytes(const std::vector<PackageType>& types, std::size_t c) const {
  std::size_t b = 0;
  for (int t : groups[c]) b += types[std::size_t(t)].block_bytes();
  return b;
}

std::string ChannelPlan::channel_text(const std::vector<PackageType>& types, std::size_t c) const {
  std::string s;
  for (std::size_t k = 0; k < groups[c].size(); ++k) s += (k ? "+" : "") + types[std::size_t(groups[c][k])].name;
  return s;
}

std::string ChannelPlan::text(const std::vector<PackageType>& types) const {
  std::string s;
  for (std::size_t c = 0; c < groups.size(); ++c) s += (c ? " | " : "") + channel_text(types, c);
  return fmt::format("{}, {} step{} per transfer", s, steps, steps == 1 ? "" : "s");
}

double ChannelPlan::projected_bandwidth(const std::vector<PackageType>& types, const TransferCost& cost) const {
  double bytes = 0, seconds = 0;
  for (std::size_t c = 0; c < groups.size(); ++c) {
    const double b = double(step_bytes(types, c)) * steps;
    bytes += b;
    seconds += cost.seconds(b);
  }
  return seconds > 0 ? bytes / seconds : 0.0;
}

int choose_steps(const std::vector<PackageType>& types, const Grouping& groups, const TransferCost& cost,
                 int max_steps, double fraction, double max_message_bytes) {
  max_steps = std::max(1, max_steps);
  double smallest = std::numeric_limits<double>::infinity(), largest = 0;
  for (const auto& g : groups) {
    double b = 0;
    for (int t : g) b += double(types[std::size_t(t)].block_bytes());
    smallest = std::min(smallest, b);
    largest = std::max(largest, b);
  }
  // The most steps whose largest message stays within the cap (at least one).
  const int cap = int(std::clamp(std::floor(max_message_bytes / std::max(largest, 1.0)), 1.0, double(max_steps)));
  if (cost.seconds_per_byte <= 0) return cap;
  // A message of B bytes moves at fraction f of the asymptotic bandwidth when
  // B * s / (latency + B * s) >= f, i.e. B >= f / (1 - f) * latency / s.
  const double need = fraction / (1 - fraction) * cost.latency_s / cost.seconds_per_byte;
  for (int s = 1; s < cap; s *= 2)
    if (smallest * s >= need) return s;
  return cap;
}

ChannelPlan make_plan(const std::string& spec, const std::vector<PackageType>& types, int steps, int max_steps,
                      const TransferCost& cost, const std::string& key) {
  if (types.empty()) throw InputError(fmt::format("{}: there are no package types to plan", key));
  if (types.size() > 16)
    throw InputError(fmt::format("{}: {} package types (expected at most 16)", key, types.size()));
  ChannelPlan plan;
  if (spec == "auto") {
    plan.groups = best_grouping(types);
  } else if (spec == "per-type") {
    for (std::size_t i = 0; i < types.size(); ++i) plan.groups.push_back({int(i)});
  } else if (spec == "single") {
    plan.groups.emplace_back();
    for (std::size_t i = 0; i < types.size(); ++i) plan.groups.back().push_back(int(i));
  } else {
    plan.groups = parse_list(spec, types, key);
  }
  max_steps = std::max(1, max_steps);
  if (steps > max_steps)
    throw InputError(fmt::format("channels.steps_per_transfer: {} (expected at most {}, the steps the consumer "
                                 "takes at once)",
                                 steps, max_steps));
  plan.steps = steps > 0 ? steps : choose_steps(types, plan.groups, cost, max_steps);
  // One message is one MPI count of bytes: at most 1 GiB (and a GMI keeps several per channel).
  for (std::size_t c = 0; c < plan.groups.size(); ++c) {
    const double bytes = double(plan.step_bytes(types, c)) * plan.steps;
    if (bytes > double(1 << 30))
      throw InputError(fmt::format("channels.steps_per_transfer: {} steps make {:.0f} MiB messages on channel '{}' "
                                   "(expected at most 1024 MiB: at most {} steps)",
                                   plan.steps, bytes / (1 << 20), plan.channel_text(types, c),
                                   std::max<std::size_t>(1, (std::size_t(1) << 30) / plan.step_bytes(types, c))));
  }
  return plan;
}

}  // namespace gmi::mpi
