#pragma once
/// \file
/// \brief Training on decoupled GMIs (mapping.template async, paper 003 §3.1.1 "Asynchronized DRL
/// Training"): serving GMIs (simulator + agent) roll out with the newest weights they hold and send
/// whole rollouts through the experience channels; trainer GMIs learn from them and publish new
/// weights, while the serving GMIs already roll out the next batch.
///
/// Each iteration of the training loop, on a serving GMI: one rollout of its envs with the weights
/// of the trainer's last update (in the first iteration also one before it), sent to its trainer;
/// then it waits for the trainer's end of iteration, which brings the new weights and observation
/// statistics.  On a trainer GMI: the rollouts its serving GMIs sent in the iteration before (one
/// each, its rows one server after another, as one GMI with their envs), the update (the
/// algorithm's learn: PPO, or APPO's V-trace targets, which correct for the policy lag), the new
/// weights to every serving GMI.  So the serving GMIs' rollout of iteration k runs beside the
/// trainer's update on the rollout of iteration k - 1: the policy lag is one update (the first
/// rollout's, none), and an iteration takes the longer of the two instead of their sum.
/// Gradients are averaged among the trainers (their own reducer), as under e-at.
///
/// Checkpoints are written by the trainers and have the layout of one GMI per trainer with its
/// serving GMIs' envs: the weights, optimiser, normalisers and counters, and each serving GMI's
/// env state and the observations its next rollout starts from.  The rollout in flight at a
/// checkpoint (made, not yet learnt from) is not kept: a resumed run rolls out anew from the
/// envs' saved state, so async runs resume where they were but not bit for bit.
#include <memory>

#include "mpi/gradient_reducer.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"
#include "src/gmi/split_training.hpp"

namespace gmi::instances {

/// A serving GMI's config: the trainers' `cfg` with its own env.num_envs, and batch sizes of its
/// own envs (it allocates what acting needs; its memory is checked with this config).
config::Config serving_config(const SplitTraining& split, const config::Config& cfg);

/// This GMI's Trainer under mapping.template async (collective over MPI_COMM_WORLD: builds the
/// channels): a trainer learning from its serving GMIs' rollouts, or a serving GMI.  `cfg`: the
/// trainers' config (env.num_envs = its serving GMIs' envs) with the GMI's env.threads; `reducer`:
/// the trainers' (nullptr on serving GMIs or with one trainer).
std::unique_ptr<algos::Trainer> make_async_trainer(const SplitTraining& split, const config::Config& cfg,
                                                   mpi::GradientReducer* reducer);

}  // namespace gmi::instances
