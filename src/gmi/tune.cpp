#include "src/gmi/tune.hpp"

#include <signal.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "gmi_version.hpp"
#include "kernels/core/error.hpp"
#include "src/config/config.hpp"
#include "src/config/integer.hpp"
#include "src/gmi/child.hpp"
#include "src/gmi/roles.hpp"
#include "src/gmi/split_training.hpp"

namespace gmi::tuning {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

/// SIGINT / SIGTERM: the probe running is ended and tune reports the best found so far.
volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string gib(double b) { return fmt::format("{:.2f} GiB", b / double(1ull << 30)); }

std::string rate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f} M", r / 1e6);
  if (r >= 1e3) return fmt::format("{:.1f} k", r / 1e3);
  return fmt::format("{:.0f}", r);
}

/// "80G", "512M", "1.5T", "123456" (bytes).
double parse_bytes(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used ? s.substr(used) : "";
  const double mult = unit.empty() ? 1 : unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0
                                       : unit == "T" ? 1099511627776.0 : -1;
  if (!used || mult < 0 || !(v > 0)) throw InputError(what + ": expected a size such as 80G or 512M, got '" + s + "'");
  return v * mult;
}

/// The paper's estimate(): a probe runs every GMI of one GPU, so the job's GPUs multiply it.
double estimate(double top_per_gpu, int gpus) { return top_per_gpu * gpus; }

/// Sat = R_top / R_mem (Algorithm 1, lines 17-19).  Memory that did not grow: saturated only if
/// throughput did not grow either.
double saturation(double top, double pre_top, double mem, double pre_mem) {
  const double r_top = (top - pre_top) / pre_top;
  const double r_mem = (mem - pre_mem) / pre_mem;
  if (r_mem > 1e-9) return r_top / r_mem;
  return r_top > 0 ? std::numeric_limits<double>::infinity() : r_top < 0 ? -std::numeric_limits<double>::infinity() : 0;
}

std::string sat_text(double s) {
  if (std::isnan(s)) return "-";
  if (std::isinf(s)) return s > 0 ? "inf" : "-inf";
  return fmt::format("{:.3f}", s);
}

}  // namespace

std::vector<int> parse_env_counts(const std::string& text) {
  std::vector<int> out;
  auto number = [&](const std::string& t) {
    const auto v = config::parse_integer(t);
    if (!v || *v < 1 || *v > (1 << 30))
      throw InputError("--env-counts: '" + t + "' is not a positive env count (expected lo..hi or a,b,c)");
    return int(*v);
  };
  const auto dots = text.find("..");
  if (dots != std::string::npos) {
    const int lo = number(text.substr(0, dots)), hi = number(text.substr(dots + 2));
    if (hi < lo) throw InputError("--env-counts: " + text + ": the upper end is below the lower one");
    for (long long n = lo; n <= hi; n *= 2) out.push_back(int(n));
  } else {
    std::stringstream ss(text);
    std::string t;
    while (std::getline(ss, t, ',')) out.push_back(number(t));
    if (!std::is_sorted(out.begin(), out.end()) || std::adjacent_find(out.begin(), out.end()) != out.end())
      throw InputError("--env-counts: " + text + ": expected increasing counts");
  }
  if (out.empty()) throw InputError("--env-counts: no env count in '" + text + "'");
  return out;
}

