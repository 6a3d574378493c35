#pragma once
/// \file
/// \brief Task-aware GMI mapping (paper 003 §3.1.1, Figures 5 and 6): which roles each GMI holds —
/// simulator (E), agent (A, inference), trainer (T) — under a `mapping.template`, and the routes
/// experience and actions take between them.  A pure function of the layout, so every template
/// is tested on every layout without MPI or GPUs.
///
///   dp     every GMI holds every role (the holistic GMI; today's training and eval)
///   dp-mp  serving, Fig. 5a: the GMIs of a GPU pair up, simulator and agent of one copy apart
///   mp-dp  serving, Fig. 5b: mapping.agents_per_gpu agent GMIs per GPU, each serving several
///          simulator GMIs of its GPU
///   ea-t   training, Fig. 6c: mapping.trainers_per_gpu trainer GMIs per GPU, each fed by
///          simulator+agent GMIs of its GPU in lockstep (src/gmi/async_training.hpp)
///   e-at   training, Fig. 6d: mapping.trainers_per_gpu agent+trainer GMIs per GPU, each serving
///          simulator GMIs of its GPU
///   async  training, §3.1.1's asynchronous training: ea-t's roles, the serving (simulator+agent)
///          GMIs rolling out without waiting for their trainer (src/gmi/async_training.hpp)
///
/// The GMIs that consume hold the last slots of their GPU (under ea-t and async the first, so
/// that rank 0 trains); producers are dealt to them in turn (slot order), so a producer and its consumer
/// always share a GPU (CUDA IPC under MPS).
#include <string>
#include <vector>

#include "mpi/channels.hpp"
#include "mpi/topology.hpp"
#include "src/config/config.hpp"

namespace gmi::instances {

enum Role : unsigned { kSimulator = 1, kAgent = 2, kTrainer = 4 };

/// "E+A+T", "E", "A+T", ...
std::string role_text(unsigned roles);

struct MappingRequest {
  std::string name = "dp";  ///< mapping.template
  int agents_per_gpu = 1;   ///< mp-dp
  int trainers_per_gpu = 1; ///< ea-t, e-at
};

struct RolePlan {
  std::string name;
  std::vector<unsigned> roles;       ///< per MPI_COMM_WORLD rank
  /// Producer -> consumer of experience or states (world ranks): E+A -> T (ea-t), E -> A+T (e-at),
  /// E -> A (serving templates); empty under dp.
  std::vector<mpi::Route> routes;
  bool serving = false;              ///< a serving template (gmi_drl eval)
  /// The table rank 0 prints at start-up: rank, node, GPU, slot, roles, peers.
  std::string table(const mpi::Layout& layout) const;
};

/// Throws gmi::InputError naming the mapping.* key when the layout cannot hold the template (every
/// consuming GMI needs at least one producer of its GPU).
RolePlan plan_roles(const mpi::Layout& layout, const MappingRequest& req);
MappingRequest mapping_request(const config::MappingConfig& m);

/// The GMIs whose envs a training template's env counts are per: e-at's "simulator" GMIs, ea-t's
/// and async's "serving" GMIs (simulator + agent).
const char* stepper_name(const std::string& templ);

/// `command` (training, bench) runs under mapping.template dp only so far: one error line naming
/// the key otherwise.
void require_dp(const config::Config& cfg, const char* command);

}  // namespace gmi::instances
