#include "mpi/deadline.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

#include "mpi/abort.hpp"
#include "mpi/progress.hpp"

namespace gmi::mpi {
namespace {

std::atomic<double> g_timeout{120.0};
std::atomic<bool> g_giving_up{false};
std::atomic<bool> g_abort_on_timeout{true};


// ---- census ---------------------------------------------------------------------------------
constexpr int kTag = 7301;
constexpr int kMsg = 2;  // {world rank this GMI waited for or -1, its iteration}

struct Census {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request standing = MPI_REQUEST_NULL;  // ANY_SOURCE: the first census message of another GMI
  std::int64_t first[kMsg] = {0, 0};
  int first_from = -1;                      // its sender, once it arrived
  std::int64_t mine[kMsg] = {-1, 0};        // what this GMI sends (must outlive the sends)
};
Census g_census;

// ---- a failure flagged from another thread ----------------------------------------------------
struct Flag {
  std::mutex mu;
  std::atomic<bool> set{false};
  std::string what;
  std::vector<int> peers;
  double waited_s = 0;
};
Flag g_flag;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// Whether another GMI's census message arrived (tests the standing receive).
bool census_seen() {
  Census& c = g_census;
  if (c.first_from >= 0) return true;
  if (c.standing == MPI_REQUEST_NULL) return false;
  int done = 0;
  MPI_Status st;
  if (MPI_Test(&c.standing, &done, &st) != MPI_SUCCESS || !done) return false;
  c.first_from = st.MPI_SOURCE;
  return true;
}

struct Answers {
  std::vector<bool> answered;        // by MPI_COMM_WORLD rank (this GMI included)
  std::vector<std::int64_t> waited;  // whom each one waited for (-1: several or unknown)
};

/// Send this GMI's message to every other GMI and collect theirs for census_grace() seconds.
Answers run_census(int waited_for) {
  const int me = world_rank(), W = world_size();
  Answers a;
  a.answered.assign(W, false);
  a.waited.assign(W, -1);
  a.answered[me] = true;
  a.waited[me] = waited_for;
  Census& c = g_census;
  if (W == 1 || c.comm == MPI_COMM_NULL) return a;
  census_seen();
  if (c.first_from < 0 && c.standing != MPI_REQUEST_NULL) {
    // Nothing arrived yet: retire the standing receive (or take what raced in).
    MPI_Status st;
    MPI_Cancel(&c.standing);
    MPI_Wait(&c.standing, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) c.first_from = st.MPI_SOURCE;
  }
  c.standing = MPI_REQUEST_NULL;
  if (c.first_from >= 0) {
    a.answered[c.first_from] = true;
    a.waited[c.first_from] = c.first[0];
  }
  c.mine[0] = waited_for;
  c.mine[1] = progress().iteration();
  for (int r = 0; r < W; ++r) {
    if (r == me) continue;
    MPI_Request s;
    // Never waited for: a stuck GMI never receives it, and the job ends anyway.
    if (MPI_Isend(c.mine, kMsg, MPI_INT64_T, r, kTag, c.comm, &s) == MPI_SUCCESS) MPI_Request_free(&s);
  }
  // Static: receives from GMIs that never answer stay posted while the job ends, and a late
  // answer must not land in freed memory.
  static std::vector<std::int64_t> buf;
  static std::vector<MPI_Request> reqs;
  buf.assign(std::size_t(W) * kMsg, -1);
  reqs.assign(W, MPI_REQUEST_NULL);
  for (int r = 0; r < W; ++r)
    if (!a.answered[r]) MPI_Irecv(&buf[std::size_t(r) * kMsg], kMsg, MPI_INT64_T, r, kTag, c.comm, &reqs[r]);
  const Deadline d;
  for (;;) {
    bool all = true;
    for (int r = 0; r < W; ++r) {
      if (reqs[r] == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Test(&reqs[r], &done, MPI_STATUS_IGNORE);
      if (done) {
        a.answered[r] = true;
        a.waited[r] = buf[std::size_t(r) * kMsg];
      } else {
        all = false;
      }
    }
    if (all || d.elapsed() >= census_grace()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return a;
}

}  // namespace

void set_timeout(double seconds) { g_timeout.store(seconds > 0 ? seconds : 120.0); }
double timeout() { return g_timeout.load(); }
double census_grace() { return std::min(10.0, std::max(2.0, timeout() / 4)); }

std::vector<int> world_ranks(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return {};
  MPI_Group g, w;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  int n = 0;
  MPI_Group_size(g, &n);
  std::vector<int> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = i;
  MPI_Group_translate_ranks(g, n, in.data(), w, out.data());
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return out;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string s;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + (j > i + 1 ? fmt::format("{}-{}", r[i], r[j])
                                              : j == i + 1 ? fmt::format("{}, {}", r[i], r[j]) : std::to_string(r[i]));
    i = j + 1;
  }
  return (r.size() == 1 ? "rank " : "ranks ") + s;
}

void wait(MPI_Request& req, MPI_Comm comm, const char* op) {
  int done = 0;
  GMI_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
  if (done) return;
  // The peers are looked up only when the wait runs out (group calls; reductions wait here often).
  const auto peers = [comm] {
    std::vector<int> p = world_ranks(comm);
    p.erase(std::remove(p.begin(), p.end(), world_rank()), p.end());
    return p;
  };
  wait(req, peers, [&] { return fmt::format("{} with {}", op, ranks_text(peers())); });
}

void wait(MPI_Request& req, const std::function<std::vector<int>()>& peers, const std::function<std::string()>& what) {
  int done = 0;
  const Deadline d;
  for (unsigned spin = 1;; ++spin) {
    GMI_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (spin % 32 == 0) {
      if (d.expired() || interrupted()) give_up(what(), peers(), d.elapsed());
      // Latency matters only for short waits: poll hard for 1 ms (MPI_Test yields the core
      // itself when ranks oversubscribe it), then give it up a little, then more.
      const double e = d.elapsed();
      if (e > 0.01) std::this_thread::sleep_for(std::chrono::microseconds(200));
      else if (e > 0.001) sched_yield();
    }
  }
}

bool interrupted() { return flagged() || census_seen(); }

void flag(const std::string& what, const std::vector<int>& peers, double waited_s) {
  std::lock_guard<std::mutex> lock(g_flag.mu);
  if (g_flag.set.load()) return;
  g_flag.what = what;
  g_flag.peers = peers;
  g_flag.waited_s = waited_s;
  g_flag.set.store(true);
}

bool flagged() { return g_flag.set.load(); }

void check() {
  if (!flagged()) return;
  std::string what;
  std::vector<int> peers;
  double waited = 0;
  {
    std::lock_guard<std::mutex> lock(g_flag.mu);
    what = g_flag.what;
    peers = g_flag.peers;
    waited = g_flag.waited_s;
  }
  give_up(what, peers, waited);
}

void give_up(const std::string& what, const std::vector<int>& peers, double waited_s) {
  g_giving_up.store(true);
  const int me = world_rank();
  // When this wait was flagged from another thread, that is the more precise story.
  std::string why = what;
  std::vector<int> waited_for = peers;
  if (flagged()) {
    std::lock_guard<std::mutex> lock(g_flag.mu);
    why = g_flag.what;
    waited_for = g_flag.peers;
    waited_s = std::max(waited_s, g_flag.waited_s);
  }
  const bool joined = census_seen() && waited_s < timeout();  // another GMI's census, not our clock
  const Answers a = run_census(waited_for.size() == 1 ? waited_for[0] : -1);
  std::vector<int> silent, answered;
  for (int r = 0; r < int(a.answered.size()); ++r) (a.answered[r] ? answered : silent).push_back(r);
  const int reporter = answered.front();
  // What the others that answered waited for: names a stuck GMI even when this one waited on a
  // collective.
  std::vector<int> named;
  for (int r : answered)
    if (a.waited[r] >= 0 && !a.answered[a.waited[r]]) named.push_back(int(a.waited[r]));
  const Progress& p = progress();
  const std::string op = p.operation();
  std::string line = fmt::format(
      "reduce.timeout_s ({:g} s) {} at {}{}: rank {} waited {:.1f} s for {}; ", timeout(),
      joined ? "ran out on another GMI" : "ran out", p.where(), op.empty() ? "" : " in " + op, me, waited_s, why);
  if (!silent.empty())
    line += fmt::format("{} did not answer within {:g} s (stuck or dead){}", ranks_text(silent), census_grace(),
                        named.empty() ? "" : "; waited for by the others: " + ranks_text(named));
  else
    line += "every rank answered, so none is stuck: raise reduce.timeout_s if a step can take longer";
  line += "; ending the job";
  if (!g_abort_on_timeout.load()) throw TimeoutError(line);
  if (me != reporter)  // the reporter's abort ends this process; if it does not come, say it here
    std::this_thread::sleep_for(std::chrono::duration<double>(census_grace() + 5.0));
  std::fprintf(stderr, "gmi_drl: error: %s\n", line.c_str());
  abort_job(3);
}

bool giving_up() { return g_giving_up.load(); }
void set_abort_on_timeout(bool abort) { g_abort_on_timeout.store(abort); }

void barrier(MPI_Comm comm, const char* what) {
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Ibarrier(comm, &req));
  wait(req, comm, what);
}

namespace detail {

void census_init() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1 || g_census.comm != MPI_COMM_NULL) return;
  MPI_Comm_dup(MPI_COMM_WORLD, &g_census.comm);
  MPI_Irecv(g_census.first, kMsg, MPI_INT64_T, MPI_ANY_SOURCE, kTag, g_census.comm, &g_census.standing);
}

void census_finalize() {
  Census& c = g_census;
  if (c.standing != MPI_REQUEST_NULL) {
    MPI_Cancel(&c.standing);
    MPI_Wait(&c.standing, MPI_STATUS_IGNORE);
  }
  if (c.comm != MPI_COMM_NULL) MPI_Comm_free(&c.comm);
}

}  // namespace detail
}  // namespace gmi::mpi
