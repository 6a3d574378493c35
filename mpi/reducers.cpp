#include "mpi/reducers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/device_group.hpp"
#include "mpi/device_watch.hpp"
#include "mpi/environment.hpp"
#include "mpi/gpu_shared.hpp"
#include "mpi/progress.hpp"

namespace gmi::mpi {
namespace {

bool use_ipc(const ReducerOptions& o) { return o.intra_gpu != "mpi"; }
IntraSync intra_sync(const ReducerOptions& o) { return o.concurrent_gmis ? IntraSync::device : IntraSync::host; }

/// What every strategy shares: the world communicator for host statistics, the final 1/W, and
/// bounded waits: a failure flagged by the device watch ends the job before the next call, the
/// call's name goes into error lines, and its device work is watched.
class ReducerBase : public GradientReducer {
 public:
  explicit ReducerBase(const Communicators& c) : world_(c.world()), size_(comm_size(c.world())) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    others_ = world_ranks(world_);
    others_.erase(std::remove(others_.begin(), others_.end(), me), others_.end());
  }
  void allreduce_mean(const ExecSpace& space, float* data, std::size_t n) final {
    check();
    if (name_.empty()) name_ = name();
    progress().operation(name_);
    mean(space, data, n);
    if (watched_ && size_ > 1) watch(space, name_, others_);
  }
  void allreduce_sum_host(double* values, int n) override {
    if (size_ > 1) mpi::allreduce_sum(values, n, world_);
  }
  int size() const override { return size_; }

 protected:
  /// The strategy: `data` = its mean over all GMIs (see GradientReducer::allreduce_mean).
  virtual void mean(const ExecSpace& space, float* data, std::size_t n) = 0;
  void finish(const ExecSpace& space, float* data, std::size_t n) const {
    if (size_ > 1) scale(space, data, n, 1.0f / float(size_));
  }
  MPI_Comm world_;
  int size_;
  std::vector<int> others_;  // every other GMI (MPI_COMM_WORLD ranks)
  std::string name_;
  /// The device may wait on other GMIs without a deadline of its own (NCCL, interprocess CUDA
  /// events): the device watch times every call (an event record, ~1 us on the host).  Gates
  /// and host-staged MPI bound their own waits.
  bool watched_ = false;
};

class Mpr final : public ReducerBase {
 public:
  Mpr(const Communicators& c, std::size_t n) : ReducerBase(c), all_(c.world(), Transport::host, n) {}
  void mean(const ExecSpace& space, float* data, std::size_t n) override {
    all_.allreduce_sum(space, data, n);
    finish(space, data, n);
  }
  std::string name() const override { return "mpr"; }

 private:
  DeviceGroup all_;
};

class Mrr final : public ReducerBase {
 public:
  Mrr(const Communicators& c, std::size_t n)
      : ReducerBase(c), ring_(c.ring(), ring_transport(), n), cross_(make_cross(c), ring_transport(), n) {
    watched_ = ring_transport() == Transport::nccl;
  }
  ~Mrr() override {
    if (owned_ != MPI_COMM_NULL) MPI_Comm_free(&owned_);
  }
  void mean(const ExecSpace& space, float* data, std::size_t n) override {
    ring_.allreduce_sum(space, data, n);
    cross_.allreduce_sum(space, data, n);
    ring_.bcast(space, data, n, root_);
    finish(space, data, n);
  }
  std::string name() const override { return "mrr"; }

