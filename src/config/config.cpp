#include "src/config/config.hpp"
#include "src/config/codecs.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>
#include <tuple>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/envs.hpp"
#include "kernels/envs/registry.hpp"

namespace gmi::config {
using envs::EnvSpec;
using envs::env_spec;
using namespace codecs;
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& path, const std::string& what) {
  throw InputError("config " + (source.empty() ? std::string("<defaults>") : source) + ": " + path +
                   ": " + what);
}

std::vector<AlgorithmRules>& registered_algorithms() {
  static std::vector<AlgorithmRules> r;
  return r;
}
std::vector<SectionDecl>& registered_sections() {
  static std::vector<SectionDecl> s;
  return s;
}
/// Bumped whenever an algorithm or a section is registered: the schema is then built anew.
int& registry_generation() {
  static int g = 0;
  return g;
}

}  // namespace

template <class T>
Field make_field(std::string path, std::string doc, std::function<T&(Config&)> access, Rule<T> rule) {
  Field f;
  f.path = path;
  f.type = Codec<T>::type();
  f.allowed = rule.words;
  f.doc = std::move(doc);
  f.set = [path, access, ok = rule.ok, allowed = rule.words](Config& c, const YAML::Node& n,
                                                            const std::string& source) {
    T v{};
    if (!Codec<T>::decode(n, v) || (ok && !ok(v)))
      fail(source, path,
           "expected " +
               (allowed.rfind("one of", 0) == 0 ? allowed
                                                 : Codec<T>::phrase() + (allowed.empty() ? "" : " " + allowed)) +
               ", got " + shown(n));
    access(c) = v;
  };
  f.get = [access](const Config& c) { return Codec<T>::text(access(const_cast<Config&>(c))); };
  return f;
}
// The key types the codecs read (src/config/codecs.hpp).
template Field make_field<int>(std::string, std::string, std::function<int&(Config&)>, Rule<int>);
template Field make_field<std::int64_t>(std::string, std::string, std::function<std::int64_t&(Config&)>,
                                        Rule<std::int64_t>);
template Field make_field<double>(std::string, std::string, std::function<double&(Config&)>, Rule<double>);
template Field make_field<bool>(std::string, std::string, std::function<bool&(Config&)>, Rule<bool>);
template Field make_field<std::string>(std::string, std::string, std::function<std::string&(Config&)>,
                                       Rule<std::string>);
template Field make_field<std::vector<int>>(std::string, std::string, std::function<std::vector<int>&(Config&)>,
                                            Rule<std::vector<int>>);
template Field make_field<std::vector<double>>(std::string, std::string,
                                               std::function<std::vector<double>&(Config&)>,
                                               Rule<std::vector<double>>);
template Field make_field<std::vector<std::string>>(std::string, std::string,
                                                    std::function<std::vector<std::string>&(Config&)>,
                                                    Rule<std::vector<std::string>>);
template Field make_field<std::optional<int>>(std::string, std::string, std::function<std::optional<int>&(Config&)>,
                                              Rule<std::optional<int>>);
template Field make_field<std::optional<double>>(std::string, std::string,
                                                 std::function<std::optional<double>&(Config&)>,
                                                 Rule<std::optional<double>>);
template Field make_field<std::optional<bool>>(std::string, std::string,
                                               std::function<std::optional<bool>&(Config&)>,
                                               Rule<std::optional<bool>>);
template Field make_field<std::optional<Range>>(std::string, std::string,
                                                std::function<std::optional<Range>&(Config&)>,
                                                Rule<std::optional<Range>>);
template Field make_field<AutoSeconds>(std::string, std::string, std::function<AutoSeconds&(Config&)>,
                                       Rule<AutoSeconds>);

namespace checks {

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e6) return fmt::format("{}", static_cast<long long>(v));
  const double e = std::log10(std::fabs(v));
  if (v != 0 && e == std::floor(e)) return fmt::format("{}1e{}", v < 0 ? "-" : "", static_cast<int>(e));
  return fmt::format("{}", v);
}

