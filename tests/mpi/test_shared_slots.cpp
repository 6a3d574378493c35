// Shared rollout buffers (mpi/shared_slots.hpp) under mpiexec, with the strided copies that fill
// and empty them (kernels/core/row_copy.hpp): every producer's bytes reach its consumer through
// each buffer, at the consumer's column of a wider row; both ends' layouts must agree; one node
// (one GPU on GPU builds) shares.  The reference is the pattern each producer wrote, computed
// again on the consumer.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"
#include "kernels/core/row_copy.hpp"
#include "mpi/shared_slots.hpp"
#include "mpi/topology.hpp"

namespace gmi::mpi {
namespace {

constexpr std::size_t kRows = 4, kWidth = 250;  // a buffer: 4 rows of 250 bytes

std::byte pattern(int producer, int slot, std::size_t i) { return std::byte((producer * 31 + slot * 7 + i) % 251); }

std::byte* bytes(View1<std::uint8_t>& v) { return reinterpret_cast<std::byte*>(v.data()); }

/// v(i) = i + 1 (a device lambda outside a test body, as CUDA requires).
void fill_counting(const ExecSpace& space, View1<std::uint8_t> v) {
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<ExecSpace>(space, 0, v.extent(0)), KOKKOS_LAMBDA(int i) { v(i) = std::uint8_t(i + 1); });
}

TEST(SharedSlots, EveryProducersBytesReachItsConsumerThroughEachBuffer) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  const std::vector<Route> routes = size > 1 ? routes_to_first(size, 1) : std::vector<Route>{};
  EXPECT_EQ(why_not_shared(MPI_COMM_WORLD, routes), "");
  SharedSlots slots(MPI_COMM_WORLD, routes, kRows * kWidth, 2, 42);
  EXPECT_EQ(slots.bytes(), 1024u);  // rounded up to 256 bytes
  EXPECT_EQ(slots.slots(), 2);
  const ExecSpace space;
  // Every buffer written before any is read: buffers that aliased one another would fail.
  if (me > 0)  // a producer: its pattern per buffer, rows of kWidth, packed
    for (int slot = 0; slot < 2; ++slot) {
      std::vector<std::byte> h(kRows * kWidth);
      for (std::size_t i = 0; i < h.size(); ++i) h[i] = pattern(me, slot, i);
      View1<std::uint8_t> staged("staged", h.size());
      Kokkos::deep_copy(staged, Kokkos::View<const std::uint8_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                    reinterpret_cast<const std::uint8_t*>(h.data()), h.size()));
      copy_rows(space, slots.own(slot), kWidth, bytes(staged), kWidth, kWidth, kRows);
      space.fence();
    }
  slots.sync();
  MPI_Barrier(MPI_COMM_WORLD);  // the buffers are complete
  slots.sync();
  if (me == 0 && size > 1)  // the consumer: producer k's rows at column k of rows (size - 1) x kWidth wide
    for (int slot = 0; slot < 2; ++slot) {
      const std::size_t P = std::size_t(size - 1), pitch = P * kWidth;
      View1<std::uint8_t> wide("wide", kRows * pitch);
      for (std::size_t k = 0; k < P; ++k)
        copy_rows(space, bytes(wide) + k * kWidth, pitch, slots.producer(k, slot), kWidth, kWidth, kRows);
      space.fence();
      auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), wide);
      for (std::size_t k = 0; k < P; ++k)
        for (std::size_t r = 0; r < kRows; ++r)
          for (std::size_t c = 0; c < kWidth; ++c)
            ASSERT_EQ(std::byte(h(r * pitch + k * kWidth + c)), pattern(int(k) + 1, slot, r * kWidth + c))
                << "producer " << k + 1 << ", buffer " << slot << ", row " << r << ", byte " << c;
    }
  MPI_Barrier(MPI_COMM_WORLD);  // read before the buffers go
  if (me > 0) EXPECT_THROW(slots.producer(0, 0), Error);  // a producer consumes nothing
  if (me == 0) EXPECT_THROW(slots.own(0), Error);         // the consumer owns no buffer
}

TEST(SharedSlots, EndsThatDisagreeOnTheLayoutAreAnError) {
  const int size = comm_size(MPI_COMM_WORLD), me = comm_rank(MPI_COMM_WORLD);
  if (size < 2) GTEST_SKIP() << "needs a producer and a consumer";
  try {
    SharedSlots slots(MPI_COMM_WORLD, routes_to_first(size, 1), 100, 1, me == size - 1 ? 8 : 7);
    FAIL() << "expected gmi::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fills them with another layout than its consumer"), std::string::npos)
        << e.what();
  }
}

TEST(RowCopy, CopiesRowsBetweenPitchesAndNothingWhenEmpty) {
  const ExecSpace space;
  View1<std::uint8_t> from("from", 3 * 8), to("to", 3 * 12);
  fill_counting(space, from);
  copy_rows(space, bytes(to) + 2, 12, bytes(from) + 1, 8, 5, 3);  // 5 bytes of each row
  copy_rows(space, bytes(to), 12, bytes(from), 8, 0, 3);          // nothing
  space.fence();
  auto h = Kokkos::create_mirror_view_and_copy(HostSpace(), to);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 12; ++c) {
      const int want = c >= 2 && c < 7 ? int(r * 8 + (c - 2) + 1 + 1) : 0;
      EXPECT_EQ(int(h(r * 12 + c)), want) << "row " << r << ", byte " << c;
    }
  EXPECT_THROW(copy_rows(space, bytes(to), 4, bytes(from), 8, 5, 1), Error);  // a pitch below the width
}

}  // namespace
}  // namespace gmi::mpi
