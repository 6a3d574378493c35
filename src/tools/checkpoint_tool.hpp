#pragma once
/// \file
/// \brief `gmi_drl checkpoint inspect FILE` and `gmi_drl checkpoint verify FILE`.
#include <string>

namespace gmi::tools {

/// Print a summary of a checkpoint (version, layout, counters, datasets).  Throws gmi::InputError.
void inspect_checkpoint(const std::string& path);
/// Read every dataset of a checkpoint and check checksums and shapes; prints "FILE: ok ...".
/// Throws gmi::InputError "FILE: problem" when it is not valid.
void verify_checkpoint(const std::string& path);

}  // namespace gmi::tools
