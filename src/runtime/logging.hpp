#pragma once
/// \file
/// \brief Logging set-up: rank 0 logs progress to stdout (and to the run directory's log file);
/// other ranks log warnings and errors to stderr only (CleanRL: only rank 0 logs).
#include <string>

namespace gmi::runtime {

/// Console logging for this rank.  `level`: trace, debug, info, warn, error.
void setup_logging(int rank, const std::string& level = "info");
/// Also log to `path` (rank 0 only; a no-op elsewhere).
void add_log_file(int rank, const std::string& path);

}  // namespace gmi::runtime
