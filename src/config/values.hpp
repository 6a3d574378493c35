#pragma once
/// \file
/// \brief Value types of config keys beyond numbers, flags, text and lists (src/config/codecs.hpp
/// reads and writes them).
namespace gmi::config {

/// Seconds, or `auto` (a rule documented where the key is used), or `off`.
struct AutoSeconds {
  enum class Mode { automatic, off, fixed };
  Mode mode = Mode::automatic;
  double seconds = 0;  ///< when fixed (> 0)
  bool operator==(const AutoSeconds& o) const { return mode == o.mode && seconds == o.seconds; }
};

}  // namespace gmi::config
