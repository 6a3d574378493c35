#include "kernels/rl/replay.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/core/error.hpp"

namespace gmi::rl {
namespace {

template <class T>
View1<T> device_rows(const char* label, std::int64_t rows, int width) {
  return View1<T>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), std::size_t(rows) * width);
}

template <class T>
Kokkos::View<T*, HostSpace> host_rows(const char* label, std::int64_t rows, int width) {
  return Kokkos::View<T*, HostSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                     std::size_t(rows) * width);
}

/// Copies `rows` rows of `width` from ring row `from` of `src` to `dst` at row `to` (host views).
template <class T>
void copy_rows(T* dst, std::int64_t to, const T* src, std::int64_t from, std::int64_t rows, int width) {
  std::memcpy(dst + to * width, src + from * width, std::size_t(rows) * width * sizeof(T));
}


}  // namespace

ReplayStorage parse_replay_storage(const std::string& text, const std::string& key) {
  if (text == "device") return ReplayStorage::device;
  if (text == "host") return ReplayStorage::host;
  throw InputError(key + ": expected device or host, got '" + text + "'");
}

ReplayBatch::ReplayBatch(const ReplaySpec& spec, int batch)
    : size(batch),
      obs("gmi::rl::replay::batch_obs", std::size_t(batch) * spec.obs_dim),
      actions("gmi::rl::replay::batch_actions", std::size_t(batch) * spec.act_dim),
      rewards("gmi::rl::replay::batch_rewards", batch),
      next_obs("gmi::rl::replay::batch_next_obs", std::size_t(batch) * spec.obs_dim),
      terminated("gmi::rl::replay::batch_terminated", batch) {}

double ReplayBuffer::bytes(const ReplaySpec& s) {
  return double(s.capacity) * (sizeof(float) * (2.0 * s.obs_dim + s.act_dim + 1) + sizeof(std::uint8_t));
}

ReplayBuffer::ReplayBuffer(const ReplaySpec& spec, ReplayStorage storage) : spec_(spec), storage_(storage) {
  GMI_REQUIRE(spec.capacity >= 1 && spec.obs_dim >= 1 && spec.act_dim >= 1, "replay: empty spec");
  const std::int64_t C = spec.capacity;
  if (storage == ReplayStorage::device) {
    obs_ = device_rows<float>("gmi::rl::replay::obs", C, spec.obs_dim);
    actions_ = device_rows<float>("gmi::rl::replay::actions", C, spec.act_dim);
    rewards_ = device_rows<float>("gmi::rl::replay::rewards", C, 1);
    next_obs_ = device_rows<float>("gmi::rl::replay::next_obs", C, spec.obs_dim);
    terminated_ = device_rows<std::uint8_t>("gmi::rl::replay::terminated", C, 1);
    device_size_ = Kokkos::View<std::int64_t, MemSpace>("gmi::rl::replay::size");
  } else {
    h_obs_ = host_rows<float>("gmi::rl::replay::obs", C, spec.obs_dim);
    h_actions_ = host_rows<float>("gmi::rl::replay::actions", C, spec.act_dim);
    h_rewards_ = host_rows<float>("gmi::rl::replay::rewards", C, 1);
    h_next_obs_ = host_rows<float>("gmi::rl::replay::next_obs", C, spec.obs_dim);
    h_terminated_ = host_rows<std::uint8_t>("gmi::rl::replay::terminated", C, 1);
  }
}

void ReplayBuffer::clear() {
  cursor_ = size_ = 0;
  if (storage_ == ReplayStorage::device) Kokkos::deep_copy(device_size_, std::int64_t(0));
}

void ReplayBuffer::sync_device_size(const ExecSpace& space) {
  if (storage_ != ReplayStorage::device) return;
  const auto d = device_size_;
  const std::int64_t size = size_;
  Kokkos::parallel_for("gmi::rl::replay::size", Range(space, 0, 1), KOKKOS_LAMBDA(const int) { d() = size; });
}

