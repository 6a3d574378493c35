#pragma once
/// \file
/// \brief The appo section: APPO's V-trace keys (Espeholt et al. 2018; Sample Factory's defaults),
/// each declared once (kernels/core/key_list.hpp), and its derive step.  APPO reads the ppo section
/// too: its rollout, epochs, minibatches, clipped loss and optimiser are PPO's.
#include "src/config/config.hpp"

namespace gmi::algos {

#define GMI_APPO_KEYS(X)                                                                                       \
  X(double, vtrace_rho, 1.0, positive(),                                                                       \
    "V-trace's rho-bar: the importance weight pi/mu in the TD errors and the policy-gradient advantages is "   \
    "clipped at it")                                                                                           \
  X(double, vtrace_c, 1.0, positive(),                                                                         \
    "V-trace's c-bar: the traces are c_t = ppo.gae_lambda * min(c-bar, pi/mu) (ppo.gae_lambda: 1 gives "      \
    "Sample Factory's targets)")

/// appo.* (read as `cfg.section<AppoConfig>()`).
struct AppoConfig {
  GMI_APPO_KEYS(GMI_KEY_MEMBER)
};

/// The appo section for the registry row.
config::SectionDecl appo_section();
/// PPO's derived values (derive_ppo), and that ppo.num_minibatches divides env.num_envs: APPO's
/// minibatches are whole trajectories.
void derive_appo(config::Config& c);
/// Whether `c` trains with V-trace targets (algo: appo), which the PPO trainer then computes per
/// minibatch from the current networks.
bool uses_vtrace(const config::Config& c);

}  // namespace gmi::algos
