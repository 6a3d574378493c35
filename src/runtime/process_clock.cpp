#include "src/runtime/process_clock.hpp"

#include <chrono>

namespace gmi::runtime {
namespace {
// Initialised during static initialisation, before main() runs.
const auto g_launch = std::chrono::steady_clock::now();
}  // namespace

double seconds_since_launch() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_launch).count();
}
}  // namespace gmi::runtime