void ReplayBuffer::add(const ExecSpace& space, int n, const float* obs, const float* actions, const float* rewards,
                       const float* next_obs, const std::uint8_t* terminated) {
  const std::int64_t C = spec_.capacity;
  GMI_REQUIRE(n >= 0 && n <= C, "replay: more transitions in one add than the buffer holds");
  if (n == 0) return;
  const int od = spec_.obs_dim, ad = spec_.act_dim;
  if (storage_ == ReplayStorage::device) {
    add_device(space, n, obs, actions, rewards, next_obs, terminated);
  } else {
    // Stage the rows on the host, then place them in the ring (in at most two pieces).
    auto stage = [&](auto& host_ring, const auto* rows, int width) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(rows)>>;
      std::vector<T> tmp(std::size_t(n) * width);
      Kokkos::deep_copy(space, Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(tmp.data(), tmp.size()),
                        Kokkos::View<const T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(rows, tmp.size()));
      space.fence();
      const std::int64_t first = std::min<std::int64_t>(n, C - cursor_);
      copy_rows(host_ring.data(), cursor_, tmp.data(), 0, first, width);
      if (first < n) copy_rows(host_ring.data(), 0, tmp.data(), first, n - first, width);
    };
    stage(h_obs_, obs, od);
    stage(h_actions_, actions, ad);
    stage(h_rewards_, rewards, 1);
    stage(h_next_obs_, next_obs, od);
    stage(h_terminated_, terminated, 1);
  }
  cursor_ = (cursor_ + n) % C;
  size_ = std::min(C, size_ + n);
}

void ReplayBuffer::add_device(const ExecSpace& space, int n, const float* obs, const float* actions,
                              const float* rewards, const float* next_obs, const std::uint8_t* terminated) {
  // One kernel per step: row i of every field goes to ring row (cursor + i) mod capacity.
  const int od = spec_.obs_dim, ad = spec_.act_dim, w = 2 * od + ad + 2;
  const std::int64_t C = spec_.capacity, cursor = cursor_, new_size = std::min(C, size_ + n);
  const auto o = obs_, a = actions_, r = rewards_, x = next_obs_;
  const auto t = terminated_;
  const auto sz = device_size_;
  Kokkos::parallel_for(
      "gmi::rl::replay::add", Range64(space, 0, std::int64_t(n) * w), KOKKOS_LAMBDA(const std::int64_t k) {
        if (k == 0) sz() = new_size;  // the fill level a captured update reads
        const std::int64_t i = k / w, c = k % w, row = (cursor + i) % C;
        if (c < od) o(row * od + c) = obs[i * od + c];
        else if (c < 2 * od) x(row * od + (c - od)) = next_obs[i * od + (c - od)];
        else if (c < 2 * od + ad) a(row * ad + (c - 2 * od)) = actions[i * ad + (c - 2 * od)];
        else if (c == 2 * od + ad) r(row) = rewards[i];
        else t(row) = terminated[i];
      });
}

void ReplayBuffer::gather_device(const ExecSpace& space, std::uint64_t seed, std::uint64_t draw,
                                 const DeviceDraw& device_draw, ReplayBatch& out) const {
  // One kernel per batch: a team per sample draws its index and copies every field of the row
  // (one launch instead of an index kernel and five gathers: updates are launch-bound).
  const int od = spec_.obs_dim, ad = spec_.act_dim;
  const auto o = obs_, a = actions_, r = rewards_, n = next_obs_;
  const auto t = terminated_;
  const auto bo = out.obs, ba = out.actions, br = out.rewards, bn = out.next_obs;
  const auto bt = out.terminated;
  const auto sz = device_size_;
  const DeviceDraw dd = device_draw;
  Kokkos::parallel_for(
      "gmi::rl::replay::sample", Kokkos::TeamPolicy<ExecSpace, LaunchHint>(space, out.size, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Kokkos::TeamPolicy<ExecSpace, LaunchHint>::member_type& m) {
        const int j = m.league_rank();
        const std::uint64_t d = dd.counter ? (std::uint64_t(*dd.counter) << dd.shift) | dd.low : draw;
        const std::int64_t i = replay_index(seed, d, std::uint64_t(j), sz());
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, 2 * od + ad + 2), [&](const int c) {
          if (c < od) bo(std::size_t(j) * od + c) = o(i * od + c);
          else if (c < 2 * od) bn(std::size_t(j) * od + (c - od)) = n(i * od + (c - od));
          else if (c < 2 * od + ad) ba(std::size_t(j) * ad + (c - 2 * od)) = a(i * ad + (c - 2 * od));
          else if (c == 2 * od + ad) br(j) = r(i);
          else bt(j) = t(i);
        });
      });
}

