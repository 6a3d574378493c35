// The host-simulated environments' thread pool: every index of a job exactly once, whatever the
// threads, grain and sizes; queued jobs run while the caller goes on and are waited for in order;
// exceptions reach the waiter without losing the other chunks; pinned workers sit on CPUs of the
// affinity mask.
#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/mujoco/thread_pool.hpp"

namespace gmi::envs::mujoco {
namespace {

/// A counter per index, bumped by every chunk that covers it.
struct Hits {
  explicit Hits(int n) : v(std::size_t(n)) {}
  std::vector<std::atomic<int>> v;
  std::function<void(int, int)> bump() {
    return [this](int b, int e) {
      ASSERT_LT(b, e);
      for (int i = b; i < e; ++i) v[std::size_t(i)].fetch_add(1);
    };
  }
  bool each_once() const {
    for (const auto& x : v)
      if (x.load() != 1) return false;
    return true;
  }
};

TEST(ThreadPool, RunCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8})
    for (int grain : {1, 3})
      for (int n : {0, 1, 2, 3, 7, 64, 1000}) {
        ThreadPool pool(ThreadPool::Options{threads, false, grain});
        for (int rep = 0; rep < 20; ++rep) {
          Hits h(n);
          pool.run(n, h.bump());
          ASSERT_TRUE(h.each_once()) << threads << " threads, grain " << grain << ", n " << n;
        }
      }
}

TEST(ThreadPool, QueuedJobsRunWhileTheCallerGoesOnAndAreWaitedInOrder) {
  ThreadPool pool(3);
  std::atomic<bool> go{false};
  std::atomic<int> ran{0};
  // The first job waits for the caller: submit must have returned before it can end.
  const auto first = pool.submit(2, [&](int b, int e) {
    while (!go.load()) std::this_thread::yield();
    ran += e - b;
  });
  std::vector<Hits> hits;
  hits.reserve(10);
  std::vector<ThreadPool::Job> jobs;
  for (int k = 0; k < 10; ++k) {
    hits.emplace_back(17 * k + 5);
    jobs.push_back(pool.submit(17 * k + 5, hits.back().bump()));
  }
  go = true;
  pool.wait(first);
  EXPECT_EQ(ran.load(), 2);
  for (int k = 0; k < 10; ++k) {
    pool.wait(jobs[std::size_t(k)]);
    EXPECT_TRUE(hits[std::size_t(k)].each_once()) << "job " << k;
  }
}

TEST(ThreadPool, OneThreadRunsQueuedJobsWhenWaitedFor) {
  ThreadPool pool(1);
  Hits a(9), b(4);
  const auto ja = pool.submit(9, a.bump()), jb = pool.submit(4, b.bump());
  pool.wait(ja);
  pool.wait(jb);
  EXPECT_TRUE(a.each_once());
  EXPECT_TRUE(b.each_once());
}

TEST(ThreadPool, ExceptionsReachTheWaiterAndTheOtherChunksStillRun) {
  ThreadPool pool(4);
  Hits h(100);
  auto f = h.bump();
  EXPECT_THROW(pool.run(100,
                        [&](int b, int e) {
                          f(b, e);
                          if (b <= 50 && 50 < e) throw std::runtime_error("env 50");
                        }),
               std::runtime_error);
  EXPECT_TRUE(h.each_once());
  const auto bad = pool.submit(8, [](int b, int) {
    if (b == 3) throw std::runtime_error("env 3");
  });
  Hits after(8);
  const auto good = pool.submit(8, after.bump());
  EXPECT_THROW(pool.wait(bad), std::runtime_error);
  EXPECT_NO_THROW(pool.wait(good));
  EXPECT_TRUE(after.each_once());
  Hits again(30);
  EXPECT_NO_THROW(pool.run(30, again.bump()));  // the pool goes on
  EXPECT_TRUE(again.each_once());
}

TEST(ThreadPool, AtMost64JobsWait) {
  ThreadPool pool(2);
  std::vector<ThreadPool::Job> jobs;
  for (int k = 0; k < 64; ++k) jobs.push_back(pool.submit(1, [](int, int) {}));
  EXPECT_THROW(pool.submit(1, [](int, int) {}), Error);
  pool.wait(jobs[0]);
  jobs.push_back(pool.submit(1, [](int, int) {}));  // room for one more
  for (std::size_t k = 1; k < jobs.size(); ++k) pool.wait(jobs[k]);
}

TEST(ThreadPool, ManyMixedJobs) {
  ThreadPool pool(ThreadPool::Options{4, false, 2});
  std::mt19937 g(11);
  for (int round = 0; round < 200; ++round) {
    const int queued = 1 + int(g() % 5);
    std::vector<std::unique_ptr<Hits>> hits;
    std::vector<ThreadPool::Job> jobs;
    for (int k = 0; k < queued; ++k) {
      const int n = int(g() % 40);
      hits.push_back(std::make_unique<Hits>(n));
      jobs.push_back(pool.submit(n, hits.back()->bump()));
    }
    Hits sync(int(g() % 50));
    if (round % 2) pool.run(int(sync.v.size()), sync.bump());
    for (int k = 0; k < queued; ++k) {
      pool.wait(jobs[std::size_t(k)]);
      ASSERT_TRUE(hits[std::size_t(k)]->each_once()) << "round " << round << " job " << k;
    }
    if (round % 2) {
      ASSERT_TRUE(sync.each_once());
    }
  }
}

TEST(ThreadPool, PinnedWorkersSitOnCpusOfTheAffinityMask) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  ThreadPool pool(ThreadPool::Options{3, true, 1});
  ASSERT_EQ(pool.pinned_cpus().size(), 2u);  // the workers; the caller stays where it is
  for (int cpu : pool.pinned_cpus()) EXPECT_TRUE(CPU_ISSET(cpu, &mask)) << cpu;
  std::vector<std::atomic<int>> on(CPU_SETSIZE);
  pool.run(64, [&](int, int) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const int c = sched_getcpu();
    if (c >= 0) on[std::size_t(c)]++;
  });
  int seen = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) seen += on[std::size_t(c)].load() > 0;
  EXPECT_GE(seen, 1);
  EXPECT_FALSE(ThreadPool(2).pinned_cpus().size());
}

}  // namespace
}  // namespace gmi::envs::mujoco
