// Only Random123 here: cuRAND's header defines the same global mulhilo32.
#define GMI_RNG_HOST_ONLY
#include "kernels/core/random.hpp"

#include <Random123/philox.h>

namespace gmi::rng {

Bits4 philox_host(std::uint64_t key, std::uint64_t lo, std::uint64_t hi) {
  r123::Philox4x32 gen;
  const r123::Philox4x32::ctr_type c = {{std::uint32_t(lo), std::uint32_t(lo >> 32),
                                         std::uint32_t(hi), std::uint32_t(hi >> 32)}};
  const r123::Philox4x32::key_type k = {{std::uint32_t(key), std::uint32_t(key >> 32)}};
  const auto r = gen(c, k);
  Bits4 out;
  for (int i = 0; i < 4; ++i) out.v[i] = r.v[i];
  return out;
}

}  // namespace gmi::rng
