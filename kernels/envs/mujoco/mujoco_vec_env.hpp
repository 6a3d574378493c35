#pragma once
/// \file
/// \brief N MuJoCo environments of one task, simulated on host threads behind VecEnvBase, so PPO,
/// several GMIs, checkpoints and `gmi_drl env` use them as they use the device environments.
///
/// The model is loaded once and shared (read only); every env has its own mjData.  A step copies
/// the actions from the device into pinned host memory, the pool's threads step the envs, handed
/// out one at a time (Gymnasium's TimeLimit and same-step automatic reset, the true last observation
/// kept for bootstrapping, per-term reward sums of finished episodes), and the results go back to
/// the device asynchronously: a step of every env in one copy of one pinned block and one kernel
/// that spreads it into the caller's arrays (a range of envs: one copy per array).  On host builds
/// device memory is host memory and nothing is copied.
/// Reset noise is counter-based: episode k of global env g draws from philox(seed, {k, g}), as
/// the device environments do.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/model.hpp"
#include "kernels/envs/mujoco/task.hpp"
#include "kernels/envs/mujoco/thread_pool.hpp"
#include "kernels/envs/vec_env.hpp"

namespace gmi::envs::mujoco {

#if defined(KOKKOS_ENABLE_CUDA)
using PinnedSpace = Kokkos::CudaHostPinnedSpace;
#else
using PinnedSpace = Kokkos::HostSpace;
#endif

/// Where a step's results lie in one block (pinned on the host, and its mirror on the device):
/// [N][obs_dim] observations, [N][obs_dim] final observations, [N] rewards (floats), then [N]
/// terminated and [N] truncated flags (bytes).
struct ResultBlock {
  int n = 0, obs_dim = 0;
  std::size_t floats() const { return std::size_t(n) * (2 * std::size_t(obs_dim) + 1); }
  std::size_t bytes() const { return floats() * sizeof(float) + 2 * std::size_t(n); }
  StepOutputs at(void* base) const {
    auto* f = static_cast<float*>(base);
    auto* flags = reinterpret_cast<std::uint8_t*>(f + floats());
    const std::size_t od = std::size_t(n) * obs_dim;
    return StepOutputs{f, f + od, f + 2 * od, flags, flags + n};
  }
};

/// The device's copy of a block (`block` at `mirror`) into the caller's arrays `out`, every env
/// (GPU builds; mujoco.cpp).
void spread_results(const ExecSpace& space, const ResultBlock& block, const void* mirror, const StepOutputs& out);

template <class Task>
class MujocoVecEnv final : public VecEnvBase {
 public:
  MujocoVecEnv(int n, std::uint64_t seed, std::uint64_t offset, const Options& o, int max_episode_steps)
      : task_(Task::params(o.kwargs)), model_(load_model(Task::kXml, o.model_path)), pool_(ThreadPool::Options{o.threads, o.pin_threads}),
        seed_(seed), offset_(offset) {
    const mjModel* m = model_.get();
    spec_ = spec_of(task_, m, max_episode_steps);
    num_envs_ = n;
    nterms_ = int(spec_.reward_terms.size());
    od_ = spec_.obs_dim;
    ad_ = spec_.act_dim;
    for (int i = 0; i < n; ++i) data_.emplace_back(make_data(m));
    anchor_.assign(2 * std::size_t(n), 0.0);
    elapsed_.assign(n, 0);
    episode_.assign(n, 0);
    ep_return_.assign(n, 0.0);
    ep_length_.assign(n, 0);
    ep_terms_.assign(std::size_t(n) * nterms_, 0.0);
    done_return_.assign(n, 0.0);
    done_length_.assign(n, 0.0);
    done_count_.assign(n, 0.0);
    done_terms_.assign(std::size_t(n) * nterms_, 0.0);
    h_actions_ = Staging<float>("gmi::envs::mujoco::actions", std::size_t(n) * ad_);
    if (!device_is_host()) {
      block_ = ResultBlock{n, od_};
      h_block_ = Staging<unsigned char>("gmi::envs::mujoco::results", block_.bytes());
      d_block_ = Kokkos::View<unsigned char*, MemSpace>("gmi::envs::mujoco::results", block_.bytes());
      h_results_ = block_.at(h_block_.data());
    }
  }

