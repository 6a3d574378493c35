#pragma once
/// \file
/// \brief The run directory (resolved config, log, metrics.csv) and the metrics table.
#include <cstdio>
#include <string>
#include <vector>

namespace gmi::runtime {

/// runs/<config file stem>-<YYYYmmdd-HHMMSS> (local time).
std::string default_run_dir(const std::string& config_path);

/// Create `dir` (and parents).  Throws gmi::InputError naming the directory if that fails.
void make_run_dir(const std::string& dir);

/// Write `text` to `path` atomically (temporary file, then rename).
void write_text_file(const std::string& path, const std::string& text);

/// \brief CSV with a header row; each row is flushed when written, so a crash loses nothing
/// already logged.  NaN is written as `nan` (e.g. no episode finished in an iteration).
class MetricsCsv {
 public:
  MetricsCsv(const std::string& path, std::vector<std::string> columns);
  ~MetricsCsv();
  MetricsCsv(const MetricsCsv&) = delete;
  MetricsCsv& operator=(const MetricsCsv&) = delete;
  const std::vector<std::string>& columns() const { return columns_; }
  void row(const std::vector<double>& values);

 private:
  std::FILE* f_ = nullptr;
  std::vector<std::string> columns_;
};

}  // namespace gmi::runtime
