#pragma once
/// \file
/// \brief `gmi_drl tune`: GMI-DRL's profiling-based configurator (paper 003, §3.1.2, Algorithm 1
/// and Eq. 4).  It searches GMIs per GPU (from the most down to 1) and envs per GMI (doubling),
/// profiles each candidate with a fresh set of processes (MPS SM shares are fixed when a process
/// starts CUDA), projects the memory of larger env counts from the last two probes and skips what
/// cannot fit in a GMI's share, stops growing the env count once throughput saturates (Sat < α),
/// and writes the best layout as a config overlay for `--config base.yaml --config tuned.yaml`.
///
/// The search is written once, over a `probe` function: the real one launches
/// `gmi_drl bench` under the job's MPI launcher; the replay one reads an earlier --exhaustive
/// JSON, so Algorithm 1 can be compared with the full grid on the same measurements.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace gmi::tuning {

struct TuneOptions {
  std::vector<std::string> config_paths;
  std::vector<std::string> sets;      ///< --set key=value for every probe
  std::string mode = "train";         ///< train: rollout + update; serve: rollouts only
  /// mapping.template values searched, each with its own grid (dp: every GMI steps its envs and
  /// learns; e-at: per GPU, mapping.trainers_per_gpu trainer GMIs and the rest simulator GMIs,
  /// whose envs the grid's env counts are; ea-t and async: the same with serving GMIs, which act
  /// too, in lockstep or without waiting).  Empty: the config's template alone.
  std::vector<std::string> templates;
  int max_gmis_per_gpu = 10;
  std::string env_counts = "128..32768";  ///< "lo..hi" (doubling) or a comma-separated list
  double alpha = 0.05;                ///< Sat threshold
  int probe_iterations = 5;           ///< timed iterations per probe
  int probe_warmup = 2;               ///< untimed iterations first
  double budget_minutes = 0;          ///< 0: no limit
  bool exhaustive = false;            ///< probe the whole grid (and say what Algorithm 1 would pick)
  int gpus = 1;                       ///< GPUs of the job the estimate is for
  std::string launcher;               ///< "": srun inside a Slurm allocation, else mpirun --bind-to none
  double probe_timeout_s = 600;
  /// layout: one job per layout (template, GMIs per GPU), sent its env counts in turn (bench
  /// --more-from-stdin); point: a fresh job per grid point.
  std::string probe_jobs = "layout";
  std::string gpu_memory;             ///< memory per GPU, e.g. 80G ("": what the first probe reports)
  std::string replay;                 ///< an --exhaustive JSON: search it instead of probing
  std::string workdir;                ///< the probes' files ("": tune-<time>/ in the current directory)
  std::string json, out;
};

/// One grid point and what became of it.
struct Point {
  std::string templ = "dp";  ///< mapping.template
  int gmis = 0;         ///< GMIs per GPU
  int envs = 0;         ///< envs per GMI (per simulator GMI under e-at, per serving GMI under ea-t, async)
  std::string status;   ///< probed | failed | skipped | saturated | invalid | not visited | cut
  std::string note;     ///< why (a probe's error, the projected memory, ...)
  double top = 0;       ///< samples/s of one GPU's GMIs together (probed)
  double mem = 0;       ///< bytes per GMI (probed), or projected (skipped)
  double budget = 0;    ///< a GMI's memory share, bytes
  double sat = 0;       ///< R_top / R_mem against the previous probe of this GMI count (NaN: first)
  double system = 0;    ///< estimate(): samples/s of the job's GPUs
  double seconds = 0;   ///< wall time of the probe (both attempts when it was retried)
  double gpu_util = std::nan("");  ///< percent of the probe's timed iterations a kernel ran (NVML)
  int attempts = 0;     ///< probes launched for this point: a failed one is tried once more
  bool chosen = false;
};

/// What a probe measured (status "probed" or "failed", with `note`).
using ProbeFn = std::function<Point(int gmis, int envs)>;

struct SearchResult {
  std::vector<Point> points;  ///< every grid point, in search order
  int best = -1;              ///< index into points, -1 when nothing ran
  bool cut = false;           ///< the time budget ran out
  double seconds = 0;         ///< probing time (sum of the probes' wall times)
  int probes = 0;
};

/// Algorithm 1 over `probe`.  `gpu_memory` <= 0: taken from the first probe's report.  The search
/// is cut (every point left is "cut") once the probes took `budget_s` (> 0) or `stop()` says so.
SearchResult search(const std::vector<int>& gmis, const std::vector<int>& envs, double alpha, int gpus,
                    double gpu_memory, double budget_s, const ProbeFn& probe,
                    const std::function<bool()>& stop = {});

/// "lo..hi" (powers of two from lo) or "a,b,c"; throws gmi::InputError naming --env-counts.
std::vector<int> parse_env_counts(const std::string& text);

/// Runs `gmi_drl tune`; returns 0, or 1 when no candidate ran.  Throws gmi::InputError for bad
/// input (options, config, a --replay file).
int run_tune(const TuneOptions& o);

}  // namespace gmi::tuning
