#include "kernels/core/fault.hpp"

namespace gmi::fault {

void launch_endless_kernel(const ExecSpace& space) {
  // Never freed: freeing device memory waits for the kernel, and the process ends with it.
  int* never_set = static_cast<int*>(Kokkos::kokkos_malloc<MemSpace>("gmi::fault::never_set", sizeof(int)));
  Kokkos::deep_copy(space, Kokkos::View<int, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(never_set), 0);
  Kokkos::parallel_for(
      "gmi::fault::endless", Range(space, 0, 1), KOKKOS_LAMBDA(const int) {
        volatile int* f = never_set;
        while (*f == 0) {
        }
      });
}

}  // namespace gmi::fault
