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

// ---------------------------------------------------------------------------------------------
// The schema: one entry per key.
// ---------------------------------------------------------------------------------------------
struct Field {
  std::string path;
  std::string type;
  std::string allowed;  // constraint in words, "" if any value of the type
  std::string doc;
  std::function<void(Config&, const YAML::Node&, const std::string& source)> set;
  std::function<std::string(const Config&)> get;
};

[[noreturn]] void fail(const std::string& source, const std::string& path, const std::string& what) {
  throw InputError("config " + (source.empty() ? std::string("<defaults>") : source) + ": " + path +
                   ": " + what);
}

template <class T, class Access>
Field field(std::string path, std::string doc, Access access, std::function<bool(const T&)> ok = {},
            std::string allowed = "") {
  Field f;
  f.path = path;
  f.type = Codec<T>::type();
  f.allowed = allowed;
  f.doc = std::move(doc);
  f.set = [path, access, ok, allowed](Config& c, const YAML::Node& n, const std::string& source) {
    T v{};
    if (!Codec<T>::decode(n, v) || (ok && !ok(v)))
      fail(source, path,
           "expected " +
               (allowed.rfind("one of", 0) == 0
                    ? allowed
                    : Codec<T>::phrase() + (allowed.empty() ? "" : " " + allowed)) +
               ", got " + shown(n));
    access(c) = v;
  };
  f.get = [access](const Config& c) { return Codec<T>::text(access(const_cast<Config&>(c))); };
  return f;
}

template <class T>
std::function<bool(const T&)> at_least(T lo) {
  return [lo](const T& v) { return v >= lo; };
}
std::function<bool(const double&)> positive() {
  return [](const double& v) { return v > 0.0; };
}
std::function<bool(const double&)> within(double lo, double hi) {
  return [lo, hi](const double& v) { return v >= lo && v <= hi; };
}
std::function<bool(const std::string&)> one_of(std::vector<std::string> choices) {
  return [choices](const std::string& v) {
    return std::find(choices.begin(), choices.end(), v) != choices.end();
  };
}
std::string choices_text(const std::vector<std::string>& c) {
  std::string s = "one of";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : " ") + c[i];
  return s;
}
std::function<bool(const std::vector<int>&)> widths() {
  return [](const std::vector<int>& v) {
    if (v.size() > 16) return false;
    for (int w : v)
      if (w < 1 || w > 65536) return false;
    return true;
  };
}

#define GMI_KEY(expr) [](Config & c) -> auto& { return c.expr; }

/// The env.* keys of the Tag games (filled while the schema is built).
std::vector<std::string>& tag_paths() {
  static std::vector<std::string> p;
  return p;
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
  return field<std::string>("algo", doc, GMI_KEY(algo), one_of(names), choices_text(names));
}

