#include "mpi/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"

namespace gmi::mpi {

int Layout::max_gmis_per_gpu() const {
  int m = 0;
  for (int c : gmis_per_gpu) m = std::max(m, c);
  return m;
}

int Layout::world_rank_of(int global_gpu, int slot) const {
  for (std::size_t r = 0; r < places.size(); ++r)
    if (places[r].global_gpu == global_gpu && places[r].slot == slot) return int(r);
  return -1;
}

Layout plan_layout(const std::vector<std::string>& node_of_rank, const LayoutRequest& req) {
  if (node_of_rank.empty()) throw InputError("layout: no ranks");
  if (req.gpus_per_node < 1)
    throw InputError(fmt::format("gmi.gpus_per_node: expected >= 1 GPU per node, got {}", req.gpus_per_node));
  const int W = int(node_of_rank.size());
  // Nodes in order of their lowest rank, ranks within a node in rank order.
  std::map<std::string, int> node_index;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < W; ++r) {
    auto it = node_index.find(node_of_rank[r]);
    if (it == node_index.end()) {
      it = node_index.emplace(node_of_rank[r], int(members.size())).first;
      members.emplace_back();
    }
    members[it->second].push_back(r);
  }
  Layout L;
  L.places.resize(W);
  L.num_nodes = int(members.size());
  int gmi_rank = 0;
  for (int n = 0; n < L.num_nodes; ++n) {
    const int local = int(members[n].size());
    std::vector<int> count;  // GMIs on each GPU of this node
    if (req.per_gpu > 0) {
      if (local != req.per_gpu * req.gpus_per_node)
        throw InputError(fmt::format(
            "gmi.per_gpu: {} GMIs per GPU x {} GPUs per node needs {} ranks on every node, but "
            "node {} ('{}') has {} (set gmi.per_gpu: 0 to spread the ranks evenly)",
            req.per_gpu, req.gpus_per_node, req.per_gpu * req.gpus_per_node, n,
            node_of_rank[members[n][0]], local));
      count.assign(req.gpus_per_node, req.per_gpu);
    } else {
      const int gpus = std::min(local, req.gpus_per_node);
      for (int g = 0; g < gpus; ++g) count.push_back(local / gpus + (g < local % gpus ? 1 : 0));
    }
    int lr = 0;
    for (int g = 0; g < int(count.size()); ++g) {
      const int global_gpu = int(L.gmis_per_gpu.size());
      L.gmis_per_gpu.push_back(count[g]);
      for (int s = 0; s < count[g]; ++s, ++lr) {
        Place& p = L.places[members[n][lr]];
        p.node = n;
        p.local_rank = lr;
        p.gpu = g;
        p.global_gpu = global_gpu;
        p.slot = s;
        p.gmi_rank = gmi_rank++;
      }
    }
  }
  L.num_gpus = int(L.gmis_per_gpu.size());
  return L;
}

std::vector<std::string> gather_node_names(int ranks_per_node) {
  int rank = 0, size = 1;
  GMI_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  GMI_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  // The job's first collective: every rank arrives first (a bounded wait: a rank stuck before
  // set-up is named), so that the blocking split below cannot wait long.
  barrier(MPI_COMM_WORLD, "the set-up (MPI_Ibarrier before finding the nodes)");
  std::string mine;
  if (ranks_per_node > 0) {
    mine = fmt::format("node{}", rank / ranks_per_node);
  } else {
    // The ranks that can share memory form a node (MPI's own locality, not the host name, which
    // containers may repeat); it is named by its host and its lowest rank.
    MPI_Comm shared = MPI_COMM_NULL;
    GMI_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
    int lowest = rank;
    MPI_Request req;
    GMI_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, shared, &req));
    wait(req, shared, "the set-up (MPI_Iallreduce of the node's lowest rank)");
    MPI_Comm_free(&shared);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    GMI_MPI_CHECK(MPI_Get_processor_name(name, &len));
    mine = fmt::format("{}#{}", std::string(name, len), lowest);
  }
  constexpr int kMax = MPI_MAX_PROCESSOR_NAME;
  std::vector<char> buf(std::size_t(kMax) * size, '\0');
  std::vector<char> own(kMax, '\0');
  std::copy(mine.begin(), mine.begin() + std::min<std::size_t>(mine.size(), kMax - 1), own.begin());
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallgather(own.data(), kMax, MPI_CHAR, buf.data(), kMax, MPI_CHAR, MPI_COMM_WORLD, &req));
  wait(req, MPI_COMM_WORLD, "the set-up (MPI_Iallgather of the node names)");
  std::vector<std::string> names(size);
  for (int r = 0; r < size; ++r) names[r] = std::string(buf.data() + std::size_t(r) * kMax);
  return names;
}

