#include "kernels/core/cpus.hpp"

#include <sched.h>

#include <cstddef>
#include <thread>

namespace gmi {

std::vector<int> allowed_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof mask, &mask) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  return cpus;
}

int allowed_cpu_count() {
  const std::size_t n = allowed_cpus().size();
  return n > 0 ? int(n) : int(std::thread::hardware_concurrency());
}

std::vector<int> cpu_share(int k, int n) {
  const std::vector<int> all = allowed_cpus();
  if (all.empty() || n <= 0) return {};
  if (int(all.size()) < n) return {all[std::size_t(k) % all.size()]};
  const std::size_t lo = all.size() * std::size_t(k) / std::size_t(n), hi = all.size() * std::size_t(k + 1) / std::size_t(n);
  return std::vector<int>(all.begin() + long(lo), all.begin() + long(hi));
}

}  // namespace gmi
