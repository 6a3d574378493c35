#pragma once
// Helpers shared by the tests: host<->device copies of flat buffers, config error lines, short
// training runs.
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/host_copy.hpp"
#include "kernels/core/kokkos.hpp"
#include "src/algos/trainer.hpp"
#include "src/config/config.hpp"

namespace gmi::test {

template <class T>
View1<T> to_device(const std::vector<T>& h, const char* label = "gmi::test::buffer") {
  return device_copy(label, h);
}

template <class T>
std::vector<T> to_host(const View1<T>& d) {
  return gmi::to_host(d);
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

/// The weights after `iterations` iterations of a trainer of `cfg` (one GMI), each iteration's
/// metrics into `ms` when given.
inline std::vector<float> train(const config::Config& cfg, int iterations,
                                std::vector<algos::IterationMetrics>* ms = nullptr) {
  auto t = algos::make_trainer(cfg, 0);
  for (int i = 0; i < iterations; ++i) {
    const auto m = t->iterate();
    if (ms) ms->push_back(m);
  }
  return t->params_host();
}

}  // namespace gmi::test
