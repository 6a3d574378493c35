#pragma once
// Helpers for tests run under mpiexec.
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace gmi::test {

/// True when every rank of MPI_COMM_WORLD holds the same bytes in `v` (FNV-1a hash, min == max).
/// Collective.
template <class T>
bool same_on_all_ranks(const std::vector<T>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ b[i]) * 1099511628211ull;
  unsigned long long lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

}  // namespace gmi::test
