#include "kernels/envs/registry.hpp"

#include <functional>
#include <sstream>

#include "kernels/core/error.hpp"
#include "kernels/envs/acrobot.hpp"
#include "kernels/envs/cartpole.hpp"
#include "kernels/envs/mountain_car_continuous.hpp"
#include "kernels/envs/mujoco/envs.hpp"
#include "kernels/envs/pendulum.hpp"
#include "kernels/envs/synthetic_humanoid.hpp"

namespace gmi::envs {
namespace {

struct Entry {
  std::string name;
  std::function<EnvSpec(const EnvOverrides&)> spec;
  std::function<std::unique_ptr<VecEnvBase>(int, std::uint64_t, std::uint64_t, const EnvOverrides&)>
      make;
};

template <class Env>
typename Env::Params params_for(const EnvOverrides& o) {
  typename Env::Params p;
  if (o.max_episode_steps > 0) p.max_episode_steps = o.max_episode_steps;
  return p;
}

template <class Env>
Entry entry() {
  return Entry{Env::kName,
               [](const EnvOverrides& o) { return Env::spec(params_for<Env>(o)); },
               [](int n, std::uint64_t seed, std::uint64_t offset, const EnvOverrides& o) {
                 return std::unique_ptr<VecEnvBase>(
                     new VecEnv<Env>(n, seed, offset, params_for<Env>(o)));
               }};
}

/// A host-simulated MuJoCo task (kernels/envs/mujoco/; in a build without MuJoCo it says so).
Entry mujoco_entry(const std::string& name) {
  return Entry{name, [name](const EnvOverrides& o) { return mujoco::spec(name, o); },
               [name](int n, std::uint64_t seed, std::uint64_t offset, const EnvOverrides& o) {
                 return mujoco::make(name, n, seed, offset, o);
               }};
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> r = [] {
    std::vector<Entry> r = {
        entry<CartPole>(),
        entry<Acrobot>(),
        entry<Pendulum>(),
        entry<MountainCarContinuous>(),
        entry<SyntheticHumanoid>(),
    };
    for (const std::string& name : mujoco::names()) r.push_back(mujoco_entry(name));
    return r;
  }();
  return r;
}

[[noreturn]] void unknown(const std::string& name) {
  std::ostringstream s;
  s << "unknown environment '" << name << "': expected one of";
  for (const std::string& n : all_env_names()) s << " " << n;
  throw InputError(s.str());
}

const Entry& find(const std::string& name) {
  for (const auto& e : registry())
    if (e.name == name) return e;
  if (is_multi_agent(name))
    throw InputError(name + " is a multi-agent environment (one policy per role, trained by algo ppo); this "
                     "takes single-agent environments");
  unknown(name);
}

}  // namespace

std::vector<std::string> env_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.push_back(e.name);
  return names;
}

std::vector<std::string> all_env_names() {
  std::vector<std::string> names = env_names();
  for (const std::string& n : multi_agent_env_names()) names.push_back(n);
  return names;
}

bool is_multi_agent(const std::string& name) {
  for (const std::string& n : multi_agent_env_names())
    if (n == name) return true;
  return false;
}

void check_env_name(const std::string& name) {
  if (!is_multi_agent(name)) find(name);
}

std::unique_ptr<MultiAgentVecEnvBase> make_multi_agent_env(const std::string& name, int num_envs, std::uint64_t seed,
                                                           std::uint64_t global_offset, const EnvOverrides& o) {
  if (!is_multi_agent(name)) unknown(name);
  return make_tag_env(name, num_envs, seed, global_offset, o.tag);
}

MultiAgentSpec multi_agent_spec(const std::string& name, const EnvOverrides& o) {
  if (!is_multi_agent(name)) unknown(name);
  return tag_spec(name, o.tag);
}

EnvSpec env_spec(const std::string& name, const EnvOverrides& overrides) {
  return find(name).spec(overrides);
}

std::unique_ptr<VecEnvBase> make_vec_env(const std::string& name, int num_envs, std::uint64_t seed,
                                         std::uint64_t global_offset,
                                         const EnvOverrides& overrides) {
  GMI_REQUIRE(num_envs > 0, "make_vec_env: num_envs must be positive");
  return find(name).make(num_envs, seed, global_offset, overrides);
}

}  // namespace gmi::envs
