// The one registry: every environment is one line of registry() below, with its kind and, when
// this build lacks its backend, the reason it cannot run (decided at build time).
#include "kernels/envs/registry.hpp"

#include <functional>
#include <sstream>

#include "kernels/core/error.hpp"
#include "kernels/envs/acrobot.hpp"
#include "kernels/envs/cartpole.hpp"
#include "kernels/envs/mountain_car_continuous.hpp"
#include "kernels/envs/mujoco/envs.hpp"
#include "kernels/envs/multiagent/tag.hpp"
#include "kernels/envs/pendulum.hpp"
#include "kernels/envs/synthetic_humanoid.hpp"

#if defined(GMI_HAVE_MUJOCO)
#include "kernels/envs/mujoco/ant.hpp"
#include "kernels/envs/mujoco/half_cheetah.hpp"
#include "kernels/envs/mujoco/hopper.hpp"
#include "kernels/envs/mujoco/humanoid.hpp"
#include "kernels/envs/mujoco/inverted_pendulum.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/envs/mujoco/mujoco_vec_env.hpp"
#include "kernels/envs/mujoco/swimmer.hpp"
#include "kernels/envs/mujoco/walker2d.hpp"
#include "kernels/envs/physics/ant.hpp"
#include "kernels/envs/physics/humanoid.hpp"
#endif

