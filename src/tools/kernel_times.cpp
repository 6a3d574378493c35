#include "src/tools/kernel_times.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"

namespace gmi::tools {
namespace {

using Clock = std::chrono::steady_clock;
std::map<std::string, KernelTime>* g_times = nullptr;
std::vector<std::pair<std::string, Clock::time_point>> g_open;  ///< started, not yet ended (nested regions)

void start(std::string name) {
  Kokkos::fence();
  g_open.emplace_back(std::move(name), Clock::now());
}
void stop() {
  if (g_open.empty()) return;
  Kokkos::fence();
  auto [name, t0] = std::move(g_open.back());
  g_open.pop_back();
  KernelTime& k = (*g_times)[name];
  k.name = name;
  k.calls += 1;
  k.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
}
void on_begin(const char* name, std::uint32_t, std::uint64_t*) { start(name); }
void on_end(std::uint64_t) { stop(); }
void on_begin_copy(Kokkos::Tools::SpaceHandle dst, const char*, const void*, Kokkos::Tools::SpaceHandle src,
                   const char*, const void*, std::uint64_t) {
  start(std::string("deep_copy ") + src.name + " -> " + dst.name);
}
void on_end_copy() { stop(); }
void on_push(const char* name) { start(name); }
void on_pop() { stop(); }

void install(bool on) {
  namespace E = Kokkos::Tools::Experimental;
  E::set_begin_parallel_for_callback(on ? on_begin : nullptr);
  E::set_begin_parallel_reduce_callback(on ? on_begin : nullptr);
  E::set_begin_parallel_scan_callback(on ? on_begin : nullptr);
  E::set_end_parallel_for_callback(on ? on_end : nullptr);
  E::set_end_parallel_reduce_callback(on ? on_end : nullptr);
  E::set_end_parallel_scan_callback(on ? on_end : nullptr);
  E::set_begin_deep_copy_callback(on ? on_begin_copy : nullptr);
  E::set_end_deep_copy_callback(on ? on_end_copy : nullptr);
  E::set_push_region_callback(on ? on_push : nullptr);
  E::set_pop_region_callback(on ? on_pop : nullptr);
}

}  // namespace

KernelTimer::KernelTimer() {
  GMI_REQUIRE(g_times == nullptr, "KernelTimer: one at a time");
  g_times = new std::map<std::string, KernelTime>();
  g_open.clear();
  install(true);
}

KernelTimer::~KernelTimer() {
  install(false);
  delete g_times;
  g_times = nullptr;
}

std::vector<KernelTime> KernelTimer::sorted() const {
  std::vector<KernelTime> v;
  for (const auto& [name, k] : *g_times) v.push_back(k);
  std::sort(v.begin(), v.end(), [](const KernelTime& a, const KernelTime& b) { return a.seconds > b.seconds; });
  return v;
}

}  // namespace gmi::tools
