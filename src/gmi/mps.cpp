#include "src/gmi/mps.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

#include "kernels/core/error.hpp"
#include "mpi/environment.hpp"
#include "mpi/topology.hpp"

namespace gmi::instances {
namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Result {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string output;
};

/// Run `nvidia-cuda-mps-control ARGS` with the job's pipe and log directories, feeding `input`.
Result mps_control(const std::string& pipe, const std::string& log, const std::string& args,
                   const std::string& input, int timeout_s) {
  const std::string cmd = fmt::format(
      "printf '%s\\n' {} | CUDA_MPS_PIPE_DIRECTORY={} CUDA_MPS_LOG_DIRECTORY={} timeout -k 2 {} "
      "nvidia-cuda-mps-control {} 2>&1",
      input.empty() ? "''" : quoted(input), quoted(pipe), quoted(log), timeout_s, args);
  Result r;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) r.output += buf;
  const int st = ::pclose(f);
  if (st != -1 && WIFEXITED(st)) r.status = WEXITSTATUS(st);
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' ')) r.output.pop_back();
  return r;
}

/// Whether a daemon answers in `pipe`; `why` gets the control program's status and output when not.
/// While the daemon starts an MPS server for a client (about 70 ms on an H100) it refuses other
/// connections ("Cannot send command to MPS control daemon process"), so a process that asks then
/// (a sweep's run starting while another run's CUDA context is created) would take a running
/// daemon for none: with `retry_s` > 0 it asks again, every 200 ms for that long, while the
/// daemon's control pipe is there (without it there is no daemon to wait for).
/// `call_s`: how long one call of the control program may take (a hung pipe: it is killed then).
bool answers(const std::string& pipe, const std::string& log, double retry_s = 0, std::string* why = nullptr,
             int call_s = 10) {
  // Without a daemon the client cannot connect and fails (or, if a stale pipe hangs, times out).
  Result r = mps_control(pipe, log, "", "get_default_active_thread_percentage", call_s);
  struct stat st {};
  const auto t0 = std::chrono::steady_clock::now();
  while (r.status != 0 && retry_s > 0 && ::stat((pipe + "/control").c_str(), &st) == 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < retry_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = mps_control(pipe, log, "", "get_default_active_thread_percentage", std::min(2, call_s));
  }
  if (r.status != 0 && why) *why = fmt::format("status {}: {}", r.status, r.output.empty() ? "no output" : r.output);
  return r.status == 0;
}

bool make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string log_tail(const std::string& log_dir) {
  std::ifstream f(log_dir + "/control.log");
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last.empty() ? "" : " (control.log: " + last + ")";
}

/// The log directory of a daemon in `pipe` set by the environment: $CUDA_MPS_LOG_DIRECTORY, else
/// PIPE-log.
std::string env_log_dir(const std::string& pipe) {
  const char* log = std::getenv("CUDA_MPS_LOG_DIRECTORY");
  return log && *log ? std::string(log) : pipe + "-log";
}

std::string default_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const char* job = std::getenv("SLURM_JOB_ID");
  const std::string base = tmp && *tmp ? tmp : "/tmp";
  return fmt::format("{}/gmi_drl-mps-{}", base, job && *job ? std::string(job) : fmt::format("{}-{}", ::getuid(), ::getpid()));
}

/// A detached watcher that sends `quit -t 10` to the daemon in `pipe` once this process has exited
/// (see the constructor); false when it could not be started.
bool start_quit_watcher(const std::string& pipe, const std::string& log) {
  const std::string cmd = fmt::format(
      "setsid sh -c \"while kill -0 {} 2>/dev/null; do sleep 0.5; done; echo quit -t 10 | "
      "CUDA_MPS_PIPE_DIRECTORY={} CUDA_MPS_LOG_DIRECTORY={} timeout -k 5 600 nvidia-cuda-mps-control && rmdir {}\" "
      "> /dev/null 2>&1 < /dev/null &",
      static_cast<long>(::getpid()), quoted(pipe), quoted(log), quoted(pipe));
  return std::system(cmd.c_str()) == 0;
}

/// How long starting a daemon may take in all: waiting for a quitting one in the same directory
/// (up to 30 s), the start, its first answer.  Each control call gets at most what is left, so a
/// control program that hangs (a stuck daemon or server) ends the job with an error line instead
/// of holding it for the sum of every try's own timeout.
constexpr double kStartSeconds = 40;

}  // namespace

