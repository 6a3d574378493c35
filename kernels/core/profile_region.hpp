#pragma once
/// \file
/// \brief A Kokkos profiling region for the span of a scope, named only while a Kokkos tool
/// listens (bench --kernel-times times library calls, which Kokkos cannot see, by these).
#include <string>
#include <utility>

#include "kernels/core/kokkos.hpp"

namespace gmi {

/// Pushes the region `name()` names (called only while a tool listens) and pops it at scope end.
class ProfileRegion {
 public:
  template <class Name>
  explicit ProfileRegion(Name&& name) : on_(Kokkos::Tools::profileLibraryLoaded()) {
    if (on_) Kokkos::Profiling::pushRegion(std::forward<Name>(name)());
  }
  ~ProfileRegion() {
    if (on_) Kokkos::Profiling::popRegion();
  }
  ProfileRegion(const ProfileRegion&) = delete;
  ProfileRegion& operator=(const ProfileRegion&) = delete;

 private:
  bool on_;
};

}  // namespace gmi
