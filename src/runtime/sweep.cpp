// gmi_drl sweep, how it runs: the GMIs (placement, MPS, CPUs), the queue on rank 0, the runs as
// child processes, sweep.csv, signals and --resume.
#include "src/runtime/sweep.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "kernels/core/cpus.hpp"
#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/mailbox.hpp"
#include "mpi/topology.hpp"
#include "src/gmi/child.hpp"
#include "src/gmi/session.hpp"
#include "src/runtime/logging.hpp"
#include "src/runtime/mpi_command.hpp"
#include "src/runtime/run_dir.hpp"
#include "src/runtime/signals.hpp"

namespace gmi::sweeps {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;


// Message tags between a GMI and rank 0.
enum Tag : int { kReady = 1, kRun = 2, kResult = 3, kStop = 4, kQuit = 5 };

/// Result::rc of a run its GMI could not start (not a failure of the run: it goes back to the queue).
constexpr int kNotStarted = -3;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---------------------------------------------------------------------------------------------
// What one run is told and what it reports.

/// A run handed to a GMI: its command line after the executable, its log and its directory.
struct Job {
  int run = -1;
  std::vector<std::string> args;
  std::string log, dir;
};

/// What became of a run on its GMI.
struct Result {
  int run = -1;
  int rc = 0;              ///< exit status, 128 + signal
  std::string status;      ///< the run's status file ("done", "stopped SIGTERM 12", ...)
  double final_return = NAN, best_return = NAN, wall_time_s = NAN, seconds = 0;
  std::int64_t env_steps = 0;
  std::string error, where;
};

json to_json(const Job& j) { return {{"run", j.run}, {"args", j.args}, {"log", j.log}, {"dir", j.dir}}; }
Job job_from(const json& j) { return {j.at("run"), j.at("args"), j.at("log"), j.at("dir")}; }
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double num_from(const json& j) { return j.is_number() ? j.get<double>() : NAN; }
json to_json(const Result& r) {
  return {{"run", r.run},       {"rc", r.rc},         {"status", r.status},           {"final", num(r.final_return)},
          {"best", num(r.best_return)}, {"wall", num(r.wall_time_s)}, {"seconds", r.seconds},
          {"steps", r.env_steps}, {"error", r.error},   {"where", r.where}};
}
Result result_from(const json& j) {
  Result r;
  r.run = j.at("run"), r.rc = j.at("rc"), r.status = j.at("status");
  r.final_return = num_from(j.at("final")), r.best_return = num_from(j.at("best"));
  r.wall_time_s = num_from(j.at("wall")), r.seconds = j.at("seconds"), r.env_steps = j.at("steps");
  r.error = j.at("error"), r.where = j.at("where");
  return r;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// Splits one CSV line (fields may be quoted, with "" for a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else out.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return q + "\"";
}

/// The run's returns, steps and training time from its metrics.csv.
void read_metrics(const std::string& dir, Result& r) {
  std::ifstream in(dir + "/metrics.csv");
  std::string line;
  if (!std::getline(in, line)) return;
  const std::vector<std::string> head = csv_fields(line);
  auto col = [&](const char* name) {
    for (std::size_t i = 0; i < head.size(); ++i)
      if (head[i] == name) return int(i);
    return -1;
  };
  const int steps = col("env_steps"), wall = col("wall_time_s"), ret = col("episode_return_mean");
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_fields(line);
    auto value = [&](int c) { return c >= 0 && c < int(f.size()) ? std::strtod(f[c].c_str(), nullptr) : NAN; };
    if (steps >= 0) r.env_steps = std::int64_t(value(steps));
    r.wall_time_s = value(wall);
    const double v = value(ret);
    if (std::isfinite(v)) {
      r.final_return = v;
      r.best_return = std::isfinite(r.best_return) ? std::max(r.best_return, v) : v;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Stop signals: SIGTERM, SIGINT, SIGUSR1 end the sweep after its runs checkpointed.

volatile std::sig_atomic_t g_stop = 0;
void on_stop(int sig) { g_stop = sig; }

class StopSignals {
 public:
  StopSignals() {
    for (int s : {SIGTERM, SIGINT, SIGUSR1}) old_[s] = std::signal(s, on_stop);
  }
  ~StopSignals() {
    for (auto& [s, h] : old_) std::signal(s, h);
  }

 private:
  std::map<int, void (*)(int)> old_;
};

// ---------------------------------------------------------------------------------------------
// The GMIs: where each one runs, with which environment and CPUs.

/// A GMI of the sweep: the place its runs train on and the run it has now.
struct Slot {
  std::string where;  ///< "node 0 GPU 1 slot 2" (for sweep.csv and the log)
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<int> cpus;
  std::unique_ptr<instances::Child> child;
  Job job;
  Clock::time_point started, signalled;
  bool stopping = false;
  int start_failures = 0;  ///< in a row; a GMI that cannot start 3 runs gets no more
  std::vector<std::string> unset;  ///< variables the run must not inherit (a forgotten MPS directory)
};

/// CUDA_VISIBLE_DEVICES for a child that is to see device `d` of this process as its device 0.
std::string visible_device(int d) {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!v || !*v) return std::to_string(d);
  std::stringstream ss(v);
  std::string item;
  for (int i = 0; std::getline(ss, item, ','); ++i)
    if (i == d) return item;
  return std::to_string(d);
}

/// The GMIs of this process and what they need from the job: the layout, the MPS daemon.
struct Placement {
  std::unique_ptr<mpi::Communicators> comms;  // under mpirun/srun
  std::optional<instances::MpsDaemon> mps;
  std::vector<Slot> slots;
  int total = 0;  ///< GMIs of the whole sweep
  std::string backend;
  double sm_share = 100;  ///< this process's GMIs' (the last one placed)
};

void fill_slot(Slot& s, const config::Config& cfg, const mpi::Layout& layout, const mpi::Place& p, Placement& pl,
               int cpu_k, int cpu_n) {
  instances::GmiSettings set = instances::settings_for(cfg.gmi, layout, p, instances::kCudaBuild);
  // Independent runs leave their SMs idle between launches, and MPS lets the shares sum past 100 %:
  // without gmi.sm_share a sweep's GMI may use twice its fair share (on an H100, 8 CartPole runs x
  // 4096 envs did 91.9 M env-steps/s with 25 % each, 74.8 M with 12 %, 94.5 M with 37 %, 77.1 M
  // with 100 %).
  if (cfg.gmi.sm_share.empty()) set.sm_share = std::min(100.0, std::floor(200.0 / layout.gmis_per_gpu[p.global_gpu]));
  pl.sm_share = set.sm_share;
  s.where = instances::kCudaBuild ? fmt::format("node {} GPU {} slot {}", p.node, p.gpu, p.slot) : fmt::format("node {} slot {}", p.node, p.local_rank);
  // An MPS client's CUDA_VISIBLE_DEVICES counts in the daemon's devices, which are this process's
  // (the daemon inherited its environment, or the job's, which this process has too).
  if (instances::kCudaBuild && set.backend != "mig")
    s.env.emplace_back("CUDA_VISIBLE_DEVICES",
                       set.backend == "mps" ? std::to_string(set.device_id) : visible_device(set.device_id));
  if (set.backend == "mps")
    for (auto& kv : instances::mps_variables(set, *pl.mps, 0)) s.env.push_back(kv);
  else if (!std::getenv("CUDA_MPS_PIPE_DIRECTORY"))  // forgotten: no daemon answered there
    s.unset = {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"};
  s.cpus = cpu_share(cpu_k, cpu_n);
  pl.backend = set.backend;
}

/// Alone: `per_gpu` GMIs on each of the node's GPUs, all in this process.
void place_alone(Placement& pl, const config::Config& cfg, int gpus, int per_gpu) {
  const std::vector<std::string> names(std::size_t(gpus * per_gpu), "localhost");
  const mpi::Layout layout = mpi::plan_layout(names, {gpus, per_gpu});
  const instances::GmiSettings first = instances::settings_for(cfg.gmi, layout, layout.places[0], instances::kCudaBuild);
  if (first.backend == "mps") pl.mps.emplace(MPI_COMM_WORLD, cfg.gmi.mps_dir);
  else instances::forget_unanswered_mps_directory(MPI_COMM_WORLD);
  pl.slots.resize(layout.places.size());
  for (std::size_t i = 0; i < layout.places.size(); ++i)
    fill_slot(pl.slots[i], cfg, layout, layout.places[i], pl, int(i), int(layout.places.size()));
  pl.total = int(pl.slots.size());
}

/// Under mpirun/srun: this rank is one GMI, placed as training places its ranks.
void place_ranks(Placement& pl, const config::Config& cfg, mpi::Environment& mpi, int gpus) {
  mpi::LayoutRequest req;
  req.gpus_per_node = gpus;
  req.per_gpu = cfg.sweep.per_gpu > 0 ? cfg.sweep.per_gpu : cfg.gmi.per_gpu;
  pl.comms = std::make_unique<mpi::Communicators>(mpi::plan_layout(mpi::gather_node_names(cfg.gmi.ranks_per_node), req));
  const mpi::Layout& layout = pl.comms->layout();
  const mpi::Place& me = pl.comms->me();
  if (instances::settings_for(cfg.gmi, layout, me, instances::kCudaBuild).backend == "mps") pl.mps.emplace(pl.comms->node(), cfg.gmi.mps_dir);
  else instances::forget_unanswered_mps_directory(pl.comms->node());
  int on_node = 0;
  for (const mpi::Place& p : layout.places) on_node += p.node == me.node;
  // A launcher that bound the rank to its own CPUs decided already; otherwise split the node's.
  const bool bound = int(allowed_cpus().size()) < int(std::thread::hardware_concurrency());
  pl.slots.resize(1);
  fill_slot(pl.slots[0], cfg, layout, me, pl, bound ? 0 : me.local_rank, bound ? 1 : on_node);
  pl.total = mpi.size();
}

// ---------------------------------------------------------------------------------------------
// Running jobs on this process's GMIs.

/// A run starts from this process's environment as it was before MPI started (MPI_Init adds the
/// singleton's own variables), less what an MPI launcher set for this job, which would make the
/// run join the job instead of starting alone.  The site's MPI settings (OMPI_MCA_plm_rsh_agent
/// in a container without ssh, OPAL_PREFIX, transports) stay: a run needs them as a user's does.
std::vector<std::string> g_start_env;
const std::vector<std::string> kLauncherPrefixes = {
    "PMIX_", "PMI_", "OMPI_COMM_WORLD_", "OMPI_MCA_ess", "OMPI_MCA_orte_", "OMPI_MCA_pmix", "OMPI_FILE_LOCATION",
    "OMPI_UNIVERSE_SIZE", "OMPI_NUM_APP_CTX", "OMPI_FIRST_RANKS", "OMPI_APP_CTX_", "OMPI_ARGV", "OMPI_COMMAND",
    "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "HYDRA_", "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    // srun's step (Open MPI refuses to start alone inside one: "direct launched using srun"); the
    // job's own variables (SLURM_JOB_ID, ...) stay.
    "SLURM_STEP", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_TASK_PID", "SLURM_GTIDS", "SLURM_SRUN_COMM_",
    "SLURM_PMIX", "SLURM_LAUNCH_NODE_IPADDR"};

/// Starts `job` on `s`; returns a Result at once when it cannot start.
std::optional<Result> start(Slot& s, const Job& job, const std::string& exe) {
  instances::ChildSpec spec;
  spec.argv = {exe};
  spec.argv.insert(spec.argv.end(), job.args.begin(), job.args.end());
  spec.log = job.log;
  spec.append = true;
  spec.env = s.env;
  spec.base_env = g_start_env;
  spec.unset_prefixes = kLauncherPrefixes;
  spec.unset_prefixes.insert(spec.unset_prefixes.end(), s.unset.begin(), s.unset.end());
  spec.cpus = s.cpus;
  s.job = job;
  s.started = Clock::now();
  s.stopping = false;
  Result r;
  r.run = job.run, r.where = s.where;
  if (g_stop) {  // a run handed out while this GMI was told to stop: not started
    r.rc = kNotStarted, r.error = "the sweep is stopping";
    return r;
  }
  // The run writes its status when it starts; one left by an earlier attempt must not be read as
  // this attempt's (an exit 2 after "stopped ...").
  std::error_code ec;
  fs::remove(job.dir + "/status", ec);
  try {
    s.child = std::make_unique<instances::Child>(spec);
  } catch (const InputError& e) {  // the executable cannot run: every run would fail alike
    r.rc = 127, r.error = e.what();
    return r;
  } catch (const std::exception& e) {
    r.rc = kNotStarted, r.error = e.what();
    ++s.start_failures;
    return r;
  }
  s.start_failures = 0;
  return std::nullopt;
}

/// The result of the run that just ended on `s`.
Result finished(Slot& s, int rc) {
  Result r;
  r.run = s.job.run;
  r.rc = rc;
  r.where = s.where;
  r.seconds = seconds_since(s.started);
  r.status = first_line(s.job.dir + "/status");
  read_metrics(s.job.dir, r);
  if (rc > 128) r.error = fmt::format("killed by {}", runtime::signal_name(rc - 128));
  else if (rc != 0) r.error = instances::failure_text(s.job.log);
  s.child.reset();
  s.job = Job{};
  return r;
}

/// Results of the runs that ended; a stopping run that outlives `grace_s` is killed.
std::vector<Result> poll(std::vector<Slot>& slots, double grace_s) {
  std::vector<Result> out;
  for (Slot& s : slots) {
    if (!s.child) continue;
    if (const auto rc = s.child->poll()) out.push_back(finished(s, *rc));
    else if (s.stopping && seconds_since(s.signalled) > grace_s) out.push_back(finished(s, s.child->stop(0)));
  }
  return out;
}

/// Asks every running run to checkpoint and stop (SIGTERM, as Slurm's time limit does).
void stop_all(std::vector<Slot>& slots) {
  for (Slot& s : slots)
    if (s.child && !s.stopping) {
      s.child->signal(SIGTERM);
      s.stopping = true;
      s.signalled = Clock::now();
    }
}

// ---------------------------------------------------------------------------------------------
// The queue (rank 0).

struct RunState {
  RunSpec spec;
  std::string status = "pending";  ///< pending | running | done | failed | stopped
  Result last;
  int attempts = 0;  ///< starts, over every job of the sweep (sweep.csv)
  int retries = 0;   ///< restarts after a failure in this job (sweep.retries bounds them)
};

class Queue {
 public:
  Queue(std::string dir, std::vector<std::string> configs, std::vector<std::string> sets, int retries)
      : dir_(std::move(dir)), configs_(std::move(configs)), sets_(std::move(sets)), retries_(retries) {}

  std::vector<RunState> runs;

  void enqueue_pending() {
    for (const RunState& r : runs)
      if (r.status == "pending" || r.status == "stopped" || r.status == "running") pending_.push_back(r.spec.index);
    for (int i : pending_) runs[std::size_t(i)].status = "pending";
  }
  bool empty() const { return pending_.empty(); }
  const std::vector<std::string>& configs() const { return configs_; }
  const std::vector<std::string>& sets() const { return sets_; }
  /// --set strings that make a run one GMI where the config places several (gmi.per_gpu, a list
  /// of shares, gmi.backend mps: the GMI's MPS settings reach the run through its environment).
  void one_gmi(std::vector<std::string> sets) { one_gmi_ = std::move(sets); }
  int running() const { return running_; }

  /// The next run to start, or nothing (none left, or stopping).
  std::optional<Job> next() {
    if (stopping_ || pending_.empty()) return std::nullopt;
    RunState& r = runs[std::size_t(pending_.front())];
    pending_.pop_front();
    Job j;
    j.run = r.spec.index;
    j.dir = dir_ + "/" + r.spec.name;
    j.log = dir_ + "/logs/" + r.spec.name + ".log";
    for (const std::string& c : configs_) j.args.insert(j.args.end(), {"--config", c});
    for (const std::string& s : sets_) j.args.insert(j.args.end(), {"--set", s});
    for (const std::string& s : one_gmi_) j.args.insert(j.args.end(), {"--set", s});
    for (const auto& [k, v] : r.spec.overrides) j.args.insert(j.args.end(), {"--set", k + "=" + v});
    j.args.insert(j.args.end(), {"--seed", std::to_string(r.spec.seed), "--run-dir", j.dir});
    // A run that has begun continues from its newest checkpoint (or starts again if it has none).
    if (fs::exists(j.dir + "/status")) j.args.insert(j.args.end(), {"--resume", "latest"});
    r.status = "running";
    ++r.attempts;
    ++running_;
    changed = true;
    return j;
  }

  /// Records a result; a run that was killed or timed out goes back to the front of the queue.
  void report(const Result& res) {
    RunState& r = runs.at(std::size_t(res.run));
    if (r.status != "running") return;  // not handed out (a message from an earlier life of the queue)
    --running_;
    changed = true;
    if (res.rc == kNotStarted) {  // the GMI could not start it (fork, its log file): it goes back
      --r.attempts;
      r.status = "pending";
      pending_.push_front(r.spec.index);
      if (!stopping_) spdlog::warn("run {} could not start on {}: {}; it goes back to the queue", r.spec.name, res.where, res.error);
      return;
    }
    r.last = res;
    const bool stopped = res.status.rfind("stopped", 0) == 0;
    if (res.rc == 0 && res.status == "done") {
      r.status = "done";
      spdlog::info("run {} done: final return {:.2f}, best {:.2f}, {} env steps in {:.0f} s ({})", r.spec.name,
                   res.final_return, res.best_return, res.env_steps, res.seconds, res.where);
    } else if (stopping_ && (stopped || res.rc >= 128)) {
      r.status = "stopped";
    } else if (res.rc == 0 && stopped) {  // someone signalled the run itself: it goes on later
      r.status = "pending";
      pending_.push_front(r.spec.index);
    } else if (res.rc != 2 && res.rc != 127 && r.retries < retries_) {
      ++r.retries;
      spdlog::warn("run {} ended with status {} ({}): {}; it continues from its newest checkpoint", r.spec.name,
                   res.rc, res.where, res.error);
      r.status = "pending";
      pending_.push_front(r.spec.index);
    } else {
      r.status = "failed";
      spdlog::warn("run {} failed (exit status {}, attempt {}, {}): {}", r.spec.name, res.rc, r.attempts, res.where,
                   res.error);
    }
  }

  void stop() {
    if (stopping_) return;
    stopping_ = true;
    for (int i : pending_) runs[std::size_t(i)].status = "pending";
  }
  bool stopping() const { return stopping_; }

  /// sweep.csv, one row per run (atomically replaced).
  void write_csv() {
    std::string t = "run,config,seed,status,final_return,best_return,env_steps,wall_time_s,attempts,gmi,error\n";
    auto v = [](double x) { return std::isfinite(x) ? fmt::format("{:.6g}", x) : std::string("nan"); };
    for (const RunState& r : runs)
      t += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.spec.name), csv_field(r.spec.config),
                       r.spec.seed, r.status, v(r.last.final_return), v(r.last.best_return), r.last.env_steps,
                       v(r.last.wall_time_s), r.attempts, csv_field(r.last.where),
                       csv_field(r.status == "failed" || r.status == "pending" ? r.last.error : ""));
    runtime::write_text_file(dir_ + "/sweep.csv", t);
    changed = false;
  }
  bool changed = true;

  int count(const std::string& status) const {
    int n = 0;
    for (const RunState& r : runs) n += r.status == status;
    return n;
  }

 private:
  std::string dir_;
  std::vector<std::string> configs_, sets_, one_gmi_;
  int retries_ = 1;
  std::deque<int> pending_;
  int running_ = 0;
  bool stopping_ = false;
};

// ---------------------------------------------------------------------------------------------
// The sweep directory.

/// The spec of a new sweep: the config files copied into DIR/configs (an edit of the original
/// does not change a sweep that is resumed), the --set strings and every run.
json new_sweep(const SweepOptions& o, const std::string& dir, const std::vector<RunSpec>& runs) {
  if (fs::exists(dir + "/sweep.json"))
    throw InputError("sweep directory " + dir + " holds a sweep already: continue it with `gmi_drl sweep --resume " + dir +
                     "`, or choose another --sweep-dir");
  runtime::make_run_dir(dir + "/configs");
  runtime::make_run_dir(dir + "/logs");
  json j;
  j["configs"] = json::array();
  for (std::size_t i = 0; i < o.config_paths.size(); ++i) {
    const std::string copy = fmt::format("{}/configs/{}-{}", fs::absolute(dir).string(), i,
                                         fs::path(o.config_paths[i]).filename().string());
    fs::copy_file(o.config_paths[i], copy, fs::copy_options::overwrite_existing);
    j["configs"].push_back(copy);
  }
  j["sets"] = o.sets;
  j["sweep"] = o.sweep;  // --per-gpu, --retries, ...: a resumed sweep (jobs/sweep.sh) keeps them
  j["runs"] = json::array();
  for (const RunSpec& r : runs) {
    json ov = json::array();
    for (const auto& [k, v] : r.overrides) ov.push_back({k, v});
    j["runs"].push_back({{"name", r.name}, {"config", r.config}, {"seed", r.seed}, {"overrides", ov}});
  }
  runtime::write_text_file(dir + "/sweep.json", j.dump(1) + "\n");
  return j;
}

json read_sweep(const std::string& dir) {
  std::ifstream in(dir + "/sweep.json");
  if (!in) throw InputError("--resume " + dir + ": no sweep.json there (not a sweep directory)");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw InputError("--resume " + dir + ": sweep.json is not valid JSON (" + e.what() + ")");
  }
}

