#pragma once
/// \file
/// \brief The one error header: exception types and the GMI_*_CHECK macros for every library
/// gmi_drl calls.  A failed call throws gmi::Error whose text names the call, the library's own
/// message, file:line, and the rank and host (set once at start-up by set_error_context).
///
/// Two kinds of failure (STYLE.md, practice 6):
///  * gmi::InputError — the user's input is wrong (config, command line, a data file).  Every rank
///    sees the same input, so every rank raises the same error and rank 0 prints one line.
///  * gmi::Error — something failed on this rank (OOM, a CUDA or NCCL error).  That rank prints
///    and the job is aborted.
/// The macros only expand to calls; the library headers are included where the calls are made,
/// so kernels/ never needs mpi.h and a CPU build never needs cuda_runtime.h.
#include <stdexcept>
#include <string>

namespace gmi {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad user input: reported as one line, exit status 2.
class InputError : public Error {
 public:
  using Error::Error;
};

/// Rank and host named in error messages (before MPI is up: rank -1, this host).
void set_error_context(int rank, const std::string& host);
std::string error_context();

namespace detail {
[[noreturn]] void fail_call(const char* library, const char* call, const std::string& detail,
                            const char* file, int line);
}  // namespace detail

}  // namespace gmi

#define GMI_CUDA_CHECK(call)                                                                 \
  do {                                                                                       \
    const cudaError_t gmi_e_ = (call);                                                       \
    if (gmi_e_ != cudaSuccess)                                                               \
      ::gmi::detail::fail_call("CUDA", #call, cudaGetErrorString(gmi_e_), __FILE__, __LINE__); \
  } while (0)

#define GMI_CUBLAS_CHECK(call)                                                                \
  do {                                                                                        \
    const cublasStatus_t gmi_s_ = (call);                                                     \
    if (gmi_s_ != CUBLAS_STATUS_SUCCESS)                                                      \
      ::gmi::detail::fail_call("cuBLAS", #call, cublasGetStatusString(gmi_s_), __FILE__, __LINE__); \
  } while (0)

#define GMI_NCCL_CHECK(call)                                                                  \
  do {                                                                                        \
    const ncclResult_t gmi_r_ = (call);                                                       \
    if (gmi_r_ != ncclSuccess)                                                                \
      ::gmi::detail::fail_call("NCCL", #call, ncclGetErrorString(gmi_r_), __FILE__, __LINE__); \
  } while (0)

#define GMI_MPI_CHECK(call)                                                                   \
  do {                                                                                        \
    const int gmi_m_ = (call);                                                                \
    if (gmi_m_ != MPI_SUCCESS)                                                                \
      ::gmi::detail::fail_call("MPI", #call, ::gmi::detail::mpi_error_string(gmi_m_), __FILE__, __LINE__); \
  } while (0)

/// HDF5 calls return a negative value (or H5I_INVALID_HID) on failure.
#define GMI_H5_CHECK(call)                                                                    \
  ([&]() {                                                                                    \
    const auto gmi_h_ = (call);                                                               \
    if (gmi_h_ < 0)                                                                           \
      ::gmi::detail::fail_call("HDF5", #call, ::gmi::detail::h5_error_string(), __FILE__, __LINE__); \
    return gmi_h_;                                                                            \
  }())

/// A precondition of a gmi_drl API: `GMI_REQUIRE(n > 0, "Mlp::forward: batch must be positive")`.
#define GMI_REQUIRE(cond, message)                                                  \
  do {                                                                              \
    if (!(cond)) ::gmi::detail::fail_call("gmi_drl", #cond, (message), __FILE__, __LINE__); \
  } while (0)

namespace gmi::detail {
/// Defined in mpi/ (MPI_Error_string) and src/io/ (the HDF5 error stack) respectively.
std::string mpi_error_string(int code);
std::string h5_error_string();
}  // namespace gmi::detail
