#pragma once
/// \file
/// \brief Integers written on the command line or in a list key ("1..8", "2048,4096"): the whole
/// text must be the number, so "12x", "1e3" and "" are not integers.
#include <optional>
#include <stdexcept>
#include <string>

namespace gmi::config {

/// `text` as an integer, or nothing when it is not one in full.
inline std::optional<long long> parse_integer(const std::string& text) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return v;
}

}  // namespace gmi::config
