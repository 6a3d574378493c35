#pragma once
/// \file
/// \brief A sequence of launches on one execution-space instance, captured once into a CUDA graph
/// and replayed afterwards (device.graphs): one launch instead of hundreds where launch latency
/// dominates (small env counts, short rollouts).  The sequence must launch the same work on every
/// run: kernel arguments are frozen at capture, so whatever changes between runs lives in device
/// memory (e.g. the rollout's step base).  Host builds, and a disabled sequence, run it directly.
///
/// Work that cannot be captured (a reduction over MPI ranks) goes through uncaptured(): the
/// sequence is then a chain of graphs with that work between them, in the order it was issued.
#include <functional>
#include <string>
#include <vector>

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
  /// Inside `launch`: `op` runs on the host at this point of every run (it may enqueue work on
  /// the space and synchronise with it; what it touches must outlive the sequence).  While
  /// capturing, the graph captured so far is ended and launched first, and the capture goes on
  /// after `op`; later runs launch graph, op, graph, ... in the same order.
  void uncaptured(const std::function<void()>& op);
  /// Forget the graphs (the next run captures again), e.g. after buffers moved.
  void reset();
  /// Whether runs replay graphs (CUDA builds, enabled, captured).
  bool captured() const { return !execs_.empty() && !capturing_; }
  bool enabled() const { return enabled_; }
  /// Graphs a run launches (0 before the capture).
  int segments() const { return int(execs_.size()); }

 private:
  void begin_capture();
  void end_capture();  ///< instantiates the segment and launches it
  std::string name_;
  bool enabled_;
  bool capturing_ = false;
  ExecSpace space_;
  std::vector<void*> graphs_;  ///< cudaGraph_t, one per segment
  std::vector<void*> execs_;   ///< cudaGraphExec_t
  std::vector<std::function<void()>> ops_;  ///< ops_[i] runs after segment i
};

/// Whether this build can capture graphs (CUDA).
bool graphs_available();

}  // namespace gmi
