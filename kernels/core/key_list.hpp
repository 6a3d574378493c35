#pragma once
/// \file
/// \brief Configuration keys declared once, as an X-list next to the code that owns them.
///
/// A section's keys are one list of entries X(type, name, default, check, doc):
///
///     #define GMI_PPO_KEYS(X) X(int, num_steps, 128, at_least(1), "rollout length per environment ...")
///                             X(bool, anneal_lr, true, any, "decay the learning rate linearly ...")
///     struct PpoConfig { GMI_PPO_KEYS(GMI_KEY_MEMBER) };
/// (the real lists end each line of the #define with a backslash)
///
/// - `type name = default;` is the struct's member (GMI_KEY_MEMBER).  A default with a comma goes
///   in parentheses: `(std::vector<int>{64, 64})`.
/// - The key is `<section>.<name>`; a trailing underscore is dropped (`double_` is `dqn.double`).
/// - `check` is what a value must satisfy, in src/config/keys.hpp's words (`any`, `at_least(1)`,
///   `within(0, 1)`, `one_of({"a", "b"})`, `or_null(...)`, ...): only src/config expands it, so a
///   list in kernels/ names a check without including src/.
/// - `doc` is the one-line description, the only one: the reference (`gmi_drl config reference`,
///   config/README.md), the strict parser and the resolved config are generated from the list
///   (GMI_CONFIG_KEYS in src/config/keys.hpp, the schema in src/config/config.cpp).

#define GMI_KEY_MEMBER(type, name, def, check, doc) type name = def;
