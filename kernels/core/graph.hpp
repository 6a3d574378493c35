#pragma once
/// \file
/// \brief A sequence of launches on one execution-space instance, captured once into a CUDA graph
/// and replayed afterwards (device.graphs): one launch instead of hundreds where launch latency
/// dominates (small env counts, short rollouts).  The sequence must launch the same work on every
/// run: kernel arguments are frozen at capture, so whatever changes between runs lives in device
/// memory (e.g. the rollout's step base).  Host builds, and a disabled sequence, run it directly.
#include <functional>
#include <string>

#include "kernels/core/kokkos.hpp"

namespace gmi {

class CapturedSequence {
 public:
  /// `name` appears in errors; `enabled` false: always run directly.
  CapturedSequence(std::string name, bool enabled);
  ~CapturedSequence();
  CapturedSequence(const CapturedSequence&) = delete;
  CapturedSequence& operator=(const CapturedSequence&) = delete;

  /// Run `launch` (which enqueues work on `space` and nothing else: no fences, no host reads of
  /// device results, no allocations).  The first run captures it and launches the graph; later
  /// runs launch the graph only.  Throws gmi::Error if the capture fails.
  void run(const ExecSpace& space, const std::function<void()>& launch);
  /// Forget the graph (the next run captures again), e.g. after buffers moved.
  void reset();
  /// Whether runs replay a graph (CUDA builds, enabled, captured).
  bool captured() const { return exec_ != nullptr; }
  bool enabled() const { return enabled_; }

 private:
  std::string name_;
  bool enabled_;
  void* graph_ = nullptr;  ///< cudaGraph_t
  void* exec_ = nullptr;   ///< cudaGraphExec_t
};

/// Whether this build can capture graphs (CUDA).
bool graphs_available();

}  // namespace gmi
