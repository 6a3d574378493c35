#include "kernels/core/side_stream.hpp"

#include "kernels/core/error.hpp"
#include "kernels/core/stream_hooks.hpp"

#include <algorithm>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi {

namespace {
std::vector<void (*)(void*)>& hooks() {
  static std::vector<void (*)(void*)> h;
  return h;
}
}  // namespace

void on_stream_destroyed(void (*hook)(void* stream)) {
  if (std::find(hooks().begin(), hooks().end(), hook) == hooks().end()) hooks().push_back(hook);
}

void run_stream_destroyed_hooks(void* stream) {
  for (auto* h : hooks()) h(stream);
}

#if defined(KOKKOS_ENABLE_CUDA)

namespace {
cudaStream_t make_stream() {
  cudaStream_t s = nullptr;
  GMI_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
}  // namespace

SideStream::SideStream() : stream_(make_stream()), space_(static_cast<cudaStream_t>(stream_)) {
  cudaEvent_t f = nullptr, j = nullptr;
  GMI_CUDA_CHECK(cudaEventCreateWithFlags(&f, cudaEventDisableTiming));
  GMI_CUDA_CHECK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
  forked_ = f;
  joined_ = j;
}

SideStream::~SideStream() {
  space_ = ExecSpace();  // the instance on our stream goes before the stream
  if (stream_) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    run_stream_destroyed_hooks(stream_);  // per-stream library state (cuBLAS handles, workspaces)
  }
  if (forked_) cudaEventDestroy(static_cast<cudaEvent_t>(forked_));
  if (joined_) cudaEventDestroy(static_cast<cudaEvent_t>(joined_));
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

bool SideStream::capturing(const ExecSpace& space) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  GMI_CUDA_CHECK(cudaStreamIsCapturing(space.cuda_stream(), &status));
  return status != cudaStreamCaptureStatusNone;
}

void SideStream::fork(const ExecSpace& main) {
  GMI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(forked_), main.cuda_stream()));
  GMI_CUDA_CHECK(cudaStreamWaitEvent(space_.cuda_stream(), static_cast<cudaEvent_t>(forked_), 0));
}

void SideStream::join(const ExecSpace& main) {
  GMI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(joined_), space_.cuda_stream()));
  GMI_CUDA_CHECK(cudaStreamWaitEvent(main.cuda_stream(), static_cast<cudaEvent_t>(joined_), 0));
}

#else  // host builds: one instance, issue order

SideStream::SideStream() = default;
SideStream::~SideStream() = default;
bool SideStream::capturing(const ExecSpace&) { return false; }
void SideStream::fork(const ExecSpace& main) { main.fence(); }
void SideStream::join(const ExecSpace&) { space_.fence(); }

#endif

}  // namespace gmi
