#include "src/gmi/child.hpp"

#include <fcntl.h>
#include <sched.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "kernels/core/error.hpp"

extern char** environ;

namespace gmi::instances {
namespace {

/// The child's environment: ours, less the removed prefixes, with `set` on top.
std::vector<std::string> child_environment(const ChildSpec& s) {
  std::vector<std::string> env;
  for (const std::string& v : s.base_env.empty() ? environment() : s.base_env) {
    const std::string name = v.substr(0, v.find('='));
    bool drop = false;
    for (const auto& p : s.unset_prefixes) drop = drop || name.rfind(p, 0) == 0;
    for (const auto& k : s.keep) drop = drop && name != k;
    for (const auto& kv : s.env) drop = drop || name == kv.first;
    if (!drop) env.push_back(v);
  }
  for (const auto& [k, v] : s.env) env.push_back(k + "=" + v);
  return env;
}

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

Child::Child(const ChildSpec& s) {
  if (s.argv.empty()) throw Error("Child: no command");
  // Everything the child needs is built before fork: between fork and exec it only makes
  // async-signal-safe calls.
  std::vector<std::string> env = child_environment(s);
  std::vector<char*> argv, envp;
  for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int c : s.cpus) CPU_SET(c, &mask);
  const int log = ::open(s.log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (s.append ? O_APPEND : O_TRUNC), 0644);
  if (log < 0) throw Error(fmt::format("{}: cannot open for writing: {}", s.log, std::strerror(errno)));
  // Its standard input: a pipe this process writes (ChildSpec::stdin_pipe), or /dev/null.
  int in[2] = {-1, -1};
  if (s.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) {  // never this process's own input instead
    const int e = errno;
    ::close(log);
    throw Error(fmt::format("pipe2 (standard input of '{}'): {}", s.argv[0], std::strerror(e)));
  }
  if (!s.stdin_pipe) in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int null_in = in[0];
  int report[2];  // exec's errno comes back through this pipe; it closes (EOF) when exec works
  if (::pipe2(report, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(log);
    if (null_in >= 0) ::close(null_in);
    if (in[1] >= 0) ::close(in[1]);
    errno = e;
    throw Error(fmt::format("pipe2: {}", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int e = errno;
    ::close(log), ::close(report[0]), ::close(report[1]);
    if (null_in >= 0) ::close(null_in);
    if (in[1] >= 0) ::close(in[1]);
    throw Error(fmt::format("fork: {}", std::strerror(e)));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::dup2(log, 1);
    ::dup2(log, 2);
    if (null_in >= 0) ::dup2(null_in, 0);
    // This process's other descriptors (MPI's sockets, its log files) are none of the run's.
    ::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
    if (!s.cpus.empty()) ::sched_setaffinity(0, sizeof mask, &mask);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int e = errno;
    if (::write(report[1], &e, sizeof e) < 0) {}
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also here: a signal sent before the child ran setpgid reaches it
  ::close(log);
  if (null_in >= 0) ::close(null_in);
  stdin_ = in[1];
  ::close(report[1]);
  int e = 0;
  ssize_t n;
  do n = ::read(report[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == sizeof e) {
    close_stdin();
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
    throw InputError(fmt::format("cannot start '{}': {}", s.argv[0], std::strerror(e)));
  }
}

Child::~Child() {
  close_stdin();
  // A run still going when its watcher unwinds (an error) gets the stop request a time limit would
  // give it, so it keeps what it did since its last checkpoint; then it is killed.
  if (pid_ > 0 && !poll()) stop(5.0);
}

bool Child::write_stdin(const std::string& text) {
  if (stdin_ < 0) return false;
  for (std::size_t at = 0; at < text.size();) {
    // MSG_NOSIGNAL is for sockets; a pipe whose reader is gone raises SIGPIPE, held off here.
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    const ssize_t w = ::write(stdin_, text.data() + at, text.size() - at);
    const int e = errno;
    if (w < 0 && e == EPIPE) {  // the SIGPIPE it raised is pending: take it before unblocking
      const timespec zero{0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (w < 0 && e == EINTR) continue;
    if (w < 0) return false;
    at += std::size_t(w);
  }
  return true;
}

void Child::close_stdin() {
  if (stdin_ >= 0) ::close(stdin_);
  stdin_ = -1;
}

std::optional<int> Child::poll() {
  if (status_ || pid_ <= 0) return status_;
  int st = 0;
  const pid_t w = ::waitpid(pid_, &st, WNOHANG);
  if (w == pid_) status_ = decode(st);
  else if (w < 0 && errno == ECHILD) status_ = -1;  // reaped elsewhere (SIGCHLD ignored): over, status unknown
  return status_;
}

void Child::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(-pid_, sig);
}

int Child::stop(double grace_s) {
  signal(SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  while (!poll() && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < grace_s)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!poll()) {
    signal(SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    status_ = decode(st);
  }
  return *status_;
}

std::vector<std::string> environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the gmi_drl executable (/proc/self/exe)");
  return p.string();
}

std::string failure_text(const std::string& log) {
  std::ifstream in(log);
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (line.find("error") != std::string::npos || line.find("fatal") != std::string::npos) error = line;
  }
  std::string t = error.empty() ? last : error;
  if (t.size() > 300) t = t.substr(0, 300) + "...";
  return t;
}

}  // namespace gmi::instances
