// The replay buffer (kernels/rl/replay.hpp): ring order and overwriting, consistent rows,
// reproducible and uniform sampling (a chi-square test), identical batches from device and host
// storage, and an exact save/restore.  Every transition's values encode its insertion number t,
// so a sampled row can be checked field by field against an independent host ring.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/rl/replay.hpp"

using namespace gmi;
using namespace gmi::rl;

namespace {

constexpr int kOd = 3, kAd = 2;

/// n transitions numbered t0, t0+1, ...: obs (t, t+.25, t+.5), action (-t, 2t), reward t/10,
/// next obs = obs + 1000, terminated every 7th.
struct Rows {
  View1<float> obs, act, rew, next;
  View1<std::uint8_t> term;
  Rows(int n, int t0) : obs("obs", n * kOd), act("act", n * kAd), rew("rew", n), next("next", n * kOd), term("term", n) {
    auto o = Kokkos::create_mirror_view(obs), a = Kokkos::create_mirror_view(act), r = Kokkos::create_mirror_view(rew),
         x = Kokkos::create_mirror_view(next);
    auto d = Kokkos::create_mirror_view(term);
    for (int i = 0; i < n; ++i) {
      const float t = float(t0 + i);
      for (int k = 0; k < kOd; ++k) o(i * kOd + k) = t + 0.25f * k, x(i * kOd + k) = t + 0.25f * k + 1000;
      a(i * kAd) = -t, a(i * kAd + 1) = 2 * t;
      r(i) = t / 10;
      d(i) = (t0 + i) % 7 == 0;
    }
    Kokkos::deep_copy(obs, o), Kokkos::deep_copy(act, a), Kokkos::deep_copy(rew, r), Kokkos::deep_copy(next, x);
    Kokkos::deep_copy(term, d);
  }
  void add_to(ReplayBuffer& b, int n) {
    b.add(ExecSpace(), n, obs.data(), act.data(), rew.data(), next.data(), term.data());
  }
};

struct HostBatch {
  std::vector<float> obs, act, rew, next;
  std::vector<std::uint8_t> term;
};

HostBatch to_host(const ReplayBatch& b) {
  HostBatch h;
  auto copy = [](auto& to, const auto& v) {
    auto m = Kokkos::create_mirror_view_and_copy(HostSpace(), v);
    to.assign(m.data(), m.data() + m.extent(0));
  };
  copy(h.obs, b.obs), copy(h.act, b.actions), copy(h.rew, b.rewards), copy(h.next, b.next_obs);
  copy(h.term, b.terminated);
  return h;
}

/// The insertion numbers of a batch, after checking every field of each row encodes the same one.
std::vector<int> numbers(const HostBatch& h) {
  std::vector<int> t(h.rew.size());
  for (std::size_t j = 0; j < t.size(); ++j) {
    t[j] = int(std::lround(h.obs[j * kOd]));
    for (int k = 0; k < kOd; ++k) {
      EXPECT_FLOAT_EQ(h.obs[j * kOd + k], t[j] + 0.25f * k);
      EXPECT_FLOAT_EQ(h.next[j * kOd + k], t[j] + 0.25f * k + 1000);
    }
    EXPECT_FLOAT_EQ(h.act[j * kAd], -float(t[j]));
    EXPECT_FLOAT_EQ(h.act[j * kAd + 1], 2.0f * t[j]);
    EXPECT_FLOAT_EQ(h.rew[j], float(t[j]) / 10);
    EXPECT_EQ(h.term[j], t[j] % 7 == 0);
  }
  return t;
}

}  // namespace