const std::vector<Field>& schema() {
  static const std::vector<Field> s = [] {
    const auto envs = envs::all_env_names();
    std::vector<Field> f;
    f.push_back(algo_field());
    // env
    f.push_back(field<std::string>("env.name", "environment (Gymnasium id; TagGridworld-v0 and TagContinuous-v0 are "
                                   "multi-agent: one policy per role, algo ppo)", GMI_KEY(env.name),
                                   one_of(envs), choices_text(envs)));
    f.push_back(field<int>("env.num_envs", "parallel environments per GMI (MPI rank)",
                           GMI_KEY(env.num_envs), at_least(1), ">= 1"));
    f.push_back(field<int>("env.max_episode_steps",
                           "episode time limit (truncation); 0 keeps Gymnasium's default",
                           GMI_KEY(env.max_episode_steps), at_least(0), ">= 0"));
    f.push_back(field<int>("env.threads",
                           "host-simulated environments (MuJoCo): worker threads stepping this GMI's envs; 0: the "
                           "node's hardware threads divided among its GMIs",
                           GMI_KEY(env.threads), at_least(0), ">= 0"));
    f.push_back(field<bool>("env.async_halves",
                            "host-simulated environments: step one half of the envs on the threads while the device "
                            "computes the other half's actions (double buffering)",
                            GMI_KEY(env.async_halves)));
    f.push_back(field<std::string>("env.model_path",
                                   "MuJoCo model: a directory holding the task's XML, or the XML file; empty: the "
                                   "installed Gymnasium's envs/mujoco/assets (or $GMI_MUJOCO_ASSETS)",
                                   GMI_KEY(env.model_path)));
    // Gymnasium v5 keyword arguments of the MuJoCo environments (null: the environment's default;
    // one that the environment does not take is an error naming it).
    const std::string kw = "Gymnasium v5 keyword argument of the MuJoCo environments; null: the environment's default";
    f.push_back(field<std::optional<int>>("env.frame_skip", "MuJoCo steps per environment step; " + kw,
                                          GMI_KEY(env.kwargs.frame_skip), [](const std::optional<int>& v) { return !v || *v >= 1; },
                                          "(>= 1)"));
    using envs::mujoco::Kwargs;
    using Number = std::optional<double> Kwargs::*;
    for (auto [key, doc, member] : std::vector<std::tuple<const char*, const char*, Number>>{
             {"forward_reward_weight", "weight of the forward-velocity reward", &Kwargs::forward_reward_weight},
             {"ctrl_cost_weight", "weight of the control cost", &Kwargs::ctrl_cost_weight},
             {"contact_cost_weight", "weight of the contact cost (Ant, Humanoid)", &Kwargs::contact_cost_weight},
             {"healthy_reward", "reward per step while healthy", &Kwargs::healthy_reward},
             {"reset_noise_scale", "scale of the initial-state noise", &Kwargs::reset_noise_scale}})
      f.push_back(field<std::optional<double>>(
          std::string("env.") + key, std::string(doc) + "; " + kw,
          [m = member](Config& c) -> std::optional<double>& { return c.env.kwargs.*m; },
          [](const std::optional<double>& v) { return !v || *v >= 0; }, "(>= 0)"));
    using Flag = std::optional<bool> Kwargs::*;
    for (auto [key, doc, member] : std::vector<std::tuple<const char*, const char*, Flag>>{
             {"terminate_when_unhealthy", "end the episode when the body leaves the healthy ranges",
              &Kwargs::terminate_when_unhealthy},
             {"exclude_current_positions_from_observation", "leave the root's x (and y) out of the observation",
              &Kwargs::exclude_current_positions_from_observation},
             {"include_cfrc_ext_in_observation", "external contact forces in the observation (Ant, Humanoid)",
              &Kwargs::include_cfrc_ext_in_observation},
             {"include_cinert_in_observation", "body inertias in the observation (Humanoid)",
              &Kwargs::include_cinert_in_observation},
             {"include_cvel_in_observation", "body velocities in the observation (Humanoid)",
              &Kwargs::include_cvel_in_observation},
             {"include_qfrc_actuator_in_observation", "actuator forces in the observation (Humanoid)",
              &Kwargs::include_qfrc_actuator_in_observation}})
      f.push_back(field<std::optional<bool>>(std::string("env.") + key, std::string(doc) + "; " + kw,
                                             [m = member](Config& c) -> std::optional<bool>& { return c.env.kwargs.*m; }));
    using Span = std::optional<Range> Kwargs::*;
    for (auto [key, doc, member] : std::vector<std::tuple<const char*, const char*, Span>>{
             {"healthy_z_range", "healthy range of the root's height", &Kwargs::healthy_z_range},
             {"healthy_angle_range", "healthy range of the torso's angle (Hopper, Walker2d)", &Kwargs::healthy_angle_range},
             {"healthy_state_range", "healthy range of every other state entry (Hopper)", &Kwargs::healthy_state_range},
             {"contact_force_range", "contact forces are clipped to this range (Ant)", &Kwargs::contact_force_range},
             {"contact_cost_range", "the contact cost is clipped to this range (Humanoid)", &Kwargs::contact_cost_range}})
      f.push_back(field<std::optional<Range>>(std::string("env.") + key, std::string(doc) + "; " + kw,
                                              [m = member](Config& c) -> std::optional<Range>& { return c.env.kwargs.*m; }));
    // WarpDrive's Tag games (kernels/envs/multiagent/tag_params.hpp): one key per constructor
    // argument; a key of the other game, or of Tag for another environment, is an error.
    {
      using envs::TagParams;
      const std::size_t first_tag = f.size();
      const std::string grid = " (TagGridworld-v0)", cont = " (TagContinuous-v0)", both = " (Tag games)";
      auto tag_int = [&](const char* key, int TagParams::*m, const std::string& doc) {
        f.push_back(field<int>(std::string("env.") + key, doc, [m](Config& c) -> int& { return c.env.tag.*m; }));
      };
      auto tag_num = [&](const char* key, double TagParams::*m, const std::string& doc) {
        f.push_back(field<double>(std::string("env.") + key, doc, [m](Config& c) -> double& { return c.env.tag.*m; }));
      };
      auto tag_flag = [&](const char* key, bool TagParams::*m, const std::string& doc) {
        f.push_back(field<bool>(std::string("env.") + key, doc, [m](Config& c) -> bool& { return c.env.tag.*m; }));
      };
      auto tag_list = [&](const char* key, std::vector<double> TagParams::*m, const std::string& doc) {
        f.push_back(field<std::vector<double>>(std::string("env.") + key, doc,
                                               [m](Config& c) -> std::vector<double>& { return c.env.tag.*m; }));
      };
      f.push_back(field<std::optional<int>>("env.num_taggers", "taggers per environment; null: 10 (grid), 1 (continuous)" + both,
                                            GMI_KEY(env.tag.num_taggers)));
      f.push_back(field<std::optional<int>>("env.num_runners",
                                            "runners per environment; null: 1 (grid, its only value), 10 (continuous)" + both,
                                            GMI_KEY(env.tag.num_runners)));
      tag_num("grid_length", &TagParams::grid_length, "side of the square world (grid: a whole number of cells)" + both);
      tag_int("episode_length", &TagParams::episode_length, "steps per episode (reported as truncation)" + both);
      tag_list("starting_location_x", &TagParams::starting_location_x,
               "start x of every agent, taggers first ([]: random each episode)" + both);
      tag_list("starting_location_y", &TagParams::starting_location_y, "start y of every agent, as starting_location_x" + both);
      tag_flag("use_full_observation", &TagParams::use_full_observation,
               "every agent in the observation (true) or the nearest ones (false)" + both);
      f.push_back(field<std::optional<double>>("env.tag_reward_for_tagger",
                                               "a tagger's reward for a tag; null: 10 (grid), 1 (continuous)" + both,
                                               GMI_KEY(env.tag.tag_reward_for_tagger)));
      f.push_back(field<std::optional<double>>(
          "env.tag_penalty_for_runner",
          "the runner's penalty when tagged (grid: subtracted, default 2; continuous: added, <= 0, default -1)" + both,
          GMI_KEY(env.tag.tag_penalty_for_runner)));
      tag_num("wall_hit_penalty", &TagParams::wall_hit_penalty, "subtracted when a move would leave the grid" + grid);
      tag_num("step_cost_for_tagger", &TagParams::step_cost_for_tagger,
              "taggers lose it and the runner gains it on every step without a tag" + grid);
      tag_list("starting_directions", &TagParams::starting_directions,
               "start heading of every agent [rad] ([]: one of 0, pi/2, pi, 3pi/2 at random)" + cont);
      tag_num("max_speed", &TagParams::max_speed, "speed limit, times the agent's skill level" + cont);
      tag_num("skill_level_runner", &TagParams::skill_level_runner, "runners' speed-limit multiplier" + cont);
      tag_num("skill_level_tagger", &TagParams::skill_level_tagger, "taggers' speed-limit multiplier" + cont);
      tag_num("max_acceleration", &TagParams::max_acceleration, "largest acceleration action" + cont);
      tag_num("min_acceleration", &TagParams::min_acceleration, "smallest acceleration action" + cont);
      tag_num("max_turn", &TagParams::max_turn, "largest turn action [rad]" + cont);
      tag_num("min_turn", &TagParams::min_turn, "smallest turn action [rad]" + cont);
      tag_int("num_acceleration_levels", &TagParams::num_acceleration_levels,
              "acceleration actions evenly spaced in [min, max] besides 'no change'" + cont);
      tag_int("num_turn_levels", &TagParams::num_turn_levels, "turn actions evenly spaced in [min, max] besides 'no turn'" + cont);
      tag_num("edge_hit_penalty", &TagParams::edge_hit_penalty, "added (<= 0) when an agent is clipped at the edge" + cont);
      tag_int("num_other_agents_observed", &TagParams::num_other_agents_observed,
              "nearest other agents observed when use_full_observation is false" + cont);
      tag_num("tagging_distance", &TagParams::tagging_distance,
              "a runner closer than this times grid_length to a tagger is tagged" + cont);
      tag_num("step_penalty_for_tagger", &TagParams::step_penalty_for_tagger, "added (<= 0) to every tagger each step" + cont);
      tag_num("step_reward_for_runner", &TagParams::step_reward_for_runner,
              "added to every runner still in the game each step" + cont);
      tag_num("end_of_game_reward_for_runner", &TagParams::end_of_game_reward_for_runner,
              "added at episode_length to every runner still in the game" + cont);
      tag_flag("runner_exits_game_after_tagged", &TagParams::runner_exits_game_after_tagged,
               "a tagged runner leaves the game (else it plays on)" + cont);
      for (std::size_t i = first_tag; i < f.size(); ++i) tag_paths().push_back(f[i].path);
    }
    // policy
    f.push_back(field<std::vector<int>>("policy.actor_hidden", "hidden layer widths of the actor MLP",
                                        GMI_KEY(policy.actor_hidden), widths(),
                                        "of at most 16 widths in [1, 65536]"));
    f.push_back(field<std::vector<int>>("policy.critic_hidden",
                                        "hidden layer widths of the critic MLP",
                                        GMI_KEY(policy.critic_hidden), widths(),
                                        "of at most 16 widths in [1, 65536]"));
    f.push_back(field<std::string>("policy.activation", "hidden-layer activation",
                                   GMI_KEY(policy.activation), one_of({"tanh", "relu", "elu"}),
                                   "one of tanh, relu, elu"));
    f.push_back(field<double>("policy.log_std_init",
                              "initial log standard deviation of the Gaussian head (continuous actions)",
                              GMI_KEY(policy.log_std_init), within(-20, 2), "in [-20, 2]"));
    f.push_back(field<double>("policy.actor_output_gain",
                              "orthogonal-init gain of the actor's output layer (hidden layers: sqrt(2))",
                              GMI_KEY(policy.actor_output_gain), positive(), "> 0"));
    f.push_back(field<double>("policy.critic_output_gain",
                              "orthogonal-init gain of the critic's output layer",
                              GMI_KEY(policy.critic_output_gain), positive(), "> 0"));
    f.push_back(field<std::vector<int>>("policy.q_hidden",
                                        "hidden layer widths of the Q networks (dqn, sac; PyTorch's default "
                                        "initialisation, as CleanRL); policy.activation applies",
                                        GMI_KEY(policy.q_hidden), widths(), "of at most 16 widths in [1, 65536]"));
    // ppo
    f.push_back(field<int>("ppo.num_steps", "rollout length per environment per iteration",
                           GMI_KEY(ppo.num_steps), at_least(1), ">= 1"));
    f.push_back(field<double>("ppo.learning_rate", "Adam learning rate (initial value if annealed)",
                              GMI_KEY(ppo.learning_rate), within(1e-12, 1.0), "in (0, 1]"));
    f.push_back(field<bool>("ppo.anneal_lr", "decay the learning rate linearly to 0 over the run",
                            GMI_KEY(ppo.anneal_lr)));
    f.push_back(field<double>("ppo.gamma", "discount factor", GMI_KEY(ppo.gamma), within(0, 1),
                              "in [0, 1]"));
    f.push_back(field<double>("ppo.gae_lambda", "GAE lambda", GMI_KEY(ppo.gae_lambda), within(0, 1),
                              "in [0, 1]"));
    f.push_back(field<int>("ppo.num_minibatches",
                           "minibatches per epoch; must divide env.num_envs * ppo.num_steps",
                           GMI_KEY(ppo.num_minibatches), at_least(1), ">= 1"));
    f.push_back(field<int>("ppo.update_epochs", "passes over the rollout per iteration",
                           GMI_KEY(ppo.update_epochs), at_least(1), ">= 1"));
    f.push_back(field<bool>("ppo.norm_adv", "normalise advantages within each minibatch",
                            GMI_KEY(ppo.norm_adv)));
    f.push_back(field<double>("ppo.clip_coef", "surrogate clipping coefficient",
                              GMI_KEY(ppo.clip_coef), within(1e-6, 10), "in (0, 10]"));
    f.push_back(field<bool>("ppo.clip_vloss", "clip the value loss like the surrogate",
                            GMI_KEY(ppo.clip_vloss)));
    f.push_back(field<double>("ppo.ent_coef", "entropy bonus coefficient", GMI_KEY(ppo.ent_coef),
                              at_least(0.0), ">= 0"));
    f.push_back(field<double>("ppo.vf_coef", "value loss coefficient", GMI_KEY(ppo.vf_coef),
                              at_least(0.0), ">= 0"));
    f.push_back(field<double>("ppo.max_grad_norm",
                              "clip the global gradient norm to this value; <= 0 disables",
                              GMI_KEY(ppo.max_grad_norm)));
    f.push_back(field<std::optional<double>>(
        "ppo.target_kl", "stop an iteration's epochs once the approximate KL exceeds this; null: off",
        GMI_KEY(ppo.target_kl), [](const std::optional<double>& v) { return !v || *v > 0; },
        "(> 0)"));
    f.push_back(field<double>("ppo.adam_eps", "Adam epsilon", GMI_KEY(ppo.adam_eps), positive(),
                              "> 0"));
    f.push_back(field<bool>("ppo.normalize_obs",
                            "normalise observations by running mean and std (statistics frozen "
                            "during a rollout, updated after it)",
                            GMI_KEY(ppo.normalize_obs)));
    f.push_back(field<bool>("ppo.normalize_reward",
                            "divide rewards by the running std of the discounted return",
                            GMI_KEY(ppo.normalize_reward)));
    f.push_back(field<double>("ppo.obs_clip", "clip normalised observations to [-c, c]",
                              GMI_KEY(ppo.obs_clip), positive(), "> 0"));
    f.push_back(field<double>("ppo.reward_clip", "clip scaled rewards to [-c, c]",
                              GMI_KEY(ppo.reward_clip), positive(), "> 0"));
    f.push_back(field<bool>("ppo.clip_actions",
                            "clip sampled continuous actions to the action space before stepping",
                            GMI_KEY(ppo.clip_actions)));
    f.push_back(field<bool>("ppo.bootstrap_truncated",
                            "for time-limit truncations, add gamma * V(final observation) to the "
                            "reward instead of treating the episode end as terminal",
                            GMI_KEY(ppo.bootstrap_truncated)));
    f.push_back(field<std::vector<std::string>>(
        "ppo.frozen_roles",
        "multi-agent games: roles whose policy acts but is not trained (WarpDrive's to_train: false), e.g. "
        "[runner] to train the taggers against untrained runners",
        GMI_KEY(ppo.frozen_roles)));
    // replay (dqn, sac)
    f.push_back(field<std::int64_t>("replay.capacity",
                                    "transitions kept per GMI (CleanRL's buffer_size); each GMI keeps its own "
                                    "envs' experience; must hold at least env.num_envs",
                                    GMI_KEY(replay.capacity), at_least<std::int64_t>(1), ">= 1"));
    f.push_back(field<std::string>("replay.storage",
                                   "where the replay buffer lives: device (sampled on the device, paper 002's "
                                   "in-GPU replay), host (host memory; each batch copied to the device)",
                                   GMI_KEY(replay.storage), one_of({"device", "host"}), "one of device, host"));
    // dqn
    const std::string per_gmi = " (env steps of one GMI, as CleanRL's global_step with one env)";
    f.push_back(field<int>("dqn.num_steps",
                           "vector steps (every env of the GMI once) per iteration: one metrics row, the "
                           "checkpoint and signal granularity; 0: ceil(1000 / env.num_envs)",
                           GMI_KEY(dqn.num_steps), at_least(0), ">= 0"));
    f.push_back(field<double>("dqn.learning_rate", "Adam learning rate", GMI_KEY(dqn.learning_rate),
                              within(1e-12, 1.0), "in (0, 1]"));
    f.push_back(field<double>("dqn.gamma", "discount factor", GMI_KEY(dqn.gamma), within(0, 1), "in [0, 1]"));
    f.push_back(field<double>("dqn.tau", "target network update rate (1: copy the Q network)", GMI_KEY(dqn.tau),
                              within(1e-12, 1.0), "in (0, 1]"));
    f.push_back(field<std::int64_t>("dqn.target_network_frequency", "env steps between target network updates" + per_gmi,
                                    GMI_KEY(dqn.target_network_frequency), at_least<std::int64_t>(1), ">= 1"));
    f.push_back(field<int>("dqn.batch_size", "transitions per gradient update (sampled from this GMI's replay)",
                           GMI_KEY(dqn.batch_size), at_least(1), ">= 1"));
    f.push_back(field<double>("dqn.start_e", "exploration epsilon at the start", GMI_KEY(dqn.start_e), within(0, 1),
                              "in [0, 1]"));
    f.push_back(field<double>("dqn.end_e", "exploration epsilon after the decay", GMI_KEY(dqn.end_e), within(0, 1),
                              "in [0, 1]"));
    f.push_back(field<double>("dqn.exploration_fraction",
                              "fraction of train.total_env_steps over which epsilon decays linearly from start_e "
                              "to end_e",
                              GMI_KEY(dqn.exploration_fraction), within(1e-12, 1), "in (0, 1]"));
    f.push_back(field<std::int64_t>("dqn.learning_starts", "env steps before the first update" + per_gmi,
                                    GMI_KEY(dqn.learning_starts), at_least<std::int64_t>(0), ">= 0"));
    f.push_back(field<std::int64_t>("dqn.train_frequency", "env steps per gradient update" + per_gmi,
                                    GMI_KEY(dqn.train_frequency), at_least<std::int64_t>(1), ">= 1"));
    f.push_back(field<int>("dqn.updates_per_step",
                           "> 0: this many gradient updates after every vector step once learning started, "
                           "instead of one per dqn.train_frequency env steps (many envs per GMI)",
                           GMI_KEY(dqn.updates_per_step), at_least(0), ">= 0"));
    f.push_back(field<bool>("dqn.double", "double DQN: the online network picks the next action, the target "
                                          "network values it", GMI_KEY(dqn.double_q)));
    f.push_back(field<bool>("dqn.dueling", "dueling head: Q(s, a) = V(s) + A(s, a) - mean_a A(s, a), V and A "
                                           "from the last hidden layer", GMI_KEY(dqn.dueling)));
    f.push_back(field<double>("dqn.max_grad_norm", "clip the global gradient norm to this value; <= 0 disables "
                                                   "(CleanRL does not clip)",
                              GMI_KEY(dqn.max_grad_norm)));
    f.push_back(field<double>("dqn.adam_eps", "Adam epsilon", GMI_KEY(dqn.adam_eps), positive(), "> 0"));
    // sac
    f.push_back(field<int>("sac.num_steps",
                           "vector steps (every env of the GMI once) per iteration: one metrics row, the "
                           "checkpoint and signal granularity; 0: ceil(1000 / env.num_envs)",
                           GMI_KEY(sac.num_steps), at_least(0), ">= 0"));
    f.push_back(field<double>("sac.policy_lr", "the actor's Adam learning rate", GMI_KEY(sac.policy_lr),
                              within(1e-12, 1.0), "in (0, 1]"));
    f.push_back(field<double>("sac.q_lr", "the Q networks' (and alpha's) Adam learning rate", GMI_KEY(sac.q_lr),
                              within(1e-12, 1.0), "in (0, 1]"));
    f.push_back(field<double>("sac.gamma", "discount factor", GMI_KEY(sac.gamma), within(0, 1), "in [0, 1]"));
    f.push_back(field<double>("sac.tau", "target networks' Polyak rate", GMI_KEY(sac.tau), within(1e-12, 1.0),
                              "in (0, 1]"));
    f.push_back(field<int>("sac.batch_size", "transitions per gradient update (sampled from this GMI's replay)",
                           GMI_KEY(sac.batch_size), at_least(1), ">= 1"));
    f.push_back(field<std::int64_t>("sac.learning_starts",
                                    "env steps with uniformly random actions and no updates" + per_gmi,
                                    GMI_KEY(sac.learning_starts), at_least<std::int64_t>(0), ">= 0"));
    f.push_back(field<std::int64_t>("sac.policy_frequency",
                                    "delayed actor updates: at every k-th Q update, k actor (and alpha) updates",
                                    GMI_KEY(sac.policy_frequency), at_least<std::int64_t>(1), ">= 1"));
    f.push_back(field<std::int64_t>("sac.target_network_frequency", "env steps between target network updates" + per_gmi,
                                    GMI_KEY(sac.target_network_frequency), at_least<std::int64_t>(1), ">= 1"));
    f.push_back(field<double>("sac.alpha",
                              "entropy coefficient; ignored when sac.autotune (alpha then starts at 1, as CleanRL)",
                              GMI_KEY(sac.alpha), positive(), "> 0"));
    f.push_back(field<bool>("sac.autotune", "learn the entropy coefficient towards sac.target_entropy",
                            GMI_KEY(sac.autotune)));
    f.push_back(field<std::optional<double>>("sac.target_entropy",
                                             "target entropy of automatic tuning; null: -(action dimensions), as "
                                             "CleanRL",
                                             GMI_KEY(sac.target_entropy)));
    f.push_back(field<int>("sac.updates_per_step",
                           "> 0: this many Q updates after every vector step once learning started; 0: one per "
                           "env step (CleanRL's ratio)",
                           GMI_KEY(sac.updates_per_step), at_least(0), ">= 0"));
    f.push_back(field<double>("sac.max_grad_norm",
                              "clip the actor's global gradient norm, and Q1 and Q2 by one joint norm, to this "
                              "value; <= 0 disables (CleanRL does not clip)",
                              GMI_KEY(sac.max_grad_norm)));
    f.push_back(field<double>("sac.adam_eps", "Adam epsilon", GMI_KEY(sac.adam_eps), positive(), "> 0"));
    // train
    f.push_back(field<std::int64_t>("train.total_env_steps",
                                    "stop after this many environment steps (all GMIs together)",
                                    GMI_KEY(train.total_env_steps), at_least<std::int64_t>(1),
                                    ">= 1"));
    f.push_back(field<std::int64_t>("train.seed", "seed of the run (weights, envs, sampling)",
                                    GMI_KEY(train.seed), at_least<std::int64_t>(0), ">= 0"));
    f.push_back(field<int>("train.log_interval", "print a progress line every N iterations",
                           GMI_KEY(train.log_interval), at_least(1), ">= 1"));
    f.push_back(field<std::string>("train.run_dir",
                                   "output directory; empty: runs/<config name>-<date>-<time>",
                                   GMI_KEY(train.run_dir)));
    f.push_back(field<int>("train.max_nonfinite_updates",
                           "stop the run (its last checkpoint intact) after this many updates in a "
                           "row were skipped for a NaN or Inf gradient or loss",
                           GMI_KEY(train.max_nonfinite_updates), at_least(1), ">= 1"));
    f.push_back(field<AutoSeconds>(
        "train.stall_timeout_s",
        "stalled-GMI watchdog: a GMI that makes no progress (no rollout step, minibatch or phase ends) for this "
        "many seconds logs the phase it is in and ends the job; auto: max(300, 20 x the slowest "
        "iteration so far); off: no watchdog",
        GMI_KEY(train.stall_timeout_s),
        [](const AutoSeconds& v) { return v.mode != AutoSeconds::Mode::fixed || v.seconds > 0; }, "(> 0)"));
    // checkpoint
    f.push_back(field<int>("checkpoint.interval",
                           "write a checkpoint every N iterations (0: only on SIGTERM/SIGINT/SIGUSR1/"
                           "SIGUSR2 and at the end)",
                           GMI_KEY(checkpoint.interval), at_least(0), ">= 0"));
    f.push_back(field<double>("checkpoint.interval_minutes",
                              "also write one when this many minutes passed since the last (0: off)",
                              GMI_KEY(checkpoint.interval_minutes), within(0, 1e9), "in [0, 1e9]"));
    f.push_back(field<int>("checkpoint.keep", "newest checkpoints kept in <run_dir>/checkpoints",
                           GMI_KEY(checkpoint.keep), at_least(1), ">= 1"));
    f.push_back(field<bool>("checkpoint.at_end", "write a checkpoint when training finishes",
                            GMI_KEY(checkpoint.at_end)));
    f.push_back(field<bool>("checkpoint.replay",
                            "keep the replay buffers in checkpoints (dqn, sac): a resume is then exact; false: "
                            "smaller files, and a resume refills the buffers from new experience",
                            GMI_KEY(checkpoint.replay)));
    // device
    f.push_back(field<std::string>("device.matmul",
                                   "float32 matrix products on GPUs: fp32 (cuBLAS FP32; the fused kernels' "
                                   "tensor-core layers, rollout step and update, in 3xTF32), tf32 (one TF32 "
                                   "pass: 10-bit mantissas), or bf16 (cuBLAS rounds the operands to bfloat16 and "
                                   "accumulates in fp32; weights, gradients and Adam stay fp32; the layered "
                                   "kernels run, the fused ones have no BF16 path)",
                                   GMI_KEY(device.matmul), one_of({"fp32", "tf32", "bf16"}),
                                   "one of fp32, tf32, bf16"));
    f.push_back(field<std::string>(
        "device.fused_kernels",
        "fused kernels for small networks (rollout step: actor, critic and sampling in one launch; "
        "update: gather, forward, loss and backward per tile in shared memory) when the layers fit; "
        "auto: both on GPU builds, layered on host builds",
        GMI_KEY(device.fused_kernels), one_of({"auto", "on", "off"}), "one of auto, on, off"));
    f.push_back(field<std::string>(
        "device.graphs",
        "PPO's rollout (policy step and env step, every step) captured once into a CUDA graph and replayed "
        "each iteration: one launch instead of two or more per step; same results as off. auto: on for "
        "environments that step on the device (CUDA builds); on: also an error where it cannot apply "
        "(host-simulated or multi-agent environments); host builds run without graphs",
        GMI_KEY(device.graphs), one_of({"auto", "on", "off"}), "one of auto, on, off"));
    // gmi
    f.push_back(field<std::string>(
        "gmi.backend",
        "how the GMIs of one GPU share it: mps (NVIDIA MPS, each GMI with its SM share and memory "
        "limit; the node's first rank starts a daemon if none answers), none (time-sliced sharing, "
        "GMI-DRL's Direct-Share baseline), mig (one pre-made MIG instance per rank, named by the "
        "launcher in CUDA_VISIBLE_DEVICES); auto: mps on CUDA builds when a GPU has several GMIs, "
        "else none",
        GMI_KEY(gmi.backend), one_of({"auto", "mps", "none", "mig"}), "one of auto, mps, none, mig"));
    f.push_back(field<int>("gmi.per_gpu",
                           "GMIs (ranks) per GPU; 0: a node's ranks spread evenly over its GPUs "
                           "(uneven counts allowed, the first GPUs take one more)",
                           GMI_KEY(gmi.per_gpu), at_least(0), ">= 0"));
    f.push_back(field<int>("gmi.gpus_per_node",
                           "GPUs used per node; 0: the visible GPUs on CUDA builds, 1 on host "
                           "builds (set it there to exercise multi-GPU layouts without GPUs)",
                           GMI_KEY(gmi.gpus_per_node), at_least(0), ">= 0"));
    f.push_back(field<std::vector<double>>(
        "gmi.sm_share",
        "percentage of a GPU's SMs per GMI (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): [] gives 100/m to "
        "each of a GPU's m GMIs, [p] gives p to all, [p0, p1, ...] one per slot on the GPU",
        GMI_KEY(gmi.sm_share),
        [](const std::vector<double>& v) {
          for (double p : v)
            if (!(p > 0 && p <= 100)) return false;
          return true;
        },
        "each in (0, 100]"));
    f.push_back(field<std::string>(
        "gmi.memory_limit",
        "device memory limit per GMI under MPS (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), e.g. 16G or "
        "1500M; empty: no limit",
        GMI_KEY(gmi.memory_limit),
        [](const std::string& v) {
          if (v.empty()) return true;
          std::size_t i = 0;
          while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
          return i > 0 && i + 1 == v.size() && (v[i] == 'G' || v[i] == 'M') && std::stoll(v.substr(0, i)) > 0;
        },
        "empty, or a positive integer followed by G or M"));
    f.push_back(field<int>("gmi.ranks_per_node",
                           "0: ranks on one host form a node; k > 0: consecutive groups of k ranks "
                           "act as nodes (emulates several nodes on one machine, for tests)",
                           GMI_KEY(gmi.ranks_per_node), at_least(0), ">= 0"));
    f.push_back(field<std::string>(
        "gmi.mps_dir",
        "MPS pipe directory (logs in DIR-log); empty: $CUDA_MPS_PIPE_DIRECTORY if set, else a "
        "job-private directory under $TMPDIR or /tmp",
        GMI_KEY(gmi.mps_dir)));
    // reduce
    f.push_back(field<std::string>(
        "reduce.strategy",
        "gradient averaging over GMIs: mpr (host-staged MPI_Allreduce over all GMIs), mrr (NCCL "
        "rings of the j-th GMI of every GPU, then across rings; needs GMIs per GPU <= GPUs), har "
        "(within each GPU, then NCCL among one leader per GPU, then back), hybrid (hybrid_k GMIs "
        "per GPU in NCCL rings, the rest host-staged; paper 003 Fig. 7c); auto: measure unit costs "
        "at start-up and take the least projected latency",
        GMI_KEY(reduce.strategy), one_of({"auto", "mpr", "mrr", "har", "hybrid"}),
        "one of auto, mpr, mrr, har, hybrid"));
    f.push_back(field<int>("reduce.hybrid_k", "GMIs per GPU in NCCL rings for strategy hybrid",
                           GMI_KEY(reduce.hybrid_k), at_least(1), ">= 1"));
    f.push_back(field<std::string>(
        "reduce.intra_gpu",
        "HAR's step among the GMIs of one GPU: ipc (device buffers shared through CUDA IPC; an "
        "MPI shared-memory window on host builds), mpi (host-staged MPI_Reduce/MPI_Bcast); auto: ipc",
        GMI_KEY(reduce.intra_gpu), one_of({"auto", "ipc", "mpi"}), "one of auto, ipc, mpi"));
    f.push_back(field<std::string>(
        "reduce.inter_gpu",
        "HAR's step among GPUs: leaders (NCCL all-reduce of the whole buffer among one GMI per GPU, "
        "the paper's HAR), rings (every GMI all-reduces its 1/m slice of the GPU's sum with the GMI "
        "of its slot on every other GPU: m NCCL rings at once; needs reduce.intra_gpu ipc, GMIs "
        "that run side by side (gmi.backend mps; host builds) and the same GMI count on every "
        "GPU); auto: rings where they can run",
        GMI_KEY(reduce.inter_gpu), one_of({"auto", "leaders", "rings"}), "one of auto, leaders, rings"));
    f.push_back(field<int>("reduce.auto_runs",
                           "timed runs per unit cost when strategy is auto (paper 003: 100)",
                           GMI_KEY(reduce.auto_runs), at_least(1), ">= 1"));
    f.push_back(field<double>(
        "reduce.timeout_s",
        "longest wait of a GMI on others (reductions on the device, NCCL, MPI, the per-iteration "
        "statistics): when it runs out, the GMIs that still answer name the ones that do not, one "
        "line is printed and every rank exits with status 3",
        GMI_KEY(reduce.timeout_s), [](const double& v) { return v > 0 && v <= 1e6; }, "in (0, 1e6]"));
    return f;
  }();
  return s;
}
#undef GMI_KEY

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
  m.async_halves = c.env.async_halves;
  m.model_path = c.env.model_path;
  m.kwargs = c.env.kwargs;
  o.tag = c.env.tag;
  return o;
}

