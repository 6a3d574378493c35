#pragma once
/// \file
/// \brief The config's codecs: a strict YAML scalar -> C++ value for every key type (an integer
/// that is not one, a number out of range, a word where a flag belongs are all refused), and the
/// value back to text for the resolved config.  `Codec<T>::type()` and `phrase()` name the type in
/// the reference table and in error lines.  Internal to src/config/.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "src/config/values.hpp"

namespace gmi::config::codecs {

inline bool scalar_text(const YAML::Node& n, std::string& s) {
  if (!n.IsScalar()) return false;
  s = n.Scalar();
  return true;
}

inline bool decode_int64(const YAML::Node& n, std::int64_t& out) {
  std::string s;
  if (!scalar_text(n, s) || s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

inline bool decode_double(const YAML::Node& n, double& out) {
  std::string s;
  if (!scalar_text(n, s) || s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  out = v;
  return true;
}

template <class T>
struct Codec;

template <>
struct Codec<int> {
  static std::string type() { return "integer"; }
  static std::string phrase() { return "an integer"; }
  static bool decode(const YAML::Node& n, int& out) {
    std::int64_t v;
    if (!decode_int64(n, v) || v < INT_MIN || v > INT_MAX) return false;
    out = int(v);
    return true;
  }
  static std::string text(int v) { return std::to_string(v); }
};

template <>
struct Codec<std::int64_t> {
  static std::string type() { return "integer"; }
  static std::string phrase() { return "an integer"; }
  static bool decode(const YAML::Node& n, std::int64_t& out) { return decode_int64(n, out); }
  static std::string text(std::int64_t v) { return std::to_string(v); }
};

template <>
struct Codec<double> {
  static std::string type() { return "number"; }
  static std::string phrase() { return "a number"; }
  static bool decode(const YAML::Node& n, double& out) { return decode_double(n, out); }
  static std::string text(double v) { return fmt::format("{}", v); }
};

template <>
struct Codec<bool> {
  static std::string type() { return "boolean"; }
  static std::string phrase() { return "a boolean"; }
  static bool decode(const YAML::Node& n, bool& out) {
    std::string s;
    if (!scalar_text(n, s)) return false;
    if (s == "true" || s == "True" || s == "TRUE") return out = true, true;
    if (s == "false" || s == "False" || s == "FALSE") return out = false, true;
    return false;
  }
  static std::string text(bool v) { return v ? "true" : "false"; }
};

template <>
struct Codec<std::string> {
  static std::string type() { return "string"; }
  static std::string phrase() { return "a string"; }
  static bool decode(const YAML::Node& n, std::string& out) { return scalar_text(n, out); }
  static std::string text(const std::string& v) {
    YAML::Emitter e;
    e << (v.empty() ? YAML::DoubleQuoted : YAML::Auto) << v;
    return e.c_str();
  }
};

template <>
struct Codec<std::vector<int>> {
  static std::string type() { return "list of integers"; }
  static std::string phrase() { return "a list of integers"; }
  static bool decode(const YAML::Node& n, std::vector<int>& out) {
    if (!n.IsSequence()) return false;
    std::vector<int> v;
    for (const auto& e : n) {
      int x;
      if (!Codec<int>::decode(e, x)) return false;
      v.push_back(x);
    }
    out = v;
    return true;
  }
  static std::string text(const std::vector<int>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }
};

template <>
struct Codec<std::vector<double>> {
  static std::string type() { return "list of numbers"; }
  static std::string phrase() { return "a list of numbers"; }
  static bool decode(const YAML::Node& n, std::vector<double>& out) {
    if (!n.IsSequence()) return false;
    std::vector<double> v;
    for (const auto& e : n) {
      double x;
      if (!decode_double(e, x)) return false;
      v.push_back(x);
    }
    out = v;
    return true;
  }
  static std::string text(const std::vector<double>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt::format("{}", v[i]);
    return s + "]";
  }
};

template <>
struct Codec<std::vector<std::string>> {
  static std::string type() { return "list of strings"; }
  static std::string phrase() { return "a list of strings"; }
  static bool decode(const YAML::Node& n, std::vector<std::string>& out) {
    if (!n.IsSequence()) return false;
    std::vector<std::string> v;
    for (const auto& e : n) {
      if (!e.IsScalar()) return false;
      v.push_back(e.Scalar());
    }
    out = v;
    return true;
  }
  static std::string text(const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + Codec<std::string>::text(v[i]);
    return s + "]";
  }
};

/// A number where infinities are allowed too (ranges): inf, -inf, .inf, -.inf.
inline bool decode_extended(const YAML::Node& n, double& out) {
  std::string s;
  if (!scalar_text(n, s)) return false;
  for (const char* p : {"inf", "+inf", ".inf", "+.inf", "Infinity"})
    if (s == p) return out = INFINITY, true;
  for (const char* p : {"-inf", "-.inf", "-Infinity"})
    if (s == p) return out = -INFINITY, true;
  return decode_double(n, out);
}

/// [lo, hi] with lo < hi (infinities allowed).
using Range = std::array<double, 2>;
template <>
struct Codec<Range> {
  static std::string type() { return "range"; }
  static std::string phrase() { return "a list [low, high] of two numbers (inf allowed), low < high"; }
  static bool decode(const YAML::Node& n, Range& out) {
    if (!n.IsSequence() || n.size() != 2) return false;
    Range r;
    if (!decode_extended(n[0], r[0]) || !decode_extended(n[1], r[1]) || !(r[0] < r[1])) return false;
    out = r;
    return true;
  }
  static std::string text(const Range& v) {
    auto t = [](double x) { return std::isinf(x) ? std::string(x > 0 ? ".inf" : "-.inf") : Codec<double>::text(x); };
    return "[" + t(v[0]) + ", " + t(v[1]) + "]";
  }
};

/// An optional value: null (unset) or the value.
template <class T>
struct Codec<std::optional<T>> {
  static std::string type() { return Codec<T>::type() + " or null"; }
  static std::string phrase() { return Codec<T>::phrase() + " or null"; }
  static bool decode(const YAML::Node& n, std::optional<T>& out) {
    if (n.IsNull()) return out.reset(), true;
    T v{};
    if (!Codec<T>::decode(n, v)) return false;
    out = v;
    return true;
  }
  static std::string text(const std::optional<T>& v) { return v ? Codec<T>::text(*v) : "null"; }
};

template <>
struct Codec<AutoSeconds> {
  static std::string type() { return "number, auto or off"; }
  static std::string phrase() { return "auto, off or a number of seconds"; }
  static bool decode(const YAML::Node& n, AutoSeconds& out) {
    std::string s;
    if (!scalar_text(n, s)) return false;
    if (s == "auto") return out = AutoSeconds{}, true;
    if (s == "off") return out = AutoSeconds{AutoSeconds::Mode::off, 0}, true;
    double v;
    if (!decode_double(n, v)) return false;
    out = AutoSeconds{AutoSeconds::Mode::fixed, v};
    return true;
  }
  static std::string text(const AutoSeconds& v) {
    if (v.mode == AutoSeconds::Mode::automatic) return "auto";
    if (v.mode == AutoSeconds::Mode::off) return "off";
    return Codec<double>::text(v.seconds);
  }
};

inline std::string shown(const YAML::Node& n) {
  if (n.IsNull()) return "null";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

}  // namespace gmi::config::codecs
