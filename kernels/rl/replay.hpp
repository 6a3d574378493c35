#pragma once
/// \file
/// \brief Experience replay for off-policy learning (paper 002): a ring buffer of `capacity`
/// transitions (observation, action, reward, next observation, terminated), filled by every env
/// of a GMI each step and sampled uniformly.
///
/// Two storages, one interface (`replay.storage`):
///  - device: the buffer lives in the execution space's memory; a batch is gathered there by one
///    kernel, with no host round trip (paper 002's in-GPU replay);
///  - host: the buffer lives in host memory (larger than the device allows, or the baseline of
///    paper 002); a batch is gathered on the host and copied to the device.
/// Both draw the same indices: sample j of draw d is index
/// philox(seed, {d, tag(kReplay, j)}) mod size, so a batch is a pure function of (seed, draw,
/// contents) and a restored buffer samples exactly what the uninterrupted one would have.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/kokkos.hpp"
#include "kernels/core/random.hpp"

namespace gmi::rl {

struct ReplaySpec {
  int obs_dim = 0;
  int act_dim = 1;             ///< floats per action (discrete: one exact float index)
  std::int64_t capacity = 0;   ///< transitions
};

enum class ReplayStorage { device, host };

/// "device" | "host"; throws gmi::InputError naming `key` otherwise.
ReplayStorage parse_replay_storage(const std::string& text, const std::string& key);

/// A sampled batch, [B][...] row-major in the execution space's memory.
struct ReplayBatch {
  ReplayBatch() = default;
  ReplayBatch(const ReplaySpec& spec, int batch);
  int size = 0;
  View1<float> obs, actions, rewards, next_obs;
  View1<std::uint8_t> terminated;
};

/// A draw whose number is read on the device when the batch is gathered, for launches captured
/// once and replayed (CUDA graphs): draw = (*counter << shift) | low.
struct DeviceDraw {
  const std::int64_t* counter = nullptr;  ///< device memory
  int shift = 0;
  std::uint64_t low = 0;
};

/// What a checkpoint keeps: the filled rows in ring order, the cursor and the fill level.
struct ReplayState {
  std::int64_t cursor = 0;  ///< where the next transition goes
  std::int64_t size = 0;    ///< transitions held (<= capacity)
  std::vector<float> obs, actions, rewards, next_obs;  ///< rows [0, size) of the ring
  std::vector<std::uint8_t> terminated;
};

class ReplayBuffer {
 public:
  ReplayBuffer() = default;
  ReplayBuffer(const ReplaySpec& spec, ReplayStorage storage);

  /// Bytes a buffer of `spec` takes (its storage's memory).
  static double bytes(const ReplaySpec& spec);

  const ReplaySpec& spec() const { return spec_; }
  ReplayStorage storage() const { return storage_; }
  std::int64_t size() const { return size_; }
  std::int64_t cursor() const { return cursor_; }

  /// Forget every transition (the storage stays; new rows overwrite the old).
  void clear();

  /// Append n transitions (device pointers, rows [n][...]); the oldest are overwritten once the
  /// buffer is full.  n must not exceed the capacity.
  void add(const ExecSpace& space, int n, const float* obs, const float* actions, const float* rewards,
           const float* next_obs, const std::uint8_t* terminated);

  /// Fill `out` with out.size transitions drawn uniformly (with replacement) from the buffer;
  /// `draw` numbers the batch (e.g. the update count), so every batch has its own indices.
  void sample(const ExecSpace& space, std::uint64_t seed, std::uint64_t draw, ReplayBatch& out) const;

  /// The same as sample(seed, draw, out), the draw number and the fill level read on the device
  /// (device storage only): what a captured update replays.
  void sample(const ExecSpace& space, std::uint64_t seed, const DeviceDraw& draw, ReplayBatch& out) const;

  /// Benchmarks: fill every row with finite made-up transitions (observations and rewards in
  /// [-1, 1), actions valid indices below num_actions, or in [-1, 1) when it is 0) and mark the
  /// buffer full.
  void fill_synthetic(const ExecSpace& space, std::uint64_t seed, int num_actions);

  /// The buffer's contents on the host (fences), and their restoration.  load_state throws
  /// gmi::Error when a size does not match the spec.
  ReplayState save_state(const ExecSpace& space) const;
  void load_state(const ExecSpace& space, const ReplayState& s);

  /// Public for CUDA device lambdas: add n rows to device storage.
  void add_device(const ExecSpace& space, int n, const float* obs, const float* actions, const float* rewards,
                  const float* next_obs, const std::uint8_t* terminated);
  /// Public for CUDA device lambdas: the fill level in device memory = size_ (ordered on `space`),
  /// after a change the add kernel did not make.
  void sync_device_size(const ExecSpace& space);
  /// Public for CUDA device lambdas: draw and gather a batch from device storage (draw from
  /// `draw`, or from `device_draw` where its counter is set).
  void gather_device(const ExecSpace& space, std::uint64_t seed, std::uint64_t draw, const DeviceDraw& device_draw,
                     ReplayBatch& out) const;

 private:
  using HostView1f = Kokkos::View<float*, HostSpace>;
  using HostView1b = Kokkos::View<std::uint8_t*, HostSpace>;
  ReplaySpec spec_;
  ReplayStorage storage_ = ReplayStorage::device;
  std::int64_t cursor_ = 0, size_ = 0;
  // device storage
  View1<float> obs_, actions_, rewards_, next_obs_;
  View1<std::uint8_t> terminated_;
  Kokkos::View<std::int64_t, MemSpace> device_size_;  ///< size_ in device memory (device storage)
  // host storage, and the host-side batch staging of sample()
  HostView1f h_obs_, h_actions_, h_rewards_, h_next_obs_;
  HostView1b h_terminated_;
  mutable HostView1f s_obs_, s_actions_, s_rewards_, s_next_obs_;
  mutable HostView1b s_terminated_;
};

/// Index of sample j of draw `draw` in a buffer holding `size` transitions (host and device).
KOKKOS_INLINE_FUNCTION std::int64_t replay_index(std::uint64_t seed, std::uint64_t draw, std::uint64_t j,
                                                std::int64_t size) {
  const auto bits = rng::philox(seed, draw, rng::tag(rng::kReplay, j));
  const std::uint64_t r = (std::uint64_t(bits.v[0]) << 32) | bits.v[1];
  return std::int64_t(r % std::uint64_t(size));  // bias below size / 2^64
}

}  // namespace gmi::rl