void ReplayBuffer::sample(const ExecSpace& space, std::uint64_t seed, const DeviceDraw& draw, ReplayBatch& out) const {
  GMI_REQUIRE(storage_ == ReplayStorage::device && draw.counter, "replay: a device-side draw needs device storage");
  GMI_REQUIRE(size_ > 0, "replay: sampling from an empty buffer");
  gather_device(space, seed, 0, draw, out);
}

void ReplayBuffer::sample(const ExecSpace& space, std::uint64_t seed, std::uint64_t draw, ReplayBatch& out) const {
  GMI_REQUIRE(size_ > 0, "replay: sampling from an empty buffer");
  const int B = out.size;
  const std::int64_t size = size_;
  if (storage_ == ReplayStorage::device) {
    gather_device(space, seed, draw, DeviceDraw{}, out);
    return;
  }
  // Host storage: the same indices, gathered on the host into staging rows, then one copy each.
  const int od = spec_.obs_dim, ad = spec_.act_dim;
  if (s_obs_.extent(0) < std::size_t(B) * od) {
    s_obs_ = host_rows<float>("gmi::rl::replay::stage_obs", B, od);
    s_actions_ = host_rows<float>("gmi::rl::replay::stage_actions", B, ad);
    s_rewards_ = host_rows<float>("gmi::rl::replay::stage_rewards", B, 1);
    s_next_obs_ = host_rows<float>("gmi::rl::replay::stage_next_obs", B, od);
    s_terminated_ = host_rows<std::uint8_t>("gmi::rl::replay::stage_terminated", B, 1);
  }
  space.fence();  // the staging rows of the previous batch may still be in flight
  for (int j = 0; j < B; ++j) {
    const std::int64_t i = replay_index(seed, draw, std::uint64_t(j), size);
    copy_rows(s_obs_.data(), j, h_obs_.data(), i, 1, od);
    copy_rows(s_actions_.data(), j, h_actions_.data(), i, 1, ad);
    s_rewards_(j) = h_rewards_(i);
    copy_rows(s_next_obs_.data(), j, h_next_obs_.data(), i, 1, od);
    s_terminated_(j) = h_terminated_(i);
  }
  auto first = [](const auto& v, std::size_t n) { return Kokkos::subview(v, std::make_pair(std::size_t(0), n)); };
  Kokkos::deep_copy(space, out.obs, first(s_obs_, std::size_t(B) * od));
  Kokkos::deep_copy(space, out.actions, first(s_actions_, std::size_t(B) * ad));
  Kokkos::deep_copy(space, out.rewards, first(s_rewards_, std::size_t(B)));
  Kokkos::deep_copy(space, out.next_obs, first(s_next_obs_, std::size_t(B) * od));
  Kokkos::deep_copy(space, out.terminated, first(s_terminated_, std::size_t(B)));
}

