#include "src/runtime/signals.hpp"

#include <csignal>
#include <cstdio>

namespace gmi::runtime {
namespace {
volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_checkpoints = 0;  // SIGUSR2 deliveries
constexpr int kStop[] = {SIGTERM, SIGINT, SIGUSR1};
struct sigaction g_old[4];

void on_signal(int sig) {
  if (sig == SIGUSR2) {
    g_checkpoints = g_checkpoints + 1;
  } else if (g_stop == 0) {
    g_stop = sig;
  }
}
}  // namespace

SignalRequests::SignalRequests() {
  g_stop = 0;
  g_checkpoints = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls (file I/O, MPI progress) continue after the handler
  for (int i = 0; i < 3; ++i) sigaction(kStop[i], &sa, &g_old[i]);
  sigaction(SIGUSR2, &sa, &g_old[3]);
}

SignalRequests::~SignalRequests() {
  for (int i = 0; i < 3; ++i) sigaction(kStop[i], &g_old[i], nullptr);
  sigaction(SIGUSR2, &g_old[3], nullptr);
}

int SignalRequests::stop_signal() const { return g_stop; }

int SignalRequests::checkpoint_requests() const { return g_checkpoints; }

bool SignalRequests::checkpoint_requested(int agreed) {
  if (agreed <= handled_) return false;
  handled_ = agreed;
  return true;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    default: return "a signal";
  }
}

}  // namespace gmi::runtime
