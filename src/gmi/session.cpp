#include "src/gmi/session.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "kernels/core/cpus.hpp"
#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/envs.hpp"
#include "mpi/deadline.hpp"
#include "src/gmi/roles.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi::instances {
namespace {


std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1ull << 30)); }

/// Host memory this process may still use: MemAvailable, or less under a cgroup (v2) limit.
double host_available_bytes() {
  double avail = INFINITY;
  std::ifstream mi("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (mi >> key >> kb >> unit)
    if (key == "MemAvailable:") avail = kb * 1024.0;
  std::ifstream max_f("/sys/fs/cgroup/memory.max"), cur_f("/sys/fs/cgroup/memory.current");
  std::string max_s;
  double cur = 0;
  if (max_f >> max_s && max_s != "max" && cur_f >> cur) avail = std::min(avail, std::stod(max_s) - cur);
  return avail;
}

std::string percent_text(double p) {
  return std::floor(p) == p ? fmt::format("{}", int(p)) : fmt::format("{:.2f}", p);
}

}  // namespace

int detect_gpus_per_node() {
  if (!kCudaBuild) return 1;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    int n = 0;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) ++n;
    return n;
  }
  int n = 0;
  if (DIR* d = ::opendir("/proc/driver/nvidia/gpus")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

GmiSettings settings_for(const config::GmiConfig& g, const mpi::Layout& L, const mpi::Place& p,
                         bool cuda_build) {
  GmiSettings s;
  const int m = L.gmis_per_gpu[p.global_gpu];
  s.backend = g.backend;
  if (s.backend == "auto") s.backend = cuda_build && L.max_gmis_per_gpu() >= 2 ? "mps" : "none";
  if (s.backend == "mig" && !cuda_build)
    throw InputError("gmi.backend: mig needs a CUDA build (this is a host build)");
  s.device_id = s.backend == "mig" ? 0 : p.gpu;
  if (g.sm_share.empty())
    s.sm_share = std::max(1.0, std::floor(100.0 / m));
  else if (g.sm_share.size() == 1)
    s.sm_share = g.sm_share[0];
  else if (int(g.sm_share.size()) == m)
    s.sm_share = g.sm_share[p.slot];
  else
    throw InputError(fmt::format("gmi.sm_share: {} values, but GPU {} of node {} has {} GMI(s); give one "
                                 "value, or one per GMI of every GPU",
                                 g.sm_share.size(), p.gpu, p.node, m));
  s.memory_limit = g.memory_limit;
  return s;
}

std::vector<std::pair<std::string, std::string>> mps_variables(const GmiSettings& s, const MpsDaemon& daemon,
                                                               int device) {
  std::vector<std::pair<std::string, std::string>> v = {
      {"CUDA_MPS_PIPE_DIRECTORY", daemon.pipe_dir()},
      {"CUDA_MPS_LOG_DIRECTORY", daemon.log_dir()},
      {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percent_text(s.sm_share)}};
  if (!s.memory_limit.empty()) v.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", fmt::format("{}={}", device, s.memory_limit));
  return v;
}

namespace {

/// Under a template that splits the roles (mapping.template other than dp), the GMIs that consume
/// (agents serving simulators, trainers) may use the whole GPU unless gmi.sm_share says otherwise:
/// MPS shares are caps, and their producers (simulators) use little of it.  By MPI_COMM_WORLD rank.
std::vector<bool> full_share(const config::Config& cfg, const mpi::Layout& L) {
  std::vector<bool> full(std::size_t(L.size()), false);
  if (!cfg.gmi.sm_share.empty() || cfg.mapping.template_ == "dp") return full;
  for (const mpi::Route& r : plan_roles(L, mapping_request(cfg.mapping)).routes) full[std::size_t(r.consumer)] = true;
  return full;
}

}  // namespace

Session::Session(const config::Config& cfg, mpi::Environment& mpi) : cfg_(cfg) {
  mpi::set_timeout(cfg.reduce.timeout_s);
  const std::vector<std::string> names = mpi::gather_node_names(cfg.gmi.ranks_per_node);
  mpi::LayoutRequest req;
  int gpus = cfg.gmi.gpus_per_node > 0 ? cfg.gmi.gpus_per_node : detect_gpus_per_node();
  mpi::broadcast(gpus);  // one answer for the job
  if (gpus < 1)
    throw InputError("gmi.gpus_per_node: no NVIDIA GPU is visible (CUDA_VISIBLE_DEVICES, "
                     "/proc/driver/nvidia/gpus); set the key to the GPUs per node");
  req.gpus_per_node = gpus;
  req.per_gpu = cfg.gmi.per_gpu;
  comms_ = std::make_unique<mpi::Communicators>(mpi::plan_layout(names, req));
  settings_ = settings_for(cfg.gmi, layout(), me(), kCudaBuild);
  if (full_share(cfg, layout())[std::size_t(mpi::comm_rank(MPI_COMM_WORLD))]) settings_.sm_share = 100;

  if (settings_.backend == "mig") {
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    if (!v || std::string(v).rfind("MIG-", 0) != 0)
      throw InputError("gmi.backend mig: every rank needs CUDA_VISIBLE_DEVICES set by the launcher "
                       "to one MIG instance (MIG-<uuid>); it is '" + std::string(v ? v : "") + "'");
  }
  if (settings_.backend != "mps" && (!cfg.gmi.memory_limit.empty() || !cfg.gmi.sm_share.empty()))
    if (mpi.rank() == 0)
      spdlog::warn("gmi.sm_share and gmi.memory_limit apply only with gmi.backend mps (backend is {})",
                   settings_.backend);
  if (settings_.backend != "mps") forget_unanswered_mps_directory(comms_->node());
  if (settings_.backend == "mps") {
    mps_.emplace(comms_->node(), cfg.gmi.mps_dir);
    // Read by the CUDA driver when this process creates its context: before Kokkos starts.
    for (const auto& [name, value] : mps_variables(settings_, *mps_, settings_.device_id))
      ::setenv(name.c_str(), value.c_str(), 1);
  }
  kokkos_.emplace(settings_.device_id);
}

Session::~Session() {
  // Kokkos first (it drains the device), then the MPS daemon, which stops once every GMI of the
  // node has exited (MpsDaemon::~MpsDaemon).
  kokkos_.reset();
  mps_.reset();
}

int Session::env_threads(int configured, const std::vector<int>& steppers) const {
  const int allowed = allowed_cpu_count();
  int gmis = mpi::comm_size(comms_->node()), k = mpi::comm_rank(comms_->node());
  int hardware = int(std::thread::hardware_concurrency());
  if (!steppers.empty()) {
    // The node's GMIs that step envs share its threads, less one CPU for each that does not.
    int n = 0, mine = -1, others = 0;
    const int me_world = mpi::comm_rank(MPI_COMM_WORLD);
    for (int r = 0; r < layout().size(); ++r) {
      if (layout().places[std::size_t(r)].node != me().node) continue;
      if (std::find(steppers.begin(), steppers.end(), r) == steppers.end()) {
        ++others;
        continue;
      }
      if (r == me_world) mine = n;
      ++n;
    }
    if (mine < 0) return configured > 0 ? configured : 1;
    // Rounded up: the others mostly wait on them (Humanoid PPO under e-at on one H100 machine, 6
    // simulators on 15 CPUs: 3 threads each ran 12 % faster than 2).
    gmis = n, k = mine, hardware = std::max(n, hardware - others);
    hardware += gmis - 1;
  }
  const int share = hardware / gmis;
  const int threads = configured > 0 ? configured : std::max(1, std::min(allowed, share));
  if (cfg_.env.pin_threads && gmis > 1 && allowed >= int(std::thread::hardware_concurrency())) {
    // Every GMI of the node may run anywhere (mpirun --bind-to none): pinned threads of several
    // GMIs would share the first CPUs, so this GMI keeps its slice of the node's CPUs, the k-th of
    // as many as the node has GMIs (its threads inherit it; the pool pins within it).
    cpu_set_t mine;
    CPU_ZERO(&mine);
    for (int c : cpu_share(k, gmis)) CPU_SET(c, &mine);
    if (CPU_COUNT(&mine) > 0) ::sched_setaffinity(0, sizeof mine, &mine);
  }
  // One line per node (its first GMI): the launcher binds every rank alike.
  if (envs::mujoco::is_mujoco(cfg_.env.name) && (threads > allowed || allowed < share) &&
      mpi::comm_rank(comms_->node()) == 0)
    spdlog::warn("GMI rank {} may run on {} of the node's {} CPUs (its affinity mask, set by the MPI launcher's "
                 "binding), and its {} environment thread(s) share them; to give host-simulated environments the "
                 "node's cores, launch with `mpirun --bind-to none` (or --map-by slot:PE=<n>, srun --cpus-per-task=<n>)",
                 mpi::comm_rank(MPI_COMM_WORLD), allowed, std::thread::hardware_concurrency(), threads);
  return threads;
}

void Session::check_memory(double device_bytes, double host_bytes,
                           const std::vector<std::pair<std::string, std::string>>& driver_keys) const {
  std::string drivers, lower;
  for (const auto& [key, value] : driver_keys) {
    drivers += fmt::format("{}{} = {}", drivers.empty() ? "" : ", ", key, value);
    if (key.rfind("policy.", 0) != 0) lower += (lower.empty() ? "" : " or ") + key;
  }
  if (lower.empty()) lower = "the sizes above";
  // Kokkos, cuBLAS and the reducers' buffers take some too: a margin.
  auto padded = [](double b) { return b * 1.05 + double(64ull << 20); };
  const mpi::Place& p = me();
  std::string error;
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free_b = 0, total_b = 0;
  GMI_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  // With an MPS memory limit a GMI sees its own allowance; without one the GPU's GMIs share it.
  const bool own_limit = settings_.backend == "mps" && !settings_.memory_limit.empty();
  double dev[2] = {padded(device_bytes), double(free_b)};
  if (!own_limit) {
    const double sum = mpi::sum_over(comms_->gpu(), dev[0]);
    const double low = mpi::max_over(comms_->gpu(), -dev[1]);
    dev[0] = sum, dev[1] = -low;
  }
  if (dev[0] > dev[1])
    error = fmt::format("not enough device memory for {}: {} need {} ({} of training state each), {} {}; lower "
                        "{}, or use more GMIs or GPUs{}",
                        drivers,
                        own_limit ? fmt::format("GMI rank {}", mpi::comm_rank(MPI_COMM_WORLD))
                                  : fmt::format("the {} GMI(s) of GPU {} on node {}", layout().gmis_per_gpu[p.global_gpu], p.gpu, p.node),
                        gib(dev[0]), gib(device_bytes),
                        gib(dev[1]), own_limit ? "under its MPS memory limit (gmi.memory_limit)" : "free on that GPU",
                        lower, driver_keys.empty() || driver_keys[0].first != "replay.capacity"
                                   ? std::string()
                                   : std::string(" (replay.storage: host keeps the replay in host memory)"));
  const double host_need = padded(host_bytes);
#else
  const double host_need = padded(device_bytes + host_bytes);
#endif
  {
    // The node's GMIs share its host memory.  Every rank takes part in these reductions, also one
    // that found its device memory short: skipping them would leave the rest of its node waiting.
    const double sum = mpi::sum_over(comms_->node(), host_need);
    const double low = mpi::max_over(comms_->node(), -host_available_bytes());
    if (error.empty() && sum > -low)
      error = fmt::format("not enough host memory for {}: the {} GMI(s) of node {} need {} ({} each), {} available; "
                          "lower {}, or use more nodes",
                          drivers, mpi::comm_size(comms_->node()), p.node, gib(sum), gib(host_need), gib(-low), lower);
  }
  // One answer for the job: one of the ranks that found a problem names it.
  error = mpi::agree_on_error(error);
  if (!error.empty()) throw InputError(error);
}

double peak_resident_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) * 1024.0;  // kilobytes on Linux
}

