#include "src/tools/bench_channels.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "mpi/channels.hpp"
#include "mpi/deadline.hpp"
#include "mpi/environment.hpp"
#include "src/config/config.hpp"
#include "src/gmi/experience.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/roles.hpp"
#include "src/gmi/session.hpp"
#include "src/runtime/mpi_command.hpp"

namespace gmi::tools {
namespace {

using json = nlohmann::json;

struct PlanResult {
  double seconds = 0;  // the slowest consumer's, from the first to the last step taken
  double bytes = 0;    // taken by every consumer
  double wait_s = 0;   // producers' time blocked on full queues, summed
};

/// `steps` steps from every producer to its consumer through `ch`.
PlanResult move_steps(mpi::ExperienceChannels& ch, const std::vector<std::vector<std::byte>>& packages, int steps) {
  std::vector<const void*> ptrs;
  for (const auto& p : packages) ptrs.push_back(p.data());
  mpi::barrier(MPI_COMM_WORLD, "bench-channels (MPI_Ibarrier)");
  const mpi::Deadline clock;
  const std::uint64_t bytes0 = ch.stats().bytes;
  const double wait0 = ch.stats().wait_s;
  if (ch.is_producer()) {
    for (int s = 0; s < steps; ++s) ch.push(ptrs);
    ch.drain();
  }
  for (int s = 0; s < steps; ++s)
    for (std::size_t k = 0; k < ch.producers().size(); ++k) ch.next(k);
  PlanResult r;
  r.seconds = mpi::max_over(MPI_COMM_WORLD, ch.is_consumer() ? clock.elapsed() : 0.0);
  r.bytes = mpi::sum_over(MPI_COMM_WORLD, ch.is_consumer() ? double(ch.stats().bytes - bytes0) : 0.0);
  r.wait_s = mpi::sum_over(MPI_COMM_WORLD, ch.is_producer() ? ch.stats().wait_s - wait0 : 0.0);
  return r;
}

void check_options(const ChannelBenchOptions& o, int size) {
  if (size < 2) throw InputError("bench-channels: needs at least 2 GMIs (run it under mpirun -np N, N >= 2)");
  if (o.consumers < 0 || o.consumers >= size)
    throw InputError(fmt::format("--consumers: {} (expected 1 to {}: at least one of the {} GMIs must produce)",
                                 o.consumers, size - 1, size));
  if (o.steps < 1) throw InputError(fmt::format("--steps: {} (expected at least 1)", o.steps));
}

}  // namespace

int run_channel_bench(const ChannelBenchOptions& o, int* argc, char*** argv) {
  return runtime::run_mpi_command(argc, argv, "info", [&](mpi::Environment& env) {
    check_options(o, env.size());
    const config::Config cfg = config::load(o.config_path, config::parse_overrides(o.sets), env.size());
    const std::vector<mpi::PackageType> types = instances::experience_packages(cfg);
    instances::Session session(cfg, env);
    const std::string layout = session.layout_table();
    // Under a template other than dp its routes (E+A -> T, E -> A+T, E -> A); else --consumers.
    std::vector<mpi::Route> routes;
    if (cfg.mapping.template_ != "dp") {
      if (o.consumers > 0)
        throw InputError(fmt::format("--consumers: mapping.template {} gives the routes (leave --consumers out)",
                                     cfg.mapping.template_));
      const instances::RolePlan roles = instances::plan_roles(session.layout(), instances::mapping_request(cfg.mapping));
      routes = roles.routes;
      spdlog::info("{}", roles.table(session.layout()));
    } else {
      routes = mpi::routes_to_first(env.size(), std::max(1, o.consumers));
    }
    int consumers = 0;
    {
      std::vector<int> seen(std::size_t(env.size()), 0);
      for (const mpi::Route& r : routes) consumers += seen[std::size_t(r.consumer)]++ == 0;
    }
    const int max_steps = cfg.channels.steps_per_transfer > 0 ? cfg.channels.steps_per_transfer : o.max_steps;
    // --plans, else channels.plan; every plan is checked before anything is measured.
    const std::vector<std::string> plans = o.plans.empty() ? std::vector{cfg.channels.plan} : o.plans;
    const std::string key = o.plans.empty() ? "channels.plan" : "--plans";
    for (const std::string& spec : plans)
      mpi::make_plan(spec, types, cfg.channels.steps_per_transfer, max_steps, mpi::TransferCost{}, key);
    const mpi::TransferCost cost = mpi::measure_transfer_cost(MPI_COMM_WORLD, routes);
    std::string kinds;
    for (const auto& t : types) kinds += fmt::format("{}{} {}x{} B", kinds.empty() ? "" : ", ", t.name, t.rows, t.row_bytes);
    spdlog::info("gmi_drl {} bench-channels | {} | {} GMIs: {} consumer(s), {} producer(s) | {} {} with {} envs: {}",
                 GMI_DRL_VERSION, instances::device_description(), env.size(), consumers, routes.size(), cfg.algo,
                 cfg.env.name, cfg.env.num_envs, kinds);
    spdlog::info("layout: {}", layout);
    spdlog::info("link cost (slowest pair, ping-pong): {:.2f} us + {:.3f} ns/B ({:.2f} GB/s asymptotic)",
                 1e6 * cost.latency_s, 1e9 * cost.seconds_per_byte,
                 cost.seconds_per_byte > 0 ? 1e-9 / cost.seconds_per_byte : 0.0);
    std::vector<std::vector<std::byte>> packages;
    for (const auto& t : types) packages.emplace_back(t.bytes(), std::byte{1});
    json rows = json::array();
    for (const std::string& spec : plans) {
      const mpi::ChannelPlan plan = mpi::make_plan(spec, types, cfg.channels.steps_per_transfer, max_steps, cost, key);
      mpi::ExperienceChannels ch(MPI_COMM_WORLD, routes, types, plan, mpi::ChannelOptions{cfg.channels.max_in_flight});
      move_steps(ch, packages, o.warmup);
      const PlanResult r = move_steps(ch, packages, o.steps);
      const double top = mpi::top_mov(types, plan.groups);
      const double projected = plan.projected_bandwidth(types, cost);
      const double measured = r.bytes / r.seconds;
      const double env_steps = double(o.steps) * double(routes.size()) * cfg.env.num_envs / r.seconds;
      spdlog::info("{:>9}: {} | TOP_mov {:.1f} | projected {:.3f} GB/s per link, measured {:.3f} GB/s in all, "
                   "{:.3g} env-steps/s; producers waited {:.3f} s",
                   spec, plan.text(types), top, 1e-9 * projected, 1e-9 * measured, env_steps, r.wait_s);
      rows.push_back({{"plan", spec}, {"channels", plan.text(types)}, {"num_channels", plan.groups.size()},
                      {"steps_per_transfer", plan.steps}, {"top_mov", top}, {"projected_bytes_per_s_per_link", projected},
                      {"measured_bytes_per_s", measured}, {"env_steps_per_s", env_steps}, {"seconds", r.seconds},
                      {"producer_wait_s", r.wait_s}});
    }
    if (!o.json_path.empty() && env.rank() == 0) {
      json packages_json = json::array();
      for (const auto& t : types)
        packages_json.push_back({{"name", t.name}, {"rows", t.rows}, {"row_bytes", t.row_bytes}, {"element_bytes", t.element_bytes}});
      json j;
      j["benchmark"] = "channels";
      j["gmi_drl_version"] = GMI_DRL_VERSION;
      j["gmis"] = env.size();
      j["consumers"] = consumers;
      j["mapping_template"] = cfg.mapping.template_;
      j["producers"] = routes.size();
      j["algo"] = cfg.algo;
      j["env"] = cfg.env.name;
      j["num_envs"] = cfg.env.num_envs;
      j["steps"] = o.steps;
      j["max_in_flight"] = cfg.channels.max_in_flight;
      j["packages"] = packages_json;
      j["link_latency_s"] = cost.latency_s;
      j["link_seconds_per_byte"] = cost.seconds_per_byte;
      j["results"] = rows;
      std::ofstream f(o.json_path);
      if (!f) throw InputError(o.json_path + ": cannot write");
      f << j.dump(2) << "\n";
      spdlog::info("wrote {}", o.json_path);
    }
    return 0;
  });
}

}  // namespace gmi::tools