std::string choices_text(const std::vector<std::string>& c) {
  std::string s = "one of";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : " ") + c[i];
  return s;
}

auto memory_size() -> Check<std::function<bool(const std::string&)>> {
  return {[](const std::string& v) {
            if (v.empty()) return true;
            std::size_t i = 0;
            while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
            return i > 0 && i + 1 == v.size() && (v[i] == 'G' || v[i] == 'M') && std::stoll(v.substr(0, i)) > 0;
          },
          "empty, or a positive integer followed by G or M"};
}

auto registered_env() -> Check<std::function<bool(const std::string&)>> {
  auto c = one_of(envs::all_env_names());
  return {std::move(c.ok), std::move(c.words)};
}

}  // namespace checks

namespace {

/// The keys of a section held in Config as member `owner` (prefix "env." and so on).
template <class S>
void add_keys(std::vector<Field>& out, const std::string& prefix, S& (*owner)(Config&),
              void (*declare)(SectionKeys<S>&)) {
  SectionKeys<S> k(prefix, owner);
  declare(k);
  for (Field& f : k.fields()) out.push_back(std::move(f));
}

/// `algo`: one of the registered algorithms (src/algos/registry.cpp), in their order.
Field algo_field() {
  if (algorithms().empty())
    throw Error("config: no algorithm is registered (gmi::algos::register_algorithms() runs before a config is parsed)");
  std::vector<std::string> names;
  std::string doc = "training algorithm:";
  for (const AlgorithmRules& a : algorithms()) {
    doc += std::string(names.empty() ? " " : ", ") + a.name + " (" + a.summary + ")";
    names.push_back(a.name);
  }
  return make_field<std::string>("algo", doc, [](Config& c) -> std::string& { return c.algo; },
                                 Rule<std::string>(checks::one_of(names)));
}

struct Schema {
  std::vector<Field> fields;
  std::vector<std::string> tag_paths;  ///< the env.* keys of the Tag games
};

/// Every key, generated from the sections' X-lists: algo, env (its own keys, MuJoCo's keyword
/// arguments, the Tag games' parameters), policy, the registered algorithms' sections, train,
/// checkpoint, device, gmi, reduce.
Schema build_schema() {
  Schema s;
  auto& f = s.fields;
  f.push_back(algo_field());
  add_keys<EnvConfig>(f, "env.", [](Config& c) -> EnvConfig& { return c.env; },
                      GMI_CONFIG_KEYS(EnvConfig, GMI_ENV_KEYS));
  add_keys<envs::mujoco::Kwargs>(f, "env.", [](Config& c) -> envs::mujoco::Kwargs& { return c.env.kwargs; },
                                 GMI_CONFIG_KEYS(envs::mujoco::Kwargs, GMI_MUJOCO_KWARGS));
  const std::size_t first_tag = f.size();
  add_keys<envs::TagParams>(f, "env.", [](Config& c) -> envs::TagParams& { return c.env.tag; },
                            GMI_CONFIG_KEYS(envs::TagParams, GMI_TAG_PARAMS));
  for (std::size_t i = first_tag; i < f.size(); ++i) s.tag_paths.push_back(f[i].path);
  add_keys<PolicyConfig>(f, "policy.", [](Config& c) -> PolicyConfig& { return c.policy; },
                         GMI_CONFIG_KEYS(PolicyConfig, GMI_POLICY_KEYS));
  for (const SectionDecl& d : registered_sections())
    for (Field& k : d.keys()) f.push_back(std::move(k));
  add_keys<TrainConfig>(f, "train.", [](Config& c) -> TrainConfig& { return c.train; },
                        GMI_CONFIG_KEYS(TrainConfig, GMI_TRAIN_KEYS));
  add_keys<CheckpointConfig>(f, "checkpoint.", [](Config& c) -> CheckpointConfig& { return c.checkpoint; },
                             GMI_CONFIG_KEYS(CheckpointConfig, GMI_CHECKPOINT_KEYS));
  add_keys<DeviceConfig>(f, "device.", [](Config& c) -> DeviceConfig& { return c.device; },
                         GMI_CONFIG_KEYS(DeviceConfig, GMI_DEVICE_KEYS));
  add_keys<GmiConfig>(f, "gmi.", [](Config& c) -> GmiConfig& { return c.gmi; }, GMI_CONFIG_KEYS(GmiConfig, GMI_GMI_KEYS));
  add_keys<ReduceConfig>(f, "reduce.", [](Config& c) -> ReduceConfig& { return c.reduce; },
                         GMI_CONFIG_KEYS(ReduceConfig, GMI_REDUCE_KEYS));
  add_keys<MappingConfig>(f, "mapping.", [](Config& c) -> MappingConfig& { return c.mapping; },
                          GMI_CONFIG_KEYS(MappingConfig, GMI_MAPPING_KEYS));
  add_keys<ChannelsConfig>(f, "channels.", [](Config& c) -> ChannelsConfig& { return c.channels; },
                           GMI_CONFIG_KEYS(ChannelsConfig, GMI_CHANNELS_KEYS));
  add_keys<AsyncConfig>(f, "async.", [](Config& c) -> AsyncConfig& { return c.async; },
                        GMI_CONFIG_KEYS(AsyncConfig, GMI_ASYNC_KEYS));
  add_keys<LogConfig>(f, "log.", [](Config& c) -> LogConfig& { return c.log; }, GMI_CONFIG_KEYS(LogConfig, GMI_LOG_KEYS));
  add_keys<SweepConfig>(f, "sweep.", [](Config& c) -> SweepConfig& { return c.sweep; },
                        GMI_CONFIG_KEYS(SweepConfig, GMI_SWEEP_KEYS));
  return s;
}

/// The schema of the algorithms registered now (built again after a registration).
const Schema& current_schema() {
  static std::mutex mu;
  static Schema s;
  static int built = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (built != registry_generation()) {
    s = build_schema();
    built = registry_generation();
  }
  return s;
}
const std::vector<Field>& schema() { return current_schema().fields; }
const std::vector<std::string>& tag_paths() { return current_schema().tag_paths; }

const Field* find_field(const std::string& path) {
  for (const auto& f : schema())
    if (f.path == path) return &f;
  return nullptr;
}

bool is_section(const std::string& path) {
  for (const auto& f : schema())
    if (f.path.compare(0, path.size() + 1, path + ".") == 0) return true;
  return false;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> d(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t prev = d[0];
    d[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cur = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return d[b.size()];
}

[[noreturn]] void unknown_key(const std::string& source, const std::string& path) {
  std::string best;
  std::size_t best_d = 4;
  for (const auto& f : schema()) {
    const auto d = edit_distance(path, f.path);
    if (d < best_d) best_d = d, best = f.path;
  }
  fail(source, path, "unknown key" + (best.empty() ? std::string() : " (did you mean '" + best + "'?)"));
}

/// Reject keys that are not in the schema, and sections that are not mappings.
void check_keys(const YAML::Node& node, const std::string& prefix, const std::string& source) {
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) fail(source, prefix.empty() ? "<top level>" : prefix, "keys must be plain names");
    const std::string path = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    if (find_field(path)) continue;
    if (!is_section(path)) unknown_key(source, path);
    if (!kv.second.IsMap()) fail(source, path, "expected a mapping (section), got " + shown(kv.second));
    check_keys(kv.second, path, source);
  }
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string p;
  while (std::getline(ss, p, '.')) parts.push_back(p);
  return parts;
}

void apply_override(YAML::Node& root, const std::string& key, const std::string& value) {
  if (!find_field(key)) unknown_key("--set", key);
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError("--set " + key + "=" + value + ": not a YAML value (" + e.msg + ")");
  }
  const auto parts = split_path(key);
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (child.IsDefined() && !child.IsNull() && !child.IsMap())
      throw InputError("--set " + key + ": '" + parts[i] + "' is not a section in the config file");
    if (!child.IsDefined() || child.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[parts[i]];
    }
    chain.push_back(child);
  }
  chain.back()[parts.back()] = parsed;
}

