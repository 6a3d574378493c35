// Training: writing a checkpoint (every GMI writes its part of one file).
#include <spdlog/spdlog.h>

#include <ctime>
#include <filesystem>

#include "gmi_version.hpp"
#include "mpi/deadline.hpp"
#include "mpi/topology.hpp"
#include "src/algos/registry.hpp"
#include "src/runtime/training.hpp"

namespace gmi::runtime::training {
namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// Wall time of the run, its earlier parts included: the slowest GMI's.
double wall_now(const Run& r) {
  double w = r.wall_offset + std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  mpi::allreduce_max(&w, 1, r.comm);
  return w;
}

checkpoint::Meta make_meta(const Run& r, const algos::TrainerState& st) {
  const config::Config& cfg = r.cfg;
  const instances::Session& session = *r.session;
  checkpoint::Meta meta;
  meta.gmi_drl_version = GMI_DRL_VERSION;
  meta.config = r.run_config;
  meta.created = mpi::broadcast_string(utc_now(), r.comm);
  meta.run_dir = r.dir;
  meta.num_nodes = session.layout().num_nodes;
  meta.num_gpus = session.layout().num_gpus;
  // The learners' layout: under a role split the trainers hold every env (their simulators').
  meta.num_gmis = r.learners;
  meta.gmis_per_gpu.assign(session.layout().gmis_per_gpu.begin(), session.layout().gmis_per_gpu.end());
  if (r.split) {
    meta.gmis_per_gpu.assign(std::size_t(session.layout().num_gpus), 0);
    for (int t : r.split->trainers) ++meta.gmis_per_gpu[std::size_t(session.layout().places[std::size_t(t)].global_gpu)];
  }
  meta.iteration = st.iteration;
  meta.env_steps = st.iteration * r.per_iteration;
  meta.updates = r.trainer->updates();
  meta.wall_time_s = wall_now(r);
  meta.algo = cfg.algo;
  meta.env = cfg.env.name;
  meta.envs_per_gmi = cfg.env.num_envs;
  meta.simulators_per_gmi = r.split ? r.split->sims_per_trainer : 1;
  meta.obs_dim = std::int64_t(st.obs.size()) / cfg.env.num_envs;  // a multi-agent env: every agent's, per env
  meta.num_params = std::int64_t(st.params.size());
  meta.seed = cfg.train.seed;
  meta.num_steps = cfg.num_steps;
  const algos::CheckpointSchema& schema = algos::algorithm(cfg.algo).checkpoint;
  meta.update_epochs = schema.update_epochs(cfg);
  meta.replay_capacity = schema.replay_capacity(cfg);
  meta.nonfinite_streak = st.nonfinite_streak;
  meta.reducer = r.reducer ? r.reducer->name() : "";
  return meta;
}

}  // namespace

void save_checkpoint(Run& r, const std::string& why) {
  r.progress.phase("checkpoint");
  const auto t0 = std::chrono::steady_clock::now();
  const algos::TrainerState st = r.trainer->save_state();
  mpi::check();  // never write what a failed reduction left behind
  const checkpoint::Meta meta = make_meta(r, st);
  instances::Session& session = *r.session;
  // The learners write (every GMI under dp; a simulator GMI's envs are in its trainer's state).
  const std::string path = r.store->path_for(st.iteration);
  on_learners(r, [&] {
    if (const mpi::Communicators* learners = session.learner_comms())
      r.store->save(st.iteration, learners->world(), [&](const std::string& partial) {
        checkpoint::write(partial, learners->world(), meta, st, r.history,
                          r.faults->in_checkpoint(st.iteration, partial));
      });
  }, r.comm);
  std::error_code ec;
  const double mib = double(std::filesystem::file_size(path, ec)) / (1 << 20);
  spdlog::info("checkpoint {} ({}): {:.2f} MiB in {:.3f} s", path, why, mib,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  r.last_checkpoint = path;
  r.last_checkpoint_time = std::chrono::steady_clock::now();
}

}  // namespace gmi::runtime::training
