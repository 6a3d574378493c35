#pragma once
/// \file
/// \brief The run's configuration: typed sections with documented defaults, parsed strictly from
/// YAML (unknown keys, wrong types and out-of-range values are errors naming the key), with
/// derived values computed in one place (derive()).  Every key is described once, in the schema
/// in config.cpp, which also prints the reference table in config/README.md (`gmi_drl config reference`).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/envs/multiagent/tag_params.hpp"
#include "kernels/envs/mujoco/options.hpp"
#include "src/config/values.hpp"

namespace gmi::config {

struct EnvConfig {
  std::string name = "CartPole-v1";  ///< registered environment id
  int num_envs = 8;                  ///< parallel environments per GMI (rank)
  int max_episode_steps = 0;         ///< time limit; 0 keeps the environment's Gymnasium default
  // ---- host-simulated (MuJoCo) environments ----
  int threads = 0;                   ///< worker threads per GMI; 0: the node's cores / its GMIs
  bool async_halves = false;         ///< step one half of the envs while the device acts for the other
  std::string model_path;            ///< model directory or XML file; "": Gymnasium's assets
  /// Gymnasium v5 keyword arguments (env.frame_skip, env.ctrl_cost_weight, ...); unset (null):
  /// the environment's default.
  envs::mujoco::Kwargs kwargs;
  /// The multi-agent Tag games' parameters (WarpDrive's constructor arguments as env.* keys;
  /// null: the game's default).
  envs::TagParams tag;
};

struct PolicyConfig {
  std::vector<int> actor_hidden = {64, 64};   ///< hidden layer widths of the actor MLP
  std::vector<int> critic_hidden = {64, 64};  ///< hidden layer widths of the critic MLP
  std::string activation = "tanh";            ///< tanh | relu | elu
  double log_std_init = 0.0;                  ///< initial log std of the Gaussian head (continuous)
  double actor_output_gain = 0.01;            ///< orthogonal-init gain of the actor's last layer
  double critic_output_gain = 1.0;            ///< orthogonal-init gain of the critic's last layer
  std::vector<int> q_hidden = {256, 256};     ///< hidden layer widths of the Q networks (DQN, SAC)
};

/// PPO hyperparameters, with the meaning of CleanRL's ppo.py / ppo_continuous_action.py.
struct PpoConfig {
  int num_steps = 128;              ///< rollout length per env per iteration
  double learning_rate = 2.5e-4;    ///< Adam step size (start value when annealed)
  bool anneal_lr = true;            ///< linear decay of the learning rate to 0 over the run
  double gamma = 0.99;              ///< discount
  double gae_lambda = 0.95;         ///< GAE lambda
  int num_minibatches = 4;          ///< minibatches per epoch
  int update_epochs = 4;            ///< passes over the rollout per iteration
  bool norm_adv = true;             ///< normalise advantages per minibatch
  double clip_coef = 0.2;           ///< surrogate clipping
  bool clip_vloss = true;           ///< clipped value loss
  double ent_coef = 0.01;           ///< entropy bonus weight
  double vf_coef = 0.5;             ///< value loss weight
  double max_grad_norm = 0.5;       ///< global gradient-norm clip (<= 0: off)
  std::optional<double> target_kl;  ///< stop the epochs early above this approx. KL (null: off)
  double adam_eps = 1e-5;           ///< Adam epsilon
  bool normalize_obs = false;       ///< running mean/std observation normalisation
  bool normalize_reward = false;    ///< scale rewards by the std of the discounted return
  double obs_clip = 10.0;           ///< clip normalised observations to [-c, c]
  double reward_clip = 10.0;        ///< clip scaled rewards to [-c, c]
  bool clip_actions = true;         ///< clip continuous actions to the action space before stepping
  bool bootstrap_truncated = true;  ///< add gamma*V(final_obs) to the reward of truncated steps
  std::vector<std::string> frozen_roles;  ///< multi-agent: roles whose policy acts but does not learn
};

/// Experience replay of the off-policy algorithms (kernels/rl/replay.hpp): one shard per GMI.
struct ReplayConfig {
  std::int64_t capacity = 1000000;  ///< transitions per GMI (CleanRL's buffer_size)
  std::string storage = "device";   ///< device | host
};

/// DQN hyperparameters, with the meaning of CleanRL's dqn.py (step counts are one GMI's env steps).
struct DqnConfig {
  int num_steps = 0;                   ///< vector steps per iteration; 0: ceil(1000 / env.num_envs)
  double learning_rate = 2.5e-4;       ///< Adam step size
  double gamma = 0.99;                 ///< discount
  double tau = 1.0;                    ///< target network update rate (1: copy)
  std::int64_t target_network_frequency = 500;  ///< env steps between target updates
  int batch_size = 128;                ///< transitions per gradient update
  double start_e = 1.0;                ///< epsilon at the start
  double end_e = 0.05;                 ///< epsilon at the end of the schedule
  double exploration_fraction = 0.5;   ///< fraction of train.total_env_steps to decay epsilon over
  std::int64_t learning_starts = 10000;  ///< env steps before the first update
  std::int64_t train_frequency = 10;   ///< env steps per gradient update
  int updates_per_step = 0;            ///< > 0: this many updates per vector step instead
  bool double_q = false;               ///< double DQN target (online argmax, target value)
  bool dueling = false;                ///< dueling head: Q = V + A - mean(A)
  double max_grad_norm = 0.0;          ///< global gradient-norm clip (<= 0: off, as CleanRL)
  double adam_eps = 1e-8;              ///< Adam epsilon (torch's default)
};

/// SAC hyperparameters, with the meaning of CleanRL's sac_continuous_action.py.
struct SacConfig {
  int num_steps = 0;                   ///< vector steps per iteration; 0: ceil(1000 / env.num_envs)
  double policy_lr = 3e-4;             ///< actor's Adam step size
  double q_lr = 1e-3;                  ///< Q networks' (and alpha's) Adam step size
  double gamma = 0.99;
  double tau = 0.005;                  ///< target networks' Polyak rate
  int batch_size = 256;
  std::int64_t learning_starts = 5000; ///< env steps with uniform random actions before learning
  std::int64_t policy_frequency = 2;   ///< delayed actor updates: every k steps, k of them
  std::int64_t target_network_frequency = 1;  ///< env steps between target updates
  double alpha = 0.2;                  ///< entropy coefficient (ignored when autotuned: starts at 1)
  bool autotune = true;                ///< learn alpha towards the target entropy
  std::optional<double> target_entropy;  ///< null: -act_dim
  int updates_per_step = 0;            ///< > 0: this many updates per vector step; 0: one per env step
  double max_grad_norm = 0.0;          ///< gradient-norm clip: actor; Q1+Q2 jointly (<= 0: off)
  double adam_eps = 1e-8;
};

struct TrainConfig {
  std::int64_t total_env_steps = 500000;  ///< stop after this many env steps (all GMIs together)
  std::int64_t seed = 1;                  ///< the run's seed (weights, envs, sampling)
  int log_interval = 10;                  ///< progress line every N iterations (rank 0)
  std::string run_dir;                    ///< output directory; empty: runs/<config>-<time>
  int max_nonfinite_updates = 10;         ///< stop after this many skipped (NaN/Inf) updates in a row
  AutoSeconds stall_timeout_s;            ///< watchdog: no progress for this long ends the job
};

/// When checkpoints are written (src/checkpoint/).
struct CheckpointConfig {
  int interval = 100;           ///< every N iterations; 0: only on signals and at the end
  double interval_minutes = 0;  ///< also when this many minutes passed since the last one; 0: off
  int keep = 3;                 ///< newest checkpoints kept in <run_dir>/checkpoints
  bool at_end = true;           ///< write one when training finishes
  bool replay = true;           ///< keep the replay buffers (exact resume of off-policy runs)
};

struct DeviceConfig {
  std::string matmul = "fp32";  ///< fp32 | tf32 | bf16 (tensor cores for float32 GEMMs on GPUs)
  std::string fused_kernels = "auto";  ///< auto | on | off: fused small-MLP kernels (see schema)
  std::string graphs = "auto";         ///< auto | on | off: the rollout as one CUDA graph (see schema)
};

/// How ranks are placed on GPUs and how a GPU is shared among its GMIs (see the schema in config.cpp).
struct GmiConfig {
  std::string backend = "auto";   ///< auto | mps | none | mig
  int per_gpu = 0;                ///< GMIs per GPU; 0: the node's ranks spread evenly over its GPUs
  int gpus_per_node = 0;          ///< 0: the visible GPUs (CUDA builds), 1 (host builds)
  std::vector<double> sm_share;   ///< SM percentage per GMI: [] 100/m; [p] all; [p0..pm-1] by slot
  std::string memory_limit;       ///< device memory per GMI under MPS, e.g. 16G; "" no limit
  int ranks_per_node = 0;         ///< 0: ranks sharing a host form a node; k: emulate nodes of k ranks
  std::string mps_dir;            ///< MPS pipe directory; "": $CUDA_MPS_PIPE_DIRECTORY or a job-private one
};

/// Gradient reduction over GMIs (mpi/reducers.hpp).
struct ReduceConfig {
  std::string strategy = "auto";  ///< auto | mpr | mrr | har | hybrid
  int hybrid_k = 1;               ///< GMIs per GPU that join NCCL rings in the hybrid strategy
  std::string intra_gpu = "auto"; ///< HAR's step within a GPU: auto | ipc | mpi
  std::string inter_gpu = "auto"; ///< HAR's step among GPUs: auto | leaders | rings
  int auto_runs = 100;            ///< timed runs per unit cost for strategy auto
  double timeout_s = 120;         ///< a wait on other GMIs longer than this ends the job
};

struct Config {
  std::string algo = "ppo";  ///< a registered algorithm (src/algos/registry.cpp)
  EnvConfig env;
  PolicyConfig policy;
  PpoConfig ppo;
  ReplayConfig replay;
  DqnConfig dqn;
  SacConfig sac;
  TrainConfig train;
  CheckpointConfig checkpoint;
  DeviceConfig device;
  GmiConfig gmi;
  ReduceConfig reduce;