 private:
  MPI_Comm make_cross(const Communicators& c) {
    const Layout& L = c.layout();
    const std::vector<int> rep = ring_representatives(L);
    if (rep.empty()) throw InputError("reduce.strategy: mrr needs GMIs per GPU <= GPUs");
    const Place& p = c.me();
    // Ring members are ordered by global GPU: the representative's rank is its position.
    root_ = 0;
    for (int g = 0; g < rep[p.slot]; ++g) root_ += L.gmis_per_gpu[g] > p.slot ? 1 : 0;
    MPI_Comm cross = split(c.world(), rep[p.slot] == p.global_gpu ? 0 : MPI_UNDEFINED, p.slot);
    owned_ = cross;
    return cross;
  }
  int root_ = 0;
  MPI_Comm owned_ = MPI_COMM_NULL;
  DeviceGroup ring_, cross_;
};

class Har final : public ReducerBase {
 public:
  Har(const Communicators& c, const ReducerOptions& o)
      : ReducerBase(c), single_gpu_(c.layout().num_gpus == 1), leaders_(c.leaders(), ring_transport(), o.elements) {
    watched_ = !single_gpu_ && ring_transport() == Transport::nccl;
    if (!use_ipc(o)) {
      local_ = std::make_unique<DeviceGroup>(c.gpu(), Transport::host, o.elements);
      return;
    }
    shared_ = std::make_unique<GpuShared>(c.gpu(), o.elements, intra_sync(o));
    if (har_uses_rings(c.layout(), o)) rings_ = std::make_unique<DeviceGroup>(c.ring(), ring_transport(), o.elements);
    watched_ = watched_ || (!device_is_host() && shared_->size() > 1 && shared_->sync() == IntraSync::host);
  }
  void mean(const ExecSpace& space, float* data, std::size_t n) override {
    if (shared_ && shared_->size() > 1) {
      // The GPU's sum, all-reduced among GPUs in place (in the leader's buffer, or slice by
      // slice in ring j by its owner j), then copied out to every GMI, scaled to the mean.  On
      // one GPU the two intra-GPU steps are one.
      const float mean = 1.0f / float(size_);
      if (single_gpu_) {
        shared_->allreduce(space, data, n, mean);
        return;
      }
      const Sums where = rings_ ? Sums::owners : Sums::leader;
      float* sum = shared_->reduce(space, data, n, where);
      if (rings_)
        rings_->allreduce_sum(space, sum, shared_->slice(n).second);
      else if (leaders_.active())
        leaders_.allreduce_sum(space, sum, n);
      shared_->broadcast(space, data, n, mean, where);
      return;
    }
    if (local_) {
      local_->reduce_sum(space, data, n, 0);
      leaders_.allreduce_sum(space, data, n);
      local_->bcast(space, data, n, 0);
    } else if (leaders_.size() == size_) {
      leaders_.allreduce_mean(space, data, n);  // one GMI per GPU: NCCL averages in its pass
      return;
    } else {
      leaders_.allreduce_sum(space, data, n);
    }
    finish(space, data, n);
  }
  float* buffer() override { return shared_ && shared_->size() > 1 ? shared_->input() : nullptr; }
  std::string name() const override {
    return shared_ ? (rings_ ? "har (ipc, rings)" : "har (ipc)") : "har (mpi)";
  }

 private:
  bool single_gpu_;
  DeviceGroup leaders_;
  std::unique_ptr<GpuShared> shared_;
  std::unique_ptr<DeviceGroup> rings_;  // inter_gpu rings: this GMI's ring
  std::unique_ptr<DeviceGroup> local_;
};

class Hybrid final : public ReducerBase {
 public:
  Hybrid(const Communicators& c, std::size_t n, int k)
      : ReducerBase(c),
        k_(k),
        in_ring_(c.me().slot < k),
        ring_(in_ring_ ? c.ring() : MPI_COMM_NULL, ring_transport(), n),
        ip_(make_ip(c), Transport::host, n) {
    watched_ = ring_transport() == Transport::nccl;
  }
  ~Hybrid() override {
    if (ip_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ip_comm_);
  }
  void mean(const ExecSpace& space, float* data, std::size_t n) override {
    if (in_ring_) ring_.allreduce_sum(space, data, n);
    ip_.allreduce_sum(space, data, n);
    if (in_ring_) ring_.bcast(space, data, n, 0);
    finish(space, data, n);
  }
  std::string name() const override { return fmt::format("hybrid k={}", k_); }

 private:
  MPI_Comm make_ip(const Communicators& c) {
    // Ring members are ordered by global GPU, so ring rank 0 (the lowest GPU) represents it.
    const bool rep = c.me().slot >= k_ || comm_rank(c.ring()) == 0;
    ip_comm_ = split(c.world(), rep ? 0 : MPI_UNDEFINED, c.me().gmi_rank);
    return ip_comm_;
  }
  int k_;
  bool in_ring_;
  MPI_Comm ip_comm_ = MPI_COMM_NULL;
  DeviceGroup ring_;
  DeviceGroup ip_;
};

/// Mean seconds per call of `op` over `runs` (after 5 warm-up calls); the slowest GMI's time.
template <class Op>
double time_op(MPI_Comm world, const ExecSpace& space, int runs, Op&& op) {
  for (int i = 0; i < 5; ++i) op();
  space.fence();
  GMI_MPI_CHECK(MPI_Barrier(world));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    op();
    space.fence();
  }
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / runs;
  GMI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world));
  return t;
}

