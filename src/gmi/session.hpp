#pragma once
/// \file
/// \brief A job's GMIs, set up in the order CUDA requires: plan the layout from MPI (node,
/// GPU, slot), build the communicators, start or find the node's MPS daemon, export each GMI's
/// MPS settings (SM share, memory limit), and only then start Kokkos on the GMI's own device.
/// Used by training and by the benchmarks.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mpi/environment.hpp"
#include "mpi/reducers.hpp"
#include "mpi/topology.hpp"
#include "src/config/config.hpp"
#include "src/gmi/kokkos_scope.hpp"
#include "src/gmi/mps.hpp"

namespace gmi::instances {

/// Whether GMIs run on GPUs (a CUDA build) or on the host.
inline constexpr bool kCudaBuild =
#if defined(GMI_HAVE_CUDA)
    true;
#else
    false;
#endif

/// What one GMI gets, decided before CUDA starts.
struct GmiSettings {
  std::string backend;        ///< mps | none | mig (auto resolved)
  int device_id = 0;          ///< CUDA device on the node
  double sm_share = 100;      ///< percent of the GPU's SMs (mps)
  std::string memory_limit;   ///< e.g. 16G (mps), "" none
};

/// GPUs per node when gmi.gpus_per_node is 0: CUDA_VISIBLE_DEVICES entries, else the driver's
/// GPU list (/proc/driver/nvidia/gpus), read without initialising CUDA; 1 on host builds.
int detect_gpus_per_node();

/// gmi.backend, gmi.sm_share and gmi.memory_limit for the GMI at `place` of `layout`.
/// Throws gmi::InputError naming the key.
GmiSettings settings_for(const config::GmiConfig& g, const mpi::Layout& layout, const mpi::Place& place,
                         bool cuda_build);

/// The variables a GMI's process needs before CUDA starts under MPS (backend mps): the daemon's
/// pipe and log directories, the SM share and the memory limit, for `device` (the CUDA device
/// number as that process sees it).
std::vector<std::pair<std::string, std::string>> mps_variables(const GmiSettings& s, const MpsDaemon& daemon,
                                                               int device);

/// This process's peak resident size in bytes (getrusage).
double peak_resident_bytes();

class Session {
 public:
  /// Collective over MPI_COMM_WORLD.
  Session(const config::Config& cfg, mpi::Environment& mpi);
  ~Session();

  const mpi::Communicators& comms() const { return *comms_; }
  const mpi::Layout& layout() const { return comms_->layout(); }
  const mpi::Place& me() const { return comms_->me(); }
  const GmiSettings& settings() const { return settings_; }

  /// The layout table (rank 0's string; collective: gathers what every GMI's device reports).
  std::string layout_table() const;
  /// reduce.* and what the layout implies, for gradients of `elements` floats.
  mpi::ReducerOptions reducer_options(std::size_t elements) const;
  /// reduce.* for gradients of `elements` floats; logs auto's measurements and projections.
  /// With reduce.strategy auto and `keep` (a reducer name from a checkpoint of this layout:
  /// "har (ipc)", "hybrid k=2", ...), that strategy is built without measuring, so a resumed run
  /// sums gradients in the same order as before.
  /// After set_learners(), the reduction runs among the learners alone and the other GMIs get
  /// nullptr (collective over every GMI either way).
  std::unique_ptr<mpi::GradientReducer> make_reducer(std::size_t elements, const std::string& keep = "") const;

  /// The GMIs that learn, when not all do (MPI_COMM_WORLD ranks: the trainer GMIs of a role split,
  /// src/gmi/split_training.hpp): their communicators among themselves (mpi::communicators_of),
  /// for the gradient reduction and the checkpoints.  Collective.
  void set_learners(const std::vector<int>& learners);
  /// The learners' communicators (set_learners), or the job's; nullptr on a GMI that does not learn.
  const mpi::Communicators* learner_comms() const;

  /// env.threads for this GMI: `configured`, or for 0 the node's hardware threads shared among
  /// its GMIs, at most the CPUs this process may run on (its affinity mask; at least 1).  For
  /// host-simulated environments it warns when the threads outnumber those CPUs: an MPI launcher
  /// that binds each rank to one core (Open MPI does for 1-2 ranks) makes them share it.
  /// `steppers` (MPI_COMM_WORLD ranks; empty: every GMI): the GMIs that step envs, which share the
  /// node's hardware threads less one for every other GMI of the node (a trainer under e-at,
  /// which gets 1 thread), rounded up.
  int env_threads(int configured, const std::vector<int>& steppers = {}) const;

  /// Before a trainer allocates: whether every GMI's `device_bytes` (and `host_bytes`) fit in
  /// what its GPU (the GPU's free memory shared by its GMIs, or the GMI's MPS memory limit) and
  /// its node's host memory have free.  Collective; throws the same gmi::InputError on every
  /// rank, naming `drivers` (the keys and values that set the size, most important first), the
  /// bytes needed and the bytes available.  On host builds device memory is host memory.
  void check_memory(double device_bytes, double host_bytes,
                    const std::vector<std::pair<std::string, std::string>>& drivers) const;

  /// Memory this GMI uses now: on CUDA builds its GPU's used memory (every context, buffer and
  /// library workspace) divided among the GPU's GMIs, or under an MPS memory limit its own use;
  /// on host builds this process's peak resident size.  Local (not collective).
  double memory_in_use() const;
  /// Memory a GMI may use: its MPS memory limit, else its GPU's memory divided among the GPU's
  /// GMIs (host builds: the node's memory divided among the node's GMIs).  Local.
  double memory_budget() const;

 private:
  const config::Config& cfg_;
  std::unique_ptr<mpi::Communicators> comms_;
  std::unique_ptr<mpi::Communicators> learner_comms_;  // set_learners
  bool split_ = false;                                  // set_learners was called
  GmiSettings settings_;
  std::optional<MpsDaemon> mps_;            // destroyed after Kokkos (declared before it)
  std::optional<KokkosScope> kokkos_;
};

}  // namespace gmi::instances
