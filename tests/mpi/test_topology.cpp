// GMI placement (mpi/topology, src/gmi/session): which node, GPU and slot each rank gets, which
// strategies a layout can run, and each GMI's MPS settings.  Pure functions: no MPI needed.
#include <gtest/gtest.h>

#include "kernels/core/error.hpp"
#include "mpi/reducers.hpp"
#include "mpi/topology.hpp"
#include "src/gmi/session.hpp"

namespace gmi::mpi {
namespace {

std::vector<std::string> same_node(int n) { return std::vector<std::string>(n, "a"); }

TEST(Topology, EvenLayoutIsGpuMajorWithContiguousRanks) {
  LayoutRequest req{2, 0};
  const Layout L = plan_layout(same_node(8), req);
  EXPECT_EQ(L.num_nodes, 1);
  EXPECT_EQ(L.num_gpus, 2);
  EXPECT_EQ(L.gmis_per_gpu, (std::vector<int>{4, 4}));
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(L.places[r].gpu, r / 4);
    EXPECT_EQ(L.places[r].slot, r % 4);
    EXPECT_EQ(L.places[r].gmi_rank, r);
  }
  EXPECT_EQ(L.world_rank_of(1, 2), 6);
  EXPECT_EQ(L.world_rank_of(2, 0), -1);
}

TEST(Topology, UnevenRanksGiveTheFirstGpusOneMore) {
  const Layout L = plan_layout(same_node(7), LayoutRequest{3, 0});
  EXPECT_EQ(L.gmis_per_gpu, (std::vector<int>{3, 2, 2}));
  EXPECT_EQ(L.places[3].gpu, 1);
  EXPECT_EQ(L.places[3].slot, 0);
  EXPECT_EQ(L.max_gmis_per_gpu(), 3);
}

TEST(Topology, FewerRanksThanGpusUseOneGpuEach) {
  const Layout L = plan_layout(same_node(2), LayoutRequest{4, 0});
  EXPECT_EQ(L.num_gpus, 2);
  EXPECT_EQ(L.gmis_per_gpu, (std::vector<int>{1, 1}));
}

TEST(Topology, RoundRobinMappedNodesStillGetContiguousGmiRanks) {
  // mpirun --map-by node: world ranks alternate between hosts.
  const std::vector<std::string> names = {"h0", "h1", "h0", "h1", "h0", "h1"};
  const Layout L = plan_layout(names, LayoutRequest{1, 0});
  EXPECT_EQ(L.num_nodes, 2);
  EXPECT_EQ(L.gmis_per_gpu, (std::vector<int>{3, 3}));
  EXPECT_EQ(L.places[0].gmi_rank, 0);  // world rank 0 stays rank 0 (it logs)
  EXPECT_EQ(L.places[2].gmi_rank, 1);
  EXPECT_EQ(L.places[4].gmi_rank, 2);
  EXPECT_EQ(L.places[1].gmi_rank, 3);
  EXPECT_EQ(L.places[1].node, 1);
  EXPECT_EQ(L.places[1].global_gpu, 1);
  EXPECT_EQ(L.places[5].slot, 2);
}

TEST(Topology, SubLayoutRenumbersTheMembersAsIfTheyWereTheJob) {
  // Two hosts, round robin (world ranks alternate), 2 GPUs each with 2 GMIs; the members are the
  // last slot of every GPU (the trainers of e-at with one per GPU).
  const std::vector<std::string> names = {"h0", "h1", "h0", "h1", "h0", "h1", "h0", "h1"};
  const Layout L = plan_layout(names, LayoutRequest{2, 0});
  std::vector<int> last;
  for (int r = 0; r < L.size(); ++r)
    if (L.places[r].slot == 1) last.push_back(r);
  const Layout S = sub_layout(L, {last[3], last[0], last[2], last[1]});  // any order in
  EXPECT_EQ(S.size(), 4);
  EXPECT_EQ(S.num_nodes, 2);
  EXPECT_EQ(S.num_gpus, 4);
  EXPECT_EQ(S.gmis_per_gpu, (std::vector<int>{1, 1, 1, 1}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(S.places[i].gmi_rank, i);  // ordered by the full layout's GMI rank
    EXPECT_EQ(S.places[i].slot, 0);
    EXPECT_EQ(S.places[i].global_gpu, i);
    EXPECT_EQ(S.places[i].node, i / 2);
    EXPECT_EQ(S.places[i].local_rank, i % 2);
    EXPECT_EQ(S.places[i].gpu, i % 2);  // the CUDA device stays the member's
  }
  // Several members on one GPU keep their slot order.
  const Layout T = sub_layout(plan_layout(same_node(6), LayoutRequest{1, 0}), {5, 2, 4});
  EXPECT_EQ(T.gmis_per_gpu, (std::vector<int>{3}));
  EXPECT_EQ(T.places[0].slot, 0);
  EXPECT_EQ(T.places[2].slot, 2);
  EXPECT_EQ(T.max_gmis_per_gpu(), 3);
}

TEST(Topology, PerGpuMustMatchTheRanksOnEachNode) {
  EXPECT_NO_THROW(plan_layout(same_node(8), LayoutRequest{2, 4}));
  try {
    plan_layout(same_node(6), LayoutRequest{2, 4});
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("gmi.per_gpu: 4 GMIs per GPU x 2 GPUs per node needs 8 ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(Topology, MultiRingNeedsDistinctGpuRepresentatives) {
  // 2 GPUs x 2 GMIs: rings {g0,g1} twice -> representatives on different GPUs.
  Layout L = plan_layout(same_node(4), LayoutRequest{2, 0});
  auto rep = ring_representatives(L);
  ASSERT_EQ(rep.size(), 2u);
  EXPECT_NE(rep[0], rep[1]);
  EXPECT_EQ(unsupported_reason(L, "mrr", {}), "");
  // 1 GPU x 2 GMIs: NCCL cannot put both rings' results on one GPU.
  L = plan_layout(same_node(2), LayoutRequest{1, 0});
  EXPECT_TRUE(ring_representatives(L).empty());
  EXPECT_NE(unsupported_reason(L, "mrr", {}).find("GMIs per GPU <= GPUs"), std::string::npos);
  // Uneven 3 GPUs with 2,1,1 GMIs: ring 1 = {g0} must take g0, ring 0 another GPU.
  L = plan_layout(same_node(4), LayoutRequest{3, 0});
  ASSERT_EQ(L.gmis_per_gpu, (std::vector<int>{2, 1, 1}));
  rep = ring_representatives(L);
  ASSERT_EQ(rep.size(), 2u);
  EXPECT_EQ(rep[1], 0);
  EXPECT_NE(rep[0], 0);
  // 2 GPUs with 3 and 2 GMIs: 3 rings, 2 GPUs.
  L = plan_layout(same_node(5), LayoutRequest{2, 0});
  EXPECT_TRUE(ring_representatives(L).empty());
}

TEST(Topology, HybridKMustNotExceedGmisPerGpu) {
  const Layout L = plan_layout(same_node(4), LayoutRequest{2, 0});
  ReducerOptions o;
  o.hybrid_k = 2;
  EXPECT_EQ(unsupported_reason(L, "hybrid", o), "");
  o.hybrid_k = 3;
  EXPECT_NE(unsupported_reason(L, "hybrid", o).find("reduce.hybrid_k: 3 exceeds the 2 GMIs per GPU"),
            std::string::npos);
  EXPECT_EQ(unsupported_reason(L, "mpr", o), "");
  EXPECT_EQ(unsupported_reason(L, "har", o), "");
}

TEST(GmiSettings, SmShareDefaultsToAnEvenSplitPerGpu) {
  const Layout L = plan_layout(same_node(5), LayoutRequest{2, 0});  // 3 + 2 GMIs
  config::GmiConfig g;
  g.backend = "mps";
  EXPECT_EQ(instances::settings_for(g, L, L.places[0], true).sm_share, 33);
  EXPECT_EQ(instances::settings_for(g, L, L.places[4], true).sm_share, 50);
  EXPECT_EQ(instances::settings_for(g, L, L.places[4], true).device_id, 1);
  g.sm_share = {40};
  EXPECT_EQ(instances::settings_for(g, L, L.places[2], true).sm_share, 40);
  g.sm_share = {60, 40};
  EXPECT_EQ(instances::settings_for(g, L, L.places[4], true).sm_share, 40);
  EXPECT_THROW(instances::settings_for(g, L, L.places[0], true), InputError);  // 2 values, 3 GMIs
}

TEST(GmiSettings, AutoBackendIsMpsOnlyForSharedGpusOfCudaBuilds) {
  config::GmiConfig g;
  Layout L = plan_layout(same_node(4), LayoutRequest{2, 0});
  EXPECT_EQ(instances::settings_for(g, L, L.places[0], true).backend, "mps");
  EXPECT_EQ(instances::settings_for(g, L, L.places[0], false).backend, "none");
  L = plan_layout(same_node(2), LayoutRequest{2, 0});
  EXPECT_EQ(instances::settings_for(g, L, L.places[0], true).backend, "none");
  g.backend = "mig";
  EXPECT_THROW(instances::settings_for(g, L, L.places[0], false), InputError);
  EXPECT_EQ(instances::settings_for(g, L, L.places[1], true).device_id, 0);  // its own MIG device
}

}  // namespace
}  // namespace gmi::mpi