SearchResult search(const std::vector<int>& gmis, const std::vector<int>& envs, double alpha, int gpus,
                    double gpu_memory, double budget_s, const ProbeFn& probe, const std::function<bool()>& stop) {
  SearchResult r;
  double max_top = -std::numeric_limits<double>::infinity();
  auto out_of_time = [&] { return (budget_s > 0 && r.seconds >= budget_s) || (stop && stop()); };
  for (int g : gmis) {
    double pre_top = 0, pre_mem = 0;
    double share = gpu_memory > 0 ? gpu_memory / g : 0;  // a GMI's memory: given, or as its probes report
    std::vector<std::pair<double, double>> seen;  // (envs, memory) of this GMI count's probes
    bool done = false;  // this GMI count is finished
    for (int n : envs) {
      Point p;
      p.gmis = g;
      p.envs = n;
      p.sat = std::nan("");
      if (done) {
        p.status = "not visited";
        r.points.push_back(p);
        continue;
      }
      if (out_of_time()) {
        p.status = "cut";
        p.note = stop && stop() ? "interrupted" : "time budget spent";
        r.cut = true;
        r.points.push_back(p);
        continue;
      }
      // Eq. 4: project memory from the last two probes; skip what cannot fit in a GMI's share.
      if (seen.size() >= 2 && share > 0) {
        const auto [e1, m1] = seen[seen.size() - 2];
        const auto [e2, m2] = seen[seen.size() - 1];
        const double mp = (double(n) - e2) / (e2 - e1) * (m2 - m1) + m2;
        p.budget = share;
        if (mp > p.budget) {
          p.status = "skipped";
          p.mem = mp;
          p.note = fmt::format("projected {} per GMI > its share {}", gib(mp), gib(p.budget));
          r.points.push_back(p);
          done = true;
          continue;
        }
      }
      Point m = probe(g, n);
      m.sat = std::nan("");
      r.seconds += m.seconds;
      if (m.status == "probed" || m.status == "failed") ++r.probes;
      // A probe reports its GMIs' share (the GPU's memory over them, or their MPS memory limit).
      if (gpu_memory <= 0 && m.budget > 0) share = m.budget;
      if (m.status == "invalid") {
        // The config refuses this env count (e.g. a batch the minibatches do not divide); a
        // larger one may be fine.
        r.points.push_back(m);
        continue;
      }
      if (m.status != "probed") {
        // Out of memory, an error or a timeout: a larger env count will not do better.
        r.points.push_back(m);
        done = true;
        continue;
      }
      seen.emplace_back(double(n), m.mem);
      m.system = estimate(m.top, gpus);
      if (pre_top > 0 && pre_mem > 0) {
        m.sat = saturation(m.top, pre_top, m.mem, pre_mem);
        if (m.sat < alpha) {
          m.status = "saturated";
          done = true;
        }
      }
      pre_top = m.top;
      pre_mem = m.mem;
      // Every measured point competes for best (the paper's listing skips the first point of a GMI
      // count and the one that saturates; both were measured, and keeping them loses nothing).
      if (m.system > max_top) {
        max_top = m.system;
        r.best = int(r.points.size());
      }
      r.points.push_back(m);
    }
  }
  if (r.best >= 0) r.points[r.best].chosen = true;
  return r;
}

namespace {

/// Splits a launcher command line ("srun --mpi=pmix") into words.
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::stringstream ss(s);
  std::string t;
  while (ss >> t) w.push_back(t);
  return w;
}

/// Starts `child` with stdout and stderr to `log`, in its own process group.
void start_child(std::optional<instances::Child>& child, const std::vector<std::string>& argv, const std::string& log,
                 bool stdin_pipe) {
  instances::ChildSpec spec;
  spec.argv = argv;
  spec.log = log;
  spec.stdin_pipe = stdin_pipe;
  try {
    child.emplace(spec);
  } catch (const InputError& e) {
    throw InputError(std::string("--launcher: ") + e.what());
  }
}

