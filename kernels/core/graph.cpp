#include "kernels/core/graph.hpp"

#include <utility>

#include "kernels/core/error.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi {

CapturedSequence::CapturedSequence(std::string name, bool enabled)
    : name_(std::move(name)), enabled_(enabled && graphs_available()) {}

CapturedSequence::~CapturedSequence() { reset(); }

#if defined(KOKKOS_ENABLE_CUDA)

bool graphs_available() { return true; }

void CapturedSequence::reset() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  exec_ = graph_ = nullptr;
}

void CapturedSequence::run(const ExecSpace& space, const std::function<void()>& launch) {
  if (!enabled_) {
    launch();
    return;
  }
  cudaStream_t stream = space.cuda_stream();
  if (!exec_) {
    // Thread-local capture: other threads (the reduction watch) may keep calling CUDA meanwhile.
    GMI_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      launch();
    } catch (...) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream, &g);
      if (g) cudaGraphDestroy(g);
      throw;
    }
    cudaGraph_t g = nullptr;
    const cudaError_t e = cudaStreamEndCapture(stream, &g);
    if (e != cudaSuccess || !g) {
      if (g) cudaGraphDestroy(g);
      cudaGetLastError();  // clear the sticky-free capture error
      throw Error(name_ + ": capturing the launches into a CUDA graph failed (" + cudaGetErrorString(e) +
                  "); set device.graphs: off");
    }
    graph_ = g;
    cudaGraphExec_t x = nullptr;
    const cudaError_t ie = cudaGraphInstantiate(&x, g, 0);
    if (ie != cudaSuccess) {
      cudaGraphDestroy(g);
      graph_ = nullptr;
      GMI_CUDA_CHECK(ie);
    }
    exec_ = x;
  }
  GMI_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream));
}

#else

bool graphs_available() { return false; }
void CapturedSequence::reset() {}
void CapturedSequence::run(const ExecSpace&, const std::function<void()>& launch) { launch(); }

#endif

}  // namespace gmi