  ~MujocoVecEnv() override {
    // Steps still queued write into this object's buffers: let them end first.
    for (const Pending& p : pending_) try {
        pool_.wait(p.job);
      } catch (...) {
      }
  }

  /// The task's spec on a loaded model: dimensions, action bounds (actuator control ranges).
  static EnvSpec spec_of(const Task& task, const mjModel* m, int max_episode_steps) {
    EnvSpec s;
    s.name = Task::kName;
    s.obs_dim = task.obs_dim(m);
    s.act_dim = m->nu;
    s.num_actions = 0;
    s.obs_low.assign(s.obs_dim, -INFINITY);
    s.obs_high.assign(s.obs_dim, INFINITY);
    for (int k = 0; k < m->nu; ++k) {
      const bool limited = m->actuator_ctrllimited[k];
      s.act_low.push_back(limited ? float(m->actuator_ctrlrange[2 * k]) : -INFINITY);
      s.act_high.push_back(limited ? float(m->actuator_ctrlrange[2 * k + 1]) : INFINITY);
    }
    s.max_episode_steps = max_episode_steps > 0 ? max_episode_steps : Task::kMaxEpisodeSteps;
    s.reward_terms = Task::terms();
    // mjData's buffer; its arena (~14 MB for these models) is reserved, and only touched as far
    // as a step needs (measured: 256 Hopper envs, 68 MB resident).
    s.host_bytes_per_env = double(sizeof(mjData)) + double(m->nbuffer);
    return s;
  }

  void reset_all(const ExecSpace& space, float* obs, std::uint64_t first_episode = 0) override {
    GMI_REQUIRE(pending_.empty(), "reset_all: steps are still queued (step_wait first)");
    space.fence();
    float* o = device_is_host() ? obs : h_results_.next_obs;
    pool_.run(num_envs_, [&](int b, int e) {
      for (int i = b; i < e; ++i) {
        episode_[i] = first_episode;
        elapsed_[i] = 0;
        ep_return_[i] = 0;
        ep_length_[i] = 0;
        for (int t = 0; t < nterms_; ++t) ep_terms_[i * nterms_ + t] = 0;
        reset_env(i);
        task_.observe(model_.get(), data_[i].get(), o + std::size_t(i) * od_);
      }
    });
    clear_done();
    if (!device_is_host()) to_device(space, obs, h_results_.next_obs, std::size_t(num_envs_) * od_);
  }

  void step(const ExecSpace& space, const float* actions, const StepOutputs& out) override {
    GMI_REQUIRE(pending_.empty(), "step: steps are still queued (step_wait first)");
    const Range r = begin(space, actions, out, 0, num_envs_);
    pool_.run(num_envs_, [this, &r](int b, int e) { step_range(r, b, e); });
    finish(space, r);
  }

  bool can_step_async() const override { return true; }

  void step_async(const ExecSpace& space, const float* actions, const StepOutputs& out, int lo, int hi) override {
    GMI_REQUIRE(0 <= lo && lo < hi && hi <= num_envs_, "step_async: the range must lie within the envs");
    for (const Pending& p : pending_)
      GMI_REQUIRE(hi <= p.range.lo || p.range.hi <= lo, "step_async: the range overlaps one still stepping");
    const Range r = begin(space, actions, out, lo, hi);
    const ThreadPool::Job job = pool_.submit(hi - lo, [this, r](int b, int e) { step_range(r, r.lo + b, r.lo + e); });
    pending_.push_back(Pending{r, job});
  }

  void step_wait(const ExecSpace& space) override {
    if (pending_.empty()) return;
    const Pending p = pending_.front();
    pending_.pop_front();
    pool_.wait(p.job);
    finish(space, p.range);
  }

