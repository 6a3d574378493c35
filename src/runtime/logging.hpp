#pragma once
/// \file
/// \brief Logging set-up: rank 0 logs progress to stdout (and to the run directory's log file);
/// other ranks log warnings and errors to stderr only (CleanRL: only rank 0 logs).
#include <string>

namespace gmi::runtime {

/// Console logging for this rank.  `level`: trace, debug, info, warn, error.
void setup_logging(int rank, const std::string& level = "info");
/// While `on`, log at `level` on this rank too (to stderr, its lines marked with its rank); after,
/// warnings and errors only again: the first trainer GMI under a role split during its set-up,
/// whose messages (kernel and reduction choices) rank 0 cannot give.
void log_as_first_learner(const std::string& level, bool on);
/// Also log to `path` (rank 0 only; a no-op elsewhere).
void add_log_file(int rank, const std::string& path);

}  // namespace gmi::runtime
