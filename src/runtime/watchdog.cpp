#include "src/runtime/watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "kernels/core/error.hpp"
#include "mpi/environment.hpp"
#include "mpi/progress.hpp"

namespace gmi::runtime {

StallWatchdog::StallWatchdog(const config::AutoSeconds& setting) : setting_(setting) {
  mpi::progress().beat();
  if (setting_.mode != config::AutoSeconds::Mode::off) thread_ = std::thread([this] { loop(); });
}

StallWatchdog::~StallWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatchdog::iteration_took(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  slowest_ = std::max(slowest_, seconds);
}

double StallWatchdog::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_locked();
}

double StallWatchdog::limit_locked() const {
  switch (setting_.mode) {
    case config::AutoSeconds::Mode::off: return std::numeric_limits<double>::infinity();
    case config::AutoSeconds::Mode::fixed: return setting_.seconds;
    default: return std::max(300.0, 20.0 * slowest_);
  }
}

void StallWatchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Check often enough to end within a few percent of the limit.
    const double limit = limit_locked();
    const auto step = std::chrono::duration<double>(std::clamp(limit / 50, 0.05, 1.0));
    if (cv_.wait_for(lock, step, [this] { return stop_; })) return;
    const mpi::Progress& p = mpi::progress();
    const double idle = p.idle_seconds();
    if (idle < limit) continue;
    const std::string op = p.operation();
    std::fprintf(stderr,
                 "gmi_drl: error: no progress for %.0f s (train.stall_timeout_s = %s): %s is stuck in phase %s at "
                 "%s%s; ending the job\n",
                 idle,
                 setting_.mode == config::AutoSeconds::Mode::automatic ? fmt::format("auto: {:.0f} s", limit).c_str()
                                                                        : fmt::format("{:g} s", limit).c_str(),
                 error_context().c_str(), p.phase(), p.where().c_str(),
                 op.empty() ? "" : (" (last reduction: " + op + ")").c_str());
    std::fflush(stderr);
    // MPI_Abort from this thread: the main thread is stuck by definition.  Should the abort
    // itself not come back, exit anyway: the launcher ends the job when a rank exits early.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::_Exit(4);
    }).detach();
    mpi::Environment::abort(4);
  }
}

}  // namespace gmi::runtime