  EpisodeStats take_episode_stats(const ExecSpace&) override {
    GMI_REQUIRE(pending_.empty(), "take_episode_stats: steps are still queued (step_wait first)");
    EpisodeStats s;
    s.term_sums.assign(nterms_, 0.0);
    for (int i = 0; i < num_envs_; ++i) {
      s.return_sum += done_return_[i];
      s.length_sum += done_length_[i];
      s.count += done_count_[i];
      for (int t = 0; t < nterms_; ++t) s.term_sums[t] += done_terms_[i * nterms_ + t];
    }
    clear_done();
    return s;
  }

  std::vector<StateArray> save_state(const ExecSpace& space) const override {
    GMI_REQUIRE(pending_.empty(), "save_state: steps are still queued (step_wait first)");
    space.fence();
    std::vector<StateArray> s;
    s.push_back(StateArray{"physics", false, physics_state(), state_size()});
    s.push_back(StateArray{"anchor", false, anchor_, 2});
    s.push_back(StateArray{"elapsed", false, elapsed_, 1});
    s.push_back(StateArray{"episode", true, episode_, 1});
    s.push_back(StateArray{"ep_return", false, ep_return_, 1});
    s.push_back(StateArray{"ep_length", false, ep_length_, 1});
    s.push_back(StateArray{"done_return", false, done_return_, 1});
    s.push_back(StateArray{"done_length", false, done_length_, 1});
    s.push_back(StateArray{"done_count", false, done_count_, 1});
    if (nterms_ > 0) {
      s.push_back(StateArray{"ep_terms", false, ep_terms_, nterms_});
      s.push_back(StateArray{"done_terms", false, done_terms_, nterms_});
    }
    return s;
  }

  void load_state(const ExecSpace& space, const std::vector<StateArray>& state) override {
    GMI_REQUIRE(pending_.empty(), "load_state: steps are still queued (step_wait first)");
    space.fence();
    const mjModel* m = model_.get();
    const int k = state_size();
    const std::vector<double> physics = find<double>(state, "physics", k);
    for (int i = 0; i < num_envs_; ++i) {
      mjData* d = data_[i].get();
      // Exact: the next mj_step computes everything from this state; nothing reads the derived
      // quantities before it (the observation the next rollout starts from is in the checkpoint,
      // and the forward velocity is measured from the saved anchor).
      mj_resetData(m, d);
      mj_setState(m, d, physics.data() + std::size_t(i) * k, kStateSpec);
    }
    anchor_ = find<double>(state, "anchor", 2);
    elapsed_ = find<int>(state, "elapsed", 1);
    episode_ = find<std::uint64_t>(state, "episode", 1);
    ep_return_ = find<double>(state, "ep_return", 1);
    ep_length_ = find<int>(state, "ep_length", 1);
    done_return_ = find<double>(state, "done_return", 1);
    done_length_ = find<double>(state, "done_length", 1);
    done_count_ = find<double>(state, "done_count", 1);
    if (nterms_ > 0) {
      ep_terms_ = find<double>(state, "ep_terms", nterms_);
      done_terms_ = find<double>(state, "done_terms", nterms_);
    }
  }

  std::vector<StateArray> simulator_state() const override {
    GMI_REQUIRE(pending_.empty(), "simulator_state: steps are still queued (step_wait first)");
    const mjModel* m = model_.get();
    std::vector<double> qpos, qvel;
    for (int i = 0; i < num_envs_; ++i) {
      const mjData* d = data_[i].get();
      qpos.insert(qpos.end(), d->qpos, d->qpos + m->nq);
      qvel.insert(qvel.end(), d->qvel, d->qvel + m->nv);
    }
    return {StateArray{"qpos", false, std::move(qpos), int(m->nq)}, StateArray{"qvel", false, std::move(qvel), int(m->nv)},
            StateArray{"state", false, physics_state(), state_size()}};
  }

