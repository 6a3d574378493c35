#pragma once
/// \file
/// \brief How a config section's keys become the schema: the checks a key list names
/// (kernels/core/key_list.hpp), the schema entry of one key (Field), and GMI_CONFIG_KEYS, which
/// turns a section's X-list into its entries.  The parser, the reference table and the resolved
/// YAML read nothing else (src/config/config.cpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/key_list.hpp"
#include "src/config/values.hpp"

namespace YAML {
class Node;
}

namespace gmi::config {

struct Config;

/// What a value of type T must satisfy, and the same in words for the reference and error lines
/// ("" when any value of the type is allowed).
template <class T>
struct Rule {
  std::function<bool(const T&)> ok;
  std::string words;
};

/// One key of the schema.
struct Field {
  std::string path;     ///< section.key
  std::string type;     ///< the value's type in words (reference table)
  std::string allowed;  ///< the constraint in words, "" if any value of the type
  std::string doc;      ///< the one-line description
  std::function<void(Config&, const YAML::Node&, const std::string& source)> set;  ///< parse, check, store
  std::function<std::string(const Config&)> get;  ///< the value as YAML text
};

/// The schema entry of a key of type T stored at access(config).  Defined in config.cpp for the
/// types the codecs read (src/config/codecs.hpp): another type is a link error.
template <class T>
Field make_field(std::string path, std::string doc, std::function<T&(Config&)> access, Rule<T> rule);

/// The checks a key list names.  A check is a predicate and its words; it becomes a Rule<T> for
/// the key's type (a predicate that cannot take a T does not compile).
namespace checks {

template <class P>
struct Check {
  P ok;
  std::string words;
  template <class T>
  operator Rule<T>() const {  // NOLINT: a check is written without its key's type
    return Rule<T>{ok, words};
  }
};
template <class P>
Check<P> check(P ok, std::string words) {
  return {std::move(ok), std::move(words)};
}

/// A number in words as the reference writes it: 1, 0.5, 1e9.
std::string number_text(double v);

/// Any value of the key's type.
inline const auto any = check([](const auto&) { return true; }, "");
inline auto at_least(double lo) {
  return check([lo](double v) { return v >= lo; }, ">= " + number_text(lo));
}
inline auto positive() {
  return check([](double v) { return v > 0; }, "> 0");
}
/// lo <= v <= hi; `words` replaces "in [lo, hi]" where lo only keeps v away from 0
/// (`within(1e-12, 1, "in (0, 1]")`).
inline auto within(double lo, double hi, std::string words = "") {
  return check([lo, hi](double v) { return v >= lo && v <= hi; },
               words.empty() ? "in [" + number_text(lo) + ", " + number_text(hi) + "]" : std::move(words));
}
/// lo < v <= hi.
inline auto above_up_to(double lo, double hi) {
  return check([lo, hi](double v) { return v > lo && v <= hi; },
               "in (" + number_text(lo) + ", " + number_text(hi) + "]");
}
std::string choices_text(const std::vector<std::string>& choices);
inline auto one_of(std::vector<std::string> choices) {
  std::string words = choices_text(choices);
  return check(
      [c = std::move(choices)](const std::string& v) {
        for (const std::string& x : c)
          if (x == v) return true;
        return false;
      },
      std::move(words));
}
/// null, or a value that `inner` allows.
template <class P>
auto or_null(Check<P> inner) {
  return check(
      [p = inner.ok](const auto& v) { return !v || p(*v); }, "(" + inner.words + ")");
}
/// Every element of a list allowed by `inner`.
template <class P>
auto each(Check<P> inner) {
  return check(
      [p = inner.ok](const auto& list) {
        for (const auto& x : list)
          if (!p(x)) return false;
        return true;
      },
      "each " + inner.words);
}
/// Hidden-layer widths: at most 16 layers of 1 to 65536 units.
inline auto widths() {
  return check(
      [](const std::vector<int>& v) {
        if (v.size() > 16) return false;
        for (int w : v)
          if (w < 1 || w > 65536) return false;
        return true;
      },
      "of at most 16 widths in [1, 65536]");
}
/// auto, off, or a positive number of seconds.
inline auto seconds_or_auto() {
  return check([](const AutoSeconds& v) { return v.mode != AutoSeconds::Mode::fixed || v.seconds > 0; },
               "(> 0)");
}
/// "" or a positive integer followed by G or M (a memory size).
auto memory_size() -> Check<std::function<bool(const std::string&)>>;
/// A registered environment's name (kernels/envs/registry.cpp).
auto registered_env() -> Check<std::function<bool(const std::string&)>>;

}  // namespace checks

/// The keys of one section of type S: `add` is called once per entry of its X-list (through
/// GMI_CONFIG_KEYS) and appends the key's Field.
template <class S>
class SectionKeys {
 public:
  /// prefix: "env." and so on; owner: where the section lives in a Config.
  SectionKeys(std::string prefix, S& (*owner)(Config&)) : prefix_(std::move(prefix)), owner_(owner) {}
  template <class T, class Checked>
  void add(const char* name, T S::*member, const Checked& check, const char* doc) {
    std::string key = name;
    if (!key.empty() && key.back() == '_') key.pop_back();  // `double_` is the key `double`
    S& (*owner)(Config&) = owner_;
    fields_.push_back(make_field<T>(prefix_ + key, doc,
                                    [owner, member](Config& c) -> T& { return owner(c).*member; },
                                    Rule<T>(check)));
  }
  std::vector<Field>& fields() { return fields_; }

 private:
  std::string prefix_;
  S& (*owner_)(Config&);
  std::vector<Field> fields_;
};

}  // namespace gmi::config

/// A function `void(SectionKeys<S>&)` that adds the keys of the X-list LIST (entries
/// X(type, name, default, check, doc), kernels/core/key_list.hpp) in their order.
#define GMI_CONFIG_KEYS(S, LIST)                          \
  [](::gmi::config::SectionKeys<S>& keys_) {              \
    using namespace ::gmi::config::checks;                \
    using KeyOwner_ = S;                                  \
    LIST(GMI_CONFIG_KEY_)                                 \
  }
#define GMI_CONFIG_KEY_(type, name, def, check, doc) keys_.add(#name, &KeyOwner_::name, check, doc);
