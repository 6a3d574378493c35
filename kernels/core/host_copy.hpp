#pragma once
/// \file
/// \brief Copies between device views and host vectors (checkpoints, tools, tests of trainers):
/// the whole view each way, sizes checked.  Each copy fences (Kokkos::deep_copy without a space).
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"

namespace gmi {

/// Every element of a contiguous view (or subview) on the host.
template <class V>
std::vector<typename V::non_const_value_type> to_host(const V& v) {
  using T = typename V::non_const_value_type;
  std::vector<T> out(v.extent(0));
  Kokkos::deep_copy(Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(out.data(), out.size()), v);
  return out;
}

/// Overwrite `v` with `h`; throws gmi::Error naming `what` when the sizes differ.
template <class V, class T>
void to_device(const V& v, const std::vector<T>& h, const std::string& what) {
  GMI_REQUIRE(h.size() == v.extent(0), "'" + what + "': " + std::to_string(h.size()) + " values, expected " +
                                           std::to_string(v.extent(0)));
  Kokkos::deep_copy(v, Kokkos::View<const T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()));
}

/// A new device view holding `h`.
template <class T>
View1<T> device_copy(const std::string& label, const std::vector<T>& h) {
  View1<T> d(label, h.size());
  to_device(d, h, label);
  return d;
}

}  // namespace gmi
