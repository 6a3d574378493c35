#include "mpi/device_group.hpp"

#include <vector>

#include "kernels/core/error.hpp"
#include "mpi/topology.hpp"

#if defined(GMI_HAVE_NCCL)
#include <nccl.h>
#endif

namespace gmi::mpi {
namespace {

#if defined(KOKKOS_ENABLE_CUDA)
using StageSpace = Kokkos::CudaHostPinnedSpace;
#else
using StageSpace = Kokkos::HostSpace;
#endif

template <class Space>
using Unmanaged = Kokkos::View<float*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

}  // namespace

Transport ring_transport() {
#if defined(GMI_HAVE_NCCL)
  return Transport::nccl;
#else
  return Transport::host;
#endif
}

struct DeviceGroup::Impl {
  Kokkos::View<float*, StageSpace> staging;
#if defined(GMI_HAVE_NCCL)
  ncclComm_t nccl = nullptr;
#endif
};

DeviceGroup::DeviceGroup(MPI_Comm comm, Transport t, std::size_t max_elements)
    : transport_(t), max_elements_(max_elements), impl_(std::make_unique<Impl>()) {
  if (comm == MPI_COMM_NULL) return;
  GMI_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  size_ = comm_size(comm_);
  rank_ = comm_rank(comm_);
#if defined(GMI_HAVE_NCCL)
  if (transport_ == Transport::nccl) {
    ncclUniqueId id;
    if (rank_ == 0) GMI_NCCL_CHECK(ncclGetUniqueId(&id));
    GMI_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm_));
    GMI_NCCL_CHECK(ncclCommInitRank(&impl_->nccl, size_, id, rank_));
    return;
  }
#endif
  if (!device_is_host())
    impl_->staging = Kokkos::View<float*, StageSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("gmi::mpi::staging")), max_elements);
}

DeviceGroup::~DeviceGroup() {
#if defined(GMI_HAVE_NCCL)
  if (impl_ && impl_->nccl) ncclCommDestroy(impl_->nccl);
#endif
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

float* DeviceGroup::stage(const ExecSpace& space, float* data, std::size_t n) {
  GMI_REQUIRE(n <= max_elements_, "buffer larger than the group's capacity");
  if (device_is_host()) {
    space.fence();
    return data;
  }
  Unmanaged<StageSpace> h(impl_->staging.data(), n);
  Kokkos::deep_copy(space, h, Unmanaged<MemSpace>(data, n));
  space.fence();
  return h.data();
}

void DeviceGroup::unstage(const ExecSpace& space, float* data, std::size_t n) {
  if (device_is_host()) return;
  Kokkos::deep_copy(space, Unmanaged<MemSpace>(data, n), Unmanaged<StageSpace>(impl_->staging.data(), n));
}

void DeviceGroup::allreduce_sum(const ExecSpace& space, float* data, std::size_t n) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (impl_->nccl) {
    GMI_NCCL_CHECK(ncclAllReduce(data, data, n, ncclFloat, ncclSum, impl_->nccl, space.cuda_stream()));
    return;
  }
#endif
  float* h = stage(space, data, n);
  GMI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, h, int(n), MPI_FLOAT, MPI_SUM, comm_));
  unstage(space, data, n);
}

void DeviceGroup::bcast(const ExecSpace& space, float* data, std::size_t n, int root) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (impl_->nccl) {
    GMI_NCCL_CHECK(ncclBroadcast(data, data, n, ncclFloat, root, impl_->nccl, space.cuda_stream()));
    return;
  }
#endif
  float* h = rank_ == root ? stage(space, data, n) : (space.fence(), device_is_host() ? data : impl_->staging.data());
  GMI_MPI_CHECK(MPI_Bcast(h, int(n), MPI_FLOAT, root, comm_));
  if (rank_ != root) unstage(space, data, n);
}

void DeviceGroup::reduce_sum(const ExecSpace& space, float* data, std::size_t n, int root) {
  if (!active() || size_ == 1 || n == 0) return;
#if defined(GMI_HAVE_NCCL)
  if (impl_->nccl) {
    GMI_NCCL_CHECK(ncclReduce(data, data, n, ncclFloat, ncclSum, root, impl_->nccl, space.cuda_stream()));
    return;
  }
#endif
  float* h = stage(space, data, n);
  if (rank_ == root) {
    GMI_MPI_CHECK(MPI_Reduce(MPI_IN_PLACE, h, int(n), MPI_FLOAT, MPI_SUM, root, comm_));
    unstage(space, data, n);
  } else {
    GMI_MPI_CHECK(MPI_Reduce(h, nullptr, int(n), MPI_FLOAT, MPI_SUM, root, comm_));
  }
}

void scale(const ExecSpace& space, float* data, std::size_t n, float s) {
  Kokkos::parallel_for(
      "gmi::mpi::scale", Range64(space, 0, std::int64_t(n)),
      KOKKOS_LAMBDA(const std::int64_t i) { data[i] *= s; });
}

}  // namespace gmi::mpi
