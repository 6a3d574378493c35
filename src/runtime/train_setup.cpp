// Training, first steps: the config (and the checkpoint to resume from), the run directory, the
// GMI session, the reducer, the trainer and the metrics' columns.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "gmi_version.hpp"
#include "mpi/deadline.hpp"
#include "mpi/topology.hpp"
#include "src/gmi/async_training.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/roles.hpp"
#include "src/runtime/logging.hpp"
#include "src/runtime/training.hpp"

namespace gmi::runtime::training {
namespace {

/// Every run's columns: these, the algorithm's statistics (Trainer::loss_columns) between
/// `episodes` and `grad_norm`, and for an environment with reward terms one
/// `episode_<term>_mean` each at the end.
const std::vector<std::string> kHead = {"iteration", "env_steps", "wall_time_s", "samples_per_s",
                                        "episode_return_mean", "episode_length_mean", "episodes"};
const std::vector<std::string> kTail = {"grad_norm",      "learning_rate",  "updates",    "time_rollout_s",
                                        "time_update_s",  "time_iteration_s", "gpu_util_pct", "gpu_mem_mib"};

/// Keys a resumed run may change; any other difference from the checkpoint's config is an error.
bool may_change_on_resume(const std::string& key) {
  for (const char* prefix : {"checkpoint.", "gmi.", "reduce.", "device.", "log.", "sweep.", "mapping.", "channels."})
    if (key.rfind(prefix, 0) == 0) return true;
  for (const char* k : {"train.total_env_steps", "train.log_interval", "train.run_dir",
                        "train.max_nonfinite_updates", "train.stall_timeout_s", "env.num_envs", "env.threads",
                        "env.pin_threads", "env.batch_size", "env.async_halves", "env.model_path", "replay.storage"})
    if (key == k) return true;
  return false;
}

/// One line naming every key where `now` conflicts with the checkpoint's config.
void check_resume_config(const config::Config& now, const config::Config& saved, const std::string& file) {
  std::string diff;
  for (const std::string& key : config::keys()) {
    if (may_change_on_resume(key)) continue;
    const std::string a = config::value_text(saved, key), b = config::value_text(now, key);
    if (a != b) diff += fmt::format("{}{} is {} in the checkpoint but {} now", diff.empty() ? "" : "; ", key, a, b);
  }
  if (!diff.empty())
    throw InputError(file + ": the config conflicts with the checkpoint's: " + diff +
                     " (a resumed run keeps its training settings; start a new run to change them)");
}

ResumeChoice choose_checkpoint(const TrainOptions& o, int world_size) {
  ResumeChoice r;
  if (o.resume.empty()) return r;
  std::string error;
  if (mpi::comm_rank(MPI_COMM_WORLD) == 0) {
    try {
      if (o.resume == "latest") {
        std::string dir;
        if (!o.config_paths.empty()) dir = config::load(o.config_paths, o.overrides, world_size).train.run_dir;
        for (const auto& kv : o.overrides)
          if (kv.first == "train.run_dir") dir = config::parse("{}", "--run-dir", {kv}).train.run_dir;
        if (dir.empty())
          throw InputError("--resume latest: which run? give --run-dir DIR (or train.run_dir in the config)");
        const checkpoint::Store store(dir, 1);
        r.path = checkpoint::newest_valid(store.list(), store.dir());
        if (r.path.empty()) {
          if (o.config_paths.empty())
            throw InputError("--resume latest: no checkpoint in " + store.dir() + " and no --config to start a new run");
          spdlog::warn("--resume latest: no checkpoint in {} yet; starting a new run", store.dir());
        }
      } else {
        r.path = o.resume;
        checkpoint::verify(r.path);
      }
      if (!r.path.empty()) r.config = checkpoint::read_meta(r.path).config;
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  error = mpi::broadcast_string(error);
  if (!error.empty()) throw InputError(error);
  r.path = mpi::broadcast_string(r.path);
  r.config = mpi::broadcast_string(r.config);
  return r;
}

/// The run directory (one for all ranks, even if their clocks differ), its config, log and status.
void make_directory(Run& r) {
  std::string dir = r.cfg.train.run_dir;
  if (dir.empty()) dir = default_run_dir(r.o.config_paths.empty() ? std::string() : r.o.config_paths.front());
  dir = mpi::broadcast_string(dir);  // one directory, even if ranks' clocks differ
  r.cfg.train.run_dir = dir;
  r.dir = dir;
  r.store.emplace(dir, r.cfg.checkpoint.keep);
  if (r.mpi.rank() == 0) {
    make_run_dir(dir);
    write_text_file(dir + "/config.yaml", config::to_yaml(r.cfg));
    add_log_file(0, dir + "/train.log");
    r.store->remove_partials();
    write_text_file(dir + "/status", "running\n");
  }
}

/// mapping.template e-at, ea-t or async: the roles of the GMIs (the table on rank 0), the trainers' own
/// communicators, and from here on the trainers' config.
void split_roles(Run& r) {
  r.learners = r.mpi.size();
  r.run_config = config::to_yaml(r.cfg);
  r.split = instances::plan_split_training(r.cfg, r.session->layout(), r.mpi.rank());
  if (!r.split) return;
  const instances::SplitTraining& s = *r.split;
  spdlog::info("{}", s.plan.table(r.session->layout()));
  if (s.lockstep)
    spdlog::info("mapping.template ea-t: {} trainer GMI(s), each learning from the rollouts of {} serving GMI(s) x {} "
                 "envs; each rollout is made with the newest update's weights (lockstep)",
                 s.trainers.size(), s.sims_per_trainer, s.sim_envs);
  else if (s.async)
    spdlog::info("mapping.template async: {} trainer GMI(s), each learning from the rollouts of {} serving GMI(s) x {} "
                 "envs; the serving GMIs roll out without waiting (async.max_policy_lag {}, async.rollouts_in_flight "
                 "{})",
                 s.trainers.size(), s.sims_per_trainer, s.sim_envs, r.cfg.async.max_policy_lag,
                 r.cfg.async.rollouts_in_flight);
  else
    spdlog::info("mapping.template e-at: {} trainer GMI(s), each acting and learning for {} simulator GMI(s) x {} envs",
                 s.trainers.size(), s.sims_per_trainer, s.sim_envs);
  r.session->set_learners(s.trainers);
  r.learners = int(s.trainers.size());
  if (s.async)  // the serving GMIs leave the loop to the trainers (Trainer::serve)
    r.comm = s.trainer ? r.session->learner_comms()->world() : MPI_COMM_NULL;
  const int threads = r.cfg.env.threads;
  r.cfg = s.trainer_config;
  r.cfg.env.threads = threads;
}

/// Layout, communicators, MPS, then Kokkos on this GMI's device (in that order).
void start_session(Run& r) {
  const auto t_setup = std::chrono::steady_clock::now();
  r.session.emplace(r.cfg, r.mpi);
  split_roles(r);
  const std::string table = r.session->layout_table();
  spdlog::info("gmi_drl {} | {} GMI(s) | {} | set up in {:.2f} s", GMI_DRL_VERSION, r.mpi.size(),
               instances::device_description(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count());
  spdlog::info("layout: {}", table);
  spdlog::info("config {} -> run directory {}", r.o.config_paths.empty() ? r.resume.path : r.cfg.source, r.dir);
}

/// The reducer (several GMIs), the memory check and this GMI's trainer.
void make_trainer(Run& r) {
  const config::Config& cfg = r.cfg;
  instances::Session& session = *r.session;
  // Under a role split only the trainers build it (a strategy their layout cannot run is every GMI's error).
  if (r.learners > 1)
    on_learners(r, [&] {
      r.reducer = session.make_reducer(algos::num_params(cfg), r.same_layout ? r.resume_meta->reducer : "");
    });
  {
    algos::MemoryNeeds needs = algos::memory_needs(cfg);
    if (r.split && !r.split->trainer)  // a simulator's envs (small beside a trainer's); a serving GMI's actor
      needs = r.split->async ? algos::memory_needs(instances::serving_config(*r.split, cfg)) : algos::MemoryNeeds{};
    if (r.split && r.split->async) {
      const algos::MemoryNeeds links = instances::async_memory_needs(*r.split, cfg);
      needs.device_bytes += links.device_bytes, needs.host_bytes += links.host_bytes;
      needs.drivers.insert(needs.drivers.end(), links.drivers.begin(), links.drivers.end());
    }
    std::vector<std::pair<std::string, std::string>> drivers;
    for (const std::string& key : needs.drivers) drivers.emplace_back(key, config::value_text(cfg, key));
    session.check_memory(needs.device_bytes, needs.host_bytes, drivers);
  }
  if (r.split) {
    r.trainer = r.split->async ? instances::make_async_trainer(*r.split, cfg, r.reducer.get(), r.comm)
                               : instances::make_split_trainer(*r.split, cfg, r.reducer.get());
  } else {
    // Distinct environments per GMI: GMI r owns global environments [r * N, (r + 1) * N).
    const int gmi = session.me().gmi_rank;
    r.trainer = algos::make_trainer(cfg, std::uint64_t(gmi) * cfg.env.num_envs, r.reducer.get());
  }
  r.per_iteration = cfg.batch_size * r.learners;
}

/// The first learner's word (a simulator GMI has no loss columns or description of its own).
std::string from_learner(const Run& r, const std::string& mine) {
  return r.split ? mpi::broadcast_string(mine, MPI_COMM_WORLD, r.split->trainers.front()) : mine;
}

void make_columns(Run& r) {
  std::string joined;
  for (const std::string& c : r.trainer->loss_columns()) joined += c + "\n";
  joined = from_learner(r, joined);
  r.losses.clear();
  for (std::size_t at = 0, next; (next = joined.find('\n', at)) != std::string::npos; at = next + 1)
    r.losses.push_back(joined.substr(at, next - at));
  r.describe = from_learner(r, r.trainer->describe());
  r.columns = kHead;
  r.columns.insert(r.columns.end(), r.losses.begin(), r.losses.end());
  r.columns.insert(r.columns.end(), kTail.begin(), kTail.end());
  r.first_term = r.columns.size();
  for (const std::string& t : r.trainer->env_spec().reward_terms) r.columns.push_back("episode_" + t + "_mean");
  r.history.columns = r.columns;
}

}  // namespace

void on_learners(const Run& r, const std::function<void()>& work, MPI_Comm comm) {
  if (!r.split) return work();
  instances::agreed(work, comm);
}

void load_config(Run& r) {
  const TrainOptions& o = r.o;
  r.resume = choose_checkpoint(o, r.mpi.size());
  const ResumeChoice& resume = r.resume;
  if (!o.config_paths.empty()) {
    r.cfg = config::load(o.config_paths, o.overrides, r.mpi.size());
    if (!resume.path.empty()) {
      check_resume_config(r.cfg, config::parse(resume.config, resume.path, {}, r.mpi.size()), resume.path);
    }
  } else {
    r.cfg = config::parse(resume.config, resume.path, o.overrides, r.mpi.size());
  }
  mpi::set_timeout(r.cfg.reduce.timeout_s);
}

void set_up(Run& r) {
  r.watchdog.emplace(r.cfg.train.stall_timeout_s);
  r.progress.phase("set-up");
  make_directory(r);
  r.faults.emplace(Faults::from_environment(r.mpi.rank()));
  r.faults->before_setup();
  start_session(r);
  read_resume_meta(r);
  // Host-simulated environments: env.threads 0 shares the node's hardware threads among its GMIs.
  // Under e-at the simulators step envs, the trainers none.
  r.cfg.env.threads = r.session->env_threads(r.cfg.env.threads, r.split ? r.split->simulators() : std::vector<int>{});
  // Rank 0 is a simulator under e-at: the first trainer says what its set-up chose (the
  // reduction, the kernels), and only that (under async rank 0 is the first trainer).
  const bool speaks = r.split && r.split->trainer && r.split->me == r.split->trainers.front() && r.mpi.rank() != 0;
  if (speaks) log_as_first_learner(r.o.log_level, true);
  make_trainer(r);
  make_columns(r);
  if (speaks) log_as_first_learner(r.o.log_level, false);
}

}  // namespace gmi::runtime::training
