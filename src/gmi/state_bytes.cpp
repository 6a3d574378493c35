#include "src/gmi/state_bytes.hpp"

#include <fmt/format.h>

#include <variant>

namespace gmi::instances {

void write_arrays(Writer& w, const std::vector<envs::StateArray>& arrays) {
  w.put<std::uint64_t>(arrays.size());
  for (const envs::StateArray& a : arrays) {
    w.put<std::uint64_t>(a.name.size());
    w.raw(a.name.data(), a.name.size());
    w.put<std::uint8_t>(a.rng);
    w.put<std::int32_t>(a.width);
    w.put<std::uint8_t>(std::uint8_t(a.values.index()));
    std::visit([&](const auto& v) { w.values(v); }, a.values);
  }
}

std::vector<envs::StateArray> read_arrays(Reader& r) {
  std::vector<envs::StateArray> arrays(r.get<std::uint64_t>());
  for (envs::StateArray& a : arrays) {
    a.name.resize(r.get<std::uint64_t>());
    r.raw(a.name.data(), a.name.size());
    a.rng = r.get<std::uint8_t>() != 0;
    a.width = r.get<std::int32_t>();
    switch (r.get<std::uint8_t>()) {
      case 0: a.values = r.values<float>(); break;
      case 1: a.values = r.values<double>(); break;
      case 2: a.values = r.values<int>(); break;
      case 3: a.values = r.values<std::uint64_t>(); break;
      default: throw Error("environment state from another GMI has an unknown value type");
    }
  }
  return arrays;
}

std::vector<std::byte> to_bytes(const std::vector<envs::StateArray>& arrays) {
  Writer w;
  write_arrays(w, arrays);
  return std::move(w.out);
}

std::vector<envs::StateArray> from_bytes(const std::vector<std::byte>& bytes) {
  Reader r{bytes};
  return read_arrays(r);
}

std::size_t values_of(const envs::StateArray& a) {
  return std::visit([](const auto& v) { return v.size(); }, a.values);
}

envs::StateArray slice(const envs::StateArray& a, std::size_t begin, std::size_t end) {
  envs::StateArray s{a.name, a.rng, {}, a.width};
  std::visit([&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    s.values = V(v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end));
  }, a.values);
  return s;
}

void append(envs::StateArray& to, const envs::StateArray& from) {
  GMI_REQUIRE(to.values.index() == from.values.index() && to.width == from.width,
              "environment state '" + to.name + "' differs in type between GMIs");
  std::visit([&](auto& v) {
    const auto& f = std::get<std::decay_t<decltype(v)>>(from.values);
    v.insert(v.end(), f.begin(), f.end());
  }, to.values);
}

void join_part(std::vector<envs::StateArray>& all, const std::vector<envs::StateArray>& part) {
  if (all.empty()) {
    all = part;
    return;
  }
  GMI_REQUIRE(part.size() == all.size(), "the GMIs that hold a trainer's envs hold different environment state arrays");
  for (std::size_t i = 0; i < part.size(); ++i) append(all[i], part[i]);
}

std::vector<envs::StateArray> part_of(const std::vector<envs::StateArray>& arrays, std::size_t k, std::size_t parts) {
  std::vector<envs::StateArray> out;
  for (const envs::StateArray& a : arrays) {
    GMI_REQUIRE(values_of(a) % parts == 0, fmt::format("environment state '{}' has {} values, not a multiple of the {} "
                                                       "GMIs that hold its envs",
                                                       a.name, values_of(a), parts));
    const std::size_t n = values_of(a) / parts;
    out.push_back(slice(a, k * n, (k + 1) * n));
  }
  return out;
}

}  // namespace gmi::instances
