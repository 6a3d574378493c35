// SideStream (kernels/core/side_stream.hpp): work forked to the side instance sees what the main
// instance issued before the fork, and the main instance sees the side's work after a join, both
// with direct launches and replayed from a captured graph (CapturedSequence).  On GPU builds the
// two are separate streams and the main stream's first kernel is slow, so a missing dependency
// shows as wrong values; host builds run in issue order.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/core/graph.hpp"
#include "kernels/core/side_stream.hpp"
#include "tests/support/test_util.hpp"

namespace gmi {
namespace {

constexpr std::int64_t kN = 1 << 18;
#if defined(KOKKOS_ENABLE_CUDA)
constexpr int kSlow = 20000;  // about 0.1 ms on an H100: long enough for an unordered side kernel to overtake
#else
constexpr int kSlow = 10;
#endif

/// main: A = v (slowly: a loop per element), fork; side: B = A + 1; join; main: C = 2 B.
void chain(const ExecSpace& main, SideStream& side, const View1<float>& A, const View1<float>& B,
           const View1<float>& C, const View1<float>& v) {
  auto a = A, b = B, c = C, value = v;
  Kokkos::parallel_for(
      "test::slow_fill", Range64(main, 0, kN), KOKKOS_LAMBDA(const std::int64_t i) {
        float x = value(0);
        for (int k = 0; k < kSlow; ++k) x = x * 1.0000001f + 1e-12f;  // time, not value
        a(i) = value(0) + (x - x);
      });
  side.fork(main);
  Kokkos::parallel_for("test::side_add", Range64(side.space(), 0, kN),
                       KOKKOS_LAMBDA(const std::int64_t i) { b(i) = a(i) + 1.0f; });
  side.join(main);
  Kokkos::parallel_for("test::main_double", Range64(main, 0, kN),
                       KOKKOS_LAMBDA(const std::int64_t i) { c(i) = 2.0f * b(i); });
}

void set_value(const View1<float>& v, float x) { Kokkos::deep_copy(v, x); }

int wrong(const View1<float>& C, float value) {
  const std::vector<float> c = test::to_host(C);
  int bad = 0;
  for (float x : c) bad += x != 2.0f * (value + 1.0f);
  return bad;
}

TEST(SideStream, ForkAndJoinOrderTheWork) {
  ExecSpace main;
  SideStream side;
  View1<float> A("A", kN), B("B", kN), C("C", kN), v("v", 1);
  for (int rep = 0; rep < 20; ++rep) {
    set_value(v, float(rep));
    chain(main, side, A, B, C, v);
    main.fence();
    ASSERT_EQ(wrong(C, float(rep)), 0) << "repetition " << rep;
  }
}

TEST(SideStream, ForksAndJoinsReplayFromACapturedGraph) {
  ExecSpace main;
  SideStream side;
  View1<float> A("A", kN), B("B", kN), C("C", kN), v("v", 1);
  CapturedSequence seq("test side stream", true);
  for (int rep = 0; rep < 6; ++rep) {
    set_value(v, float(10 + rep));
    Kokkos::fence();
    seq.run(main, [&] { chain(main, side, A, B, C, v); });
    main.fence();
    ASSERT_EQ(wrong(C, float(10 + rep)), 0) << "run " << rep << (seq.captured() ? " (replayed)" : "");
  }
}

}  // namespace
}  // namespace gmi
