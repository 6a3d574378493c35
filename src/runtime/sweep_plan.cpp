// gmi_drl sweep, what runs: seeds, grid axes and random draws expanded into named runs.
#include <yaml-cpp/yaml.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/core/error.hpp"
#include "src/config/integer.hpp"
#include "src/runtime/sweep.hpp"

namespace gmi::sweeps {
namespace {

/// A key the schema knows; an unknown one is the parser's error line (with its "did you mean").
void check_key(const std::string& key, const std::string& where) {
  if (key == "train.seed") throw InputError(where + ": train.seed is what sweep.seeds (--seeds) sets");
  const std::vector<std::string> all = config::keys();
  if (std::find(all.begin(), all.end(), key) != all.end()) return;
  config::parse("{}", where, {{key, "0"}});  // throws "unknown key (did you mean ...)"
  throw InputError(where + ": " + key + ": unknown key");
}

/// Splits on commas outside brackets and quotes: "1e-4,3e-4" or "[64, 64],[256, 256]".
std::vector<std::string> split_values(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(cur);
  for (auto& v : out) {
    v.erase(0, v.find_first_not_of(" \t"));
    v.erase(v.find_last_not_of(" \t") + 1);
  }
  return out;
}

/// "learning_rate=0.0003" for ppo.learning_rate: the key's last part and the value, in characters
/// a directory name can hold without quoting.
std::string short_text(const std::string& key, const std::string& value) {
  std::string v;
  for (char c : value) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+') v += c;
    else if (c == ',' || c == ' ') v += v.empty() || v.back() == 'x' ? "" : "x";
  }
  const std::string leaf = key.substr(key.rfind('.') + 1);
  return leaf + "=" + v;
}

/// The configurations sweep.random draws from sweep.space.
std::vector<config::Overrides> random_draws(const config::SweepConfig& s, std::uint64_t seed) {
  std::vector<config::Overrides> out;
  if (s.random == 0) return out;
  if (s.space.empty()) throw InputError("sweep.random: " + std::to_string(s.random) + " draws need sweep.space (--space FILE)");
  YAML::Node space;
  try {
    space = YAML::LoadFile(s.space);
  } catch (const YAML::Exception& e) {
    throw InputError("sweep.space " + s.space + ": " + e.what());
  }
  if (!space.IsMap() || space.size() == 0)
    throw InputError("sweep.space " + s.space + ": expected a map of keys to {uniform|log_uniform|int_uniform|choice: ...}");
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 12345);
  for (int d = 0; d < s.random; ++d) {
    config::Overrides o;
    for (const auto& kv : space) {
      const std::string key = kv.first.as<std::string>();
      const std::string where = "sweep.space " + s.space + ": " + key;
      check_key(key, "sweep.space " + s.space);
      const YAML::Node spec = kv.second;
      if (!spec.IsMap() || spec.size() != 1)
        throw InputError(where + ": expected one of {uniform: [lo, hi]}, {log_uniform: [lo, hi]}, {int_uniform: [lo, hi]}, {choice: [a, b, ...]}");
      const std::string kind = spec.begin()->first.as<std::string>();
      const YAML::Node arg = spec.begin()->second;
      if (kind == "choice") {
        if (!arg.IsSequence() || arg.size() == 0) throw InputError(where + ": choice: expected a non-empty list");
        YAML::Emitter e;
        e << YAML::Flow << arg[std::uniform_int_distribution<std::size_t>(0, arg.size() - 1)(rng)];
        o.emplace_back(key, e.c_str());
        continue;
      }
      double lo = 0, hi = 0;
      try {
        if (!arg.IsSequence() || arg.size() != 2) throw YAML::Exception(YAML::Mark::null_mark(), "");
        lo = arg[0].as<double>(), hi = arg[1].as<double>();
      } catch (const YAML::Exception&) {
        throw InputError(where + ": " + kind + ": expected [lo, hi] (two numbers)");
      }
      if (!(lo <= hi)) throw InputError(where + ": " + kind + ": expected lo <= hi");
      if (kind == "uniform") {
        o.emplace_back(key, fmt::format("{:.6g}", std::uniform_real_distribution<double>(lo, hi)(rng)));
      } else if (kind == "log_uniform") {
        if (lo <= 0) throw InputError(where + ": log_uniform: expected 0 < lo");
        const double x = std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng);
        o.emplace_back(key, fmt::format("{:.6g}", std::exp(x)));
      } else if (kind == "int_uniform") {
        o.emplace_back(key, std::to_string(std::uniform_int_distribution<long long>(std::llround(lo), std::llround(hi))(rng)));
      } else {
        throw InputError(where + ": unknown distribution '" + kind + "' (uniform, log_uniform, int_uniform or choice)");
      }
    }
    out.push_back(o);
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> parse_seeds(const std::string& text, std::int64_t fallback) {
  if (text.empty()) return {fallback};
  auto number = [&](const std::string& t) {
    const auto v = config::parse_integer(t);
    if (!v || *v < 0) throw InputError("sweep.seeds: expected 'a..b' or 'a,b,c' of integers >= 0, got '" + text + "'");
    return std::int64_t(*v);
  };
  std::vector<std::int64_t> out;
  const auto dots = text.find("..");
  if (dots != std::string::npos) {
    const std::int64_t a = number(text.substr(0, dots)), b = number(text.substr(dots + 2));
    if (b < a) throw InputError("sweep.seeds: '" + text + "' is an empty range");
    if (b - a >= 100000) throw InputError("sweep.seeds: '" + text + "' has more than 100000 seeds");
    for (std::int64_t s = a; s <= b; ++s) out.push_back(s);
  } else {
    for (const std::string& t : split_values(text)) out.push_back(number(t));
  }
  std::vector<std::int64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw InputError("sweep.seeds: '" + text + "' names a seed twice");
  return out;
}

std::pair<std::string, std::vector<std::string>> parse_axis(const std::string& axis) {
  const auto eq = axis.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == axis.size())
    throw InputError("sweep.grid: '" + axis + "': expected key=v1,v2,... (e.g. --grid ppo.learning_rate=1e-4,3e-4)");
  std::pair<std::string, std::vector<std::string>> a{axis.substr(0, eq), split_values(axis.substr(eq + 1))};
  for (const auto& v : a.second)
    if (v.empty()) throw InputError("sweep.grid: '" + axis + "': an empty value");
  return a;
}