MpsDaemon::MpsDaemon(MPI_Comm node, const std::string& configured_dir) {
  const int local = mpi::comm_rank(node);
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  // Seconds left of kStartSeconds, as a control call's timeout (at least 1).
  auto left = [&t0] {
    return kStartSeconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto call_s = [&left](int own) { return std::max(1, std::min(own, int(std::ceil(left())))); };
  if (local == 0) {
    const char* env_pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
    if (!configured_dir.empty()) {
      pipe_dir_ = configured_dir;
      log_dir_ = configured_dir + "-log";
    } else if (env_pipe && *env_pipe &&
               answers(env_pipe, env_log_dir(env_pipe), 3.0)) {
      pipe_dir_ = env_pipe;  // the site's (or the user's) running daemon: used, never stopped
      log_dir_ = env_log_dir(pipe_dir_);
    } else {
      // A daemon this job starts lives in a directory of its own: one started in the user's
      // $CUDA_MPS_PIPE_DIRECTORY and stopped at the end would leave that directory to the next
      // CUDA process of the shell (or of tune), which then failed to connect to it.
      if (env_pipe && *env_pipe)
        spdlog::info("MPS: no daemon answers in CUDA_MPS_PIPE_DIRECTORY={}; this job starts its own in a directory "
                     "of its own",
                     env_pipe);
      pipe_dir_ = default_dir();
      log_dir_ = pipe_dir_ + "-log";
    }
    if (answers(pipe_dir_, log_dir_, 0, nullptr, call_s(10))) {
      reused_ = true;
    } else if (!make_dirs(pipe_dir_) || !make_dirs(log_dir_)) {
      error = fmt::format("gmi.backend mps: cannot create the MPS directories {} and {}", pipe_dir_, log_dir_);
    } else {
      Result r = mps_control(pipe_dir_, log_dir_, "-d", "", call_s(30));
      // A daemon of the previous job on this pipe directory may still be quitting (its watcher
      // sends `quit` once that job has exited): it refuses clients but holds the directory.
      // Wait for it to go (back-to-back jobs, tune's probes), up to 30 s.
      for (int i = 0; i < 60 && left() > 0 && r.status != 0 && r.output.find("already running") != std::string::npos;
           ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        if (answers(pipe_dir_, log_dir_, 0, nullptr, call_s(10))) {
          r.status = 0;
          reused_ = true;
          break;
        }
        r = mps_control(pipe_dir_, log_dir_, "-d", "", call_s(30));
      }
      if (r.status == 127 || r.status == 126)
        error = "gmi.backend mps: nvidia-cuda-mps-control not found on PATH (install the NVIDIA "
                "driver utilities, or set gmi.backend: none)";
      else if (r.status != 0)
        error = fmt::format("gmi.backend mps: 'nvidia-cuda-mps-control -d' failed with status {}{}: {}{}", r.status,
                            r.status == 124 ? fmt::format(" (no answer within {:.0f} s)", kStartSeconds) : "",
                            r.output, log_tail(log_dir_));
      else if (!reused_) {
        owner_ = true;
        bool up = false;
        std::string why;
        while (!up && left() > 0) {
          up = answers(pipe_dir_, log_dir_, 0, &why, call_s(10));
          if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!up)
          error = fmt::format("gmi.backend mps: the MPS daemon started in {} did not answer within {:.0f} s (last "
                              "try: {}){}",
                              pipe_dir_, kStartSeconds, why, log_tail(log_dir_));
      }
    }
    if (!error.empty()) spdlog::debug("MPS: {}", error);
    else
      spdlog::debug("MPS: {} daemon in {}", reused_ ? "using the running" : "started a", pipe_dir_);
  }
  // Agree over the whole job: a failure on any node is an error on every rank.
  error = mpi::agree_on_error(error);
  if (!error.empty()) {
    // A daemon this job started is stopped once this process has exited (a daemon that does not
    // answer may not take a `quit` now either: the error line must not wait for it).
    if (owner_ && !start_quit_watcher(pipe_dir_, log_dir_))
      spdlog::warn("MPS: could not start the watcher that stops the daemon in {} at exit", pipe_dir_);
    owner_ = false;
    throw InputError(error);
  }
  pipe_dir_ = mpi::broadcast_string(pipe_dir_, node);
  log_dir_ = mpi::broadcast_string(log_dir_, node);
  if (owner_) {
    // `quit` makes the daemon refuse new clients and exit once the current ones are gone, and the
    // control program waits for that.  A process stays a client until it exits (measured on an
    // H100: cudaDeviceReset is not enough), this one included.  So a detached watcher sends the
    // quit once this process has exited, whichever way: a normal end, an error, or a kill -9 (a
    // dead rank ends the job; its daemon must not outlive it).  `-t 10`: a server whose clients
    // have not all gone 10 s later is shut down anyway (a GMI killed while a kernel of its never
    // returned kept the server, and so the daemon, alive on an H100).
    if (!start_quit_watcher(pipe_dir_, log_dir_))
      spdlog::warn("MPS: could not start the watcher that stops the daemon in {} at exit", pipe_dir_);
  }
}

MpsDaemon::~MpsDaemon() = default;  // the watcher started in the constructor stops the daemon

void forget_unanswered_mps_directory(MPI_Comm node) {
  const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  int stale = 0;
  if (pipe && *pipe && mpi::comm_rank(node) == 0) {
    std::string why;
    stale = answers(pipe, env_log_dir(pipe), 3.0, &why) ? 0 : 1;
    if (stale)
      spdlog::info("MPS: no daemon answers in CUDA_MPS_PIPE_DIRECTORY={} ({}): the GMIs run without MPS and "
                   "without that variable (a daemon that is quitting there would refuse them)",
                   pipe, why);
  }
  mpi::broadcast(stale, node);
  if (stale) {
    ::unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    ::unsetenv("CUDA_MPS_LOG_DIRECTORY");
  }
}

}  // namespace gmi::instances