/// Runs argv with stdout and stderr to `log`, in its own process group; kills the group after
/// `timeout_s`.  Returns the exit status, 128 + signal, -1 on a timeout or -2 after a signal.
int run_process(const std::vector<std::string>& argv, const std::string& log, double timeout_s) {
  std::optional<instances::Child> child;
  start_child(child, argv, log, false);
  const auto t0 = Clock::now();
  while (true) {
    if (const auto st = child->poll()) return *st;
    if (seconds_since(t0) > timeout_s || g_signal) {
      child->stop(5.0);
      return g_signal ? -2 : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

json point_json(const Point& p) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return json{{"template", p.templ}, {"gmis_per_gpu", p.gmis}, {"envs_per_gmi", p.envs},   {"status", p.status},
              {"note", p.note},         {"samples_per_s", num(p.top)}, {"system_samples_per_s", num(p.system)},
              {"memory_per_gmi", num(p.mem)}, {"memory_budget_per_gmi", num(p.budget)},
              {"sat", num(p.sat)},      {"seconds", p.seconds},       {"attempts", p.attempts},
              {"gpu_util_pct", num(p.gpu_util)},
              {"chosen", p.chosen}};
}

/// The result table, one row per grid point.
std::string table(const SearchResult& r, int gpus) {
  // A template column where the search had more than dp (e-at: envs per simulator GMI; ea-t and
  // async: per serving GMI).
  const bool templates = std::any_of(r.points.begin(), r.points.end(), [](const Point& p) { return p.templ != "dp"; });
  auto templ = [&](const std::string& t) { return templates ? fmt::format("{:>8} ", t) : std::string(); };
  std::string t = fmt::format("{}{:>5} {:>8} {:>14} {:>14} {:>11} {:>11} {:>7} {:>6} {:>7}  {}\n", templ("template"),
                              "GMIs", "envs/GMI", "samples/s/GPU", fmt::format("est. {} GPU(s)", gpus), "mem/GMI",
                              "share/GMI", "Sat", "GPU %", "s", "status");
  for (const Point& p : r.points) {
    const bool measured = p.status == "probed" || p.status == "saturated";
    t += fmt::format("{}{:>5} {:>8} {:>14} {:>14} {:>11} {:>11} {:>7} {:>6} {:>7}  {}{}{}\n", templ(p.templ), p.gmis,
                     p.envs, measured ? rate(p.top) : "-", measured ? rate(p.system) : "-",
                     p.mem > 0 ? gib(p.mem) : "-", p.budget > 0 ? gib(p.budget) : "-", sat_text(p.sat),
                     measured && std::isfinite(p.gpu_util) ? fmt::format("{:.0f}", p.gpu_util) : "-",
                     p.seconds > 0 ? fmt::format("{:.1f}", p.seconds) : "-", p.status,
                     p.note.empty() ? "" : ": " + p.note, p.chosen ? "   <== chosen" : "");
  }
  return t;
}

/// A probe of one template's grid point.
using TemplateProbe = std::function<Point(const std::string& templ, int gmis, int envs)>;

/// An --exhaustive JSON's measurements as a probe function (Algorithm 1 replayed on them).
TemplateProbe replay_probe(const json& j, const std::string& path) {
  std::map<std::tuple<std::string, int, int>, Point> m;
  for (const auto& e : j.at("points")) {
    Point p;
    p.templ = e.value("template", "dp");  // files written before templates were searched
    p.gmis = e.at("gmis_per_gpu");
    p.envs = e.at("envs_per_gmi");
    p.status = e.at("status");
    if (p.status == "saturated") p.status = "probed";
    if (p.status == "skipped" || p.status == "not visited") continue;  // decided by that run's search, not measured
    p.note = e.value("note", "");
    p.top = e["samples_per_s"].is_number() ? e["samples_per_s"].get<double>() : 0;
    p.mem = e["memory_per_gmi"].is_number() ? e["memory_per_gmi"].get<double>() : 0;
    p.budget = e["memory_budget_per_gmi"].is_number() ? e["memory_budget_per_gmi"].get<double>() : 0;
    p.seconds = e.value("seconds", 0.0);
    p.attempts = e.value("attempts", 1);
    if (e.contains("gpu_util_pct") && e["gpu_util_pct"].is_number()) p.gpu_util = e["gpu_util_pct"];
    m[{p.templ, p.gmis, p.envs}] = p;
  }
  return [m, path](const std::string& t, int g, int n) {
    const auto it = m.find({t, g, n});
    if (it == m.end())
      throw InputError(fmt::format("--replay {}: no measurement of {} GMIs x {} envs under {}: replay an --exhaustive "
                                   "run with the same --templates, --max-gmis-per-gpu and --env-counts",
                                   path, g, n, t));
    return it->second;
  };
}

/// A probe job kept for one layout (--probe-jobs layout): `LAUNCHER -np G gmi_drl bench
/// --more-from-stdin` started with the layout's first env count and sent each further one, so its
/// GMIs' processes (and their MPS shares) start once per layout.
struct LayoutJob {
  std::string key;       ///< template and GMIs per GPU
  std::string stem;      ///< its log and JSON, named by the first point
  int points = 0;        ///< env counts it was given
  std::optional<instances::Child> child;
};

/// How probes are started: the launcher's words, whether it is srun (-n, not -np), this
/// executable, where the probes' logs and JSON go, and the layout's job that is running.
struct Launch {
  std::vector<std::string> words;
  bool srun = false;
  std::string exe, workdir;
  std::optional<LayoutJob> job;
  bool point_jobs = false;  ///< a layout's job could not be sent its counts: a job per point
};

Point launch_once(const TuneOptions& o, Launch& l, int steppers, Point p);

/// One probe: `g` GMIs x `n` envs each under template `t`, a fresh `LAUNCHER -np g gmi_drl bench`
/// job.  A candidate whose config is invalid (e.g. a batch that ppo.num_minibatches does not
/// divide, or under e-at, ea-t or async a GMI count that is not mapping.trainers_per_gpu x (S + 1)) is not
/// launched: the config says why.  A probe that fails or times out is a failure of the machine
/// more often than of the layout (a stale MPS daemon, a busy node): it runs once more, and the
/// point is "failed" only when both attempts fail.
Point launch_probe(const TuneOptions& o, const config::Overrides& sets, Launch& l, const std::string& t, int g,
                   int n) {
  Point p;
  p.templ = t;
  p.gmis = g;
  p.envs = n;
  int steppers = g;  // GMIs per GPU that step envs
  try {
    config::Overrides ov = sets;
    ov.emplace_back("env.num_envs", std::to_string(n));
    ov.emplace_back("gmi.per_gpu", std::to_string(g));
    ov.emplace_back("mapping.template", t);
    const config::Config c = config::load(o.config_paths, ov, g);
    if (t != "dp") {
      const int T = c.mapping.trainers_per_gpu;
      if (g % T != 0 || g < 2 * T)
        throw InputError(fmt::format("under {} {} GMI(s) per GPU are not mapping.trainers_per_gpu = {} trainer(s) "
                                     "with the same number (>= 1) of {} GMIs each",
                                     t, g, T, instances::stepper_name(t)));
      steppers = g - T;
      instances::trainer_config_of(c, g / T - 1, T);  // the trainers' batch, as training checks it
    }
  } catch (const InputError& e) {
    p.status = "invalid";
    p.note = e.what();
    return p;
  }
  Point first = launch_once(o, l, steppers, p);
  if (first.status != "failed") return first;
  spdlog::warn("probe {} {} GMI(s) x {} envs failed ({}); trying it once more", t, g, n, first.note);
  Point second = launch_once(o, l, steppers, p);
  second.seconds += first.seconds;
  second.attempts = 2;
  second.note = second.status == "probed" ? "the first attempt failed: " + first.note
                : second.status == "failed" ? "failed twice: " + second.note
                                            : second.note;
  return second;
}

/// The probe's command line: `LAUNCHER -np G gmi_drl bench` with the config, the point's template
/// and GMIs, its first env count and what each point measures.
std::vector<std::string> probe_argv(const TuneOptions& o, const Launch& l, int steppers, const Point& p,
                                    const std::string& json) {
  std::vector<std::string> argv = l.words;
  // One GPU's GMIs on one node (srun would spread the tasks of a multi-node allocation).
  if (l.srun) argv.insert(argv.end(), {"-N", "1"});
  argv.insert(argv.end(), {l.srun ? "-n" : "-np", std::to_string(p.gmis), l.exe, "bench"});
  for (const auto& c : o.config_paths) argv.insert(argv.end(), {"--config", c});
  for (const auto& s : o.sets) argv.insert(argv.end(), {"--set", s});
  argv.insert(argv.end(), {"--set", "mapping.template=" + p.templ});
  argv.insert(argv.end(), {"--set", fmt::format("gmi.per_gpu={}", p.gmis), "--num-envs",
                           std::to_string(steppers * p.envs), "--iterations", std::to_string(o.probe_iterations),
                           "--warmup", std::to_string(o.probe_warmup), "--mode", o.mode, "--json", json});
  return argv;
}

/// The probe's files: probe-GxN, or probe-TEMPLATE-GxN for a template other than dp.
std::string probe_stem(const Launch& l, const Point& p) {
  return p.templ == "dp" ? fmt::format("{}/probe-{}x{}", l.workdir, p.gmis, p.envs)
                         : fmt::format("{}/probe-{}-{}x{}", l.workdir, p.templ, p.gmis, p.envs);
}

/// Result `k` of a bench JSON into `p` (throws what parsing it throws).
void read_result(const std::string& path, std::size_t k, Point& p) {
  std::ifstream in(path);
  const json j = json::parse(in);
  const json& res = j.at("results").at(k);
  p.top = res.at("env_steps_per_s");
  p.mem = res.at("memory_per_gmi");
  if (res.contains("gpu_util_pct") && res["gpu_util_pct"].is_number()) p.gpu_util = res["gpu_util_pct"];
  p.budget = j.at("memory_budget_per_gmi");
  p.status = "probed";
}

/// Results in a bench JSON so far (0 while it is not there or not whole).
std::size_t results_in(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  try {
    std::ifstream in(path);
    return json::parse(in).at("results").size();
  } catch (const std::exception&) {
    return 0;
  }
}

/// Why a probe job ended before its result: `rc` as run_process returns it.
std::string failure_note(const TuneOptions& o, int rc, const std::string& stem) {
  return rc == -2 ? "interrupted (signal)"
         : rc < 0 ? fmt::format("timed out after {:.0f} s ({}.log)", o.probe_timeout_s, stem)
                  : fmt::format("exit status {}: {} ({}.log)", rc, instances::failure_text(stem + ".log"), stem);
}

/// The layout's job ends: its input closed, it writes its JSON and exits (or is stopped after
/// --probe-timeout).
void end_layout_job(const TuneOptions& o, Launch& l) {
  if (!l.job) return;
  LayoutJob& j = *l.job;
  j.child->close_stdin();
  const auto t0 = Clock::now();
  while (!j.child->poll() && seconds_since(t0) < o.probe_timeout_s && !g_signal)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::optional<int> st = j.child->poll();
  if (!st) j.child->stop(5.0);
  if (!st || *st != 0)
    spdlog::warn("probe job {}: {} after its last point ({}.log)", j.stem,
                 st ? fmt::format("exit status {}", *st) : std::string("did not end"), j.stem);
  l.job.reset();
}

/// A probe's outcome: `rc` as run_process returns it (a failure), or 0: result `k` of its JSON.
void finish_probe(const TuneOptions& o, int rc, const std::string& stem, std::size_t k, Point& p) {
  if (rc != 0) {
    p.status = rc == -2 ? "cut" : "failed";
    p.note = failure_note(o, rc, stem);
    return;
  }
  try {
    read_result(stem + ".json", k, p);
  } catch (const std::exception& e) {
    p.status = "failed";
    p.note = fmt::format("no usable result in {}.json ({})", stem, e.what());
  }
}

/// --probe-jobs point: the point in a fresh job.
Point probe_in_point_job(const TuneOptions& o, const Launch& l, int steppers, Point p) {
  const std::string stem = probe_stem(l, p);
  std::filesystem::remove(stem + ".json");
  const auto tp = Clock::now();
  const int rc = run_process(probe_argv(o, l, steppers, p, stem + ".json"), stem + ".log", o.probe_timeout_s);
  p.seconds += seconds_since(tp);
  finish_probe(o, rc, stem, 0, p);
  return p;
}

/// Starts the layout's job for `p`, its first point (the Launch has none running).
void start_layout_job(const TuneOptions& o, Launch& l, int steppers, const Point& p, const std::string& key) {
  l.job.emplace();
  l.job->key = key;
  l.job->stem = probe_stem(l, p);
  std::filesystem::remove(l.job->stem + ".json");
  std::vector<std::string> argv = probe_argv(o, l, steppers, p, l.job->stem + ".json");
  argv.emplace_back("--more-from-stdin");
  try {
    start_child(l.job->child, argv, l.job->stem + ".log", true);
  } catch (...) {
    l.job.reset();
    throw;
  }
}

/// --probe-jobs layout: the point in its layout's job (started now when the layout changed or its
/// job failed).  The seconds of a point that starts a job count its start and the previous job's
/// end.  A job that ends with status 0 without reading a further count had a launcher that does
/// not forward its input: a warning, and a job per point from then on.
Point probe_in_layout_job(const TuneOptions& o, Launch& l, int steppers, Point p) {
  const std::string key = fmt::format("{}/{}", p.templ, p.gmis);
  const auto tp = Clock::now();
  if (l.job && l.job->key != key) end_layout_job(o, l);
  if (g_signal) {  // arrived while the last job ended: no new one
    p.status = "cut";
    p.note = "interrupted (signal)";
    return p;
  }
  if (!l.job) start_layout_job(o, l, steppers, p, key);
  else if (!l.job->child->write_stdin(std::to_string(steppers * p.envs) + "\n"))
    l.job->child->close_stdin();  // its input is gone: it ends on its own, and its status says how
  LayoutJob& j = *l.job;
  const std::size_t k = std::size_t(j.points++);
  const std::string json_path = j.stem + ".json";
  const auto t_point = Clock::now();
  int rc = 0;
  while (results_in(json_path) <= k) {
    const std::optional<int> st = j.child->poll();
    if (st && results_in(json_path) <= k) {  // ended without this point's result: a failure
      rc = *st == 0 ? 1 : *st;
      break;
    }
    if (seconds_since(t_point) > o.probe_timeout_s || g_signal) {
      rc = g_signal ? -2 : -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (rc == 0) {
    finish_probe(o, 0, j.stem, k, p);
    if (p.status != "probed") end_layout_job(o, l);
    p.seconds = seconds_since(tp);
    return p;
  }
  j.child->stop(5.0);
  const std::optional<int> st = j.child->poll();
  if (rc > 0 && k > 0 && st && *st == 0) {
    spdlog::warn("probe job {} ended (exit status 0) after {} point(s) without reading the next env count: the "
                 "launcher does not forward its standard input to rank 0; a job per point from here on "
                 "(--probe-jobs point)",
                 j.stem, k);
    l.job.reset();
    l.point_jobs = true;
    p.seconds = seconds_since(tp);
    return probe_in_point_job(o, l, steppers, p);
  }
  finish_probe(o, rc > 0 && st ? *st : rc, j.stem, k, p);
  if (p.status == "failed" && st && *st == 0) p.note = fmt::format("ended (exit status 0) without a result ({}.log)", j.stem);
  l.job.reset();
  p.seconds = seconds_since(tp);
  return p;
}

Point launch_once(const TuneOptions& o, Launch& l, int steppers, Point p) {
  p.attempts = 1;
  if (o.probe_jobs == "layout" && !l.point_jobs) return probe_in_layout_job(o, l, steppers, p);
  return probe_in_point_job(o, l, steppers, p);
}

/// --exhaustive: every grid point probed (within the time budget), the best measured chosen;
/// `grid` gets every point for Algorithm 1's replay.
SearchResult exhaustive(const std::vector<int>& gmis, const std::vector<int>& envs, int gpus, double budget_s,
                        const ProbeFn& probe, const std::function<bool()>& stop,
                        std::map<std::pair<int, int>, Point>& grid) {
  SearchResult r;
  double spent = 0;
  for (int g : gmis)
    for (int n : envs) {
      Point p;
      if ((budget_s > 0 && spent >= budget_s) || stop()) {
        p.gmis = g, p.envs = n, p.status = "cut", p.note = stop() ? "interrupted" : "time budget spent";
        r.cut = true;
      } else {
        p = probe(g, n);
        spent += p.seconds;
        if (p.status == "probed" || p.status == "failed") ++r.probes;
      }
      p.system = p.status == "probed" ? estimate(p.top, gpus) : 0;
      p.sat = std::nan("");
      grid[{g, n}] = p;
      r.points.push_back(p);
    }
  r.seconds = spent;
  double best = -1;
  for (std::size_t i = 0; i < r.points.size(); ++i)
    if (r.points[i].status == "probed" && r.points[i].system > best) best = r.points[i].system, r.best = int(i);
  if (r.best >= 0) r.points[r.best].chosen = true;
  return r;
}

/// The overlay (--out) and the JSON (--json).
void write_outputs(const TuneOptions& o, const config::Config& base, const SearchResult& r, const SearchResult& algo,
                   const std::string& launcher, const std::string& summary, double took) {
  if (!o.out.empty() && r.best >= 0) {
    const Point& b = r.points[r.best];
    std::ofstream y(o.out);
    if (!y) throw InputError("--out " + o.out + ": cannot write");
    y << fmt::format("# gmi_drl tune ({}, mode {}): {} on {}\n# {}\n# use: mpirun -np {} gmi_drl", GMI_DRL_VERSION,
                     o.mode, base.env.name, base.source, summary, b.gmis * o.gpus);
    for (const auto& c : o.config_paths) y << " --config " << c;
    y << " --config " << o.out << "\n";
    y << fmt::format("gmi:\n  per_gpu: {}\nenv:\n  num_envs: {}\n", b.gmis, b.envs);
    y << fmt::format("mapping:\n  template: {}\n", b.templ);  // also where --set chose it
    spdlog::info("wrote {}", o.out);
  }
  if (!o.json.empty()) {
    json j;
    j["tool"] = "tune";
    j["gmi_drl_version"] = GMI_DRL_VERSION;
    j["config"] = base.source;
    j["env"] = base.env.name;
    j["mode"] = o.mode;
    j["alpha"] = o.alpha;
    j["gpus"] = o.gpus;
    j["exhaustive"] = o.exhaustive;
    j["launcher"] = o.replay.empty() ? launcher : "replay " + o.replay;
    j["probe_iterations"] = o.probe_iterations;
    j["probe_warmup"] = o.probe_warmup;
    if (o.replay.empty()) j["probe_jobs"] = o.probe_jobs;
    j["cut"] = r.cut;
    j["probes"] = r.probes;
    j["probe_seconds"] = r.seconds;
    j["tune_seconds"] = took;
    j["points"] = json::array();
    for (const Point& p : r.points) j["points"].push_back(point_json(p));
    if (r.best >= 0) j["chosen"] = point_json(r.points[r.best]);
    if (o.exhaustive && algo.best >= 0) {
      j["algorithm1"] = {{"chosen", point_json(algo.points[algo.best])},
                         {"probes", algo.probes},
                         {"probe_seconds", algo.seconds}};
    }
    std::ofstream f(o.json);
    if (!f) throw InputError("--json " + o.json + ": cannot write");
    f << j.dump(2) << "\n";
    spdlog::info("wrote {}", o.json);
  }
}

/// "4 GMI(s) per GPU x 4096 envs per GMI", "e-at: 6 GMI(s) per GPU x 16 envs per simulator GMI".
std::string layout_text(const Point& p) {
  return p.templ == "dp" ? fmt::format("{} GMI(s) per GPU x {} envs per GMI", p.gmis, p.envs)
                         : fmt::format("{}: {} GMI(s) per GPU x {} envs per {} GMI", p.templ, p.gmis, p.envs,
                                       instances::stepper_name(p.templ));
}

/// The line that ends a tuning run: the choice, the probes, and whether the search was cut.
std::string summary_line(const TuneOptions& o, const SearchResult& r, double took, const std::string& workdir) {
  if (r.best < 0) return "no candidate ran successfully; see the probes' logs in " + workdir;
  const Point& b = r.points[r.best];
  int failed = 0, retried = 0;
  for (const Point& p : r.points) {
    failed += p.status == "failed" ? 1 : 0;
    retried += p.attempts > 1 ? 1 : 0;
  }
  const std::string failures =
      failed + retried == 0 ? ""
                            : fmt::format(" ({} failed twice, {} retried: the choice is among the probes that ran; "
                                          "see the table)",
                                          failed, retried);
  return fmt::format("chosen: {}: {} samples/s per GPU ({} est. for {} GPU(s)); {} probe(s){}, {:.1f} s of probing, "
                     "{:.1f} s in all{}",
                     layout_text(b), rate(b.top), rate(b.system), o.gpus, r.probes, failures, r.seconds, took,
                     !r.cut    ? ""
                     : g_signal ? fmt::format("; interrupted by signal {}, this is the best found so far", int(g_signal))
                                : "; the search was cut by --budget-minutes, this is the best found so far");
}

/// Appends `part`, one template's search, to `all` (the best of all stays chosen).
void merge(SearchResult& all, SearchResult part, const std::string& t) {
  for (Point& p : part.points) p.templ = t;
  const int at = int(all.points.size());
  if (part.best >= 0 && (all.best < 0 || part.points[part.best].system > all.points[all.best].system)) {
    if (all.best >= 0) all.points[all.best].chosen = false;
    all.best = at + part.best;
  } else if (part.best >= 0) {
    part.points[part.best].chosen = false;
  }
  all.points.insert(all.points.end(), part.points.begin(), part.points.end());
  all.cut = all.cut || part.cut;
  all.seconds += part.seconds;
  all.probes += part.probes;
}

/// Algorithm 1 (or, with --exhaustive, the whole grid and Algorithm 1 replayed on it into `algo`)
/// for each template in turn, within one time budget; the best point of all is chosen.
SearchResult search_templates(const TuneOptions& o, const std::vector<std::string>& templates,
                              const std::vector<int>& gmis, const std::vector<int>& envs, double gpu_memory,
                              const TemplateProbe& probe, SearchResult& algo) {
  SearchResult all;
  const double budget_s = o.budget_minutes * 60;
  const auto stop = [] { return g_signal != 0; };
  for (const std::string& t : templates) {
    const double left = budget_s - all.seconds;  // this template's share of --budget-minutes
    if (budget_s > 0 && left <= 0) {
      SearchResult cut;
      cut.cut = true;
      for (int g : gmis)
        for (int n : envs) {
          Point p;
          p.gmis = g, p.envs = n, p.status = "cut", p.note = "time budget spent", p.sat = std::nan("");
          cut.points.push_back(p);
        }
      merge(all, cut, t);
      continue;
    }
    const ProbeFn one = [&](int g, int n) { return probe(t, g, n); };
    if (o.exhaustive) {
      std::map<std::pair<int, int>, Point> grid;
      merge(all, exhaustive(gmis, envs, o.gpus, budget_s > 0 ? left : 0, one, stop, grid), t);
      merge(algo, search(gmis, envs, o.alpha, o.gpus, gpu_memory, 0, [&](int g, int n) { return grid.at({g, n}); }), t);
    } else {
      merge(all, search(gmis, envs, o.alpha, o.gpus, gpu_memory, budget_s > 0 ? left : 0, one, stop), t);
    }
  }
  return all;
}

}  // namespace

int run_tune(const TuneOptions& o) {
  const auto t0 = Clock::now();
  if (o.max_gmis_per_gpu < 1) throw InputError("--max-gmis-per-gpu: expected an integer >= 1");
  if (!(o.probe_timeout_s > 0)) throw InputError("--probe-timeout: expected a number of seconds > 0");
  if (!(o.budget_minutes >= 0)) throw InputError("--budget-minutes: expected a number of minutes >= 0 (0: no limit)");
  if (!(o.alpha >= 0)) throw InputError("--alpha: expected a number >= 0");
  if (o.mode != "train" && o.mode != "serve") throw InputError("--mode: expected train or serve");
  const std::vector<int> envs = parse_env_counts(o.env_counts);
  std::vector<int> gmis;
  for (int g = o.max_gmis_per_gpu; g >= 1; --g) gmis.push_back(g);
  const double gpu_memory = o.gpu_memory.empty() ? 0 : parse_bytes(o.gpu_memory, "--gpu-memory");
  const config::Overrides sets = config::parse_overrides(o.sets);
  for (const auto& kv : sets)
    if (kv.first == "gmi.per_gpu" || kv.first == "env.num_envs")
      throw InputError("--set " + kv.first + ": tune chooses it (give --max-gmis-per-gpu / --env-counts instead)");
  const config::Config base = config::load(o.config_paths, sets, 1);

  std::string launcher = o.launcher;
  // Open MPI binds 1-2 ranks to one core each; host-simulated environments need the node's cores.
  if (launcher.empty()) launcher = std::getenv("SLURM_JOB_ID") ? "srun" : "mpirun --bind-to none";
  Launch l;
  l.words = words(launcher);
  if (l.words.empty()) throw InputError("--launcher: empty");
  l.srun = std::filesystem::path(l.words[0]).filename() == "srun";
  l.workdir = o.workdir;
  if (l.workdir.empty()) {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    l.workdir = std::string("tune-") + stamp;
  }
  l.exe = instances::self_exe();

  TemplateProbe probe;
  if (!o.replay.empty()) {
    std::ifstream in(o.replay);
    if (!in) throw InputError("--replay " + o.replay + ": cannot open file");
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      throw InputError("--replay " + o.replay + ": not JSON (" + e.what() + ")");
    }
    probe = replay_probe(j, o.replay);
  } else {
    std::filesystem::create_directories(l.workdir);
    probe = [&](const std::string& t, int g, int n) { return launch_probe(o, sets, l, t, g, n); };
  }
  // The progress line of each probe, around the probe function.
  int k = 0;
  const TemplateProbe logged = [&](const std::string& t, int g, int n) {
    Point p = probe(t, g, n);
    ++k;
    const std::string what =
        fmt::format("{}{} GMI(s)/GPU x {} envs/{}", t == "dp" ? "" : t + ": ", g, n, t == "dp" ? "GMI" : instances::stepper_name(t));
    if (p.status == "probed")
      spdlog::info("[probe {}] {}: {} samples/s per GPU, {} per GMI (share {}), {:.1f} s", k, what, rate(p.top),
                   gib(p.mem), gib(p.budget), p.seconds);
    else
      spdlog::warn("[probe {}] {}: {}: {}", k, what, p.status, p.note);
    return p;
  };
  std::vector<std::string> templates;
  for (const std::string& t : o.templates)
    if (std::find(templates.begin(), templates.end(), t) == templates.end()) templates.push_back(t);
  if (templates.empty()) templates.push_back(base.mapping.template_);
  for (const std::string& t : templates) {
    if (t != "dp" && !config::splits_training(t))
      throw InputError(fmt::format("{}: {}: tune searches the training templates dp, e-at, ea-t and async",
                                   o.templates.empty() ? "mapping.template" : "--templates", t));
    if (t != "dp" && o.mode != "train")
      throw InputError(fmt::format("--mode {}: tune measures mapping.template {} in --mode train only (its roles are "
                                   "training's); search dp alone for --mode {}",
                                   o.mode, t, o.mode));
  }

  spdlog::info("gmi_drl {} tune | {} | mode {} | {} | {} GMI count(s) x {} env count(s) | alpha {} | {}{}",
               GMI_DRL_VERSION, base.env.name, o.mode, fmt::join(templates, ", "), gmis.size(), envs.size(), o.alpha,
               o.replay.empty() ? "launcher '" + launcher + "'" : "replaying " + o.replay,
               o.exhaustive ? " | exhaustive" : "");
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  SearchResult algo;  // with --exhaustive: Algorithm 1 replayed on the full grid's measurements
  const SearchResult r = search_templates(o, templates, gmis, envs, gpu_memory, logged, algo);
  end_layout_job(o, l);
  const double took = seconds_since(t0);

  std::cout << table(r, o.gpus);
  const std::string summary = summary_line(o, r, took, l.workdir);
  spdlog::info("{}", summary);
  std::string compare;
  if (o.exhaustive && algo.best >= 0 && r.best >= 0) {
    const Point& a = algo.points[algo.best];
    const Point& b = r.points[r.best];
    compare = fmt::format("Algorithm 1 on these measurements: {}, {:.1f} % of the best; {} of {} "
                          "probes, {:.1f} s of {:.1f} s of probing ({:.0f} %)",
                          layout_text(a), 100.0 * a.system / b.system, algo.probes, r.probes, algo.seconds,
                          r.seconds, r.seconds > 0 ? 100.0 * algo.seconds / r.seconds : 0.0);
    spdlog::info("{}", compare);
  }
  write_outputs(o, base, r, algo, launcher, summary, took);
  return r.best >= 0 ? 0 : 1;
}

}  // namespace gmi::tuning
