#pragma once
/// \file
/// \brief The run's configuration: typed sections with documented defaults, parsed strictly from
/// YAML (unknown keys, wrong types and out-of-range values are errors naming the key), with
/// derived values computed in one place (derive()).  Every key is declared once, in its section's
/// X-list (type, default, check, description: kernels/core/key_list.hpp), next to the code that
/// owns it; the schema in config.cpp, the reference table in config/README.md (`gmi_drl config
/// reference`) and the resolved YAML are generated from those lists.
#include <any>
#include <cstdint>
#include <functional>
#include <optional>
#include <typeindex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/envs/multiagent/tag_params.hpp"
#include "kernels/envs/mujoco/options.hpp"
#include "src/config/keys.hpp"
#include "src/config/values.hpp"

namespace gmi::config {

// Each section's keys: X(type, name, default, check, one-line description), declared once
// (kernels/core/key_list.hpp).  The algorithms' sections (ppo, replay, dqn, sac) are declared in
// their folders under src/algos/ and held by Config::section<S>(); the MuJoCo keyword arguments
// and the Tag games' parameters in kernels/envs/ (GMI_MUJOCO_KWARGS, GMI_TAG_PARAMS).

#define GMI_ENV_KEYS(X)                                                                                         \
  X(std::string, name, "CartPole-v1", registered_env(),                                                                     \
    "environment (Gymnasium id; TagGridworld-v0 and TagContinuous-v0 are multi-agent: one policy per role, "    \
    "algo ppo)")                                                                                                 \
  X(int, num_envs, 8, at_least(1), "parallel environments per GMI (MPI rank)")                                 \
  X(int, max_episode_steps, 0, at_least(0), "episode time limit (truncation); 0 keeps Gymnasium's default")     \
  X(int, threads, 0, at_least(0),                                                                               \
    "host-simulated environments (MuJoCo): threads stepping this GMI's envs; 0: the CPUs it may run on, "      \
    "at most the node's hardware threads divided among its GMIs")                                               \
  X(bool, pin_threads, false, any,                                                                              \
    "host-simulated environments: each worker thread on one CPU of the GMI's affinity mask (the caller's NUMA " \
    "node first, one per physical core before second hardware threads); GMIs that share a node's mask take a " \
    "slice of it each")                                                                                         \
  X(int, batch_size, 0, at_least(0),                                                                            \
    "host-simulated environments, PPO: the envs in groups of this many, taken in turn; the device computes a " \
    "group's actions while the threads step the others (the same results as one batch); 0: env.num_envs (one " \
    "batch)")                                                                                                   \
  X(bool, async_halves, false, any,                                                                             \
    "the same as env.batch_size = half of env.num_envs (rounded up)")                                          \
  X(std::string, model_path, "", any,                                                                           \
    "MuJoCo model: a directory holding the task's XML, or the XML file; empty: the installed Gymnasium's "      \
    "envs/mujoco/assets (or $GMI_MUJOCO_ASSETS)")

struct EnvConfig {
  GMI_ENV_KEYS(GMI_KEY_MEMBER)
  envs::mujoco::Kwargs kwargs;  ///< Gymnasium v5 keyword arguments (env.frame_skip, ...; GMI_MUJOCO_KWARGS)
  envs::TagParams tag;          ///< the multi-agent Tag games' parameters (env.*; GMI_TAG_PARAMS)
};

#define GMI_POLICY_KEYS(X)                                                                                      \
  X(std::vector<int>, actor_hidden, (std::vector<int>{64, 64}), widths(), "hidden layer widths of the actor MLP") \
  X(std::vector<int>, critic_hidden, (std::vector<int>{64, 64}), widths(), "hidden layer widths of the critic MLP") \
  X(std::string, activation, "tanh", one_of({"tanh", "relu", "elu"}), "hidden-layer activation")                \
  X(double, log_std_init, 0.0, within(-20, 2),                                                                  \
    "initial log standard deviation of the Gaussian head (continuous actions)")                                \
  X(double, actor_output_gain, 0.01, positive(),                                                                \
    "orthogonal-init gain of the actor's output layer (hidden layers: sqrt(2))")                               \
  X(double, critic_output_gain, 1.0, positive(), "orthogonal-init gain of the critic's output layer")          \
  X(bool, shared_hidden, false, any,                                                                            \
    "actor and critic share their hidden layers (actor_hidden; critic_hidden must equal it), one linear head "  \
    "each on top, as WarpDrive's and CleanRL's Atari networks (ppo, appo)")                                   \
  X(std::vector<int>, q_hidden, (std::vector<int>{256, 256}), widths(),                                         \
    "hidden layer widths of the Q networks (dqn, sac; PyTorch's default initialisation, as CleanRL); "          \
    "policy.activation applies")

struct PolicyConfig {
  GMI_POLICY_KEYS(GMI_KEY_MEMBER)
};

#define GMI_TRAIN_KEYS(X)                                                                                       \
  X(std::int64_t, total_env_steps, 500000, at_least(1), "stop after this many environment steps (all GMIs together)") \
  X(std::int64_t, seed, 1, at_least(0), "seed of the run (weights, envs, sampling)")                           \
  X(int, log_interval, 10, at_least(1), "print a progress line every N iterations")                            \
  X(std::string, run_dir, "", any, "output directory; empty: runs/<config name>-<date>-<time>")                \
  X(int, max_nonfinite_updates, 10, at_least(1),                                                                \
    "stop the run (its last checkpoint intact) after this many updates in a row were skipped for a NaN or Inf " \
    "gradient or loss")                                                                                         \
  X(AutoSeconds, stall_timeout_s, {}, seconds_or_auto(),                                                        \
    "stalled-GMI watchdog: a GMI that makes no progress (no rollout step, minibatch or phase ends) for this "   \
    "many seconds logs the phase it is in and ends the job; auto: max(300, 20 x the slowest iteration so "      \
    "far); off: no watchdog")

struct TrainConfig {
  GMI_TRAIN_KEYS(GMI_KEY_MEMBER)
};

/// When checkpoints are written (src/checkpoint/).
#define GMI_CHECKPOINT_KEYS(X)                                                                                  \
  X(int, interval, 100, at_least(0),                                                                            \
    "write a checkpoint every N iterations (0: only on SIGTERM/SIGINT/SIGUSR1/SIGUSR2 and at the end)")        \
  X(double, interval_minutes, 0, within(0, 1e9), "also write one when this many minutes passed since the last (0: off)") \
  X(int, keep, 3, at_least(1), "newest checkpoints kept in <run_dir>/checkpoints")                             \
  X(bool, at_end, true, any, "write a checkpoint when training finishes")                                       \
  X(bool, replay, true, any,                                                                                    \
    "keep the replay buffers in checkpoints (dqn, sac): a resume is then exact; false: smaller files, and a "   \
    "resume refills the buffers from new experience")

struct CheckpointConfig {
  GMI_CHECKPOINT_KEYS(GMI_KEY_MEMBER)
};

#define GMI_DEVICE_KEYS(X)                                                                                      \
  X(std::string, matmul, "fp32", one_of({"fp32", "tf32", "bf16"}),                                              \
    "float32 matrix products on GPUs: fp32 (cuBLAS FP32; the fused kernels' tensor-core layers, rollout step "  \
    "and update, in 3xTF32), tf32 (one TF32 pass: 10-bit mantissas), or bf16 (cuBLAS rounds the operands to "   \
    "bfloat16 and accumulates in fp32; weights, gradients and Adam stay fp32; the layered kernels run, the "    \
    "fused ones have no BF16 path)")                                                                            \
  X(bool, gemm_epilogues, true, any,                                                                            \
    "the layered kernels' matrix products on GPUs also add the bias (and apply ReLU; the output layer's bias "  \
    "alone) and sum the bias gradient (batches up to 1024 rows in fp32, 4096 in tf32), in cuBLASLt's "          \
    "epilogues, instead of a separate kernel each (bf16 and host builds run the separate kernels); results "    \
    "differ from false in the last bits")                                                                       \
  X(bool, tile_gemm, true, any,                                                                                 \
    "a hidden layer's products on GPUs as one CUTLASS kernel each (TF32 tensor cores under tf32, CUDA cores "   \
    "under fp32): its bias and activation in the forward product's epilogue, the lower layer's activation "    \
    "derivative in the input gradient's (single networks, batches of 4096 columns or more; the first call of " \
    "each shape times three tile shapes and keeps the fastest, which never changes a bit), instead of a "      \
    "cuBLAS product and a separate "                                                                           \
    "pass; bf16, host builds and builds without CUTLASS run the separate kernels; results differ from false "  \
    "in the last bits")                                                                                        \
  X(std::string, fused_kernels, "auto", one_of({"auto", "on", "off"}),                                          \
    "fused kernels for small networks (rollout step: actor, critic and sampling in one launch; update: "        \
    "gather, forward, loss and backward per tile in shared memory) when the layers fit; auto: on GPU builds "  \
    "the first iteration times the fused and the layered kernels of each phase and keeps the faster (two "     \
    "fresh runs may choose differently where the two are close; a resumed run keeps its checkpoint's "         \
    "choice), layered on host builds")                                                                         \
  X(std::string, graphs, "auto", one_of({"auto", "on", "off"}),                                                 \
    "launches captured once into CUDA graphs and replayed: PPO's rollout (policy step and env step, every "     \
    "step; environments that step on the device) and each epoch of its update (gradients and Adam steps, any "  \
    "environment), and each kind of DQN, SAC and TD3 update event (replay sample, losses, backward passes, "     \
    "Adam steps; replay.storage device); with several GMIs the gradient averaging runs between graphs; same "   \
    "results as off. auto: on where it applies (CUDA builds; PPO's rollout of host-simulated envs and of a "    \
    "game's roles steps directly, and PPO's update is replayed only with the layered kernels, on one GMI and "  \
    "not under bf16); on: every PPO update too, and an error where graphs cannot apply (a host replay); host " \
    "builds run without graphs")

struct DeviceConfig {
  GMI_DEVICE_KEYS(GMI_KEY_MEMBER)
};

/// How ranks are placed on GPUs and how a GPU is shared among its GMIs (src/gmi/).
#define GMI_GMI_KEYS(X)                                                                                         \
  X(std::string, backend, "auto", one_of({"auto", "mps", "none", "mig"}),                                       \
    "how the GMIs of one GPU share it: mps (NVIDIA MPS, each GMI with its SM share and memory limit; the "      \
    "node's first rank starts a daemon if none answers), none (time-sliced sharing, GMI-DRL's Direct-Share "    \
    "baseline), mig (one pre-made MIG instance per rank, named by the launcher in CUDA_VISIBLE_DEVICES); auto: " \
    "mps on CUDA builds when a GPU has several GMIs, else none")                                               \
  X(int, per_gpu, 0, at_least(0),                                                                               \
    "GMIs (ranks) per GPU; 0: a node's ranks spread evenly over its GPUs (uneven counts allowed, the first "    \
    "GPUs take one more)")                                                                                      \
  X(int, gpus_per_node, 0, at_least(0),                                                                         \
    "GPUs used per node; 0: the visible GPUs on CUDA builds, 1 on host builds (set it there to exercise "       \
    "multi-GPU layouts without GPUs)")                                                                          \
  X(std::vector<double>, sm_share, {}, each(above_up_to(0, 100)),                                               \
    "percentage of a GPU's SMs per GMI (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): [] gives 100/m to each of a GPU's " \
    "m GMIs (under a mapping.template other than dp, 100 to its agent and trainer GMIs), [p] gives p to all, "  \
    "[p0, p1, ...] one per slot on the GPU")                                                                    \
  X(std::string, memory_limit, "", memory_size(),                                                               \
    "device memory limit per GMI under MPS (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), e.g. 16G or 1500M; empty: no "   \
    "limit")                                                                                                    \
  X(int, ranks_per_node, 0, at_least(0),                                                                        \
    "0: ranks on one host form a node; k > 0: consecutive groups of k ranks act as nodes (emulates several "    \
    "nodes on one machine, for tests)")                                                                         \
  X(std::string, mps_dir, "", any,                                                                              \
    "MPS pipe directory (logs in DIR-log); empty: $CUDA_MPS_PIPE_DIRECTORY if a daemon answers there (used, "    \
    "never stopped), else a job-private directory under $TMPDIR or /tmp")

struct GmiConfig {
  GMI_GMI_KEYS(GMI_KEY_MEMBER)
};

/// Gradient reduction over GMIs (mpi/reducers.hpp).
#define GMI_REDUCE_KEYS(X)                                                                                      \
  X(std::string, strategy, "auto", one_of({"auto", "mpr", "mrr", "har", "hybrid"}),                             \
    "gradient averaging over GMIs: mpr (host-staged MPI_Allreduce over all GMIs), mrr (NCCL rings of the j-th " \
    "GMI of every GPU, then across rings; needs GMIs per GPU <= GPUs), har (within each GPU, then NCCL among "  \
    "one leader per GPU, then back), hybrid (hybrid_k GMIs per GPU in NCCL rings, the rest host-staged; paper " \
    "003 Fig. 7c); auto: measure unit costs at start-up and take the least projected latency")                 \
  X(int, hybrid_k, 1, at_least(1), "GMIs per GPU in NCCL rings for strategy hybrid")                            \
  X(std::string, intra_gpu, "auto", one_of({"auto", "ipc", "mpi"}),                                             \
    "HAR's step among the GMIs of one GPU: ipc (device buffers shared through CUDA IPC; an MPI shared-memory "  \
    "window on host builds), mpi (host-staged MPI_Reduce/MPI_Bcast); auto: ipc")                                \
  X(std::string, inter_gpu, "auto", one_of({"auto", "leaders", "rings"}),                                       \
    "HAR's step among GPUs: leaders (NCCL all-reduce of the whole buffer among one GMI per GPU, the paper's "   \
    "HAR), rings (every GMI all-reduces its 1/m slice of the GPU's sum with the GMI of its slot on every other " \
    "GPU: m NCCL rings at once; needs reduce.intra_gpu ipc, GMIs that run side by side (gmi.backend mps; host " \
    "builds) and the same GMI count on every GPU); auto: rings where they can run")                            \
  X(int, auto_runs, 100, at_least(1), "timed runs per unit cost when strategy is auto (paper 003: 100)")       \
  X(double, timeout_s, 120, above_up_to(0, 1e6),                                                                \
    "longest wait of a GMI on others (reductions on the device, NCCL, MPI, the per-iteration statistics): when " \
    "it runs out, the GMIs that still answer name the ones that do not, one line is printed and every rank "    \
    "exits with status 3")

struct ReduceConfig {
  GMI_REDUCE_KEYS(GMI_KEY_MEMBER)
};

/// Which roles each GMI holds (src/gmi/roles.hpp, paper 003 §3.1.1).  Training runs under dp and
/// e-at (src/gmi/split_training.hpp); eval also serves under dp-mp and mp-dp; `gmi_drl
/// bench-channels` measures every template's channels.
#define GMI_MAPPING_KEYS(X)                                                                                     \
  X(std::string, template_, "dp", one_of({"dp", "dp-mp", "mp-dp", "ea-t", "e-at", "async"}),                     \
    "roles per GMI (E simulator, A agent, T trainer): dp (every GMI all three), dp-mp (serving: simulator and " \
    "agent GMIs in pairs), mp-dp (serving: agents_per_gpu agent GMIs per GPU serve the other GMIs), ea-t "       \
    "(training: trainers_per_gpu trainer GMIs per GPU, the GPU's first slots, fed by simulator+agent GMIs in "  \
    "lockstep: each rollout made with the newest weights), e-at (training: trainers_per_gpu "                   \
    "agent+trainer GMIs per GPU serve simulator GMIs), async (training, ea-t's roles decoupled: serving GMIs "  \
    "roll out without waiting for their trainer's updates, async.*). Training runs under dp, "                  \
    "ea-t, e-at and async; gmi_drl eval serves under dp, dp-mp and mp-dp; gmi_drl bench-channels measures "     \
    "every template's channels")                                                                               \
  X(int, agents_per_gpu, 1, at_least(1), "agent GMIs per GPU under mp-dp (the GPU's last slots)")                \
  X(int, trainers_per_gpu, 1, at_least(1), "trainer GMIs per GPU under ea-t, e-at and async (the GPU's last slots under e-at; its first under ea-t and async)")

struct MappingConfig {
  GMI_MAPPING_KEYS(GMI_KEY_MEMBER)
};

/// Experience channels between GMIs (mpi/channels.hpp, paper 003 §3.2.2): `gmi_drl bench-channels`
/// reads every key; eval under a serving template and training under e-at read plan (e-at: how a
/// simulator's step outputs share channels) and max_in_flight (their channels carry one step a
/// message).
#define GMI_CHANNELS_KEYS(X)                                                                                    \
  X(std::string, plan, "auto", any,                                                                             \
    "which experience packages share a channel: auto (the grouping with the largest TOP_mov, paper 003 Eq. 6, " \
    "among those whose packages have the same rows per step), per-type, single, or "      \
    "groups like 'obs,next_obs,action,reward;terminated,truncated'")                                           \
  X(int, steps_per_transfer, 0, at_least(0),                                                                    \
    "steps one channel message carries; 0: the fewest at which every channel reaches 90 % of the link's "       \
    "bandwidth as measured at start-up, at most the steps the consumer takes at once and no message over 4 MiB; " \
    "a message may not exceed 1 GiB")                                                                          \
  X(int, max_in_flight, 4, within(1, 1024),                                                                     \
    "batches of one channel a producer may have sent that its consumer has not received; it is then at most "   \
    "twice that many ahead of what the consumer has taken, and waits")

struct ChannelsConfig {
  GMI_CHANNELS_KEYS(GMI_KEY_MEMBER)
};

/// Training under mapping.template async (src/gmi/async_training.hpp): how stale experience may be
/// and how far serving GMIs may run ahead of their trainer.
#define GMI_ASYNC_KEYS(X)                                                                                       \
  X(int, max_policy_lag, 4, within(0, 1000000),                                                                 \
    "a trainer drops (and counts) a rollout made with weights more than this many of its iterations old (an "  \
    "iteration is one PPO update, or an off-policy rollout's updates; Sample Factory's max_policy_lag; 0: "     \
    "only rollouts made with its current weights)")                                                           \
  X(int, rollouts_in_flight, 1, within(1, 64),                                                                  \
    "rollouts a serving GMI may have made that its trainer has not taken yet; then it waits (serving_busy "     \
    "below 1). 1: while the trainer is the slower, each rollout is made during the update before the one "     \
    "that learns from it (policy lag 1); more: the lag grows with them. Through device buffers also the "      \
    "rollout-sized buffers each serving GMI allocates")                                                        \
  X(std::string, transport, "auto", one_of({"auto", "device", "host"}),                                         \
    "how a rollout reaches the trainer: device (the serving GMI leaves it in a buffer its trainer on the same " \
    "GPU copies from, CUDA IPC; shared memory of a node on the CPU build; PPO, APPO and multi-agent PPO), "     \
    "host (MPI messages of host memory), auto (device where the algorithm keeps its rollouts in device memory " \
    "and every serving GMI shares its trainer's GPU, else host)")

struct AsyncConfig {
  GMI_ASYNC_KEYS(GMI_KEY_MEMBER)
};

/// Where a run's metrics go besides metrics.csv (src/runtime/).
#define GMI_LOG_KEYS(X)                                                                                         \
  X(bool, tensorboard, true, any,                                                                               \
    "also write metrics.csv's columns as TensorBoard scalars (an events.out.tfevents.* file beside it; "        \
    "`tensorboard --logdir DIR` compares the runs under DIR)")

struct LogConfig {
  GMI_LOG_KEYS(GMI_KEY_MEMBER)
};

/// `gmi_drl sweep` (src/gmi/sweep.hpp): many independent runs of this config.  Training itself
/// ignores the section, so a sweep's run and the same config trained alone are the same run.
#define GMI_SWEEP_KEYS(X)                                                                                       \
  X(std::string, seeds, "", any,                                                                                \
    "seeds of every configuration: 'a..b' (inclusive) or 'a,b,c'; empty: train.seed alone")                     \
  X(std::vector<std::string>, grid, {}, any,                                                                    \
    "grid axes, each 'key=v1,v2,...'; every combination of the axes runs with every seed")                     \
  X(int, random, 0, at_least(0),                                                                                \
    "configurations drawn at random from sweep.space (each combined with every grid point and seed); 0: none") \
  X(std::string, space, "", any,                                                                                \
    "YAML file for sweep.random: per key one of {uniform: [lo, hi]}, {log_uniform: [lo, hi]}, "               \
    "{int_uniform: [lo, hi]}, {choice: [a, b, ...]}")                                                          \
  X(int, per_gpu, 0, at_least(0),                                                                               \
    "runs side by side on each GPU (GMIs with SM shares and memory limits as gmi.* says) when the sweep starts " \
    "its own GMIs; 0: as many as fit the first run's measured memory, at most 8 and the runs per GPU (host "   \
    "builds: the node's hardware threads, at most 8). Under mpirun/srun every rank is one GMI")                \
  X(int, retries, 1, at_least(0),                                                                               \
    "a run that was killed, timed out or stalled (exit status 1, 3, 4 or a signal) restarts from its newest "   \
    "checkpoint this many times before it counts as failed; bad input and NaN stops fail at once")             \
  X(std::string, dir, "", any, "sweep directory (runs, sweep.csv, logs); empty: sweeps/<config name>-<date>-<time>")

struct SweepConfig {
  GMI_SWEEP_KEYS(GMI_KEY_MEMBER)
};

/// The algorithms' sections (src/algos/<algo>/section.hpp), one value of each registered section
/// type; a copy copies them.
class SectionStore {
 public:
  SectionStore();  ///< every registered section at its defaults
  template <class S>
  S& get();
  template <class S>
  const S& get() const;

