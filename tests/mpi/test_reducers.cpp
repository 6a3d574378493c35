// Every gradient-reduction strategy on every layout a rank count allows (1-4 GPUs, 1-8 GMIs per
// GPU, uneven counts, one or two emulated nodes): the result equals the mean computed here in
// double from every rank's input, and all ranks end with identical bits.  Run under mpiexec.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "kernels/core/error.hpp"
#include "mpi/reducers.hpp"
#include "mpi/topology.hpp"
#include "tests/support/mpi_util.hpp"
#include "tests/support/test_util.hpp"

namespace gmi::mpi {
namespace {

float input(int rank, std::size_t i, int round) {
  const std::uint64_t h = (std::uint64_t(rank) * 7919u + i * 104729u + std::uint64_t(round) * 31u) % 1000u;
  return float(h) / 997.0f - 0.5f + float(rank);
}

struct Case {
  int gpus;
  int ranks_per_node;
};

// Host builds emulate 1-4 GPUs.  GPU builds lay the GMIs over exactly the GPUs the test main put
// the ranks on (GMI_TEST_GPUS: 1, every GMI on the test's GPU, or 2 for the *_2gpus entries; 0
// when the node shows fewer, and the tests skip): NCCL refuses two ranks of one communicator on
// one GPU, and a layout must match where the ranks really are.
#if defined(GMI_HAVE_CUDA)
constexpr bool kRealGpus = true;
#else
constexpr bool kRealGpus = false;
#endif
int max_test_gpus() { return test::test_gpus(4); }

std::vector<Case> cases(int W) {
  std::vector<Case> c;
  const int G = max_test_gpus();
  for (int g = kRealGpus ? G : 1; g <= std::min(W, G); ++g) {
    c.push_back({g, 0});
    if (!kRealGpus && W >= 4 && W % 2 == 0 && G > 1) c.push_back({g, W / 2});  // two emulated nodes
  }
  return c;
}

/// Reduce `n` floats `rounds` times with `r` and check every round; in the reducer's own
/// buffer (GradientReducer::buffer) when `in_buffer` and it has one.
void check(GradientReducer& r, int n, int rounds, const std::string& what, bool in_buffer = false) {
  int rank = 0, W = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  ExecSpace space;
  for (int round = 0; round < rounds; ++round) {
    std::vector<float> mine(n);
    for (int i = 0; i < n; ++i) mine[i] = input(rank, i, round);
    View1<float> d = test::to_device(mine);
    float* data = d.data();
    if (in_buffer && r.buffer()) {
      data = r.buffer();
      Kokkos::deep_copy(Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(data, n), d);
    }
    r.allreduce_mean(space, data, std::size_t(n));
    space.fence();
    const std::vector<float> got = test::to_host(data, std::size_t(n));
    int bad = 0;
    for (int i = 0; i < n && bad < 3; ++i) {
      double ref = 0;
      for (int q = 0; q < W; ++q) ref += input(q, i, round);
      ref /= W;
      if (std::fabs(got[i] - ref) > 1e-5 * (1.0 + std::fabs(ref))) {
        ADD_FAILURE() << what << " n=" << n << " round " << round << " element " << i << ": got "
                      << got[i] << ", mean " << ref;
        ++bad;
      }
    }
    EXPECT_TRUE(test::same_on_all_ranks(got)) << what << " n=" << n << ": ranks ended with different bits";
  }
}

TEST(Reducers, EveryStrategyOnEveryLayoutAveragesExactlyAndIdentically) {
  GMI_SKIP_WITHOUT_TEST_GPUS();
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  const std::vector<int> sizes = {1, 5, 1000, 65537};
  for (const Case& c : cases(W)) {
    const Layout L = plan_layout(gather_node_names(c.ranks_per_node), LayoutRequest{c.gpus, 0});
    Communicators comms(L);
    std::string shape;
    for (int m : L.gmis_per_gpu) shape += std::to_string(m) + " ";
    const std::string where = std::to_string(L.num_nodes) + " node(s), GMIs per GPU [ " + shape + "]";
    ReducerOptions o;
    o.elements = 65537;
    std::vector<std::pair<std::string, ReducerOptions>> strategies;
    strategies.push_back({"mpr", o});
    if (unsupported_reason(L, "mrr", o).empty()) strategies.push_back({"mrr", o});
    // har's IPC path with either synchronisation (device flags for GMIs that run side by side,
    // host barriers for time-sliced ones) and, with flags, either step among GPUs (rings where
    // the layout allows them, leaders); and the host-staged path.
    ReducerOptions ipc_flags = o, ipc_leaders = o, ipc_barriers = o, host = o;
    ipc_flags.intra_gpu = ipc_leaders.intra_gpu = ipc_barriers.intra_gpu = "ipc";
    ipc_flags.concurrent_gmis = ipc_leaders.concurrent_gmis = true;
    ipc_leaders.inter_gpu = "leaders";
    host.intra_gpu = "mpi";
    strategies.push_back({"har", ipc_flags});
    strategies.push_back({"har", ipc_leaders});
    strategies.push_back({"har", ipc_barriers});
    strategies.push_back({"har", host});
    for (int k = 1; k <= L.max_gmis_per_gpu(); ++k) {
      ReducerOptions h = o;
      h.hybrid_k = k;
      strategies.push_back({"hybrid", h});
    }
    for (auto& [s, opt] : strategies) {
      auto r = make_strategy(comms, s, opt);
      EXPECT_EQ(r->size(), W);
      const std::string what = r->name() + (opt.concurrent_gmis ? " with device flags" : "") + " on " + where;
      for (int n : sizes) check(*r, n, 2, what);
      // The reducer's own buffer (the trainer computes its gradient there), sizes that leave
      // slices of every GMI short or empty included.  Collective: GMIs alone on their GPU have
      // no buffer and reduce their own.
      if (opt.concurrent_gmis)
        for (int n : {1, 3, 65537}) check(*r, n, 3, what + ", in its buffer", true);
    }
    // auto measures, projects, picks one of the above.
    ReducerOptions a = o;
    a.auto_runs = 3;
    ReducerChoice choice = make_reducer(comms, a);
    ASSERT_TRUE(choice.reducer);
    EXPECT_FALSE(choice.projections.empty());
    for (std::size_t i = 1; i < choice.projections.size(); ++i)
      EXPECT_LE(choice.projections[i - 1].seconds, choice.projections[i].seconds);
    EXPECT_GE(choice.costs.ip, 0.0);
    check(*choice.reducer, 1000, 1, "auto (" + choice.reducer->name() + ") on " + where);
  }
}

/// make_reducer(comms, o) must fail with an InputError whose message contains `text`.
void expect_input_error(const Communicators& comms, const ReducerOptions& o, const std::string& text) {
  try {
    make_reducer(comms, o);
    ADD_FAILURE() << "expected an error containing '" << text << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(Reducers, ForcedStrategyTheLayoutCannotRunIsAnInputError) {
  if (kRealGpus && max_test_gpus() != 1) GTEST_SKIP() << "a one-GPU layout; the ranks are on several GPUs";
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  // All ranks on one GPU: mrr would put two ranks of one NCCL communicator on one GPU.
  const Layout L = plan_layout(gather_node_names(0), LayoutRequest{1, 0});
  Communicators comms(L);
  ReducerOptions o;
  o.strategy = "mrr";
  o.elements = 10;
  expect_input_error(comms, o, "reduce.strategy: mrr needs GMIs per GPU <= GPUs");
  o.strategy = "hybrid";
  o.hybrid_k = W + 1;
  EXPECT_THROW(make_reducer(comms, o), InputError);
  // har's rings need GMIs that synchronise on the device.
  o.strategy = "har";
  o.inter_gpu = "rings";
  o.concurrent_gmis = false;
  expect_input_error(comms, o, "reduce.inter_gpu: rings needs GMIs that run side by side");
}

TEST(Reducers, HarRunsRingsWhereTheLayoutAllowsThem) {
  int W = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  if (W < 4 || W % 2 != 0 || max_test_gpus() != (kRealGpus ? 2 : 4))
    GTEST_SKIP() << "needs an even rank count >= 4 on two GPUs (or emulated ones)";
  ReducerOptions o;
  o.elements = 100;
  o.concurrent_gmis = true;
  // Two GPUs with W/2 GMIs each: rings; forced leaders: not.
  const Layout even = plan_layout(gather_node_names(0), LayoutRequest{2, 0});
  Communicators ce(even);
  EXPECT_TRUE(har_uses_rings(even, o));
  EXPECT_EQ(make_strategy(ce, "har", o)->name(), "har (ipc, rings)");
  o.inter_gpu = "leaders";
  EXPECT_EQ(make_strategy(ce, "har", o)->name(), "har (ipc)");
  // Three GPUs: uneven GMI counts, so auto falls back to leaders and forced rings is an error.
  if (W % 3 != 0 && !kRealGpus) {
    const Layout uneven = plan_layout(gather_node_names(0), LayoutRequest{3, 0});
    Communicators cu(uneven);
    o.inter_gpu = "auto";
    EXPECT_FALSE(har_uses_rings(uneven, o));
    EXPECT_EQ(make_strategy(cu, "har", o)->name(), "har (ipc)");
    o.inter_gpu = "rings";
    EXPECT_THROW(make_strategy(cu, "har", o), InputError);
  }
}

TEST(Reducers, HostSumAddsOverAllGmis) {
  GMI_SKIP_WITHOUT_TEST_GPUS();
  int W = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Communicators comms(plan_layout(gather_node_names(0), LayoutRequest{kRealGpus ? max_test_gpus() : 2, 0}));
  ReducerOptions o;
  o.elements = 4;
  auto r = make_strategy(comms, "har", o);
  double v[2] = {1.0, double(rank)};
  r->allreduce_sum_host(v, 2);
  EXPECT_EQ(v[0], W);
  EXPECT_EQ(v[1], W * (W - 1) / 2.0);
}

}  // namespace
}  // namespace gmi::mpi