YAML::Node lookup(const YAML::Node& root, const std::string& path) {
  YAML::Node n = YAML::Clone(root);
  for (const auto& p : split_path(path)) {
    if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    n = n[p];
    if (!n.IsDefined()) return n;
  }
  return n;
}

Config from_node(YAML::Node root, const std::string& source, const Overrides& overrides,
                 int world_size) {
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw InputError("config " + source + ": expected a YAML mapping at the top level");
  for (const auto& [k, v] : overrides) apply_override(root, k, v);
  check_keys(root, "", source);
  Config c;
  c.source = source;
  for (const auto& f : schema()) {
    const YAML::Node n = lookup(root, f.path);
    if (n.IsDefined()) f.set(c, n, source);
  }
  derive(c, world_size);
  return c;
}

/// The first env.* Tag key whose value differs from its default ("" if none).
std::string tag_key_changed(const envs::TagParams& p) {
  const Config defaults;
  Config now;
  now.env.tag = p;
  for (const auto& f : schema())
    if (std::find(tag_paths().begin(), tag_paths().end(), f.path) != tag_paths().end() && f.get(now) != f.get(defaults))
      return f.path;
  return "";
}

}  // namespace

envs::EnvOverrides env_overrides(const Config& c) {
  envs::EnvOverrides o;
  o.max_episode_steps = c.env.max_episode_steps;
  envs::mujoco::Options& m = o.mujoco;
  m.threads = std::max(1, c.env.threads);
  m.pin_threads = c.env.pin_threads;
  m.model_path = c.env.model_path;
  m.kwargs = c.env.kwargs;
  o.tag = c.env.tag;
  return o;
}

