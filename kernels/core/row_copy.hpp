#pragma once
/// \file
/// \brief Strided copies of rows of bytes in the memory an execution space computes in (device
/// memory on GPU builds, host memory on host builds): the device transport of the async
/// rollouts packs a serving GMI's arrays into a shared buffer and unpacks them into its
/// trainer's, a serving GMI's envs at their place among the trainer's (src/gmi/async_training.cpp).
#include <cstddef>

#include "kernels/core/kokkos.hpp"

namespace gmi {

/// `height` rows of `width` bytes from `src` (row starts `src_pitch` bytes apart) to `dst` (row
/// starts `dst_pitch` apart), enqueued on `space` (cudaMemcpy2DAsync on its stream; host builds
/// copy at once).  Both pitches at least `width`; nothing happens when width or height is 0.
void copy_rows(const ExecSpace& space, std::byte* dst, std::size_t dst_pitch, const std::byte* src,
               std::size_t src_pitch, std::size_t width, std::size_t height);

}  // namespace gmi