double frac(int p) { return p > 1 ? double(p - 1) / double(p) : 0.0; }

}  // namespace

std::vector<int> ring_representatives(const Layout& L) {
  const int M = L.max_gmis_per_gpu();
  std::vector<int> rep(M, -1);
  std::vector<bool> used(L.num_gpus, false);
  // Ring j's members are the GPUs with more than j GMIs: nested sets, so choosing from the
  // smallest ring up finds distinct representatives whenever they exist.
  for (int j = M - 1; j >= 0; --j) {
    for (int g = 0; g < L.num_gpus; ++g)
      if (!used[g] && L.gmis_per_gpu[g] > j) {
        rep[j] = g;
        used[g] = true;
        break;
      }
    if (rep[j] < 0) return {};
  }
  return rep;
}

namespace {
/// "" if har's step among GPUs can run in rings with `o` on `L`, else why not.
std::string rings_reason(const Layout& L, const ReducerOptions& o) {
  if (!use_ipc(o)) return "needs reduce.intra_gpu ipc";
  if (!o.concurrent_gmis)
    return "needs GMIs that run side by side (gmi.backend mps): time-sliced GMIs synchronise on the host";
  const auto& g = L.gmis_per_gpu;
  if (std::any_of(g.begin(), g.end(), [&](int m) { return m != g.front(); }))
    return fmt::format("needs the same number of GMIs on every GPU; this layout has {}", fmt::join(g, ", "));
  return "";
}
}  // namespace

bool har_uses_rings(const Layout& L, const ReducerOptions& o) {
  return o.inter_gpu != "leaders" && L.num_gpus > 1 && L.max_gmis_per_gpu() > 1 && rings_reason(L, o).empty();
}

std::string unsupported_reason(const Layout& L, const std::string& s, const ReducerOptions& o) {
  if (s == "har") {
    const std::string why = o.inter_gpu == "rings" ? rings_reason(L, o) : "";
    return why.empty() ? "" : "reduce.inter_gpu: rings " + why;
  }
  if (s == "mpr") return "";
  if (s == "mrr")
    return ring_representatives(L).empty()
               ? fmt::format("mrr needs GMIs per GPU <= GPUs (NCCL allows one rank per GPU in a "
                             "communicator); this layout has up to {} GMIs per GPU on {} GPU(s)",
                             L.max_gmis_per_gpu(), L.num_gpus)
               : "";
  if (s == "hybrid")
    return o.hybrid_k > L.max_gmis_per_gpu()
               ? fmt::format("reduce.hybrid_k: {} exceeds the {} GMIs per GPU of this layout",
                             o.hybrid_k, L.max_gmis_per_gpu())
               : "";
  return "unknown strategy '" + s + "' (expected mpr, mrr, har or hybrid)";
}

std::unique_ptr<GradientReducer> make_strategy(const Communicators& c, const std::string& s,
                                               const ReducerOptions& o) {
  const std::string why = unsupported_reason(c.layout(), s, o);
  if (!why.empty()) throw InputError(why.rfind("reduce.", 0) == 0 ? why : "reduce.strategy: " + why);
  if (s == "mpr") return std::make_unique<Mpr>(c, o.elements);
  if (s == "mrr") return std::make_unique<Mrr>(c, o.elements);
  if (s == "har") return std::make_unique<Har>(c, o);
  return std::make_unique<Hybrid>(c, o.elements, o.hybrid_k);
}