bool served_rollouts(const MappingConfig& m) { return m.template_ == "async" || m.template_ == "ea-t"; }

bool splits_training(const std::string& templ) { return templ == "e-at" || templ == "ea-t" || templ == "async"; }

int env_group_size(const EnvConfig& e) {
  const int b = e.batch_size > 0 ? e.batch_size : e.async_halves ? (e.num_envs + 1) / 2 : e.num_envs;
  return std::max(1, std::min(b, e.num_envs));
}

namespace {
/// The key and what is wrong when env.batch_size / env.async_halves cannot be stepped as asked (more
/// than env.num_envs, an environment on the device, more groups than can be queued, a
/// contradiction); derive() also checks that the algorithm steps groups.
std::optional<std::pair<std::string, std::string>> env_groups_problem(const EnvConfig& e) {
  auto problem = [](const std::string& key, const std::string& what) {
    return std::optional<std::pair<std::string, std::string>>(std::make_pair(key, what));
  };
  if (e.async_halves && !envs::mujoco::is_mujoco(e.name))
    return problem("env.async_halves", e.name + " steps on the device; only host-simulated environments (MuJoCo) step in halves");
  if (e.async_halves && e.num_envs < 2) return problem("env.async_halves", "needs env.num_envs >= 2 (two halves)");
  if (e.batch_size <= 0) return std::nullopt;
  if (e.batch_size > e.num_envs)
    return problem("env.batch_size", fmt::format("{} is more than env.num_envs ({})", e.batch_size, e.num_envs));
  if (e.batch_size < e.num_envs && !envs::mujoco::is_mujoco(e.name))
    return problem("env.batch_size", e.name + " steps on the device; only host-simulated environments (MuJoCo) step in groups");
  if (e.async_halves && e.batch_size != (e.num_envs + 1) / 2)
    return problem("env.batch_size", fmt::format("{} contradicts env.async_halves (half of env.num_envs: {}); set one of them",
                                                 e.batch_size, (e.num_envs + 1) / 2));
  const int groups = (e.num_envs + e.batch_size - 1) / e.batch_size;
  if (groups > envs::mujoco::kMaxQueuedSteps)
    return problem("env.batch_size", fmt::format("{} envs in groups of {} make {} groups; at most {} can be queued (a "
                                                 "batch of at least {})",
                                                 e.num_envs, e.batch_size, groups, envs::mujoco::kMaxQueuedSteps,
                                                 (e.num_envs + envs::mujoco::kMaxQueuedSteps - 1) / envs::mujoco::kMaxQueuedSteps));
  return std::nullopt;
}

}  // namespace

