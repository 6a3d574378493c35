// Experience channels (mpi/channel_plan.hpp, mpi/channels.hpp): the TOP_mov plan against a brute
// force over every labelling of the types, the plan's errors, and under mpiexec: every package
// arrives exactly once, in order per producer, byte for byte, for every plan; a slow consumer holds
// its producers back; a consumer that stops taking ends the wait with a line naming it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include "kernels/core/error.hpp"
#include "mpi/channels.hpp"
#include "mpi/deadline.hpp"
#include "mpi/mailbox.hpp"
#include "mpi/topology.hpp"

namespace gmi::mpi {
namespace {

std::vector<PackageType> off_policy_types(int envs, int obs, int act) {
  return {{"obs", envs, 4 * obs, 4},     {"action", envs, 4 * act, 4}, {"reward", envs, 4, 4},
          {"terminated", envs, 1, 1},    {"truncated", envs, 1, 1},    {"next_obs", envs, 4 * obs, 4}};
}

// Independent reference: every labelling of n types with labels 0..n-1, canonicalised, kept when
// every label's types can share; the best Eq. 6 score (computed here, not by top_mov).
double brute_force_best(const std::vector<PackageType>& types, long* partitions) {
  const int n = int(types.size());
  std::vector<int> label(std::size_t(n), 0);
  std::set<std::vector<int>> seen;
  double best = -1;
  for (;;) {
    std::map<int, int> rename;
    std::vector<int> canon(static_cast<std::size_t>(n), 0);
    for (int i = 0; i < n; ++i) canon[std::size_t(i)] = rename.emplace(label[std::size_t(i)], int(rename.size())).first->second;
    if (seen.insert(canon).second) {
      const int groups = int(rename.size());
      bool ok = true;
      double worst = 1e300;
      for (int g = 0; g < groups && ok; ++g) {
        double bytes = 0;
        int count = 0, first = -1;
        for (int i = 0; i < n; ++i) {
          if (canon[std::size_t(i)] != g) continue;
          if (first < 0) first = i;
          const auto& a = types[std::size_t(first)];
          const auto& b = types[std::size_t(i)];
          ok = ok && a.rows == b.rows;
          bytes += double(b.rows) * b.row_bytes;
          ++count;
        }
        worst = std::min(worst, bytes / (count * double(groups)));
      }
      if (ok) {
        best = std::max(best, worst);
        ++*partitions;
      }
    }
    int i = 0;
    while (i < n && ++label[std::size_t(i)] == n) label[std::size_t(i++)] = 0;
    if (i == n) break;
  }
  return best;
}

TEST(ChannelPlan, TopMovIsEquationSix) {
  const auto t = off_policy_types(64, 4, 2);  // obs 1024 B, action 512, reward 256, flags 64 each
  // {obs, action, reward, next_obs} and {terminated, truncated}: min(2816 / (4 * 2), 128 / (2 * 2)) = 32
  EXPECT_DOUBLE_EQ(top_mov(t, {{0, 1, 2, 5}, {3, 4}}), 32.0);
  EXPECT_DOUBLE_EQ(top_mov(t, {{0}, {1}, {2}, {3}, {4}, {5}}), 64.0 / 6);
}

TEST(ChannelPlan, AutoFindsTheBestGroupingTheBruteForceFinds) {
  const std::vector<std::vector<PackageType>> cases = {
      off_policy_types(64, 11, 3),
      {{"a", 8, 4, 4}, {"b", 8, 8, 4}, {"c", 8, 12, 4}, {"d", 8, 16, 4}, {"e", 8, 20, 4}},  // all can share
      // A multi-agent step: agent rows (envs x agents) and env rows differ.
      {{"obs", 400, 40, 4}, {"action", 400, 4, 4}, {"logp", 400, 4, 4}, {"value", 400, 4, 4},
       {"reward", 100, 4, 4}, {"done", 100, 1, 1}, {"state", 100, 64, 4}},
  };
  for (const auto& types : cases) {
    long visited = 0, reference = 0;
    const Grouping g = best_grouping(types, &visited);
    const double want = brute_force_best(types, &reference);
    EXPECT_DOUBLE_EQ(top_mov(types, g), want);
    EXPECT_EQ(visited, reference);  // each valid grouping scored exactly once
    for (const auto& group : g)
      for (int i : group) EXPECT_TRUE(can_share(types[std::size_t(group[0])], types[std::size_t(i)]));
  }
  // Five types that can all share: the Bell number B5 = 52 groupings, the single channel best;
  // the multi-agent step's two classes of 4 and 3 types: B4 x B3 = 15 x 5.
  long two_classes = 0;
  best_grouping(cases[2], &two_classes);
  EXPECT_EQ(two_classes, 75);
  const auto& five = cases[1];
  long visited = 0;
  EXPECT_EQ(best_grouping(five, &visited), (Grouping{{0, 1, 2, 3, 4}}));
  EXPECT_EQ(visited, 52);
  // The off-policy step: one channel.  The multi-agent step: the agents' rows, the envs' rows.
  EXPECT_EQ(best_grouping(cases[0]), (Grouping{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(best_grouping(cases[2]), (Grouping{{0, 1, 2, 3}, {4, 5, 6}}));
}

TEST(ChannelPlan, StepsReachTheAskedShareOfTheBandwidth) {
  const std::vector<PackageType> t = {{"x", 10, 8, 4}, {"y", 10, 4, 4}};  // 80 and 40 B a step
  TransferCost cost;
  cost.latency_s = 1e-6;
  cost.seconds_per_byte = 1e-9;  // 90 % of the bandwidth needs 9 * 1e-6 / 1e-9 = 9000 B a message
  // per-type: the smaller channel (40 B) needs 225 steps -> 256, capped by max_steps
  EXPECT_EQ(choose_steps(t, {{0}, {1}}, cost, 1024), 256);
  EXPECT_EQ(choose_steps(t, {{0}, {1}}, cost, 100), 100);
  EXPECT_EQ(choose_steps(t, {{0, 1}}, cost, 1024), 128);  // 120 B a step: 75 -> 128
  const ChannelPlan p = make_plan("auto", t, 0, 1024, cost);
  EXPECT_EQ(p.groups, (Grouping{{0, 1}}));
  EXPECT_EQ(p.steps, 128);
  EXPECT_EQ(p.text(t), "x+y, 128 steps per transfer");
  // 128 steps of 120 B = 15360 B in 1e-6 + 15.36e-6 s
  EXPECT_NEAR(p.projected_bandwidth(t, cost), 15360 / 16.36e-6, 1.0);
  // No message beyond the cap: 1 MB steps beside a 40-byte channel go 4 at a time, 100 kB ones 41
  // at a time under 4 MiB.
  const std::vector<PackageType> big = {{"big", 1000, 1000, 4}, {"small", 10, 4, 4}};
  EXPECT_EQ(choose_steps(big, {{0}, {1}}, cost, 1024), 4);
  const std::vector<PackageType> mid = {{"mid", 100, 1000, 4}, {"small", 10, 4, 4}};
  EXPECT_EQ(choose_steps(mid, {{0}, {1}}, cost, 1024), 41);
  // Blocks are padded to 8 bytes: 10 rows of 3 B take 32.
  EXPECT_EQ((PackageType{"z", 10, 3, 1}).block_bytes(), 32u);
}

TEST(ChannelPlan, BadPlansNameTheKeyAndTheTypes) {
  const auto t = off_policy_types(4, 3, 1);
  const TransferCost cost;
  const auto error = [&](const std::string& spec, int steps = 1) {
    try {
      make_plan(spec, t, steps, 8, cost);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("obs,next_obs;action,reward;terminated,truncated;velocity").find("'velocity' is not a package type"),
            std::string::npos);
  EXPECT_NE(error("obs,next_obs,obs;action,reward;terminated,truncated").find("'obs' appears twice"), std::string::npos);
  EXPECT_NE(error("obs,next_obs;action;terminated,truncated").find("'reward' is in no channel"), std::string::npos);
  EXPECT_NE(error("per-type", 9).find("channels.steps_per_transfer: 9 (expected at most 8"), std::string::npos);
  // One message is at most 1 GiB: 600 MB steps go one at a time.
  const std::vector<PackageType> huge = {{"frame", 600000, 1000, 4}};
  try {
    make_plan("auto", huge, 2, 8, cost);
    ADD_FAILURE() << "2 steps of 600 MB were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("channels.steps_per_transfer: 2 steps make 1144 MiB messages on channel "
                                         "'frame' (expected at most 1024 MiB: at most 1 steps)"),
              std::string::npos)
        << e.what();
  }
  const ChannelPlan ok = make_plan(" obs , next_obs;action,reward ;truncated,terminated", t, 2, 8, cost);
  EXPECT_EQ(ok.groups, (Grouping{{0, 5}, {1, 2}, {3, 4}}));
  EXPECT_EQ(ok.steps, 2);
  // Explicit plans may mix element sizes (auto never does): blocks padded to 8 bytes.
  const ChannelPlan single = make_plan("single", t, 1, 8, cost);
  EXPECT_EQ(single.groups, (Grouping{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(single.step_bytes(t, 0), 48u + 16 + 16 + 8 + 8 + 48);
}

// ---- under mpiexec ----

// The first max(1, size / 3) ranks consume; every other rank produces for one of them.
std::vector<Route> test_routes(int size) { return routes_to_first(size, std::max(1, size / 3)); }

std::uint8_t expected_byte(int producer, int step, std::size_t type, std::size_t i) {
  std::uint32_t h = 2166136261u;
  for (std::uint32_t v : {std::uint32_t(producer), std::uint32_t(step), std::uint32_t(type), std::uint32_t(i)})
    h = (h ^ v) * 16777619u;
  return std::uint8_t(h >> 13);
}

std::vector<std::vector<std::uint8_t>> step_packages(const std::vector<PackageType>& types, int producer, int step) {
  std::vector<std::vector<std::uint8_t>> p(types.size());
  for (std::size_t t = 0; t < types.size(); ++t) {
    p[t].resize(types[t].bytes());
    for (std::size_t i = 0; i < p[t].size(); ++i) p[t][i] = expected_byte(producer, step, t, i);
  }
  return p;
}

void push_step(ExperienceChannels& ch, int producer, int step) {
  const auto p = step_packages(ch.types(), producer, step);
  std::vector<const void*> ptrs;
  for (const auto& v : p) ptrs.push_back(v.data());
  ch.push(ptrs);
}

// The number of bytes of step `step` from `producer` that differ from what it sent.
long wrong_bytes(ExperienceChannels& ch, std::size_t k, int step) {
  const auto got = ch.next(k);
  long wrong = 0;
  for (std::size_t t = 0; t < ch.types().size(); ++t)
    for (std::size_t i = 0; i < ch.types()[t].bytes(); ++i)
      wrong += std::to_integer<std::uint8_t>(got[t][i]) != expected_byte(ch.producers()[k], step, t, i);
  return wrong;
}

TEST(Channels, EveryPackageArrivesOnceInOrderByteForByteForEveryPlan) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto types = off_policy_types(5, 3, 2);
  const auto routes = test_routes(size);
  const TransferCost cost = measure_transfer_cost(MPI_COMM_WORLD, routes, 3);
  EXPECT_GT(cost.latency_s, 0.0);
  const int steps = 11;
  for (const std::string spec : {"auto", "per-type", "single", "obs,next_obs,action,reward;terminated,truncated",
                                 "obs,terminated;next_obs,truncated,action;reward"})
    for (int per_transfer : {0, 1, 3, 4}) {
      const ChannelPlan plan = make_plan(spec, types, per_transfer, 4, cost);
      ExperienceChannels ch(MPI_COMM_WORLD, routes, types, plan, ChannelOptions{2});
      long wrong = 0;
      if (ch.is_producer()) {
        for (int s = 0; s < steps; ++s) push_step(ch, me, s);
        ch.drain();
        EXPECT_EQ(ch.stats().steps, std::uint64_t(steps));
        const std::uint64_t batches = (steps + plan.steps - 1) / plan.steps;
        EXPECT_EQ(ch.stats().messages, batches * plan.groups.size());
      }
      // Take the producers' steps interleaved, as a trainer would.
      for (int s = 0; s < steps; ++s) {
        for (std::size_t k = 0; k < ch.producers().size(); ++k) wrong += wrong_bytes(ch, k, s);
      }
      for (std::size_t k = 0; k < ch.producers().size(); ++k) {
        EXPECT_FALSE(ch.ready(k)) << "more than was sent";
      }
      EXPECT_EQ(wrong, 0) << spec << ", " << plan.steps << " steps per transfer";
      if (ch.is_consumer()) {
        EXPECT_EQ(ch.stats().steps, std::uint64_t(steps) * ch.producers().size());
      }
      barrier(MPI_COMM_WORLD, "test");  // no producer of the next plan before every consumer is done
    }
}

TEST(Channels, ASlowConsumerHoldsItsProducersBack) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto types = off_policy_types(4, 2, 1);
  const ChannelPlan plan = make_plan("per-type", types, 1, 1, TransferCost{});
  ExperienceChannels ch(MPI_COMM_WORLD, test_routes(size), types, plan, ChannelOptions{2});
  const int steps = 12;
  const double nap = 0.03;
  if (ch.is_producer()) {
    for (int s = 0; s < steps; ++s) push_step(ch, me, s);
    ch.drain();
    // At most 2 x max_in_flight ahead of what was taken (the next test counts it exactly): the
    // first 4 pushes need no taking, every other one waits for the consumer's naps.
    EXPECT_GT(ch.stats().wait_s, 0.5 * nap * (steps - 4));
  } else {
    long wrong = 0;
    for (int s = 0; s < steps; ++s)
      for (std::size_t k = 0; k < ch.producers().size(); ++k) {
        std::this_thread::sleep_for(std::chrono::duration<double>(nap));
        wrong += wrong_bytes(ch, k, s);
      }
    EXPECT_EQ(wrong, 0);
  }
}

// One buffer per lane: a consumer that polls ready() before every next() still gets every step.
TEST(Channels, OneBatchInFlightWithPolling) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto types = off_policy_types(3, 2, 1);
  ExperienceChannels ch(MPI_COMM_WORLD, test_routes(size), types, make_plan("auto", types, 1, 1, TransferCost{}),
                        ChannelOptions{1});
  const int steps = 6;
  long wrong = 0;
  if (ch.is_producer()) {
    for (int s = 0; s < steps; ++s) push_step(ch, me, s);
    ch.drain();
  }
  const Deadline clock;
  for (int s = 0; s < steps; ++s)
    for (std::size_t k = 0; k < ch.producers().size(); ++k) {
      while (!ch.ready(k) && clock.elapsed() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_TRUE(ch.ready(k)) << "step " << s << " of producer " << k << " never became ready";
      wrong += wrong_bytes(ch, k, s);
    }
  EXPECT_EQ(wrong, 0);
}

// room() says whether a push would wait: with one batch buffer, a producer whose consumer holds its
// first batch untaken has its second in flight and no room until the consumer takes the first.
TEST(Channels, RoomIsFalseWhileTheConsumerHoldsEveryBatch) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto types = off_policy_types(3, 2, 1);
  ExperienceChannels ch(MPI_COMM_WORLD, test_routes(size), types, make_plan("single", types, 1, 1, TransferCost{}),
                        ChannelOptions{1});
  if (ch.is_producer()) {
    EXPECT_TRUE(ch.room());
    push_step(ch, me, 0);  // matched by the consumer's posted receive
    push_step(ch, me, 1);  // in flight until the consumer takes step 0 and posts again
    EXPECT_FALSE(ch.room());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  long wrong = 0;
  for (int s = 0; s < 2; ++s)
    for (std::size_t k = 0; k < ch.producers().size(); ++k) wrong += wrong_bytes(ch, k, s);
  for (std::size_t k = 0; k < ch.producers().size(); ++k) ch.ready(k);  // post the next receives
  EXPECT_EQ(wrong, 0);
  if (ch.is_producer()) {
    const Deadline clock;
    while (!ch.room() && clock.elapsed() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(ch.room());
    ch.drain();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A synchronous mailbox counts what its receiver has not picked up; poll(from, tag) takes only
// that sender's messages with that tag, in the order sent.
TEST(Channels, MailboxSynchronousSendsStayInFlightUntilPolled) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  Mailbox box(true);
  if (me > 0) {
    box.post(0, 5, "first " + std::to_string(me));
    box.post(0, 5, "second " + std::to_string(me));
    EXPECT_EQ(box.in_flight(), 2u);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0)
    for (int from = size - 1; from > 0; --from) {
      EXPECT_FALSE(box.poll(from, 6).has_value());
      for (const char* word : {"first ", "second "}) {
        std::optional<Letter> l;
        const Deadline clock;
        while (!(l = box.poll(from, 5)) && clock.elapsed() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ASSERT_TRUE(l.has_value()) << "nothing from rank " << from;
        EXPECT_EQ(l->text, word + std::to_string(from));
        EXPECT_EQ(l->from, from);
      }
    }
  box.flush();
  EXPECT_EQ(box.in_flight(), 0u);
  MPI_Barrier(MPI_COMM_WORLD);
}

// Keep last: the only census of the process.  The consumers stop taking (alive, but busy): the
// producers' push waits run out after 1 s and the census ends every GMI's wait with a line that
// names the consumer and the batch it did not take.  Then the consumers take what was sent, so the
// producers can drain.
TEST(Channels, AConsumerThatStopsTakingIsNamed) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto types = off_policy_types(4, 2, 1);
  const ChannelPlan plan = make_plan("obs,action,reward,next_obs;terminated,truncated", types, 1, 1, TransferCost{});
  const auto routes = test_routes(size);
  ExperienceChannels ch(MPI_COMM_WORLD, routes, types, plan, ChannelOptions{2});
  const double saved = timeout();
  set_timeout(1.0);
  set_abort_on_timeout(false);
  std::string line;
  int pushed = 0;
  try {
    if (ch.is_producer()) {
      for (;; ++pushed) push_step(ch, me, pushed);
    } else {
      while (!interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      give_up("nothing in particular", {}, 0.0);
    }
  } catch (const TimeoutError& e) {
    line = e.what();
  }
  set_timeout(saved);
  set_abort_on_timeout(true);
  if (ch.is_producer()) {
    EXPECT_EQ(pushed, 4);  // 2 batches in the consumer's buffers and 2 sent but not matched
    const int lowest_producer = routes.front().producer;
    if (me == lowest_producer) {
      EXPECT_TRUE(std::regex_search(line, std::regex(R"(rank \d+ waited \d+\.\d s for rank \d+ to take batch 2 of channel 'obs\+action\+reward\+next_obs')")))
          << line;
    }
  }
  EXPECT_FALSE(line.empty());
  // After the census every bounded wait gives up at once (its census is seen): take and drain
  // without waiting.
  for (int s = 0; s < 4; ++s)
    for (std::size_t k = 0; k < ch.producers().size(); ++k) {
      while (!ch.ready(k)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_EQ(wrong_bytes(ch, k, s), 0);
    }
  if (ch.is_producer())
    while (!ch.drained()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace
}  // namespace gmi::mpi
