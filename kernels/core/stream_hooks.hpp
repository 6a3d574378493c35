#pragma once
/// \file
/// \brief What goes with a stream: libraries that keep state per CUDA stream (the cuBLAS handles
/// and cuBLASLt workspaces of kernels/nn/blas.cpp) register a hook, and a SideStream runs the
/// hooks with its cudaStream_t after synchronising it and before destroying it.

namespace gmi {

/// Adds `hook` (once per function; kept for the process's lifetime).
void on_stream_destroyed(void (*hook)(void* stream));
/// Runs every hook with `stream` (SideStream's destructor).
void run_stream_destroyed_hooks(void* stream);

}  // namespace gmi