void register_algorithm(const AlgorithmRules& rules) {
  for (const SectionDecl& d : rules.sections) {
    bool known = false;
    for (SectionDecl& r : registered_sections())
      if (r.name == d.name) {
        if (r.type != d.type)
          throw Error("config: section " + d.name + " is declared by two algorithms with different types");
        known = true;
      }
    if (!known) registered_sections().push_back(d);
  }
  ++registry_generation();
  for (AlgorithmRules& r : registered_algorithms())
    if (r.name == rules.name) {
      r = rules;
      return;
    }
  registered_algorithms().push_back(rules);
}

const std::vector<SectionDecl>& sections() { return registered_sections(); }

std::size_t section_index(std::type_index type) {
  const auto& s = registered_sections();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].type == type) return i;
  throw Error(std::string("config: no registered algorithm declares the section of type ") + type.name() +
              " (gmi::algos::register_algorithms() runs before a config is made)");
}

SectionStore::SectionStore() {
  for (const SectionDecl& d : registered_sections()) slots_.push_back(d.defaults);
}

std::any& SectionStore::slot(std::type_index type) {
  const std::size_t i = section_index(type);
  // A section registered after this config was made starts at its defaults.
  for (std::size_t j = slots_.size(); j <= i; ++j) slots_.push_back(registered_sections()[j].defaults);
  return slots_[i];
}

const std::any& SectionStore::slot(std::type_index type) const {
  const std::size_t i = section_index(type);
  if (i >= slots_.size())
    throw Error("config: section " + registered_sections()[i].name + " was registered after this config was made");
  return slots_[i];
}

const std::vector<AlgorithmRules>& algorithms() { return registered_algorithms(); }

void fail(const Config& c, const std::string& key, const std::string& what) { fail(c.source, key, what); }

namespace {
/// The registered algorithms with `pred` true, as "a, b or c".
template <class Pred>
std::string names_where(Pred pred) {
  std::vector<std::string> n;
  for (const AlgorithmRules& a : algorithms())
    if (pred(a)) n.push_back(a.name);
  return join_names(n, "or");
}
}  // namespace

std::string join_names(const std::vector<std::string>& names, const std::string& conjunction) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " " + conjunction + " " : ", ") + names[i];
  return s.empty() ? "none" : s;
}

