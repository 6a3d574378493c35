#pragma once
// Helpers shared by the tests: host<->device copies of flat buffers, config error lines.
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "src/config/config.hpp"

namespace gmi::test {

template <class T>
View1<T> to_device(const std::vector<T>& h, const char* label = "gmi::test::buffer") {
  View1<T> d(std::string(label), h.size());
  auto m = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < h.size(); ++i) m(i) = h[i];
  Kokkos::deep_copy(d, m);
  return d;
}

template <class T>
std::vector<T> to_host(const View1<T>& d) {
  auto m = Kokkos::create_mirror_view_and_copy(HostSpace(), d);
  return std::vector<T>(m.data(), m.data() + m.extent(0));
}

template <class T>
std::vector<T> to_host(const T* d, std::size_t n) {
  Kokkos::View<const T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(d, n);
  std::vector<T> h(n);
  Kokkos::View<T*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h.data(), n);
  Kokkos::deep_copy(hv, v);
  return h;
}

/// The one error line of a config with these keys set (as from a file named c.yaml), or
/// "no error".
inline std::string config_error(const config::Overrides& keys) {
  try {
    config::parse("{}", "c.yaml", keys);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace gmi::test
