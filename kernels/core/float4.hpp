#pragma once
/// \file
/// \brief Four floats moved as one 16-byte load or store in device kernels.

namespace gmi {

/// Four floats loaded or stored as one 16-byte access (the address must be 16-byte aligned).
struct alignas(16) Float4 {
  float v[4];
};

}  // namespace gmi
