// Signals as requests (src/runtime/signals.hpp): a SIGUSR2 checkpoint happens once per signal on
// every rank, however late the signal reached each one (mpirun forwards it rank by rank).
#include <gtest/gtest.h>

#include <csignal>

#include "src/runtime/signals.hpp"

namespace gmi::runtime {
namespace {

TEST(Signals, OneCheckpointPerSigusr2EvenWhereItArrivesLate) {
  SignalRequests s;
  EXPECT_EQ(s.checkpoint_requests(), 0);
  EXPECT_FALSE(s.checkpoint_requested(0));
  // Another rank saw the signal first: the ranks agree on its count (1) and this rank acts on it.
  EXPECT_TRUE(s.checkpoint_requested(1));
  // Then the signal reaches this rank, after that boundary: the agreed count is still 1.
  std::raise(SIGUSR2);
  EXPECT_EQ(s.checkpoint_requests(), 1);
  EXPECT_FALSE(s.checkpoint_requested(1));
  EXPECT_FALSE(s.checkpoint_requested(s.checkpoint_requests()));
  // A second signal is a second request.
  std::raise(SIGUSR2);
  EXPECT_TRUE(s.checkpoint_requested(s.checkpoint_requests()));
  EXPECT_FALSE(s.checkpoint_requested(2));
  EXPECT_EQ(s.stop_signal(), 0);
}

TEST(Signals, StopSignalIsTheFirstOne) {
  SignalRequests s;
  std::raise(SIGUSR1);
  std::raise(SIGTERM);
  EXPECT_EQ(s.stop_signal(), SIGUSR1);
}

}  // namespace
}  // namespace gmi::runtime
