#include "src/runtime/run_dir.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "kernels/core/error.hpp"

namespace gmi::runtime {

std::string default_run_dir(const std::string& config_path) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  const std::string stem =
      config_path.empty() ? "run" : std::filesystem::path(config_path).stem().string();
  return "runs/" + stem + "-" + stamp;
}

void make_run_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError("run directory " + dir + ": cannot create (" +
                     (ec ? ec.message() : std::string("exists and is not a directory")) + ")");
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw InputError(path + ": cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw InputError(path + ": cannot write (" + ec.message() + ")");
}

MetricsCsv::MetricsCsv(const std::string& path, std::vector<std::string> columns)
    : columns_(std::move(columns)) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw InputError(path + ": cannot create metrics file");
  for (std::size_t i = 0; i < columns_.size(); ++i)
    std::fprintf(f_, "%s%s", i ? "," : "", columns_[i].c_str());
  std::fprintf(f_, "\n");
  std::fflush(f_);
}

MetricsCsv::~MetricsCsv() {
  if (f_) std::fclose(f_);
}

void MetricsCsv::row(const std::vector<double>& values) {
  if (!f_) return;
  GMI_REQUIRE(values.size() == columns_.size(), "MetricsCsv::row: one value per column");
  std::string line;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) line += ',';
    const double v = values[i];
    line += std::isnan(v) ? std::string("nan") : fmt::format("{:.10g}", v);
  }
  line += '\n';
  std::fputs(line.c_str(), f_);
  std::fflush(f_);
}

}  // namespace gmi::runtime