 private:
  /// What a checkpoint keeps of each simulation: everything mj_step integrates from.
  static constexpr unsigned kStateSpec = mjSTATE_INTEGRATION;
  template <class T>
  using Staging = Kokkos::View<T*, PinnedSpace>;
  template <class T, class Space>
  using Unmanaged = Kokkos::View<T*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  int state_size() const { return mj_stateSize(model_.get(), kStateSpec); }
  /// Every env's state (kStateSpec), [N][state_size()].
  std::vector<double> physics_state() const {
    const int k = state_size();
    std::vector<double> s(std::size_t(num_envs_) * k);
    for (int i = 0; i < num_envs_; ++i) mj_getState(model_.get(), data_[i].get(), s.data() + std::size_t(i) * k, kStateSpec);
    return s;
  }

  /// Forget the statistics of finished episodes (after they were taken, or on a reset).
  void clear_done() {
    std::fill(done_return_.begin(), done_return_.end(), 0.0);
    std::fill(done_length_.begin(), done_length_.end(), 0.0);
    std::fill(done_count_.begin(), done_count_.end(), 0.0);
    std::fill(done_terms_.begin(), done_terms_.end(), 0.0);
  }

  template <class T>
  static void to_device(const ExecSpace& space, T* dst, T* src, std::size_t n) {
    Kokkos::deep_copy(space, Unmanaged<T, MemSpace>(dst, n), Unmanaged<T, PinnedSpace>(src, n));
  }

  /// A step of envs [lo, hi): where its actions are read and its results written on the host,
  /// and where the results go on the device.
  struct Range {
    int lo = 0, hi = 0;
    const float* act = nullptr;  ///< [N][act_dim], host memory
    StepOutputs host, device;    ///< indexed by env
  };
  struct Pending {
    Range range;
    ThreadPool::Job job;
  };

  /// A step of envs [lo, hi): their actions copied to host memory (from the device on GPU
  /// builds, which also orders the previous copies out of the staging buffers), so the caller
  /// may overwrite its own once this returns.  The fence covers `space` only: every step of one
  /// env object must be issued on the same instance (the trainer's), which also orders the device
  /// mirror of the result block between one step's copy and the next's.
  Range begin(const ExecSpace& space, const float* actions, const StepOutputs& out, int lo, int hi) {
    Range r{lo, hi, h_actions_.data(), out, out};
    const std::size_t a0 = std::size_t(lo) * ad_, an = std::size_t(hi - lo) * ad_;
    Kokkos::deep_copy(space, Unmanaged<float, PinnedSpace>(h_actions_.data() + a0, an),
                      Unmanaged<const float, MemSpace>(actions + a0, an));
    if (!device_is_host()) r.host = h_results_;
    space.fence();
    return r;
  }

  /// Envs [b, e) one step (a worker's slice): Gymnasium's TimeLimit and same-step reset, the
  /// statistics of finished episodes.
  void step_range(const Range& r, int b, int e) {
    const mjModel* m = model_.get();
    const int max_steps = spec_.max_episode_steps;
    const StepOutputs& h = r.host;
    thread_local std::vector<double> a, terms;  // this thread's scratch
    a.resize(ad_);
    terms.resize(std::max(1, nterms_));
    for (int i = b; i < e; ++i) {
      mjData* d = data_[i].get();
      for (int k = 0; k < ad_; ++k) a[k] = r.act[std::size_t(i) * ad_ + k];
      bool terminated = false;
      const double rew = task_.step(m, d, a.data(), &anchor_[2 * std::size_t(i)], terms.data(), terminated);
      const int steps = elapsed_[i] + 1;
      const bool truncated = steps >= max_steps;
      h.reward[i] = float(rew);
      h.terminated[i] = terminated;
      h.truncated[i] = truncated;
      ep_return_[i] += rew;
      ep_length_[i] += 1;
      for (int t = 0; t < nterms_; ++t) ep_terms_[i * nterms_ + t] += terms[t];
      if (terminated || truncated) {
        task_.observe(m, d, h.final_obs + std::size_t(i) * od_);
        done_return_[i] += ep_return_[i];
        done_length_[i] += ep_length_[i];
        done_count_[i] += 1;
        for (int t = 0; t < nterms_; ++t) {
          done_terms_[i * nterms_ + t] += ep_terms_[i * nterms_ + t];
          ep_terms_[i * nterms_ + t] = 0;
        }
        ++episode_[i];
        reset_env(i);
        elapsed_[i] = 0;
        ep_return_[i] = 0;
        ep_length_[i] = 0;
      } else {
        elapsed_[i] = steps;
      }
      task_.observe(m, d, h.next_obs + std::size_t(i) * od_);
    }
  }

