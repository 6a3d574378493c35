#pragma once
/// \file
/// \brief Gradient-reduction strategies over the GMIs of a layout (papers 000 §3.2, 003 §3.2.1),
/// each a GradientReducer, and `auto`: measure the unit costs, project every composition's
/// latency, take the least.
///
///  mpr     IP-only: host-staged MPI_Allreduce over all GMIs (the paper's baseline).
///  mrr     RP-only: all-reduce inside each ring (the j-th GMI of every GPU; NCCL), then across
///          one representative per ring (on distinct GPUs), then broadcast inside each ring.
///          Valid when the rings have distinct-GPU representatives: GMIs per GPU <= GPUs.
///  har     hierarchical: reduce within each GPU (CUDA IPC device path, or host-staged MPI),
///          all-reduce among one leader per GPU (NCCL; crosses nodes), broadcast within each GPU.
///          The IPC path synchronises on the device when the GMIs of a GPU run at the same time
///          (MPS), with host barriers when they time-slice (mpi/gpu_shared.hpp).  With
///          inter_gpu rings, the GPU's sum is left in slices, GMI j's slice is all-reduced in
///          ring j (the j-th GMI of every GPU: one GMI per GPU, so NCCL accepts it; m rings at
///          once, each with 1/m of the data), and every GMI gathers the slices.
///  hybrid  IP+RP with parameter k (003 Fig. 7c): slots 0..k-1 of every GPU all-reduce in NCCL
///          rings; one member per ring and every GMI of slot >= k all-reduce host-staged; the
///          rings broadcast the result.
///
/// On builds without NCCL the ring steps run with MPI on the same groups.
#include <memory>
#include <string>
#include <vector>

#include "mpi/gradient_reducer.hpp"
#include "mpi/topology.hpp"

namespace gmi::mpi {

struct ReducerOptions {
  std::string strategy = "auto";   ///< auto | mpr | mrr | har | hybrid
  int hybrid_k = 1;                ///< hybrid: GMIs per GPU in rings
  std::string intra_gpu = "auto";  ///< har's step within a GPU: auto | ipc | mpi
  std::string inter_gpu = "auto";  ///< har's step among GPUs: auto | leaders | rings
  /// The GMIs of one GPU run kernels at the same time (MPS; processes of a host build), so the
  /// IPC path may poll flags on the device; false when they time-slice (gmi.backend none).
  bool concurrent_gmis = false;
  int auto_runs = 100;             ///< timed runs per unit cost (auto)
  std::size_t elements = 0;        ///< largest buffer (floats) the reducer will see
};

/// One candidate of `auto`: projected latency from the measured unit costs.
struct Projection {
  std::string strategy;  ///< e.g. "har", "hybrid k=2"
  double seconds = 0;
  std::string formula;
};

struct UnitCosts {
  double ip = 0;     ///< host-staged all-reduce among `ip_group` GMIs (s)
  int ip_group = 0;
  double rp = 0;     ///< ring (NCCL) all-reduce among one GMI per GPU (s); 0 with one GPU
  int rp_group = 0;
  double rp_slice = 0;  ///< the same on 1/m of the buffer (har with inter_gpu rings), else 0
  double local = 0;  ///< reduce + broadcast among the GMIs of each GPU (s); 0 with one GMI per GPU
  std::string local_path;
};

struct ReducerChoice {
  std::unique_ptr<GradientReducer> reducer;
  UnitCosts costs;                      ///< measured (auto only)
  std::vector<Projection> projections;  ///< every valid candidate (auto only), cheapest first
};

/// "" if `strategy` (mpr, mrr, har, hybrid) can run on `layout` with `o`, else why not.
/// For har, inter_gpu rings is checked too.
std::string unsupported_reason(const Layout& layout, const std::string& strategy, const ReducerOptions& o);

/// Build the strategy `o.strategy` (measuring and projecting for auto).  Collective over the
/// layout's world; throws gmi::InputError naming reduce.* for a strategy the layout cannot run.
ReducerChoice make_reducer(const Communicators& comms, const ReducerOptions& o);

/// Build one named strategy without measuring (benchmarks and tests).
std::unique_ptr<GradientReducer> make_strategy(const Communicators& comms, const std::string& strategy,
                                               const ReducerOptions& o);

/// Whether har runs its step among GPUs in rings with `o` on `layout` (inter_gpu auto or rings).
bool har_uses_rings(const Layout& layout, const ReducerOptions& o);

/// The representative GPU of each ring for mrr (index: ring j), or empty when none exists.
std::vector<int> ring_representatives(const Layout& layout);

}  // namespace gmi::mpi
