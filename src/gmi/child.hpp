#pragma once
/// \file
/// \brief Processes a GMI runtime starts and watches: `tune`'s probe jobs and a sweep's runs.
/// Each child runs in its own process group (a signal reaches it and everything it started),
/// with its output in a log file, its own environment changes and, optionally, a CPU set; it gets
/// SIGTERM when this process dies (killed or not), so no run outlives the process that watched it.
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gmi::instances {

struct ChildSpec {
  std::vector<std::string> argv;  ///< argv[0] is looked up in PATH when it has no '/'
  std::string log;                ///< stdout and stderr go here
  bool append = false;            ///< append to `log` instead of truncating it
  /// The environment the changes below apply to ("NAME=value" entries); empty: this process's.
  std::vector<std::string> base_env;
  std::vector<std::pair<std::string, std::string>> env;  ///< variables set in the child
  std::vector<std::string> unset_prefixes;  ///< variables starting with one of these are removed,
  std::vector<std::string> keep;            ///< except these
  std::vector<int> cpus;                    ///< the child's CPU affinity; empty: inherited
  bool stdin_pipe = false;                  ///< its standard input is a pipe (Child::write_stdin), else /dev/null
};

class Child {
 public:
  /// Starts the child.  Throws gmi::InputError naming argv[0] when it cannot be executed, and
  /// gmi::Error when the log cannot be opened or fork fails.
  explicit Child(const ChildSpec& spec);
  /// A child still running gets SIGTERM (its process group) and 5 s to end, then SIGKILL; it is reaped.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  /// The exit status (0-255), 128 + the signal that ended it, or nothing while it runs.
  std::optional<int> poll();
  /// Sends `sig` to the child's process group.
  void signal(int sig);
  /// SIGTERM to the group, then SIGKILL after `grace_s`; returns the status.
  int stop(double grace_s);
  /// ChildSpec::stdin_pipe: writes `text` to its standard input (blocking while the pipe is full);
  /// false when it cannot (no pipe, closed, or the child stopped reading: no SIGPIPE is raised).
  bool write_stdin(const std::string& text);
  /// Ends its standard input (the child reads EOF); the destructor does it too.
  void close_stdin();

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;  ///< the write end of its standard input's pipe
  std::optional<int> status_;
};

/// This process's environment now, as "NAME=value" entries (for ChildSpec::base_env: taken before
/// MPI starts, it has none of the variables MPI_Init adds).
std::vector<std::string> environment();

/// This executable (/proc/self/exe).
std::string self_exe();

/// The last non-empty line of `log` that says what went wrong (an `error` or `fatal` line if
/// there is one), at most 300 characters.
std::string failure_text(const std::string& log);

}  // namespace gmi::instances
