#pragma once
/// \file
/// \brief A second execution-space instance beside a main one, for independent work that can run
/// at the same time as the main chain (a layer's weight gradient beside the next layer's input
/// gradient, a target network's forward pass beside the online one's).  fork() makes the side
/// instance wait for what the main one has issued so far; join() makes the main one wait for what
/// the side one has.  Inside a CUDA graph capture of the main instance the two become parallel
/// branches of the graph.  Host builds have one instance: side work runs in issue order.
#include <memory>

#include "kernels/core/kokkos.hpp"

namespace gmi {

class SideStream {
 public:
  /// CUDA builds: a new non-blocking stream and two events (outside any capture).
  SideStream();
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  /// Whether `space` is being captured into a CUDA graph (false on host builds).
  static bool capturing(const ExecSpace& space);

  const ExecSpace& space() const { return space_; }
  /// The side instance waits for the work `main` has issued so far.
  void fork(const ExecSpace& main);
  /// `main` waits for the work the side instance has issued so far.
  void join(const ExecSpace& main);

 private:
  void* stream_ = nullptr;  ///< cudaStream_t (CUDA builds)
  void* forked_ = nullptr;  ///< cudaEvent_t
  void* joined_ = nullptr;  ///< cudaEvent_t
  ExecSpace space_;
};

}  // namespace gmi
