#pragma once
/// \file
/// \brief Which experience packages share a channel, and how many steps go in one transfer
/// (paper 003 §3.2.2, the Packer's plan).  Pure functions: no MPI, so every plan can be tested
/// alone; mpi/channels.hpp moves the packages as a plan says.
///
/// A producer's experience of one step is split into typed *packages* (the Dispenser's work:
/// observations, actions, rewards, flags, ...).  Packages of one channel are concatenated into one
/// message, `steps` steps at a time.  The plan maximises TOP_mov (Eq. 6):
///
///     TOP_mov = min over channels i of  (sum of the package bytes of channel i) / (g_i * grp)
///
/// where g_i is the number of package types in channel i and grp the number of channels, subject to
/// Eq. 8: `auto` puts two types in one channel only when they have the same rows per step (a
/// channel's step is then one batch of rows, as the paper's concatenated tensors are).  Plans given
/// explicitly (`single`, a list) may group anything.  A channel's step holds its packages one block
/// after another, each block padded to 8 bytes, so every package starts aligned.  Groupings are enumerated as set partitions (restricted growth strings, each
/// partition once) with backtracking that never puts a type into a group it cannot join.  The steps
/// per transfer come from the transport's measured cost: the fewest steps at which every channel's
/// message reaches `fraction` of the link's asymptotic bandwidth.
#include <cstddef>
#include <string>
#include <vector>

namespace gmi::mpi {

/// One type of package: what a producer sends of each step.
struct PackageType {
  std::string name;       ///< "obs", "action", ...
  int rows = 1;           ///< rows per step (envs, or envs x agents)
  int row_bytes = 4;      ///< bytes per row
  int element_bytes = 4;  ///< size of the row's elements (4: float or int32, 1: flags); the
                          ///< package's start is aligned for them
  std::size_t bytes() const { return std::size_t(rows) * std::size_t(row_bytes); }
  /// Its block in a channel's step: bytes() padded to a multiple of 8.
  std::size_t block_bytes() const { return (bytes() + 7) / 8 * 8; }
};

/// Eq. 8: whether `auto` may put `a` and `b` in one channel (the same rows per step).
bool can_share(const PackageType& a, const PackageType& b);

/// Channels as lists of indices into the package types, each list ascending, lists ordered by their
/// first index.
using Grouping = std::vector<std::vector<int>>;

/// Eq. 6 for one grouping.
double top_mov(const std::vector<PackageType>& types, const Grouping& groups);

/// The grouping with the largest TOP_mov among those that satisfy Eq. 8 (ties: fewer channels, then
/// the first enumerated).  `visited`, when given, receives the number of valid groupings scored.
Grouping best_grouping(const std::vector<PackageType>& types, long* visited = nullptr);

/// Time to move `bytes` in one message: latency + bytes * seconds_per_byte (measured at start-up).
struct TransferCost {
  double latency_s = 5e-6;
  double seconds_per_byte = 1e-10;
  double seconds(double bytes) const { return latency_s + bytes * seconds_per_byte; }
};

/// The Packer's plan: which types share each channel, and how many steps one transfer carries.
struct ChannelPlan {
  Grouping groups;
  int steps = 1;
  /// Bytes of one step of channel `c` (its packages' blocks).
  std::size_t step_bytes(const std::vector<PackageType>& types, std::size_t c) const;
  /// "obs+next_obs": the types of channel `c`.
  std::string channel_text(const std::vector<PackageType>& types, std::size_t c) const;
  /// "obs+next_obs | terminated+truncated, 4 steps per transfer"
  std::string text(const std::vector<PackageType>& types) const;
  /// Projected bytes per second: one transfer of every channel, the channels one after another
  /// on the link.
  double projected_bandwidth(const std::vector<PackageType>& types, const TransferCost& cost) const;
};

/// The fewest steps (1, 2, 4, ... up to max_steps, and max_steps itself) at which every channel's
/// message of `groups` moves at >= `fraction` of the link's asymptotic bandwidth, but no more than
/// keep every message within `max_message_bytes` (at least 1 step): a small channel beside a large
/// one would otherwise make the large one's messages huge (the runners' packages of continuous Tag,
/// 3 MB a step, went 64 steps at a time for the sake of the 200-byte flags, at 0.37x the single
/// channel's bandwidth on an H100 machine).
int choose_steps(const std::vector<PackageType>& types, const Grouping& groups, const TransferCost& cost,
                 int max_steps, double fraction = 0.9, double max_message_bytes = 4 << 20);

/// The plan `spec` names (the `channels.plan` key):
///   auto      best_grouping()
///   per-type  one channel per type
///   single    one channel for all
///   a list    "obs,next_obs;action,reward;terminated,truncated": every type exactly once
/// `steps` > 0 fixes the steps per transfer (at most max_steps), 0 lets choose_steps() decide.
/// Throws gmi::InputError naming `key` (and the types) when the spec is not valid for `types`;
/// plans given explicitly need not satisfy Eq. 8.
ChannelPlan make_plan(const std::string& spec, const std::vector<PackageType>& types, int steps,
                      int max_steps, const TransferCost& cost, const std::string& key = "channels.plan");

}  // namespace gmi::mpi
