#pragma once
/// \file
/// \brief Device faults for the fault-tolerance tests (GMI_DRL_FAULT, src/runtime/faults.hpp).
#include "kernels/core/kokkos.hpp"

namespace gmi::fault {

/// Queue a kernel on `space` that never returns: it spins on a flag that nothing sets.  The
/// stream behind it never drains.  On host builds it blocks the calling thread instead.
void launch_endless_kernel(const ExecSpace& space);

}  // namespace gmi::fault