namespace gmi::envs {
namespace {

using SpecFn = std::function<EnvSpec(const EnvOverrides&)>;
using MakeFn = std::function<std::unique_ptr<VecEnvBase>(int, std::uint64_t, std::uint64_t, const EnvOverrides&)>;
using MultiSpecFn = std::function<MultiAgentSpec(const EnvOverrides&)>;
using MultiMakeFn =
    std::function<std::unique_ptr<MultiAgentVecEnvBase>(int, std::uint64_t, std::uint64_t, const EnvOverrides&)>;
using KwargsFn = std::function<void(const mujoco::Kwargs&)>;

struct Entry {
  EnvInfo info;
  SpecFn spec;              ///< single-agent kinds
  MakeFn make;
  MultiSpecFn multi_spec;   ///< EnvKind::multi_agent
  MultiMakeFn multi_make;
  KwargsFn check_kwargs;    ///< MuJoCo's keyword arguments; unset: takes none
};

template <class Env>
typename Env::Params params_for(const EnvOverrides& o) {
  typename Env::Params p;
  if (o.max_episode_steps > 0) p.max_episode_steps = o.max_episode_steps;
  return p;
}

/// A device environment (one header in kernels/envs/, stepped by VecEnv<Env>).
template <class Env>
Entry device() {
  Entry e;
  e.info = {Env::kName, EnvKind::device, ""};
  e.spec = [](const EnvOverrides& o) { return Env::spec(params_for<Env>(o)); };
  e.make = [](int n, std::uint64_t seed, std::uint64_t offset, const EnvOverrides& o) {
    return std::unique_ptr<VecEnvBase>(new VecEnv<Env>(n, seed, offset, params_for<Env>(o)));
  };
  return e;
}

/// An environment whose backend this build lacks: its name is known (a config naming it gets
/// `why`, not "unknown environment").
[[maybe_unused]] Entry unavailable(const char* name, EnvKind kind, const char* why) {
  Entry e;
  e.info = {name, kind, std::string(name) + ": " + why};
  return e;
}

#if defined(GMI_HAVE_MUJOCO)
/// A host-simulated MuJoCo task (kernels/envs/mujoco/).
template <class Task>
Entry mujoco_task(const char* name) {
  GMI_REQUIRE(std::string(name) == Task::kName,
              std::string("env registry: the MuJoCo line '") + name + "' names task " + Task::kName);
  Entry e;
  e.info = {Task::kName, EnvKind::mujoco, ""};
  e.spec = [](const EnvOverrides& o) {
    const Task task(Task::params(o.mujoco.kwargs));
    const mujoco::ModelPtr m = mujoco::load_model(Task::kXml, o.mujoco.model_path);
    return mujoco::MujocoVecEnv<Task>::spec_of(task, m.get(), o.max_episode_steps);
  };
  e.make = [](int n, std::uint64_t seed, std::uint64_t offset, const EnvOverrides& o) {
    return std::unique_ptr<VecEnvBase>(new mujoco::MujocoVecEnv<Task>(n, seed, offset, o.mujoco, o.max_episode_steps));
  };
  e.check_kwargs = [](const mujoco::Kwargs& k) { Task::params(k); };
  return e;
}
#define GMI_MUJOCO_TASK(Task, name) mujoco_task<mujoco::Task>(name)

/// A MuJoCo model on the device pipeline (kernels/envs/physics/), stepped by VecEnv<Env>.
template <class Env>
Entry physics_task(const char* name) {
  GMI_REQUIRE(std::string(name) == Env::kName,
              std::string("env registry: the physics line '") + name + "' names task " + Env::kName);
  auto params = [](const EnvOverrides& o) {
    typename Env::Params p;
    p.kwargs = o.mujoco.kwargs;
    p.model_path = o.mujoco.model_path;
    if (o.max_episode_steps > 0) p.max_episode_steps = o.max_episode_steps;
    return p;
  };
  Entry e;
  e.info = {Env::kName, EnvKind::physics, ""};
  e.spec = [params](const EnvOverrides& o) { return Env::spec(params(o)); };
  e.make = [params](int n, std::uint64_t seed, std::uint64_t offset, const EnvOverrides& o) {
    return std::unique_ptr<VecEnvBase>(new VecEnv<Env>(n, seed, offset, params(o)));
  };
  e.check_kwargs = [](const mujoco::Kwargs& k) { Env::check_kwargs(k); };
  return e;
}
#define GMI_PHYSICS_TASK(Env, name) physics_task<Env>(name)
#else
#define GMI_MUJOCO_TASK(Task, name)                                                                            \
  unavailable(name, EnvKind::mujoco,                                                                          \
              "this gmi_drl was built without MuJoCo (pip install mujoco gymnasium, or set MUJOCO_ROOT, then " \
              "configure again)")
#define GMI_PHYSICS_TASK(Env, name)                                                                       \
  unavailable(name, EnvKind::physics,                                                                    \
              "this gmi_drl was built without MuJoCo, which reads the device tasks' models (pip install " \
              "mujoco gymnasium, or set MUJOCO_ROOT, then configure again)")
#endif

/// A multi-agent game (kernels/envs/multiagent/), made by name by its own factory.
Entry multi_agent(const char* name) {
  Entry e;
  e.info = {name, EnvKind::multi_agent, ""};
  const std::string n = name;
  e.multi_spec = [n](const EnvOverrides& o) { return tag_spec(n, o.tag); };
  e.multi_make = [n](int num, std::uint64_t seed, std::uint64_t offset, const EnvOverrides& o) {
    return make_tag_env(n, num, seed, offset, o.tag);
  };
  return e;
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> r = {
      device<CartPole>(),
      device<Acrobot>(),
      device<Pendulum>(),
      device<MountainCarContinuous>(),
      device<SyntheticHumanoid>(),
      GMI_MUJOCO_TASK(Hopper, "Hopper-v5"),
      GMI_MUJOCO_TASK(HalfCheetah, "HalfCheetah-v5"),
      GMI_MUJOCO_TASK(Walker2d, "Walker2d-v5"),
      GMI_MUJOCO_TASK(Ant, "Ant-v5"),
      GMI_MUJOCO_TASK(Humanoid, "Humanoid-v5"),
      GMI_MUJOCO_TASK(InvertedPendulum, "InvertedPendulum-v5"),
      GMI_MUJOCO_TASK(Swimmer, "Swimmer-v5"),
      GMI_PHYSICS_TASK(DeviceAnt, "DeviceAnt-v5"),
      GMI_PHYSICS_TASK(DeviceHumanoid, "DeviceHumanoid-v5"),
      multi_agent(kTagGridworld),
      multi_agent(kTagContinuous),
  };
  return r;
}

const Entry* lookup(const std::string& name) {
  for (const auto& e : registry())
    if (e.info.name == name) return &e;
  return nullptr;
}

[[noreturn]] void unknown(const std::string& name) {
  std::ostringstream s;
  s << "unknown environment '" << name << "': expected one of";
  for (const std::string& n : all_env_names()) s << " " << n;
  throw InputError(s.str());
}

/// The entry of `name`, which must be of a single-agent kind (else InputError).
const Entry& find_single(const std::string& name) {
  const Entry* e = lookup(name);
  if (!e) unknown(name);
  if (e->info.kind == EnvKind::multi_agent)
    throw InputError(name + " is a multi-agent environment (one policy per role, trained by algo ppo); this "
                     "takes single-agent environments");
  return *e;
}

const Entry& find_multi(const std::string& name) {
  const Entry* e = lookup(name);
  if (!e || e->info.kind != EnvKind::multi_agent) unknown(name);
  return *e;
}

/// Throws the reason `e` cannot run in this build, if any.
const Entry& runnable(const Entry& e) {
  if (!e.info.unavailable.empty()) throw InputError(e.info.unavailable);
  return e;
}

}  // namespace

const char* kind_name(EnvKind k) {
  switch (k) {
    case EnvKind::device: return "device";
    case EnvKind::mujoco: return "mujoco";
    case EnvKind::physics: return "physics";
    case EnvKind::multi_agent: return "multi-agent";
  }
  return "?";
}

const std::vector<EnvInfo>& registered_envs() {
  static const std::vector<EnvInfo> infos = [] {
    std::vector<EnvInfo> v;
    for (const auto& e : registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

std::vector<std::string> env_names() {
  std::vector<std::string> names;
  for (const auto& e : registry())
    if (e.info.kind != EnvKind::multi_agent) names.push_back(e.info.name);
  return names;
}

std::vector<std::string> multi_agent_env_names() {
  std::vector<std::string> names;
  for (const auto& e : registry())
    if (e.info.kind == EnvKind::multi_agent) names.push_back(e.info.name);
  return names;
}

std::vector<std::string> all_env_names() {
  std::vector<std::string> names = env_names();
  for (const std::string& n : multi_agent_env_names()) names.push_back(n);
  return names;
}

bool is_multi_agent(const std::string& name) {
  const Entry* e = lookup(name);
  return e && e->info.kind == EnvKind::multi_agent;
}

void check_env_name(const std::string& name) {
  if (!lookup(name)) unknown(name);
}

std::unique_ptr<MultiAgentVecEnvBase> make_multi_agent_env(const std::string& name, int num_envs, std::uint64_t seed,
                                                           std::uint64_t global_offset, const EnvOverrides& o) {
  return runnable(find_multi(name)).multi_make(num_envs, seed, global_offset, o);
}

MultiAgentSpec multi_agent_spec(const std::string& name, const EnvOverrides& o) {
  return runnable(find_multi(name)).multi_spec(o);
}

EnvSpec env_spec(const std::string& name, const EnvOverrides& overrides) {
  return runnable(find_single(name)).spec(overrides);
}

std::unique_ptr<VecEnvBase> make_vec_env(const std::string& name, int num_envs, std::uint64_t seed,
                                         std::uint64_t global_offset,
                                         const EnvOverrides& overrides) {
  GMI_REQUIRE(num_envs > 0, "make_vec_env: num_envs must be positive");
  return runnable(find_single(name)).make(num_envs, seed, global_offset, overrides);
}

namespace mujoco {

bool available() {
#if defined(GMI_HAVE_MUJOCO)
  return true;
#else
  return false;
#endif
}

bool is_mujoco(const std::string& name) {
  const Entry* e = lookup(name);
  return e && e->info.kind == EnvKind::mujoco;
}

void check_kwargs_for(const std::string& name, const Kwargs& k) {
  const Entry* e = lookup(name);
  if (e && e->check_kwargs) return e->check_kwargs(k);
  if (e && (e->info.kind == EnvKind::mujoco || e->info.kind == EnvKind::physics)) return;  // unavailable: making it says why
  k.for_each([&](const char* key, bool set) {
    if (set)
      throw InputError(std::string("env.") + key + ": " + name +
                       " has no such setting (it takes none of the MuJoCo environments' keyword arguments)");
  });
}

}  // namespace mujoco
}  // namespace gmi::envs
