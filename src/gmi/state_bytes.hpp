#pragma once
/// \file
/// \brief Environment state arrays (envs::StateArray) and other values as bytes, for the messages
/// between GMIs of a role split (src/gmi/remote_env.hpp, src/gmi/async_training.hpp): a writer
/// and a reader of flat byte buffers, the arrays' encoding, and the per-GMI slices of arrays laid
/// out env after env.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/envs/vec_env.hpp"

namespace gmi::instances {

struct Writer {
  std::vector<std::byte> out;
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  }
  template <class T>
  void put(T v) {
    raw(&v, sizeof v);
  }
  /// A vector as its length and its values.
  template <class T>
  void values(const std::vector<T>& v) {
    put<std::uint64_t>(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
};

struct Reader {
  const std::vector<std::byte>& in;
  std::size_t at = 0;
  void raw(void* p, std::size_t n) {
    GMI_REQUIRE(at + n <= in.size(), "a message from another GMI is truncated");
    std::memcpy(p, in.data() + at, n);
    at += n;
  }
  template <class T>
  T get() {
    T v;
    raw(&v, sizeof v);
    return v;
  }
  template <class T>
  std::vector<T> values() {
    std::vector<T> v(get<std::uint64_t>());
    raw(v.data(), v.size() * sizeof(T));
    return v;
  }
};

/// State arrays as bytes, and back (gmi::Error on a truncated or unknown encoding).
std::vector<std::byte> to_bytes(const std::vector<envs::StateArray>& arrays);
std::vector<envs::StateArray> from_bytes(const std::vector<std::byte>& bytes);
void write_arrays(Writer& w, const std::vector<envs::StateArray>& arrays);
std::vector<envs::StateArray> read_arrays(Reader& r);

/// The number of values of `a` (all envs).
std::size_t values_of(const envs::StateArray& a);
/// Values [begin, end) of `a`.
envs::StateArray slice(const envs::StateArray& a, std::size_t begin, std::size_t end);
/// `from`'s values after `to`'s (gmi::Error when their types or widths differ).
void append(envs::StateArray& to, const envs::StateArray& from);
/// `part` (one GMI's arrays) after `all`'s values, array by array: the arrays of the GMIs that hold
/// a trainer's envs joined in their order (empty `all`: `part` itself); gmi::Error when they differ.
void join_part(std::vector<envs::StateArray>& all, const std::vector<envs::StateArray>& part);
/// Part k of `parts` equal parts of every array (gmi::Error naming an array that does not split).
std::vector<envs::StateArray> part_of(const std::vector<envs::StateArray>& arrays, std::size_t k, std::size_t parts);

}  // namespace gmi::instances
