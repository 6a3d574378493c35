#pragma once
/// \file
/// \brief The CPUs this thread may run on (its affinity mask), and a GMI's share of them: for
/// host-simulated environments' threads and pinning (kernels/envs/mujoco/thread_pool.cpp), a GMI's
/// slice of a node's mask (src/gmi/session.cpp) and a sweep run's CPU set (src/runtime/sweep.cpp).
#include <vector>

namespace gmi {

/// The CPUs of this thread's affinity mask, in increasing order; empty when it cannot be read.
std::vector<int> allowed_cpus();
/// How many CPUs this thread may run on (the machine's hardware threads when the mask is unreadable).
int allowed_cpu_count();
/// Chunk `k` of `n` of allowed_cpus() (a GMI's share of its node's CPUs): contiguous, sizes
/// differing by at most one; with fewer CPUs than chunks, CPU k modulo their number; empty when
/// there are none or n <= 0.
std::vector<int> cpu_share(int k, int n);

}  // namespace gmi