MPI_Comm split(MPI_Comm parent, int color, int key) {
  MPI_Comm c = MPI_COMM_NULL;
  GMI_MPI_CHECK(MPI_Comm_split(parent, color, key, &c));
  if (c != MPI_COMM_NULL) GMI_MPI_CHECK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  return c;
}

MPI_Comm duplicate(MPI_Comm comm, const char* what) {
  barrier(comm, what);
  MPI_Comm dup = MPI_COMM_NULL;
  GMI_MPI_CHECK(MPI_Comm_dup(comm, &dup));
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  return dup;
}

int comm_size(MPI_Comm c) {
  if (c == MPI_COMM_NULL) return 0;
  int s = 0;
  GMI_MPI_CHECK(MPI_Comm_size(c, &s));
  return s;
}

int comm_rank(MPI_Comm c) {
  if (c == MPI_COMM_NULL) return -1;
  int r = 0;
  GMI_MPI_CHECK(MPI_Comm_rank(c, &r));
  return r;
}

Layout sub_layout(const Layout& full, std::vector<int> members) {
  std::sort(members.begin(), members.end(), [&](int a, int b) {
    return full.places.at(std::size_t(a)).gmi_rank < full.places.at(std::size_t(b)).gmi_rank;
  });
  Layout L;
  std::map<int, int> node_of, gpu_of;  // full index -> sub index
  std::map<int, int> on_node, on_gpu;  // members so far
  for (int r : members) {
    const Place& f = full.places.at(std::size_t(r));
    if (!node_of.count(f.node)) node_of[f.node] = int(node_of.size());
    if (!gpu_of.count(f.global_gpu)) {
      gpu_of[f.global_gpu] = int(gpu_of.size());
      L.gmis_per_gpu.push_back(0);
    }
  }
  // Slots follow the full layout's slot order within each GPU.
  std::vector<int> by_slot = members;
  std::stable_sort(by_slot.begin(), by_slot.end(), [&](int a, int b) {
    return full.places[std::size_t(a)].slot < full.places[std::size_t(b)].slot;
  });
  std::map<int, int> slot_of;
  for (int r : by_slot) slot_of[r] = L.gmis_per_gpu[std::size_t(gpu_of[full.places[std::size_t(r)].global_gpu])]++;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Place& f = full.places[std::size_t(members[i])];
    Place p;
    p.node = node_of[f.node];
    p.local_rank = on_node[p.node]++;
    p.gpu = f.gpu;
    p.global_gpu = gpu_of[f.global_gpu];
    p.slot = slot_of[members[i]];
    p.gmi_rank = int(i);
    L.places.push_back(p);
  }
  L.num_nodes = int(node_of.size());
  L.num_gpus = int(gpu_of.size());
  return L;
}

Communicators::Communicators(const Layout& layout) : Communicators(layout, MPI_COMM_WORLD) {}

Communicators::Communicators(const Layout& layout, MPI_Comm base) : layout_(layout) {
  GMI_MPI_CHECK(MPI_Comm_rank(base, &world_rank_));
  int size = 0;
  GMI_MPI_CHECK(MPI_Comm_size(base, &size));
  if (size != layout_.size())
    throw Error(fmt::format("layout of {} ranks used in a job of {}", layout_.size(), size));
  const Place& p = me();
  world_ = split(base, 0, p.gmi_rank);
  node_ = split(world_, p.node, p.gmi_rank);
  gpu_ = split(world_, p.global_gpu, p.slot);
  leaders_ = split(world_, p.slot == 0 ? 0 : MPI_UNDEFINED, p.global_gpu);
  ring_ = split(world_, p.slot, p.global_gpu);
}

std::unique_ptr<Communicators> communicators_of(const Communicators& all, const std::vector<int>& members) {
  int me = 0;
  GMI_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  const bool in = std::find(members.begin(), members.end(), me) != members.end();
  MPI_Comm base = split(all.world(), in ? 0 : MPI_UNDEFINED, all.me().gmi_rank);
  if (!in) return nullptr;
  auto c = std::make_unique<Communicators>(sub_layout(all.layout(), members), base);
  MPI_Comm_free(&base);
  return c;
}

Communicators::~Communicators() {
  for (MPI_Comm* c : {&ring_, &leaders_, &gpu_, &node_, &world_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

}  // namespace gmi::mpi
