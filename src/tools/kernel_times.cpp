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
// Callbacks must not throw (a BLAS error unwinding through a region's end calls them): a failed
// fence leaves that entry untimed, and the error surfaces at the next fence outside.
template <class F>
void guarded(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}
void on_begin(const char* name, std::uint32_t, std::uint64_t*) { guarded([&] { start(name); }); }
void on_end(std::uint64_t) { guarded(stop); }
void on_begin_copy(Kokkos::Tools::SpaceHandle dst, const char*, const void*, Kokkos::Tools::SpaceHandle src,
                   const char*, const void*, std::uint64_t) {
  guarded([&] { start(std::string("deep_copy ") + src.name + " -> " + dst.name); });
}
void on_end_copy() { guarded(stop); }
void on_push(const char* name) { guarded([&] { start(name); }); }
void on_pop() { guarded(stop); }

/// The callbacks in place before the timer (a tool loaded through KOKKOS_TOOLS_LIBS, or none).
Kokkos::Tools::Experimental::EventSet g_saved;

void install() {
  namespace E = Kokkos::Tools::Experimental;
  g_saved = E::get_callbacks();
  E::set_begin_parallel_for_callback(on_begin);
  E::set_begin_parallel_reduce_callback(on_begin);
  E::set_begin_parallel_scan_callback(on_begin);
  E::set_end_parallel_for_callback(on_end);
  E::set_end_parallel_reduce_callback(on_end);
  E::set_end_parallel_scan_callback(on_end);
  E::set_begin_deep_copy_callback(on_begin_copy);
  E::set_end_deep_copy_callback(on_end_copy);
  E::set_push_region_callback(on_push);
  E::set_pop_region_callback(on_pop);
}

}  // namespace

KernelTimer::KernelTimer() {
  GMI_REQUIRE(g_times == nullptr, "KernelTimer: one at a time");
  g_times = new std::map<std::string, KernelTime>();
  g_open.clear();
  install();
}

KernelTimer::~KernelTimer() {
  Kokkos::Tools::Experimental::set_callbacks(g_saved);  // replaces the timer's (the tool's, if any, again)
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
