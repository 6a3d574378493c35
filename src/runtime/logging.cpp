#include "src/runtime/logging.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "kernels/core/error.hpp"

namespace gmi::runtime {

void setup_logging(int rank, const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (rank <= 0) {
    logger = std::make_shared<spdlog::logger>("gmi_drl", std::make_shared<spdlog::sinks::stdout_sink_mt>());
    logger->set_pattern("[%H:%M:%S] %v");
  } else {
    logger = std::make_shared<spdlog::logger>("gmi_drl", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("[%H:%M:%S rank " + std::to_string(rank) + "] [%l] %v");
  }
  const auto lvl = spdlog::level::from_str(level);
  logger->set_level(rank <= 0 ? lvl : std::max(lvl, spdlog::level::warn));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void log_as_first_learner(const std::string& level, bool on) {
  const auto lvl = spdlog::level::from_str(level);
  spdlog::default_logger()->set_level(on ? lvl : std::max(lvl, spdlog::level::warn));
}

void add_log_file(int rank, const std::string& path) {
  if (rank > 0) return;
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
    sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    spdlog::default_logger()->sinks().push_back(sink);
  } catch (const spdlog::spdlog_ex& e) {
    throw InputError(path + ": cannot open log file (" + e.what() + ")");
  }
}

}  // namespace gmi::runtime
