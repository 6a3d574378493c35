#pragma once
/// \file
/// \brief Where each GMI (MPI rank) runs: node, GPU on the node, slot on the GPU; and the
/// communicators built from that placement (papers 000 §3, 003 §3.2.1):
///
///   world    all GMIs, reordered so that the GMIs of one GPU have contiguous ranks
///   node     the GMIs of one node
///   gpu      the GMIs of one GPU ("GPU-local")
///   leaders  slot 0 of every GPU, all nodes (MPI_COMM_NULL elsewhere)
///   ring     ring j = the j-th GMI of every GPU (003 §3.2.1 multi-ring)
///
/// plan_layout() is a pure function of the ranks' node names so every layout can be tested
/// without MPI or GPUs.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

namespace gmi::mpi {

/// Where one GMI runs.
struct Place {
  int node = 0;        ///< node index (nodes ordered by their lowest MPI_COMM_WORLD rank)
  int local_rank = 0;  ///< rank among the node's GMIs
  int gpu = 0;         ///< GPU index on the node (the CUDA device id)
  int global_gpu = 0;  ///< GPU index over all nodes
  int slot = 0;        ///< GMI index on its GPU
  int gmi_rank = 0;    ///< rank in the reordered world communicator
};

struct LayoutRequest {
  int gpus_per_node = 1;  ///< GPUs to use on each node (>= 1)
  int per_gpu = 0;        ///< GMIs per GPU; 0: spread each node's ranks evenly over its GPUs
};

/// The placement of every GMI.  `places` is indexed by MPI_COMM_WORLD rank.
struct Layout {
  std::vector<Place> places;
  int num_nodes = 0;
  int num_gpus = 0;               ///< GPUs with at least one GMI, over all nodes
  std::vector<int> gmis_per_gpu;  ///< by global GPU index
  int max_gmis_per_gpu() const;
  int size() const { return int(places.size()); }
  /// MPI_COMM_WORLD rank of the GMI in `slot` of global GPU `g`, or -1.
  int world_rank_of(int global_gpu, int slot) const;
};

/// Plan the layout from each rank's node name (index: MPI_COMM_WORLD rank).  Throws
/// gmi::InputError naming the gmi.* key when the ranks and the request do not fit.
Layout plan_layout(const std::vector<std::string>& node_of_rank, const LayoutRequest& req);

/// The layout of some GMIs of `full` (`members`: MPI_COMM_WORLD ranks, each once) as if they were
/// the job: nodes, GPUs, slots and GMI ranks renumbered in their order, with `places` indexed by
/// the members' order in `members` sorted by their GMI rank (their ranks in a communicator split
/// from the world one with the GMI rank as key).  E.g. the trainer GMIs of a role split
/// (src/gmi/roles.hpp), whose gradients are reduced among themselves.
Layout sub_layout(const Layout& full, std::vector<int> members);

/// Node names of all ranks: "<host>#<lowest rank>" of the shared-memory group (MPI_Comm_split_type),
/// or with ranks_per_node > 0, "node<rank / k>".
std::vector<std::string> gather_node_names(int ranks_per_node);

/// The communicators of a layout (freed on destruction).  Collective over MPI_COMM_WORLD.
class Communicators {
 public:
  explicit Communicators(const Layout& layout);
  /// The communicators of `layout` among the members of `base` (its ranks index layout.places;
  /// sub_layout's members in the order of a split with the GMI rank as key).  Collective over `base`.
  Communicators(const Layout& layout, MPI_Comm base);
  ~Communicators();
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;

  const Layout& layout() const { return layout_; }
  const Place& me() const { return layout_.places[world_rank_]; }

  MPI_Comm world() const { return world_; }
  MPI_Comm node() const { return node_; }
  MPI_Comm gpu() const { return gpu_; }
  MPI_Comm leaders() const { return leaders_; }  ///< MPI_COMM_NULL unless slot 0
  MPI_Comm ring() const { return ring_; }        ///< ring of this GMI's slot

 private:
  Layout layout_;
  int world_rank_ = 0;
  MPI_Comm world_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL, gpu_ = MPI_COMM_NULL,
           leaders_ = MPI_COMM_NULL, ring_ = MPI_COMM_NULL;
};

/// The communicators of the GMIs `members` (MPI_COMM_WORLD ranks) of `all`'s layout among
/// themselves (sub_layout), or nullptr on a GMI that is not one.  Collective over all.world().
std::unique_ptr<Communicators> communicators_of(const Communicators& all, const std::vector<int>& members);

/// MPI_Comm_split with errors returned (MPI_ERRORS_RETURN) on the new communicator.
MPI_Comm split(MPI_Comm parent, int color, int key);
/// MPI_Comm_dup of `comm` with errors returned, after a bounded barrier of its members (mpi::barrier,
/// `what` naming it), so that the blocking duplication cannot wait long for one stuck before it.
MPI_Comm duplicate(MPI_Comm comm, const char* what);
/// Size and rank of a communicator (0 / -1 for MPI_COMM_NULL).
int comm_size(MPI_Comm c);
int comm_rank(MPI_Comm c);

}  // namespace gmi::mpi