TEST(Replay, RingKeepsTheNewestAndRowsStayWhole) {
  for (ReplayStorage st : {ReplayStorage::device, ReplayStorage::host}) {
    ReplayBuffer b({kOd, kAd, 10}, st);
    Rows(4, 0).add_to(b, 4);
    EXPECT_EQ(b.size(), 4);
    EXPECT_EQ(b.cursor(), 4);
    ReplayBatch batch({kOd, kAd, 10}, 64);
    b.sample(ExecSpace(), 1, 0, batch);
    for (int t : numbers(to_host(batch))) EXPECT_TRUE(t >= 0 && t < 4) << t;
    // 4 + 9 = 13 added: the buffer holds 3..12, the add wrapped around the end.
    Rows(9, 4).add_to(b, 9);
    EXPECT_EQ(b.size(), 10);
    EXPECT_EQ(b.cursor(), 3);
    std::set<int> seen;
    for (int d = 0; d < 20; ++d) {
      b.sample(ExecSpace(), 1, d, batch);
      for (int t : numbers(to_host(batch))) seen.insert(t);
    }
    EXPECT_EQ(seen, std::set<int>({3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  }
}

TEST(Replay, SamplingIsReproducibleUniformAndTheSameForBothStorages) {
  const int C = 100, B = 1000, draws = 100;
  ReplayBuffer dev({kOd, kAd, C}, ReplayStorage::device), host({kOd, kAd, C}, ReplayStorage::host);
  Rows rows(C, 0);
  rows.add_to(dev, C);
  rows.add_to(host, C);
  ReplayBatch a({kOd, kAd, C}, B), b({kOd, kAd, C}, B);
  std::vector<double> count(C, 0.0);
  for (int d = 0; d < draws; ++d) {
    dev.sample(ExecSpace(), 42, d, a);
    host.sample(ExecSpace(), 42, d, b);
    const std::vector<int> ta = numbers(to_host(a)), tb = numbers(to_host(b));
    ASSERT_EQ(ta, tb) << "draw " << d;
    for (int t : ta) count[t] += 1;
  }
  dev.sample(ExecSpace(), 42, 7, a);
  const auto again = numbers(to_host(a));
  dev.sample(ExecSpace(), 42, 7, b);
  EXPECT_EQ(again, numbers(to_host(b)));        // the same (seed, draw): the same batch
  dev.sample(ExecSpace(), 43, 7, b);
  EXPECT_NE(again, numbers(to_host(b)));        // another seed: another batch
  // Chi-square over 100 cells of 1000 expected draws each; 99 degrees of freedom, p = 0.001 at 148.2.
  double chi2 = 0;
  const double expect = double(B) * draws / C;
  for (double c : count) chi2 += (c - expect) * (c - expect) / expect;
  EXPECT_LT(chi2, 148.2);
}

TEST(Replay, SaveAndRestoreSampleExactlyAsBefore) {
  for (ReplayStorage st : {ReplayStorage::device, ReplayStorage::host}) {
    const ReplaySpec spec{kOd, kAd, 16};
    ReplayBuffer a(spec, st);
    Rows(11, 0).add_to(a, 11);
    const ReplayState s = a.save_state(ExecSpace());
    EXPECT_EQ(s.size, 11);
    EXPECT_EQ(s.cursor, 11);
    ReplayBuffer b(spec, st == ReplayStorage::device ? ReplayStorage::host : ReplayStorage::device);
    b.load_state(ExecSpace(), s);
    // Both go on alike: 9 more (wrapping), then the same batches.
    Rows more(9, 11);
    more.add_to(a, 9);
    more.add_to(b, 9);
    ReplayBatch x(spec, 32), y(spec, 32);
    for (int d = 0; d < 5; ++d) {
      a.sample(ExecSpace(), 5, d, x);
      b.sample(ExecSpace(), 5, d, y);
      EXPECT_EQ(numbers(to_host(x)), numbers(to_host(y)));
    }
    ReplayState bad = s;
    bad.rewards.pop_back();
    EXPECT_THROW(b.load_state(ExecSpace(), bad), Error);
    bad = s;
    bad.cursor = 3;  // a partly filled buffer's cursor is its size
    EXPECT_THROW(b.load_state(ExecSpace(), bad), Error);
  }
}

TEST(Replay, BytesAndStorageNames) {
  EXPECT_DOUBLE_EQ(ReplayBuffer::bytes({4, 1, 1000000}), 1e6 * (4.0 * (2 * 4 + 1 + 1) + 1));
  EXPECT_EQ(parse_replay_storage("device", "replay.storage"), ReplayStorage::device);
  EXPECT_EQ(parse_replay_storage("host", "replay.storage"), ReplayStorage::host);
  try {
    parse_replay_storage("gpu", "replay.storage");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "replay.storage: expected device or host, got 'gpu'");
  }
}
