#pragma once
/// \file
/// \brief Kokkos initialisation on an explicitly chosen device (never Kokkos' round-robin default),
/// finalisation on scope exit, and a one-line description of the device in use.
#include <string>

namespace gmi::instances {

class KokkosScope {
 public:
  /// \param device_id GPU to use on CUDA builds (ignored on host builds); -1 keeps device 0.
  explicit KokkosScope(int device_id = -1);
  ~KokkosScope();
  KokkosScope(const KokkosScope&) = delete;
  KokkosScope& operator=(const KokkosScope&) = delete;
};

/// e.g. "CUDA device 0: NVIDIA H100 80GB HBM3, 132 SMs" or "host (Kokkos Serial)".
std::string device_description();

}  // namespace gmi::instances
