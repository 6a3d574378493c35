#pragma once
/// \file
/// \brief Training on decoupled GMIs (mapping.template async, paper 003 §3.1.1 "Asynchronized DRL
/// Training"; Sample Factory's APPO): serving GMIs (simulator + agent) roll out without waiting
/// for an update, and trainer GMIs learn from what they sent and publish new weights.
///
/// A serving GMI runs its own loop (Trainer::serve), not the trainers' iterations: it rolls out
/// its envs with the newest weights it holds and sends each rollout to its trainer through the
/// experience channels.  It makes a rollout only while fewer than async.rollouts_in_flight of its
/// rollouts wait untaken at its trainer (the trainer returns a credit for each it takes); else it
/// waits, and the wait is counted.  With 1, a trainer slower than its serving GMIs learns from
/// rollouts made during its previous update (policy lag 1).  Between rollouts, and while it
/// waits, it picks up its trainer's letters: new weights (several: the newest), a checkpoint
/// request (it answers with its envs' state), a stop.  Serving GMI k's rollout fills the
/// trainer's slot k (env rows k E ... (k + 1) E), unless it sends a second one before another
/// sends any; reward normalisation's per-row running returns assume the former.
///
/// mapping.template ea-t (paper 003 Figure 6c) is the same machinery in lockstep: a serving GMI
/// makes its next rollout only once it holds the weights of the update its last rollout fed, so
/// every rollout is made with the newest weights (policy lag 0, nothing dropped) and a run is
/// deterministic; the serving GMIs wait while their trainer learns, as under dp.  A serving GMI
/// waits for the weights at most reduce.timeout_s without a letter from its trainer, which must
/// cover the trainer's update, statistics and checkpoint write (as e-at's simulators' waits do).
///
/// A trainer GMI's iteration takes one update's rollouts, as many as it has serving GMIs: the
/// first to arrive, each serving GMI's in turn (one with a rollout waiting is never passed over),
/// dropping those made with weights more than async.max_policy_lag updates old (counted).  It
/// learns from them as one GMI with their envs (PPO, or APPO's V-trace targets, which correct for
/// the lag), averages gradients with the other trainers (their own reducer), and posts the new
/// weights to every serving GMI that has picked up the last ones.  The trainers alone run the
/// training loop (statistics, signals, checkpoints; rank 0 is a trainer), and their metrics add
/// the policy lag, drops, PPS and TTP and each role's busy share.  At the end (or a stop signal)
/// each trainer stops its serving GMIs and takes what they still send.
///
/// Never-hang: a serving GMI that sends nothing for reduce.timeout_s while its trainer waits, or a
/// trainer that sends nothing (no credit, no letter) for as long while a serving GMI waits, ends
/// the job through the census (mpi/deadline.hpp), whose line names it; serving GMIs answer a
/// census between rollouts.  A trainer's error stops its serving GMIs.
///
/// Checkpoints are written by the trainers and have the layout of one GMI per trainer with its
/// serving GMIs' envs: the weights, optimiser, normalisers and counters, and each serving GMI's
/// env state and the observations its next rollout starts from, as it answered the request.
/// Rollouts made but not yet learnt from are not kept: a resumed run rolls out anew from the
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

/// What the rollouts' way to the trainer adds to this GMI's memory (`cfg`: the run's config):
/// through device buffers (async.transport other than host, an algorithm whose rollouts stay in
/// device memory), a serving GMI's async.rollouts_in_flight buffers; through host messages, the
/// host copies of the rollouts (a trainer's of its serving GMIs', a serving GMI's own, and the
/// channels' buffers).
algos::MemoryNeeds async_memory_needs(const SplitTraining& split, const config::Config& cfg);

/// This GMI's Trainer under mapping.template async (collective over MPI_COMM_WORLD: builds the
/// channels): a trainer learning from its serving GMIs' rollouts, or a serving GMI.  `cfg`: the
/// trainers' config (env.num_envs = its serving GMIs' envs) with the GMI's env.threads; `reducer`:
/// the trainers' (nullptr on serving GMIs or with one trainer); `trainers`: the trainers'
/// communicator (their metrics' sums and maxima; unused on serving GMIs).
std::unique_ptr<algos::Trainer> make_async_trainer(const SplitTraining& split, const config::Config& cfg,
                                                   mpi::GradientReducer* reducer, MPI_Comm trainers);

}  // namespace gmi::instances