 private:
  std::any& slot(std::type_index type);
  const std::any& slot(std::type_index type) const;
  std::vector<std::any> slots_;  // in registration order (config::sections())
};

struct Config {
  std::string algo = "ppo";  ///< a registered algorithm (src/algos/registry.cpp)
  EnvConfig env;
  PolicyConfig policy;
  TrainConfig train;
  CheckpointConfig checkpoint;
  DeviceConfig device;
  GmiConfig gmi;
  ReduceConfig reduce;
  MappingConfig mapping;
  ChannelsConfig channels;
  AsyncConfig async;
  LogConfig log;
  SweepConfig sweep;
  /// An algorithm's section (`c.section<algos::PpoConfig>().gamma`); throws gmi::Error for a
  /// section type that no registered algorithm declares.
  template <class S>
  S& section() {
    return sections_.get<S>();
  }
  template <class S>
  const S& section() const {
    return sections_.get<S>();
  }

  // ---- derived in derive(), never read from YAML ----
  int world_size = 1;               ///< number of GMIs (MPI ranks)
  int num_steps = 0;                ///< vector steps per iteration (ppo.num_steps, or dqn/sac's resolved)
  std::int64_t batch_size = 0;      ///< num_envs * num_steps: env steps per iteration (per GMI)
  std::int64_t minibatch_size = 0;  ///< batch_size / num_minibatches (PPO)
  std::int64_t num_iterations = 0;  ///< ceil(total_env_steps / (batch_size * world_size))
  std::string source;               ///< the file the config came from ("" for defaults)