std::vector<RunSpec> expand(const config::Config& base) {
  const config::SweepConfig& s = base.sweep;
  const std::vector<std::int64_t> seeds = parse_seeds(s.seeds, base.train.seed);
  // Grid points: the cartesian product of the axes, the last axis fastest.
  std::vector<config::Overrides> points(1);
  std::vector<std::string> axis_keys;
  for (const std::string& text : s.grid) {
    const auto [key, values] = parse_axis(text);
    check_key(key, "sweep.grid");
    if (std::find(axis_keys.begin(), axis_keys.end(), key) != axis_keys.end())
      throw InputError("sweep.grid: " + key + " is given twice (one axis per key)");
    axis_keys.push_back(key);
    std::vector<config::Overrides> next;
    for (const auto& p : points)
      for (const auto& v : values) {
        next.push_back(p);
        next.back().emplace_back(key, v);
      }
    points = std::move(next);
  }
  std::vector<config::Overrides> configs;
  const std::vector<config::Overrides> draws = random_draws(s, std::uint64_t(base.train.seed));
  for (const auto& p : points) {
    if (draws.empty()) configs.push_back(p);
    for (const auto& d : draws) {
      for (const auto& kv : d)
        if (std::find(axis_keys.begin(), axis_keys.end(), kv.first) != axis_keys.end())
          throw InputError("sweep.space: " + kv.first + " is also a grid axis (sweep.grid)");
      configs.push_back(p);
      configs.back().insert(configs.back().end(), d.begin(), d.end());
    }
  }
  std::vector<RunSpec> runs;
  const int width = int(std::to_string(std::max<std::size_t>(configs.size(), 1) - 1).size());
  for (std::int64_t seed : seeds)
    for (std::size_t c = 0; c < configs.size(); ++c) {
      RunSpec r;
      r.index = int(runs.size());
      r.seed = seed;
      r.overrides = configs[c];
      std::string desc;
      for (const auto& [k, v] : configs[c]) {
        r.config += (r.config.empty() ? "" : ";") + k + "=" + v;
        desc += (desc.empty() ? "" : ",") + short_text(k, v);
      }
      if (desc.size() > 80) desc = desc.substr(0, 80);
      r.name = configs.size() > 1 || !desc.empty()
                   ? fmt::format("c{:0{}}-{}-seed{}", c, width, desc, seed)
                   : fmt::format("seed{}", seed);
      runs.push_back(std::move(r));
    }
  if (runs.size() > 100000) throw InputError(fmt::format("sweep: {} runs is more than 100000", runs.size()));
  return runs;
}

}  // namespace gmi::sweeps