ReducerChoice make_reducer(const Communicators& c, const ReducerOptions& o) {
  ReducerChoice out;
  if (o.strategy != "auto") {
    out.reducer = make_strategy(c, o.strategy, o);
    return out;
  }
  const Layout& L = c.layout();
  const int W = L.size(), n = L.num_gpus, M = L.max_gmis_per_gpu();
  if (W == 1) {
    out.reducer = make_strategy(c, "mpr", o);
    return out;
  }
  // Unit costs (003 §3.2.1): host-staged and ring all-reduce among one GMI per GPU, measured on
  // this gradient size; with a single GPU the host-staged cost is measured among its GMIs.  The
  // intra-GPU step of har is measured too, because IPC changes it (the paper staged it).
  ExecSpace space;
  const std::size_t E = std::max<std::size_t>(o.elements, 1);
  View1<float> buf("gmi::mpi::auto_probe", E);
  UnitCosts& u = out.costs;
  {
    MPI_Comm ip_comm = n >= 2 ? c.leaders() : c.gpu();
    DeviceGroup g(ip_comm, Transport::host, E);
    u.ip = time_op(c.world(), space, o.auto_runs, [&] { g.allreduce_sum(space, buf.data(), E); });
    u.ip_group = n >= 2 ? n : M;
  }
  if (n >= 2) {
    DeviceGroup g(c.leaders(), ring_transport(), E);
    u.rp = time_op(c.world(), space, o.auto_runs, [&] { g.allreduce_sum(space, buf.data(), E); });
    u.rp_group = n;
    if (har_uses_rings(L, o)) {
      // har's rings carry 1/M of the buffer each, M of them at once (contention not modelled).
      const std::size_t slice = (E + M - 1) / M;
      u.rp_slice = time_op(c.world(), space, o.auto_runs, [&] { g.allreduce_sum(space, buf.data(), slice); });
    }
  }
  if (M >= 2) {
    if (use_ipc(o)) {
      GpuShared s(c.gpu(), E, intra_sync(o));
      float* data = s.input() ? s.input() : buf.data();  // where HAR's caller computes (Har::buffer)
      u.local = time_op(c.world(), space, o.auto_runs, [&] { s.allreduce_sum(space, data, E); });
      u.local_path = "ipc";
    } else {
      DeviceGroup g(c.gpu(), Transport::host, E);
      u.local = time_op(c.world(), space, o.auto_runs, [&] {
        g.reduce_sum(space, buf.data(), E, 0);
        g.bcast(space, buf.data(), E, 0);
      });
      u.local_path = "mpi";
    }
  }
  // Bandwidth-optimal all-reduce among p members costs 2(p-1)/p * S/B: scale the measured units.
  auto ip = [&](int p) { return frac(u.ip_group) > 0 ? u.ip * frac(p) / frac(u.ip_group) : 0.0; };
  auto rp = [&](int p) { return u.rp_group > 1 ? u.rp * frac(p) / frac(u.rp_group) : 0.0; };
  std::vector<Projection>& P = out.projections;
  P.push_back({"mpr", ip(W), fmt::format("IP({})", W)});
  if (unsupported_reason(L, "mrr", o).empty())
    P.push_back({"mrr", rp(n) + rp(M) + 0.5 * rp(n),
                 fmt::format("RP({}) rings + RP({}) across rings + RP({})/2 broadcast", n, M, n)});
  const std::string local = fmt::format("local[{}]", u.local_path.empty() ? "-" : u.local_path);
  if (u.rp_slice > 0)
    P.push_back({"har", u.local + u.rp_slice, fmt::format("{} + RP({}) on 1/{} in {} rings", local, n, M, M)});
  else
    P.push_back({"har", u.local + rp(n), fmt::format("{} + RP({})", local, n)});
  for (int k = 1; k <= M; ++k) {
    int p_ip = 0;  // GMIs of slot >= k, plus one per ring
    for (int g = 0; g < n; ++g) p_ip += std::max(0, L.gmis_per_gpu[g] - k);
    p_ip += std::min(k, M);
    P.push_back({fmt::format("hybrid k={}", k), rp(n) + ip(p_ip) + 0.5 * rp(n),
                 fmt::format("RP({}) rings + IP({}) + RP({})/2 broadcast", n, p_ip, n)});
  }
  std::stable_sort(P.begin(), P.end(), [](const Projection& a, const Projection& b) { return a.seconds < b.seconds; });
  // Every GMI measured the same maxima (time_op), so every GMI picks the same strategy.
  const std::string best = P.front().strategy;
  ReducerOptions chosen = o;
  if (best.rfind("hybrid", 0) == 0) {
    chosen.hybrid_k = std::stoi(best.substr(best.find('=') + 1));
    out.reducer = make_strategy(c, "hybrid", chosen);
  } else {
    out.reducer = make_strategy(c, best, chosen);
  }
  return out;
}

}  // namespace gmi::mpi