namespace {
std::vector<AlgorithmRules>& registered_algorithms() {
  static std::vector<AlgorithmRules> r;
  return r;
}
}  // namespace

void register_algorithm(const AlgorithmRules& rules) {
  for (AlgorithmRules& r : registered_algorithms())
    if (r.name == rules.name) {
      r = rules;
      return;
    }
  registered_algorithms().push_back(rules);
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
  std::string s;
  for (std::size_t i = 0; i < n.size(); ++i) s += (i == 0 ? "" : i + 1 == n.size() ? " or " : ", ") + n[i];
  return s.empty() ? "none" : s;
}
}  // namespace

void derive(Config& c, int world_size) {
  const std::string src = c.source.empty() ? "<defaults>" : c.source;
  auto bad = [&](const std::string& key, const std::string& what) { fail(src, key, what); };
  const AlgorithmRules* algo = nullptr;
  for (const AlgorithmRules& a : algorithms())
    if (a.name == c.algo) algo = &a;
  if (!algo) bad("algo", "expected " + choices_text([] {
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
    const envs::MultiAgentSpec game = envs::multi_agent_spec(c.env.name, env_overrides(c));
    for (const std::string& r : c.ppo.frozen_roles) {
      std::string names;
      bool found = false;
      for (const auto& role : game.roles) found = found || role.name == r, names += " " + role.name;
      if (!found) bad("ppo.frozen_roles", "'" + r + "' is not a role of " + c.env.name + " (its roles:" + names + ")");
    }
  } else {
    if (!c.ppo.frozen_roles.empty()) bad("ppo.frozen_roles", c.env.name + " has no roles (a single-agent environment)");
    const std::string changed = tag_key_changed(c.env.tag);
    if (!changed.empty())
      bad(changed, c.env.name + " does not take this parameter (TagGridworld-v0 and TagContinuous-v0 only)");
  }
  if (c.env.async_halves && !envs::mujoco::is_mujoco(c.env.name))
    bad("env.async_halves", c.env.name + " steps on the device; only host-simulated environments (MuJoCo) step in halves");
  if (c.env.async_halves && c.env.num_envs < 2) bad("env.async_halves", "needs env.num_envs >= 2 (two halves)");
  if (c.device.graphs == "on" && (multi || envs::mujoco::is_mujoco(c.env.name) || !algo->captured_rollout))
    bad("device.graphs", "on: graphs capture the rollout of environments that step on the device (algo " +
                             names_where([](const AlgorithmRules& a) { return a.captured_rollout; }) + "); " +
                             (!algo->captured_rollout ? "algo " + c.algo + " has no captured rollout"
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
  algo->derive(c);  // num_steps, batch_size, minibatch_size and the algorithm's own checks
  const std::int64_t per_iter = c.batch_size * world_size;
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

std::vector<std::string> tag_keys() {
  schema();
  return tag_paths();
}

std::vector<std::string> keys() {
  std::vector<std::string> k;
  for (const auto& f : schema()) k.push_back(f.path);
  return k;
}

}  // namespace gmi::config