void derive(Config& c, int world_size) {
  const std::string src = c.source.empty() ? "<defaults>" : c.source;
  auto bad = [&](const std::string& key, const std::string& what) { fail(src, key, what); };
  const AlgorithmRules* algo = nullptr;
  for (const AlgorithmRules& a : algorithms())
    if (a.name == c.algo) algo = &a;
  if (!algo) bad("algo", "expected " + checks::choices_text([] {
                           std::vector<std::string> n;
                           for (const AlgorithmRules& a : algorithms()) n.push_back(a.name);
                           return n;
                         }()) + ", got " + c.algo);
  // Keyword arguments the environment does not take (MuJoCo's own check names the key).
  try {
    envs::mujoco::check_kwargs_for(c.env.name, c.env.kwargs);
  } catch (const InputError& e) {
    throw InputError("config " + src + ": " + e.what());
  }
  if (world_size < 1) bad("world_size", "must be >= 1");
  // The Tag games' parameters: checked for a Tag game, untouched for any other environment.
  const bool multi = envs::is_multi_agent(c.env.name);
  if (multi) {
    try {
      envs::check_tag_params(c.env.name, c.env.tag);
    } catch (const InputError& e) {
      throw InputError("config " + src + ": " + e.what());
    }
    if (c.env.max_episode_steps != 0)
      bad("env.max_episode_steps", c.env.name + " ends its episodes at env.episode_length; leave this 0");
    if (!algo->multi_agent)
      bad("algo", c.env.name + " is a multi-agent environment: it trains with " +
                      names_where([](const AlgorithmRules& a) { return a.multi_agent; }) + " (one policy per role)");
  } else {
    const std::string changed = tag_key_changed(c.env.tag);
    if (!changed.empty())
      bad(changed, c.env.name + " does not take this parameter (TagGridworld-v0 and TagContinuous-v0 only)");
  }
  if (const auto p = env_groups_problem(c.env)) bad(p->first, p->second);
  if (env_group_size(c.env) < c.env.num_envs && !algo->grouped_steps)
    bad(c.env.async_halves ? "env.async_halves" : "env.batch_size",
        "algo " + c.algo + " steps all envs at once; groups are for algo " +
            names_where([](const AlgorithmRules& a) { return a.grouped_steps; }));
  if (c.device.graphs == "on" && !algo->captured_update &&
      (multi || envs::mujoco::is_mujoco(c.env.name) || !algo->captured_rollout))
    bad("device.graphs", "on: graphs capture the rollout of environments that step on the device (algo " +
                             names_where([](const AlgorithmRules& a) { return a.captured_rollout; }) +
                             ") and the updates of " +
                             names_where([](const AlgorithmRules& a) { return a.captured_update; }) + "; " +
                             (!algo->captured_rollout ? "algo " + c.algo + " has neither"
                                                      : c.env.name + (multi ? " is a multi-agent game" : " steps on host threads")) +
                             " (use auto or off)");
  if (c.device.matmul == "bf16" && c.device.fused_kernels == "on")
    bad("device.fused_kernels", "on: the fused kernels have no BF16 path (device.matmul bf16 runs the layered "
                                "cuBLAS kernels); use auto or off");
  // The action space, where the algorithm takes only one kind (building a MuJoCo env's spec loads
  // its model, so an algorithm that takes both never asks).
  if (!multi && !(algo->discrete_actions && algo->continuous_actions)) {
    const EnvSpec spec = env_spec(c.env.name, env_overrides(c));
    if (spec.discrete() ? !algo->discrete_actions : !algo->continuous_actions) {
      const bool d = spec.discrete();
      bad("algo", c.algo + " needs " + (d ? "continuous" : "discrete") + " actions; " + c.env.name + " has " +
                      (d ? "discrete" : "continuous") + " actions (use " +
                      names_where([d](const AlgorithmRules& a) { return d ? a.discrete_actions : a.continuous_actions; }) +
                      ")");
    }
  }
  c.world_size = world_size;
  try {
    derive_sizes(c);
  } catch (const InputError&) {
    // Under e-at (and async) a trainer GMI steps (learns from) its S simulator GMIs' envs,
    // S x env.num_envs: a check that counts envs is the trainer's, made by plan_split_training
    // once the layout gives S (and its error names the trainer's envs).  Here it waits if some S
    // could satisfy it; any other error is this config's now.
    if (!splits_training(c.mapping.template_)) throw;
    for (int S = 2; S <= 64; ++S) {
      Config trainer = c;
      trainer.env.num_envs = c.env.num_envs * S;
      try {
        derive_sizes(trainer);
        return;
      } catch (const InputError&) {
      }
    }
    throw;
  }
}

void derive_sizes(Config& c) {
  for (const AlgorithmRules& a : algorithms())
    if (a.name == c.algo) a.derive(c);  // num_steps, batch_size, minibatch_size and the algorithm's own checks
  const std::int64_t per_iter = std::max<std::int64_t>(1, c.batch_size * c.world_size);
  c.num_iterations = (c.train.total_env_steps + per_iter - 1) / per_iter;
}

Config parse(const std::string& yaml_text, const std::string& source_name,
             const Overrides& overrides, int world_size) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("config {}: line {}, column {}: {}", source_name, e.mark.line + 1,
                                 e.mark.column + 1, e.msg));
  }
  return from_node(root, source_name, overrides, world_size);
}