 private:
  SectionStore sections_;
};

/// \brief A config section that an algorithm declares (src/algos/<algo>/section.hpp): its name,
/// its type's defaults and its keys.  Registered with the algorithm (AlgorithmRules::sections).
struct SectionDecl {
  std::string name;                          ///< the YAML section (`ppo`)
  std::type_index type = typeid(void);       ///< the struct holding its values
  std::any defaults;                         ///< that struct at its defaults
  std::function<std::vector<Field>()> keys;  ///< its schema entries, in its X-list's order
};

/// The section of type S called `name`, whose keys `declare` adds (GMI_CONFIG_KEYS(S, LIST)).
template <class S>
SectionDecl section(std::string name, void (*declare)(SectionKeys<S>&)) {
  SectionDecl d;
  d.type = typeid(S);
  d.defaults = S{};
  d.keys = [prefix = name + ".", declare] {
    SectionKeys<S> k(prefix, [](Config& c) -> S& { return c.section<S>(); });
    declare(k);
    return std::move(k.fields());
  };
  d.name = std::move(name);
  return d;
}

/// The registered sections, in registration order (an algorithm's, then the next one's; each once).
const std::vector<SectionDecl>& sections();
/// Index of the registered section of this type; throws gmi::Error if none.
std::size_t section_index(std::type_index type);

template <class S>
S& SectionStore::get() {
  return *std::any_cast<S>(&slot(typeid(S)));
}
template <class S>
const S& SectionStore::get() const {
  return *std::any_cast<S>(&slot(typeid(S)));
}

}  // namespace gmi::config

