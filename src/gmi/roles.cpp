#include "src/gmi/roles.hpp"

#include <fmt/format.h>

#include <map>

#include "kernels/core/error.hpp"

namespace gmi::instances {

std::string role_text(unsigned roles) {
  std::string s;
  for (auto [bit, name] : {std::pair{kSimulator, "E"}, {kAgent, "A"}, {kTrainer, "T"}})
    if (roles & bit) s += (s.empty() ? "" : "+") + std::string(name);
  return s.empty() ? "-" : s;
}

namespace {

// The world ranks of every GPU's GMIs, by slot.
std::map<int, std::vector<int>> gmis_by_gpu(const mpi::Layout& layout) {
  std::map<int, std::vector<int>> by;
  for (int r = 0; r < layout.size(); ++r) {
    auto& v = by[layout.places[std::size_t(r)].global_gpu];
    const int slot = layout.places[std::size_t(r)].slot;
    if (int(v.size()) <= slot) v.resize(std::size_t(slot) + 1, -1);
    v[std::size_t(slot)] = r;
  }
  return by;
}

// Consumers take the last `consumers` slots of every GPU (the first with `first`); the others are
// dealt to them in turn.
void split_gpus(const mpi::Layout& layout, int consumers, const char* key, unsigned producer_roles,
                unsigned consumer_roles, RolePlan& plan, bool first = false) {
  for (const auto& [gpu, ranks] : gmis_by_gpu(layout)) {
    const int m = int(ranks.size());
    if (2 * consumers > m)
      throw InputError(fmt::format("{}: {} (expected at most {}, half of the {} GMI(s) of GPU {}: under "
                                   "mapping.template {} each needs at least one producing GMI of its GPU)",
                                   key, consumers, m / 2, m, gpu, plan.name));
    const int producers = m - consumers;
    const int c0 = first ? 0 : producers, p0 = first ? consumers : 0;  // the first slot of each kind
    for (int i = 0; i < consumers; ++i) plan.roles[std::size_t(ranks[std::size_t(c0 + i)])] = consumer_roles;
    for (int i = 0; i < producers; ++i) {
      const int r = ranks[std::size_t(p0 + i)];
      plan.roles[std::size_t(r)] = producer_roles;
      plan.routes.push_back({r, ranks[std::size_t(c0 + i % consumers)]});
    }
  }
}

}  // namespace

const char* stepper_name(const std::string& templ) { return templ == "e-at" ? "simulator" : "serving"; }

RolePlan plan_roles(const mpi::Layout& layout, const MappingRequest& req) {
  RolePlan plan;
  plan.name = req.name;
  plan.roles.assign(std::size_t(layout.size()), kSimulator | kAgent | kTrainer);
  if (req.name == "dp") return plan;
  if (req.name == "ea-t" || req.name == "async") {
    // The trainers first: they run the training loop, and rank 0 (which writes the run's metrics)
    // is one of them.
    split_gpus(layout, req.trainers_per_gpu, "mapping.trainers_per_gpu", kSimulator | kAgent, kTrainer, plan, true);
  } else if (req.name == "e-at") {
    split_gpus(layout, req.trainers_per_gpu, "mapping.trainers_per_gpu", kSimulator, kAgent | kTrainer, plan);
  } else if (req.name == "mp-dp") {
    plan.serving = true;
    split_gpus(layout, req.agents_per_gpu, "mapping.agents_per_gpu", kSimulator, kAgent, plan);
  } else if (req.name == "dp-mp") {
    plan.serving = true;
    for (const auto& [gpu, ranks] : gmis_by_gpu(layout)) {
      const int m = int(ranks.size());
      if (m % 2)
        throw InputError(fmt::format("mapping.template: dp-mp pairs a simulator GMI with an agent GMI, but GPU {} "
                                     "has {} GMI(s) (expected an even number)",
                                     gpu, m));
      for (int i = 0; i < m; ++i) plan.roles[std::size_t(ranks[std::size_t(i)])] = i < m / 2 ? kSimulator : kAgent;
      for (int i = 0; i < m / 2; ++i) plan.routes.push_back({ranks[std::size_t(i)], ranks[std::size_t(m / 2 + i)]});
    }
  } else {
    throw InputError(fmt::format("mapping.template: '{}' (expected dp, dp-mp, mp-dp, ea-t, e-at or async)", req.name));
  }
  return plan;
}

MappingRequest mapping_request(const config::MappingConfig& m) {
  return MappingRequest{m.template_, m.agents_per_gpu, m.trainers_per_gpu};
}

void require_dp(const config::Config& cfg, const char* command) {
  if (cfg.mapping.template_ != "dp")
    throw InputError(fmt::format("mapping.template: {} ({} runs under dp only so far; gmi_drl eval serves under "
                                 "dp-mp and mp-dp, and gmi_drl bench-channels measures the channels of every template)",
                                 cfg.mapping.template_, command));
}

std::string RolePlan::table(const mpi::Layout& layout) const {
  std::vector<std::vector<int>> peers(roles.size());
  for (const mpi::Route& r : routes) {
    peers[std::size_t(r.producer)].push_back(r.consumer);
    peers[std::size_t(r.consumer)].push_back(r.producer);
  }
  std::string t = fmt::format("mapping.template {}: {} GMI(s)\n rank  node  gpu  slot  roles  peers\n", name,
                              roles.size());
  for (std::size_t r = 0; r < roles.size(); ++r) {
    const mpi::Place& p = layout.places[r];
    std::string ps;
    for (int q : peers[r]) ps += (ps.empty() ? "" : ",") + std::to_string(q);
    t += fmt::format("{:>5} {:>5} {:>4} {:>5}  {:<5}  {}\n", r, p.node, p.gpu, p.slot, role_text(roles[r]),
                     ps.empty() ? "-" : ps);
  }
  return t;
}

}  // namespace gmi::instances