  // ---- derived in derive(), never read from YAML ----
  int world_size = 1;               ///< number of GMIs (MPI ranks)
  int num_steps = 0;                ///< vector steps per iteration (ppo.num_steps, or dqn/sac's resolved)
  std::int64_t batch_size = 0;      ///< num_envs * num_steps: env steps per iteration (per GMI)
  std::int64_t minibatch_size = 0;  ///< batch_size / num_minibatches (PPO)
  std::int64_t num_iterations = 0;  ///< ceil(total_env_steps / (batch_size * world_size))
  std::string source;               ///< the file the config came from ("" for defaults)
};

}  // namespace gmi::config

namespace gmi::envs {
struct EnvOverrides;
}

namespace gmi::config {

/// What the environment registry needs of env.* (time limit, MuJoCo's keyword arguments, threads
/// (0, not yet resolved to the node's share: 1), model path).
envs::EnvOverrides env_overrides(const Config& c);

/// \brief What the configuration knows of an algorithm: its `algo` name, the sections it reads and
/// its derive step.  The configuration knows no algorithm by name: src/algos/registry.cpp
/// registers every one (algos::register_algorithms(), called by main() and the tests' main())
/// before a config is parsed.
struct AlgorithmRules {
  std::string name;                   ///< the value of `algo`
  std::string summary;                ///< one line, for `algo`'s description
  std::vector<std::string> sections;  ///< the config sections it reads besides the common ones
  bool multi_agent = false;           ///< trains the multi-agent games (one policy per role)
  bool captured_rollout = false;      ///< device.graphs can capture its rollout
  bool discrete_actions = true;       ///< trains on environments with discrete actions
  bool continuous_actions = true;     ///< trains on environments with continuous actions
  /// Its derived values (num_steps, batch_size, minibatch_size) and the checks between its keys
  /// and the environment's; a problem is config::fail(c, key, what).
  void (*derive)(Config& c) = nullptr;
};
/// Register (or replace) an algorithm's rules.
void register_algorithm(const AlgorithmRules& rules);
/// The registered algorithms, in registration order.
const std::vector<AlgorithmRules>& algorithms();
/// Throws gmi::InputError "config SOURCE: KEY: WHAT", the one error line of a bad config.
[[noreturn]] void fail(const Config& c, const std::string& key, const std::string& what);

/// `key.path=value` overrides, in command-line order.
using Overrides = std::vector<std::pair<std::string, std::string>>;

/// `key.path=value` strings from the command line (--set); throws gmi::InputError on bad syntax.
Overrides parse_overrides(const std::vector<std::string>& sets);

/// Read a YAML file, apply overrides, validate, derive.  Throws gmi::InputError (one line).
Config load(const std::string& path, const Overrides& overrides = {}, int world_size = 1);
/// Several files, each on top of the ones before (`--config base.yaml --config tuned.yaml`): a
/// later file's keys replace the earlier files' keys, section by section.  Each file is checked
/// for unknown keys on its own, so an error names the file that has the key.
Config load(const std::vector<std::string>& paths, const Overrides& overrides = {}, int world_size = 1);
/// Parse YAML text (for tests and for configs stored in checkpoints).
Config parse(const std::string& yaml_text, const std::string& source_name,
             const Overrides& overrides = {}, int world_size = 1);
/// The config of a command that runs one environment alone (`gmi_drl env`, `gmi_drl bench-env`):
/// every default, env.name = `name`, then the --set strings `sets` (env.* keys only: another is an
/// error naming `tool`) and `extra`, checked as a config's are.
Config env_only(const std::string& name, const std::vector<std::string>& sets, const std::string& tool,
                const Overrides& extra = {});
/// Compute derived values and check constraints between keys.
void derive(Config& c, int world_size);
/// The fully resolved configuration as YAML (every key, defaults filled in).
std::string to_yaml(const Config& c);
/// The reference of every key: a Markdown table (key, type, default, allowed, meaning).
std::string reference_markdown();
/// `s` as a YAML double-quoted scalar (for overrides whose value is arbitrary text).
std::string yaml_quote(const std::string& s);
/// All key paths of the schema.
std::vector<std::string> keys();
/// The env.* keys of the Tag games' parameters (envs::TagParams).
std::vector<std::string> tag_keys();
/// The value of `key` in `c` as YAML text (as in to_yaml); throws gmi::InputError for an unknown key.
std::string value_text(const Config& c, const std::string& key);

}  // namespace gmi::config