  /// Queue the copies of a step's results to the device (GPU builds): every env's in one copy of
  /// the block and one kernel (two launches instead of five), a range's one array at a time.
  void finish(const ExecSpace& space, const Range& r) {
    if (device_is_host()) return;
    const StepOutputs& out = r.device;
    if (r.lo == 0 && r.hi == num_envs_) {
      to_device(space, d_block_.data(), h_block_.data(), block_.bytes());
      spread_results(space, block_, d_block_.data(), out);
      return;
    }
    const std::size_t lo = r.lo, n = r.hi - r.lo;
    const StepOutputs& h = h_results_;
    to_device(space, out.next_obs + lo * od_, h.next_obs + lo * od_, n * od_);
    to_device(space, out.final_obs + lo * od_, h.final_obs + lo * od_, n * od_);
    to_device(space, out.reward + lo, h.reward + lo, n);
    to_device(space, out.terminated + lo, h.terminated + lo, n);
    to_device(space, out.truncated + lo, h.truncated + lo, n);
  }

  /// Gymnasium's reset: mj_resetData, the task's noisy qpos and qvel, mj_forward.
  void reset_env(int i) {
    const mjModel* m = model_.get();
    mjData* d = data_[i].get();
    mj_resetData(m, d);
    Noise noise(seed_, episode_[i], offset_ + std::uint64_t(i));
    task_.reset(m, d, noise);
    mj_forward(m, d);
    task_.anchor(m, d, &anchor_[2 * std::size_t(i)]);
  }

  template <class T>
  std::vector<T> find(const std::vector<StateArray>& state, const char* name, int width) const {
    for (const StateArray& s : state)
      if (s.name == name) {
        const auto* v = std::get_if<std::vector<T>>(&s.values);
        GMI_REQUIRE(v && s.width == width && v->size() == std::size_t(num_envs_) * width,
                    std::string("environment state '") + name + "' has the wrong type or shape");
        return *v;
      }
    throw Error(std::string("environment state '") + name + "' is missing");
  }

  Task task_;
  ModelPtr model_;
  std::vector<DataPtr> data_;
  ThreadPool pool_;
  std::uint64_t seed_, offset_;
  int nterms_ = 0, od_ = 0, ad_ = 0;
  std::vector<double> anchor_;       ///< [N][2] where the next step's forward velocity is measured from
  std::vector<int> elapsed_;
  std::vector<std::uint64_t> episode_;
  std::vector<double> ep_return_;
  std::vector<int> ep_length_;
  std::vector<double> ep_terms_;     ///< [N][terms] of the current episodes
  std::vector<double> done_return_, done_length_, done_count_;
  std::vector<double> done_terms_;   ///< [N][terms] of episodes finished since the last take
  Staging<float> h_actions_;
  ResultBlock block_;                                 ///< GPU builds: a step's results ...
  Staging<unsigned char> h_block_;                    ///< ... staged on the host
  Kokkos::View<unsigned char*, MemSpace> d_block_;    ///< ... and their copy on the device
  StepOutputs h_results_;                             ///< the arrays of h_block_
  std::deque<Pending> pending_;  ///< steps queued by step_async, oldest first
};

}  // namespace gmi::envs::mujoco