namespace {

/// Read one config file; an empty one is an error naming it, and so is a key it has that the
/// schema does not.
YAML::Node load_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError("config " + path + ": cannot open file");
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("config {}: line {}, column {}: {}", path, e.mark.line + 1,
                                 e.mark.column + 1, e.msg));
  }
  // An empty file is almost always a mistake (a failed copy, the wrong path): training on
  // nothing but defaults should be asked for, with `{}`.
  if (!root.IsDefined() || root.IsNull())
    throw InputError("config " + path + ": the file has no keys (empty, or only comments); expected a YAML "
                     "mapping such as 'env: {name: CartPole-v1}' (write '{}' to train with every default)");
  if (!root.IsMap()) throw InputError("config " + path + ": expected a YAML mapping at the top level");
  check_keys(root, "", path);
  return root;
}

/// `over`'s keys replace `base`'s, section by section (a value that is a list replaces the list).
void merge_into(YAML::Node base, const YAML::Node& over) {
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    YAML::Node b = base[key];
    if (kv.second.IsMap() && b.IsDefined() && b.IsMap())
      merge_into(b, kv.second);
    else
      base[key] = YAML::Clone(kv.second);
  }
}

}  // namespace

Config load(const std::string& path, const Overrides& overrides, int world_size) {
  return load(std::vector<std::string>{path}, overrides, world_size);
}

Config load(const std::vector<std::string>& paths, const Overrides& overrides, int world_size) {
  if (paths.empty()) throw InputError("--config: no configuration file given");
  YAML::Node root = YAML::Clone(load_file(paths[0]));
  std::string source = paths[0];
  for (std::size_t i = 1; i < paths.size(); ++i) {
    merge_into(root, load_file(paths[i]));
    source += " + " + paths[i];
  }
  return from_node(root, source, overrides, world_size);
}

std::string to_yaml(const Config& c) {
  std::ostringstream out;
  out << "# gmi_drl resolved configuration (every key; defaults filled in)\n";
  std::string section;
  for (const auto& f : schema()) {
    const auto dot = f.path.find('.');
    if (dot == std::string::npos) {
      out << f.path << ": " << f.get(c) << "\n";
      continue;
    }
    const std::string sec = f.path.substr(0, dot);
    if (sec != section) out << sec << ":\n", section = sec;
    out << "  " << f.path.substr(dot + 1) << ": " << f.get(c) << "\n";
  }
  return out.str();
}

std::string reference_markdown() {
  const Config defaults;
  std::ostringstream s;
  s << "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (const auto& f : schema())
    s << "| `" << f.path << "` | " << f.type << " | `" << f.get(defaults) << "` | "
      << (f.allowed.empty() ? "any" : f.allowed) << " | " << f.doc << " |\n";
  return s.str();
}

Overrides parse_overrides(const std::vector<std::string>& sets) {
  Overrides out;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--set " + s + ": expected key.path=value, e.g. --set ppo.gamma=0.995");
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

Config env_only(const std::string& name, const std::vector<std::string>& sets, const std::string& tool,
                const Overrides& extra) {
  envs::check_env_name(name);
  Overrides o = parse_overrides(sets);
  for (const auto& kv : o)
    if (kv.first.rfind("env.", 0) != 0) throw InputError("--set " + kv.first + ": " + tool + " takes env.* keys only");
  o.emplace_back("env.name", yaml_quote(name));
  o.insert(o.end(), extra.begin(), extra.end());
  return parse("{}", "--set", o);
}

std::string yaml_quote(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

std::string value_text(const Config& c, const std::string& key) {
  const Field* f = find_field(key);
  if (!f) throw InputError("unknown config key " + key);
  return f->get(c);
}

std::vector<std::string> tag_keys() { return tag_paths(); }

std::vector<std::string> keys() {
  std::vector<std::string> k;
  for (const auto& f : schema()) k.push_back(f.path);
  return k;
}

}  // namespace gmi::config
