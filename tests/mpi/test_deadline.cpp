// Bounded waits (mpi/deadline.hpp): a wait that runs out runs the census and throws one line;
// ranks are named compactly; progress says where a GMI is.  Run under mpiexec (and alone).
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <regex>
#include <thread>

#include "mpi/deadline.hpp"
#include "mpi/progress.hpp"

namespace gmi::mpi {
namespace {

TEST(Deadline, RanksAreNamedCompactly) {
  EXPECT_EQ(ranks_text({3}), "rank 3");
  EXPECT_EQ(ranks_text({2, 0, 1}), "ranks 0-2");
  EXPECT_EQ(ranks_text({0, 2, 3, 4, 7, 8}), "ranks 0, 2-4, 7, 8");
}

TEST(Deadline, ProgressSaysWhereTheGmiIs) {
  Progress p;
  EXPECT_EQ(p.where(), "set-up");
  p.iteration(5);
  p.phase("update");
  EXPECT_EQ(p.where(), "iteration 5");
  p.minibatch(1, 3);
  EXPECT_EQ(p.where(), "iteration 5, epoch 1, minibatch 3");
  EXPECT_STREQ(p.phase(), "update");
  EXPECT_LT(p.idle_seconds(), 5.0);
}

// The other ranks stay out of a collective for longer than the timeout but are alive: rank 0's
// wait runs out, the census finds every rank answering, and all end with a TimeoutError saying so.
// (The only census of the process: it consumes the standing receive.)
TEST(Deadline, AWaitThatRunsOutEndsInTheCensus) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const double saved = timeout();
  set_timeout(1.0);
  set_abort_on_timeout(false);  // throw the line instead of ending the test
  double x = 1;
  MPI_Request req = MPI_REQUEST_NULL;
  std::string line;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (rank != 0) {
      // Alive but late: joins the census once it sees one.
      while (!interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      give_up("nothing in particular", {}, 0.0);
    } else {
      MPI_Iallreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
      wait(req, MPI_COMM_WORLD, "MPI_Iallreduce");
    }
  } catch (const TimeoutError& e) {
    line = e.what();
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  set_timeout(saved);
  set_abort_on_timeout(true);
  if (rank == 0) {
    EXPECT_TRUE(std::regex_search(line, std::regex(R"(^reduce\.timeout_s \(1 s\) ran out at set-up: rank 0 waited 1\.\d s for MPI_Iallreduce with ranks? 1)")))
        << line;
    EXPECT_NE(line.find("every rank answered, so none is stuck"), std::string::npos) << line;
    EXPECT_LT(took, 1.0 + census_grace());  // the reporter does not wait for the others
  } else {
    EXPECT_NE(line.find("ran out on another GMI"), std::string::npos) << line;
  }
  // Leave MPI consistent for the tests that follow: complete the collective everywhere.
  if (rank != 0) MPI_Iallreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  EXPECT_EQ(x, double(size));
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace gmi::mpi