/// Runs from sweep.json; their state from sweep.csv (failed stays failed) and the runs' status
/// files (done is done).
std::vector<RunState> load_runs(const json& j, const std::string& dir) {
  std::vector<RunState> runs;
  try {
    for (const json& e : j.at("runs")) {
      RunState r;
      r.spec.index = int(runs.size());
      r.spec.name = e.at("name"), r.spec.config = e.at("config"), r.spec.seed = e.at("seed");
      for (const json& kv : e.at("overrides")) r.spec.overrides.emplace_back(kv.at(0), kv.at(1));
      runs.push_back(std::move(r));
    }
  } catch (const json::exception& e) {
    throw InputError("--resume " + dir + ": sweep.json: " + e.what());
  }
  std::map<std::string, std::vector<std::string>> rows;
  std::ifstream csv(dir + "/sweep.csv");
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    const auto f = csv_fields(line);
    if (f.size() >= 11) rows[f[0]] = f;
  }
  for (RunState& r : runs) {
    const auto it = rows.find(r.spec.name);
    if (it != rows.end()) {
      r.attempts = std::atoi(it->second[8].c_str());
      if (it->second[3] == "failed") r.status = "failed", r.last.error = it->second[10], r.last.where = it->second[9];
    }
    if (first_line(dir + "/" + r.spec.name + "/status") == "done") {
      r.status = "done";
      r.last.status = "done";
      read_metrics(dir + "/" + r.spec.name, r.last);
    }
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------
// The loops: rank 0 hands out runs and runs its own GMIs; every other rank runs one GMI.

/// Rank 0.  Returns when every run ended (or, after a stop signal, every running run stopped).
void lead(Queue& q, Placement& pl, mpi::Mailbox& box, int world, const std::string& exe, double grace) {
  std::vector<int> idle;                      // other ranks waiting for a run
  std::vector<int> start_failures(std::size_t(world), 0);  // per rank, in a row
  auto last_csv = Clock::now(), last_progress = Clock::now();
  const auto t0 = Clock::now();
  const std::size_t total = q.runs.size();
  auto write_csv = [&] {
    try {
      q.write_csv();
    } catch (const std::exception& e) {  // a full disk: the runs go on, the table is written later
      spdlog::warn("sweep.csv: {}; trying again", e.what());
    }
    last_csv = Clock::now();
  };
  while (true) {
    for (const Result& r : poll(pl.slots, grace)) q.report(r);
    while (const auto l = box.poll()) {
      Result r;
      if (l->tag == kResult) q.report(r = result_from(json::parse(l->text)));
      int& fails = start_failures[std::size_t(l->from)];
      fails = l->tag != kResult ? fails : r.rc == kNotStarted ? fails + 1 : 0;
      if ((l->tag == kResult && fails < 3) || l->tag == kReady) idle.push_back(l->from);
      if (fails == 3) spdlog::warn("GMI rank {} could not start 3 runs in a row; it gets no more", l->from);
      if (l->tag == kStop && !g_stop) g_stop = SIGTERM;  // a GMI was told to stop: the sweep stops
    }
    // A stop before any run is handed out in this pass.
    if (g_stop && !q.stopping()) {
      spdlog::warn("{} received: every running run writes a checkpoint and stops; continue with --resume",
                   runtime::signal_name(g_stop));
      q.stop();
      stop_all(pl.slots);
      for (int r = 1; r < world; ++r) box.post(r, kStop, "");
    }
    for (Slot& s : pl.slots)
      if (!s.child && s.start_failures < 3)
        if (const auto j = q.next())
          if (const auto r = start(s, *j, exe)) q.report(*r);
    while (!idle.empty()) {
      const auto j = q.next();
      if (!j) break;
      box.post(idle.back(), kRun, to_json(*j).dump());
      idle.pop_back();
    }
    if (q.running() == 0 && (q.empty() || q.stopping())) break;
    if (q.running() == 0 && idle.empty() &&
        std::none_of(pl.slots.begin(), pl.slots.end(), [](const Slot& s) { return s.start_failures < 3; })) {
      spdlog::error("no GMI can start a run (each failed 3 times in a row); the sweep stops");
      q.stop();
      break;
    }
    if (q.changed && seconds_since(last_csv) >= 1) write_csv();
    if (seconds_since(last_progress) >= 60) {
      last_progress = Clock::now();
      spdlog::info("sweep: {} done, {} failed, {} running, {} pending of {} after {:.0f} s", q.count("done"),
                   q.count("failed"), q.running(), q.count("pending"), total, seconds_since(t0));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 1; r < world; ++r) box.post(r, kQuit, "");
  box.flush();
  write_csv();
}

/// Every rank but 0: one GMI that runs what rank 0 sends.
void follow(Placement& pl, mpi::Mailbox& box, const std::string& exe, double grace) {
  box.post(0, kReady, "");
  bool told = false;
  while (true) {
    if (g_stop) {
      stop_all(pl.slots);
      if (!told) box.post(0, kStop, ""), told = true;
    }
    while (const auto l = box.poll()) {
      if (l->tag == kRun)
        if (const auto r = start(pl.slots[0], job_from(json::parse(l->text)), exe)) box.post(0, kResult, to_json(*r).dump());
      if (l->tag == kStop) g_stop = g_stop ? g_stop : SIGTERM, told = true;
      if (l->tag == kQuit) {
        box.flush();
        return;
      }
    }
    for (const Result& r : poll(pl.slots, grace)) box.post(0, kResult, to_json(r).dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// ---------------------------------------------------------------------------------------------
// Set-up: the config, the runs, the directory, the GMIs.

/// GMIs per GPU of a sweep that starts its own, when sweep.per_gpu is 0: on GPUs as many as fit
/// the memory a one-iteration `gmi_drl bench` of the first run measured (90 % of the GPU's), on
/// host builds the hardware threads; at most 8, and no more than the runs per GPU.
int default_per_gpu(const Queue& q, const std::vector<std::string>& configs, const std::vector<std::string>& sets,
                    const std::string& dir, const std::string& exe, int gpus, int num_envs) {
  int left = 0;
  for (const RunState& r : q.runs) left += r.status != "done" && r.status != "failed";
  const int cap = std::max(1, std::min(8, (left + gpus - 1) / gpus));
  if (!instances::kCudaBuild) return std::max(1, std::min(cap, int(std::thread::hardware_concurrency())));
  instances::ChildSpec spec;
  spec.argv = {exe, "bench"};
  for (const std::string& c : configs) spec.argv.insert(spec.argv.end(), {"--config", c});
  for (const std::string& s : sets) spec.argv.insert(spec.argv.end(), {"--set", s});
  const std::string json_path = dir + "/logs/footprint.json";
  spec.argv.insert(spec.argv.end(), {"--num-envs", std::to_string(num_envs), "--iterations", "1", "--warmup", "1",
                                     "--json", json_path});
  spec.log = dir + "/logs/footprint.log";
  spec.env = {{"CUDA_VISIBLE_DEVICES", visible_device(0)}};
  spec.base_env = g_start_env;
  spec.unset_prefixes = kLauncherPrefixes;
  instances::Child probe(spec);
  const auto t0 = Clock::now();
  while (!probe.poll() && !g_stop && seconds_since(t0) < 600) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int rc = probe.poll() ? *probe.poll() : probe.stop(5);
  try {
    if (rc != 0) throw std::runtime_error(fmt::format("exit status {}: {}", rc, instances::failure_text(spec.log)));
    std::ifstream in(json_path);
    const json j = json::parse(in);
    const double mem = j.at("results").at(0).at("memory_per_gmi"), budget = j.at("memory_budget_per_gmi");
    const int fit = std::max(1, int(std::floor(0.9 * budget / std::max(mem, 1.0))));
    spdlog::info("sweep.per_gpu: a run takes {:.2f} GiB of the GPU's {:.1f} GiB: {} fit, {} per GPU", mem / 1073741824.0,
                 budget / 1073741824.0, fit, std::min(fit, cap));
    return std::min(fit, cap);
  } catch (const std::exception& e) {
    spdlog::warn("sweep.per_gpu: measuring a run's memory failed ({}; {}); {} per GPU", e.what(), spec.log,
                 std::min(cap, 2));
    return std::min(cap, 2);
  }
}

/// Rank 0's part of the set-up: the sweep's spec (new or resumed), its directory and its runs.
/// Returns the config (as YAML) every rank places its GMIs with.
std::string prepare(const SweepOptions& o, std::optional<Queue>& q, std::string& dir) {
  json spec;
  config::Overrides sweep_keys = config::parse_overrides(o.sweep);
  config::Config cfg;
  std::vector<std::string> configs = o.config_paths, sets = o.sets;
  if (!o.resume.empty()) {
    dir = o.resume;
    spec = read_sweep(dir);
    configs = spec.at("configs").get<std::vector<std::string>>();
    sets = spec.at("sets").get<std::vector<std::string>>();
    config::Overrides kept = config::parse_overrides(spec.value("sweep", std::vector<std::string>{}));
    sweep_keys.insert(sweep_keys.begin(), kept.begin(), kept.end());  // this command's own ones win
  }
  config::Overrides all = config::parse_overrides(sets);
  all.insert(all.end(), sweep_keys.begin(), sweep_keys.end());
  cfg = config::load(configs, all, 1);
  if (dir.empty()) dir = cfg.sweep.dir;
  if (dir.empty()) {
    dir = runtime::default_run_dir(configs.front());
    dir.replace(0, std::string("runs/").size(), "sweeps/");
  }
  std::vector<RunState> runs;
  if (o.resume.empty()) {
    const std::vector<RunSpec> specs = expand(cfg);
    spec = new_sweep(o, dir, specs);
    configs = spec.at("configs").get<std::vector<std::string>>();
    for (const RunSpec& r : specs) {
      runs.emplace_back();
      runs.back().spec = r;
    }
  } else {
    runs = load_runs(spec, dir);
  }
  q.emplace(dir, configs, sets, cfg.sweep.retries);
  std::vector<std::string> one;
  if (cfg.gmi.per_gpu != 0) one.push_back("gmi.per_gpu=0");
  if (!cfg.gmi.sm_share.empty()) one.push_back("gmi.sm_share=[]");
  if (cfg.gmi.backend == "mps") one.push_back("gmi.backend=auto");
  q->one_gmi(one);
  q->runs = std::move(runs);
  // A run whose own config is wrong (a grid value out of range) fails now, with its error line.
  for (RunState& r : q->runs) {
    if (r.status == "done" || r.status == "failed") continue;
    config::Overrides ov = config::parse_overrides(sets);
    ov.insert(ov.end(), r.spec.overrides.begin(), r.spec.overrides.end());
    try {
      config::load(configs, ov, 1);
    } catch (const InputError& e) {
      r.status = "failed";
      r.last.error = std::string("gmi_drl: error: ") + e.what();
      spdlog::warn("run {} failed: {}", r.spec.name, e.what());
    }
  }
  q->enqueue_pending();
  runtime::add_log_file(0, dir + "/sweep.log");
  runtime::write_text_file(dir + "/status", "running\n");
  return config::to_yaml(cfg);
}

int sweep(const SweepOptions& o, mpi::Environment& mpi) {
  const auto t0 = Clock::now();
  StopSignals signals;
  std::optional<Queue> q;
  std::string dir, yaml, error;
  if (mpi.rank() == 0) {
    try {
      yaml = prepare(o, q, dir);
    } catch (const InputError& e) {
      error = e.what();
    } catch (const std::exception& e) {  // json, filesystem: still the sweep directory's fault
      error = std::string("sweep directory: ") + e.what();
    }
  }
  error = mpi::agree_on_error(error);
  if (!error.empty()) throw InputError(error);
  const config::Config cfg = config::parse(mpi::broadcast_string(yaml), "sweep", {}, 1);
  dir = mpi::broadcast_string(dir);
  mpi::set_timeout(cfg.reduce.timeout_s);
  const std::string exe = instances::self_exe();
  int gpus = cfg.gmi.gpus_per_node > 0 ? cfg.gmi.gpus_per_node : instances::detect_gpus_per_node();
  mpi::broadcast(gpus);
  if (gpus < 1) throw InputError("gmi.gpus_per_node: no NVIDIA GPU is visible; set the key to the GPUs per node");
  Placement pl;
  if (mpi.size() == 1) {
    const int per_gpu =
        cfg.sweep.per_gpu > 0 ? cfg.sweep.per_gpu : default_per_gpu(*q, q->configs(), q->sets(), dir, exe, gpus, cfg.env.num_envs);
    place_alone(pl, cfg, gpus, per_gpu);
  } else {
    place_ranks(pl, cfg, mpi, gpus);
  }
  const double grace = std::max(30.0, mpi::timeout());
  mpi::Mailbox box;
  if (mpi.rank() != 0) {
    follow(pl, box, exe, grace);
    return 0;
  }
  spdlog::info("sweep: {} runs ({} left) on {} GMI(s), {} GPU(s) per node, backend {}{} -> {}", q->runs.size(),
               q->count("pending"), pl.total, gpus, pl.backend,
               pl.backend == "mps" ? fmt::format(", {:g} % of the SMs each", pl.sm_share) : std::string(), dir);
  lead(*q, pl, box, mpi.size(), exe, grace);
  const int done = q->count("done"), failed = q->count("failed"), left = int(q->runs.size()) - done - failed;
  if (q->stopping()) {
    runtime::write_text_file(dir + "/status", fmt::format("stopped {}\n", runtime::signal_name(g_stop)));
    spdlog::info("sweep stopped: {} done, {} failed, {} to go; continue with `gmi_drl sweep --resume {}`", done, failed,
                 left, dir);
    return 0;
  }
  runtime::write_text_file(dir + "/status", failed ? fmt::format("done, {} failed\n", failed) : "done\n");
  double steps = 0;
  for (const RunState& r : q->runs) steps += r.status == "done" ? double(r.last.env_steps) : 0.0;
  const double wall = seconds_since(t0);
  spdlog::info("sweep done: {} of {} runs done, {} failed in {:.1f} s ({:.4g} env steps of the runs done, {:.4g} per s "
               "end to end); {}/sweep.csv (analyse: python3 postprocess/sweep.py {})",
               done, q->runs.size(), failed, wall, steps, steps / std::max(wall, 1e-9), dir, dir);
  return failed ? 1 : 0;
}

}  // namespace

int run_sweep(const SweepOptions& o, int* argc, char*** argv) {
  g_start_env = instances::environment();
  return runtime::run_mpi_command(argc, argv, o.log_level, [&](mpi::Environment& mpi) { return sweep(o, mpi); });
}

}  // namespace gmi::sweeps
