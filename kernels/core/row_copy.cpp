#include "kernels/core/row_copy.hpp"

#include <cstring>
#include <string>

#include "kernels/core/error.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi {

void copy_rows(const ExecSpace& space, std::byte* dst, std::size_t dst_pitch, const std::byte* src,
               std::size_t src_pitch, std::size_t width, std::size_t height) {
  if (width == 0 || height == 0) return;
  GMI_REQUIRE(dst_pitch >= width && src_pitch >= width,
              "copy_rows: rows of " + std::to_string(width) + " bytes with pitches " + std::to_string(src_pitch) +
                  " (from) and " + std::to_string(dst_pitch) + " (to)");
#if defined(KOKKOS_ENABLE_CUDA)
  GMI_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToDevice,
                                   space.cuda_stream()));
#else
  (void)space;
  for (std::size_t r = 0; r < height; ++r) std::memcpy(dst + r * dst_pitch, src + r * src_pitch, width);
#endif
}

}  // namespace gmi