double Session::memory_in_use() const {
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free_b = 0, total_b = 0;
  GMI_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  // Under an MPS memory limit the context sees its own allowance and use; otherwise the GPU's,
  // which its GMIs share.
  const bool own_limit = settings_.backend == "mps" && !settings_.memory_limit.empty();
  return double(total_b - free_b) / (own_limit ? 1 : layout().gmis_per_gpu[me().global_gpu]);
#else
  return peak_resident_bytes();
#endif
}

double Session::memory_budget() const {
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free_b = 0, total_b = 0;
  GMI_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  // Under an MPS memory limit the GMI's context sees its own allowance as the total.
  const bool own_limit = settings_.backend == "mps" && !settings_.memory_limit.empty();
  return own_limit ? double(total_b) : double(total_b) / layout().gmis_per_gpu[me().global_gpu];
#else
  double total = 0;
  std::ifstream mi("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (mi >> key >> kb >> unit)
    if (key == "MemTotal:") total = kb * 1024.0;
  return total / mpi::comm_size(comms_->node());
#endif
}

std::string Session::layout_table() const {
  // What the GMI's context actually sees: under MPS the SM count reflects the thread percentage.
  double mine[2] = {0, 0};
#if defined(KOKKOS_ENABLE_CUDA)
  int dev = 0, sms = 0;
  GMI_CUDA_CHECK(cudaGetDevice(&dev));
  GMI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  std::size_t free_b = 0, total_b = 0;
  GMI_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  mine[0] = sms;
  mine[1] = double(total_b >> 20);
#endif
  const mpi::Layout& L = layout();
  const std::vector<double> all = mpi::gather(mine, 2, comms_->world());
  std::vector<GmiSettings> s(L.size());
  const std::vector<bool> full = full_share(cfg_, L);
  for (int r = 0; r < L.size(); ++r) {
    s[L.places[r].gmi_rank] = settings_for(cfg_.gmi, L, L.places[r], kCudaBuild);
    if (full[std::size_t(r)]) s[L.places[r].gmi_rank].sm_share = 100;
  }
  std::ostringstream t;
  t << fmt::format("{} GMI(s) on {} GPU(s) of {} node(s), backend {}\n", L.size(), L.num_gpus, L.num_nodes,
                   settings_.backend);
  t << fmt::format("{:>5} {:>5} {:>4} {:>5} {:>5} {:>9} {:>9} {:>11}\n", "rank", "node", "gpu", "slot",
                   "SM %", "SMs seen", "mem MiB", "mem limit");
  std::vector<const mpi::Place*> by_rank(L.size());
  for (const auto& p : L.places) by_rank[p.gmi_rank] = &p;
  for (int r = 0; r < L.size(); ++r) {
    const mpi::Place& p = *by_rank[r];
    t << fmt::format("{:>5} {:>5} {:>4} {:>5} {:>5} {:>9} {:>9} {:>11}\n", r, p.node, p.gpu, p.slot,
                     s[r].backend == "mps" ? percent_text(s[r].sm_share) : "-",
                     kCudaBuild ? fmt::format("{:.0f}", all[2 * r]) : "-",
                     kCudaBuild ? fmt::format("{:.0f}", all[2 * r + 1]) : "-",
                     s[r].memory_limit.empty() || s[r].backend != "mps" ? "-" : s[r].memory_limit);
  }
  std::string out = t.str();
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

mpi::ReducerOptions Session::reducer_options(std::size_t elements) const {
  mpi::ReducerOptions o;
  o.strategy = cfg_.reduce.strategy;
  o.hybrid_k = cfg_.reduce.hybrid_k;
  o.intra_gpu = cfg_.reduce.intra_gpu;
  o.inter_gpu = cfg_.reduce.inter_gpu;
  o.auto_runs = cfg_.reduce.auto_runs;
  o.elements = elements;
  // MPS runs the GMIs of a GPU side by side; without it they time-slice.  Host builds' GMIs are
  // processes on the cores.
  o.concurrent_gmis = settings_.backend == "mps" || !kCudaBuild;
  return o;
}

void Session::set_learners(const std::vector<int>& learners) {
  learner_comms_ = mpi::communicators_of(*comms_, learners);
  split_ = true;
}

const mpi::Communicators* Session::learner_comms() const { return split_ ? learner_comms_.get() : comms_.get(); }

std::unique_ptr<mpi::GradientReducer> Session::make_reducer(std::size_t elements, const std::string& keep) const {
  const mpi::Communicators* comms = learner_comms();
  if (!comms) return nullptr;
  mpi::ReducerOptions o = reducer_options(elements);
  if (o.strategy == "auto" && !keep.empty()) {
    int k = 0;
    if (keep == "mpr" || keep == "mrr") o.strategy = keep;
    else if (keep == "har (ipc)") o.strategy = "har", o.intra_gpu = "ipc", o.inter_gpu = "leaders";
    else if (keep == "har (ipc, rings)") o.strategy = "har", o.intra_gpu = "ipc", o.inter_gpu = "rings";
    else if (keep == "har (mpi)") o.strategy = "har", o.intra_gpu = "mpi";
    else if (std::sscanf(keep.c_str(), "hybrid k=%d", &k) == 1) o.strategy = "hybrid", o.hybrid_k = k;
    if (o.strategy != "auto" && mpi::unsupported_reason(comms->layout(), o.strategy, o).empty()) {
      auto r = mpi::make_strategy(*comms, o.strategy, o);
      spdlog::info("gradient reduction: {} over {} GMI(s) (the checkpoint's; reduce.strategy auto keeps it "
                   "on resume so that the run continues bit for bit)", r->name(), r->size());
      return r;
    }
    o.strategy = "auto";
    o.intra_gpu = cfg_.reduce.intra_gpu;
    o.inter_gpu = cfg_.reduce.inter_gpu;
    o.hybrid_k = cfg_.reduce.hybrid_k;
  }
  mpi::ReducerChoice c = mpi::make_reducer(*comms, o);
  if (!c.projections.empty()) {
    const auto& u = c.costs;
    spdlog::info("reduce auto: {} floats; measured IP({}) {:.1f} us, RP({}) {:.1f} us{}, within-GPU ({}) {:.1f} us",
                 elements, u.ip_group, 1e6 * u.ip, u.rp_group, 1e6 * u.rp,
                 u.rp_slice > 0 ? fmt::format(" ({:.1f} us on a ring's slice)", 1e6 * u.rp_slice) : std::string(),
                 u.local_path.empty() ? "-" : u.local_path, 1e6 * u.local);
    for (const auto& p : c.projections)
      spdlog::info("  projected {:<12} {:>10.1f} us  = {}", p.strategy, 1e6 * p.seconds, p.formula);
  }
  spdlog::info("gradient reduction: {} over {} GMI(s){}", c.reducer->name(), c.reducer->size(),
               c.projections.empty() ? "" : " (chosen by reduce.strategy auto)");
  return std::move(c.reducer);
}

}  // namespace gmi::instances