namespace {
/// Row-independent made-up values: element k of array `which`.
KOKKOS_INLINE_FUNCTION float synthetic(std::uint64_t seed, int which, std::int64_t k, int num_actions) {
  const auto bits = rng::philox(seed, std::uint64_t(k), rng::tag(rng::kReplay, (std::uint64_t(1) << 40) | which));
  const float u = rng::uniform01(bits.v[0]);
  if (which == 1 && num_actions > 0) return math::min(float(int(u * float(num_actions))), float(num_actions - 1));
  return 2.0f * u - 1.0f;
}

template <class T>
KOKKOS_INLINE_FUNCTION T synthetic_value(std::uint64_t seed, int which, std::int64_t k, int num_actions) {
  return which == 4 ? T(synthetic(seed, which, k, 0) > 0.9f) : T(synthetic(seed, which, k, num_actions));
}

template <class T>
void fill_device(const ExecSpace& space, const View1<T>& v, std::uint64_t seed, int which, int num_actions) {
  const auto d = v;
  Kokkos::parallel_for(
      "gmi::rl::replay::fill", Range64(space, 0, std::int64_t(d.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t k) { d(k) = synthetic_value<T>(seed, which, k, num_actions); });
}

template <class T>
void fill_host(const Kokkos::View<T*, HostSpace>& v, std::uint64_t seed, int which, int num_actions) {
  for (std::int64_t k = 0; k < std::int64_t(v.extent(0)); ++k) v(k) = synthetic_value<T>(seed, which, k, num_actions);
}
}  // namespace

void ReplayBuffer::fill_synthetic(const ExecSpace& space, std::uint64_t seed, int num_actions) {
  space.fence();
  if (storage_ == ReplayStorage::host) {
    fill_host(h_obs_, seed, 0, num_actions);
    fill_host(h_actions_, seed, 1, num_actions);
    fill_host(h_rewards_, seed, 2, num_actions);
    fill_host(h_next_obs_, seed, 3, num_actions);
    fill_host(h_terminated_, seed, 4, num_actions);
  } else {
    fill_device(space, obs_, seed, 0, num_actions);
    fill_device(space, actions_, seed, 1, num_actions);
    fill_device(space, rewards_, seed, 2, num_actions);
    fill_device(space, next_obs_, seed, 3, num_actions);
    fill_device(space, terminated_, seed, 4, num_actions);
  }
  cursor_ = 0;
  size_ = spec_.capacity;
  sync_device_size(space);
  space.fence();
}

ReplayState ReplayBuffer::save_state(const ExecSpace& space) const {
  ReplayState s;
  s.cursor = cursor_;
  s.size = size_;
  const std::size_t n = std::size_t(size_);
  const int od = spec_.obs_dim, ad = spec_.act_dim;
  auto take = [&](auto& to, const auto& dev, const auto& host, int width) {
    using T = typename std::decay_t<decltype(to)>::value_type;
    to.resize(n * width);
    Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dst(to.data(), to.size());
    if (storage_ == ReplayStorage::device)
      Kokkos::deep_copy(space, dst, Kokkos::subview(dev, std::make_pair(std::size_t(0), n * width)));
    else
      Kokkos::deep_copy(space, dst, Kokkos::subview(host, std::make_pair(std::size_t(0), n * width)));
  };
  take(s.obs, obs_, h_obs_, od);
  take(s.actions, actions_, h_actions_, ad);
  take(s.rewards, rewards_, h_rewards_, 1);
  take(s.next_obs, next_obs_, h_next_obs_, od);
  take(s.terminated, terminated_, h_terminated_, 1);
  space.fence();
  return s;
}

void ReplayBuffer::load_state(const ExecSpace& space, const ReplayState& s) {
  const std::int64_t C = spec_.capacity;
  const std::size_t n = std::size_t(s.size);
  const int od = spec_.obs_dim, ad = spec_.act_dim;
  GMI_REQUIRE(s.size >= 0 && s.size <= C && s.cursor >= 0 && s.cursor < C && (s.size == C || s.cursor == s.size),
              "replay: the saved cursor and fill level do not fit the buffer's capacity");
  GMI_REQUIRE(s.obs.size() == n * od && s.next_obs.size() == n * od && s.actions.size() == n * ad &&
                  s.rewards.size() == n && s.terminated.size() == n,
              "replay: the saved rows do not match the buffer's observation and action sizes");
  auto put = [&](const auto& from, const auto& dev, const auto& host, int width) {
    using T = typename std::decay_t<decltype(from)>::value_type;
    Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> src(from.data(), from.size());
    if (storage_ == ReplayStorage::device)
      Kokkos::deep_copy(space, Kokkos::subview(dev, std::make_pair(std::size_t(0), n * width)), src);
    else
      Kokkos::deep_copy(space, Kokkos::subview(host, std::make_pair(std::size_t(0), n * width)), src);
  };
  put(s.obs, obs_, h_obs_, od);
  put(s.actions, actions_, h_actions_, ad);
  put(s.rewards, rewards_, h_rewards_, 1);
  put(s.next_obs, next_obs_, h_next_obs_, od);
  put(s.terminated, terminated_, h_terminated_, 1);
  cursor_ = s.cursor;
  size_ = s.size;
  sync_device_size(space);
  space.fence();
}

}  // namespace gmi::rl
