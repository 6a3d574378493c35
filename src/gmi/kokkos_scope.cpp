#include "src/gmi/kokkos_scope.hpp"

#include <sstream>

#include "kernels/core/kokkos.hpp"
#include "kernels/nn/blas.hpp"
#include "mpi/device_watch.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>

#include "kernels/core/error.hpp"
#endif

namespace gmi::instances {

KokkosScope::KokkosScope(int device_id) {
  blas::init_host_threads();
#if KOKKOS_VERSION >= 40000
  Kokkos::InitializationSettings s;
  if (device_id >= 0) s.set_device_id(device_id);
  s.set_disable_warnings(true);
  Kokkos::initialize(s);
#else
  Kokkos::InitArguments a;
  a.device_id = device_id;
  a.disable_warnings = true;
  Kokkos::initialize(a);
#endif
}

KokkosScope::~KokkosScope() {
  mpi::stop_device_watch();  // its events belong to this CUDA context
  blas::release_handles();
  Kokkos::finalize();
}

std::string device_description() {
  std::ostringstream s;
#if defined(KOKKOS_ENABLE_CUDA)
  int dev = 0;
  GMI_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  GMI_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  s << "CUDA device " << dev << ": " << p.name << ", " << p.multiProcessorCount << " SMs, "
    << (p.totalGlobalMem >> 20) << " MiB";
#else
  s << "host (Kokkos " << KOKKOS_VERSION / 10000 << "." << KOKKOS_VERSION / 100 % 100
    << " Serial, OpenBLAS)";
#endif
  return s.str();
}

}  // namespace gmi::instances
