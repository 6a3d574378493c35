// Task-aware mapping (src/gmi/roles.hpp): every template's roles and routes on 1-4 GPUs x 2-8 GMIs
// (uneven layouts included), the role table, and the layouts a template cannot use.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "kernels/core/error.hpp"
#include "src/gmi/roles.hpp"

namespace gmi::instances {
namespace {

mpi::Layout layout(int ranks, int gpus) {
  return mpi::plan_layout(std::vector<std::string>(std::size_t(ranks), "node0"), mpi::LayoutRequest{gpus, 0});
}

std::string error_of(const mpi::Layout& l, const MappingRequest& m) {
  try {
    plan_roles(l, m);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Roles, DpGivesEveryGmiEveryRoleAndNoRoutes) {
  const RolePlan p = plan_roles(layout(4, 2), {"dp", 1, 1});
  EXPECT_EQ(p.roles, std::vector<unsigned>(4, kSimulator | kAgent | kTrainer));
  EXPECT_TRUE(p.routes.empty());
  EXPECT_FALSE(p.serving);
  EXPECT_EQ(role_text(kAgent | kTrainer), "A+T");
}

TEST(Roles, TemplatesOnTwoGpusOfFourGmis) {
  const mpi::Layout l = layout(8, 2);  // GPU 0: ranks 0-3, GPU 1: ranks 4-7
  const unsigned EA = kSimulator | kAgent, E = kSimulator, A = kAgent, T = kTrainer, AT = kAgent | kTrainer;
  // ea-t and async: trainers on each GPU's first slots (rank 0 trains, and writes the run's
  // metrics), the simulator+agent GMIs dealt to them in turn
  RolePlan p = plan_roles(l, {"ea-t", 1, 1});
  EXPECT_EQ(p.roles, (std::vector<unsigned>{T, EA, EA, EA, T, EA, EA, EA}));
  ASSERT_EQ(p.routes.size(), 6u);
  EXPECT_EQ(p.routes[0].producer, 1);
  EXPECT_EQ(p.routes[0].consumer, 0);
  EXPECT_EQ(p.routes[5].producer, 7);
  EXPECT_EQ(p.routes[5].consumer, 4);
  for (const char* name : {"ea-t", "async"}) {
    const RolePlan two = plan_roles(l, {name, 1, 2});  // two trainers per GPU
    EXPECT_EQ(two.roles, (std::vector<unsigned>{T, T, EA, EA, T, T, EA, EA})) << name;
    ASSERT_EQ(two.routes.size(), 4u) << name;
    EXPECT_EQ(two.routes[0].producer, 2);
    EXPECT_EQ(two.routes[0].consumer, 0);
    EXPECT_EQ(two.routes[1].producer, 3);
    EXPECT_EQ(two.routes[1].consumer, 1);
    EXPECT_EQ(two.routes[3].producer, 7);
    EXPECT_EQ(two.routes[3].consumer, 5);
    EXPECT_FALSE(two.serving);
  }
  p = plan_roles(l, {"e-at", 1, 1});
  EXPECT_EQ(p.roles, (std::vector<unsigned>{E, E, E, AT, E, E, E, AT}));
  p = plan_roles(l, {"mp-dp", 1, 1});
  EXPECT_EQ(p.roles, (std::vector<unsigned>{E, E, E, A, E, E, E, A}));
  EXPECT_TRUE(p.serving);
  p = plan_roles(l, {"dp-mp", 1, 1});
  EXPECT_EQ(p.roles, (std::vector<unsigned>{E, E, A, A, E, E, A, A}));
  ASSERT_EQ(p.routes.size(), 4u);
  EXPECT_EQ(p.routes[1].producer, 1);
  EXPECT_EQ(p.routes[1].consumer, 3);
  const std::string table = p.table(l);
  EXPECT_NE(table.find("mapping.template dp-mp: 8 GMI(s)"), std::string::npos) << table;
  EXPECT_NE(table.find(" rank  node  gpu  slot  roles  peers"), std::string::npos) << table;
  EXPECT_NE(table.find("    3     0    0     3  A      1"), std::string::npos) << table;
}

// Every producer has one consumer on its own GPU; consumers share the producers within one.
TEST(Roles, EveryLayoutRoutesEveryProducerOnceWithinItsGpu) {
  for (int gpus = 1; gpus <= 4; ++gpus)
    for (int ranks = 2 * gpus; ranks <= 8 * gpus; ++ranks)
      for (const char* name : {"ea-t", "e-at", "mp-dp", "async"})
        for (int consumers = 1; consumers <= 3; ++consumers) {
          const mpi::Layout l = layout(ranks, gpus);
          if (2 * consumers > *std::min_element(l.gmis_per_gpu.begin(), l.gmis_per_gpu.end())) continue;
          const RolePlan p = plan_roles(l, {name, consumers, consumers});
          std::map<int, int> load, produced;
          for (const mpi::Route& r : p.routes) {
            EXPECT_EQ(l.places[std::size_t(r.producer)].global_gpu, l.places[std::size_t(r.consumer)].global_gpu);
            ++produced[r.producer];
            ++load[r.consumer];
          }
          std::map<int, std::pair<int, int>> per_gpu;  // the least and most producers a consumer has
          for (const auto& [r, n] : load) {
            auto& [lo, hi] = per_gpu.try_emplace(l.places[std::size_t(r)].global_gpu, n, n).first->second;
            lo = std::min(lo, n), hi = std::max(hi, n);
          }
          for (const auto& [g, range] : per_gpu) EXPECT_LE(range.second - range.first, 1) << "GPU " << g;
          EXPECT_EQ(int(p.routes.size()), ranks - consumers * gpus) << name << " " << ranks << "/" << gpus;
          for (const auto& [r, n] : produced) EXPECT_EQ(n, 1);
          EXPECT_EQ(int(load.size()), consumers * gpus);
        }
}

TEST(Roles, ReverseRoutesReachEveryProducerOnceByPosition) {
  // mp-dp on 7 GMIs with 2 agents: agents 5 and 6 serve 3 and 2 simulators.
  const RolePlan p = plan_roles(layout(7, 1), {"mp-dp", 2, 1});
  const std::map<int, std::vector<int>> by = mpi::producers_by_consumer(p.routes);
  EXPECT_EQ(by.at(5), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(by.at(6), (std::vector<int>{1, 3}));
  const std::vector<std::vector<mpi::Route>> back = mpi::reverse_routes(p.routes);
  ASSERT_EQ(back.size(), 3u);
  const auto route = [](const mpi::Route& r) { return std::pair{r.producer, r.consumer}; };
  std::vector<std::vector<std::pair<int, int>>> got;
  for (const auto& set : back) {
    got.emplace_back();
    for (const mpi::Route& r : set) got.back().push_back(route(r));
  }
  EXPECT_EQ(got, (std::vector<std::vector<std::pair<int, int>>>{{{5, 0}, {6, 1}}, {{5, 2}, {6, 3}}, {{5, 4}}}));
}

TEST(Roles, LayoutsATemplateCannotUseNameTheKey) {
  EXPECT_NE(error_of(layout(4, 2), {"ea-t", 1, 2}).find("mapping.trainers_per_gpu: 2 (expected at most 1, half of the 2 GMI(s) of GPU 0"),
            std::string::npos)
      << error_of(layout(4, 2), {"ea-t", 1, 2});
  EXPECT_NE(error_of(layout(3, 1), {"mp-dp", 2, 1}).find("mapping.agents_per_gpu: 2 (expected at most 1"), std::string::npos);
  EXPECT_NE(error_of(layout(3, 1), {"dp-mp", 1, 1}).find("GPU 0 has 3 GMI(s) (expected an even number)"),
            std::string::npos);
  EXPECT_NE(error_of(layout(2, 1), {"a3c", 1, 1}).find("mapping.template: 'a3c' (expected dp, dp-mp"),
            std::string::npos);
}

}  // namespace
}  // namespace gmi::instances