namespace gmi::envs {
struct EnvOverrides;
}

namespace gmi::config {

/// The envs per group that env.batch_size (or env.async_halves: half of them) asks for;
/// env.num_envs when all envs step as one batch.
int env_group_size(const EnvConfig& e);
/// Whether mapping.template trains on whole rollouts that serving GMIs send their trainers (async,
/// and ea-t, its lockstep form: src/gmi/async_training.hpp).
bool served_rollouts(const MappingConfig& m);
/// Whether mapping.template `templ` splits training's roles over GMIs (e-at, ea-t, async): a
/// trainer learns from other GMIs' envs.
bool splits_training(const std::string& templ);
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
  /// The config sections it reads besides the common ones (declared in its folder; a section two
  /// algorithms read, such as replay, is registered once).
  std::vector<SectionDecl> sections;
  bool multi_agent = false;           ///< trains the multi-agent games (one policy per role)
  bool captured_rollout = false;      ///< device.graphs can capture its rollout
  bool captured_update = false;       ///< device.graphs can capture its update events (any env)
  bool grouped_steps = false;         ///< steps host-simulated envs in env.batch_size groups
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
/// "a, b and c" (conjunction "and"; "none" for no names): the names in an error line.
std::string join_names(const std::vector<std::string>& names, const std::string& conjunction);
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
/// Compute derived values and check constraints between keys.  Under mapping.template e-at a check
/// of the algorithm's that counts envs waits for derive_sizes() on the trainer's config.
void derive(Config& c, int world_size);
/// The algorithm's part of derive() (num_steps, batch_size, minibatch_size, num_iterations over
/// c.world_size GMIs, and the checks between its keys), which throws under every template.
void derive_sizes(Config& c);
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
