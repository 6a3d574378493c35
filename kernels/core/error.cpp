#include "kernels/core/error.hpp"

#include <unistd.h>

#include <sstream>

namespace gmi {
namespace {
int g_rank = -1;
std::string g_host;

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  return buf;
}
}  // namespace

void set_error_context(int rank, const std::string& host) {
  g_rank = rank;
  g_host = host;
}

std::string error_context() {
  std::ostringstream s;
  if (g_rank >= 0) s << "rank " << g_rank << " on ";
  s << (g_host.empty() ? hostname() : g_host);
  return s.str();
}

namespace detail {
void fail_call(const char* library, const char* call, const std::string& detail, const char* file,
               int line) {
  std::ostringstream s;
  s << library << " call `" << call << "` failed: " << detail << " (" << file << ":" << line << ", "
    << error_context() << ")";
  throw Error(s.str());
}
}  // namespace detail
}  // namespace gmi
