#include "mpi/progress.hpp"

#include <fmt/format.h>

#include <chrono>

namespace gmi::mpi {
namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Progress& progress() {
  static Progress p;
  return p;
}

void Progress::beat() { last_beat_ns_.store(now_ns(), std::memory_order_relaxed); }

void Progress::phase(const char* name) {
  phase_.store(name, std::memory_order_relaxed);
  beat();
}

void Progress::iteration(std::int64_t i) {
  iteration_.store(i, std::memory_order_relaxed);
  minibatch(-1, -1);
  beat();
}

void Progress::minibatch(int epoch, int mb) {
  epoch_.store(epoch, std::memory_order_relaxed);
  minibatch_.store(mb, std::memory_order_relaxed);
}

void Progress::operation(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  operation_ = what;
}

std::string Progress::operation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return operation_;
}

double Progress::idle_seconds() const {
  const std::int64_t last = last_beat_ns_.load(std::memory_order_relaxed);
  return last == 0 ? 0.0 : double(now_ns() - last) * 1e-9;
}

std::string Progress::where() const {
  const std::int64_t it = iteration();
  if (it <= 0) return phase();
  std::string s = fmt::format("iteration {}", it);
  const int e = epoch_.load(std::memory_order_relaxed), mb = minibatch_.load(std::memory_order_relaxed);
  if (e >= 0) s += fmt::format(", epoch {}, minibatch {}", e, mb);
  return s;
}

}  // namespace gmi::mpi
