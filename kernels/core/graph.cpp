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
  for (void* x : execs_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(x));
  for (void* g : graphs_) cudaGraphDestroy(static_cast<cudaGraph_t>(g));
  execs_.clear();
  graphs_.clear();
  ops_.clear();
}

void CapturedSequence::begin_capture() {
  // Thread-local capture: other threads (the reduction watch) may keep calling CUDA meanwhile.
  GMI_CUDA_CHECK(cudaStreamBeginCapture(space_.cuda_stream(), cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

void CapturedSequence::end_capture() {
  capturing_ = false;
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(space_.cuda_stream(), &g);
  if (e != cudaSuccess || !g) {
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();  // clear the sticky-free capture error
    reset();
    throw Error(name_ + ": capturing the launches into a CUDA graph failed (" + cudaGetErrorString(e) +
                "); set device.graphs: off");
  }
  cudaGraphExec_t x = nullptr;
  const cudaError_t ie = cudaGraphInstantiate(&x, g, 0);
  if (ie != cudaSuccess) {
    cudaGraphDestroy(g);
    reset();
    GMI_CUDA_CHECK(ie);
  }
  graphs_.push_back(g);
  execs_.push_back(x);
  GMI_CUDA_CHECK(cudaGraphLaunch(x, space_.cuda_stream()));
}

void CapturedSequence::uncaptured(const std::function<void()>& op) {
  if (!capturing_) {
    op();
    return;
  }
  end_capture();
  op();
  ops_.push_back(op);
  begin_capture();
}

void CapturedSequence::run(const ExecSpace& space, const std::function<void()>& launch) {
  if (!enabled_) {
    launch();
    return;
  }
  if (execs_.empty()) {
    space_ = space;
    begin_capture();
    try {
      launch();
    } catch (...) {
      if (capturing_) {
        cudaGraph_t g = nullptr;
        cudaStreamEndCapture(space_.cuda_stream(), &g);
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        capturing_ = false;
      }
      reset();
      throw;
    }
    end_capture();
    return;
  }
  GMI_REQUIRE(space.cuda_stream() == space_.cuda_stream(), name_ + ": replayed on another stream than it was captured on");
  for (std::size_t i = 0; i < execs_.size(); ++i) {
    GMI_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(execs_[i]), space_.cuda_stream()));
    if (i < ops_.size()) ops_[i]();
  }
}

#else

bool graphs_available() { return false; }
void CapturedSequence::reset() {}
void CapturedSequence::uncaptured(const std::function<void()>& op) { op(); }
void CapturedSequence::run(const ExecSpace&, const std::function<void()>& launch) { launch(); }

#endif

}  // namespace gmi
