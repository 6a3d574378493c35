#include "src/runtime/faults.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "kernels/core/error.hpp"
#include "kernels/core/fault.hpp"

namespace gmi::runtime {

Faults Faults::parse(const std::string& spec, int rank) {
  Faults f;
  f.rank_ = rank;
  static const std::regex item(R"((kill|segv|sigterm|nan|kill-in-checkpoint|fill-in-checkpoint|slow-checkpoint|slow|hang|hang-kernel|hang-setup)@([0-9]+(\.[0-9]+)?)(:([0-9]+))?)");
  std::stringstream in(spec);
  std::string s;
  while (std::getline(in, s, ',')) {
    std::smatch m;
    if (!std::regex_match(s, m, item))
      throw InputError("GMI_DRL_FAULT: '" + s +
                       "': expected kill@N[:RANK], segv@N[:RANK], sigterm@N[:RANK], nan@N[:RANK], hang@N[:RANK], "
                       "hang-kernel@N[:RANK], hang-setup@0[:RANK], kill-in-checkpoint@N[:RANK], fill-in-checkpoint@N[:RANK], "
                       "slow-checkpoint@SECONDS or "
                       "slow@SECONDS[:RANK]");
    Item it;
    it.what = m[1];
    it.n = std::stod(m[2]);
    it.rank = m[5].matched ? std::stoi(m[5]) : 0;
    f.items_.push_back(it);
  }
  return f;
}

Faults Faults::from_environment(int rank) {
  const char* v = std::getenv("GMI_DRL_FAULT");
  if (!v || !*v) return Faults{};
  Faults f = parse(v, rank);
  if (rank == 0) spdlog::warn("GMI_DRL_FAULT={}: faults will be injected (testing)", v);
  return f;
}

void Faults::before_setup() const {
  for (const Item& it : items_)
    if (it.what == "hang-setup" && it.rank == rank_) {
      std::fprintf(stderr, "gmi_drl: GMI_DRL_FAULT: rank %d stops before the set-up (sleeps in host code)\n", rank_);
      std::fflush(stderr);
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
}

bool Faults::before_iteration(std::int64_t iteration) const {
  bool nan = false;
  for (const Item& it : items_)
    if (it.what == "slow" && it.rank == rank_) std::this_thread::sleep_for(std::chrono::duration<double>(it.n));
  for (const Item& it : items_) {
    if (it.what == "slow" || it.rank != rank_ || std::int64_t(it.n) != iteration) continue;
    if (it.what == "kill") {
      std::fprintf(stderr, "gmi_drl: GMI_DRL_FAULT: rank %d kills itself before iteration %lld\n", rank_,
                   static_cast<long long>(iteration));
      std::raise(SIGKILL);
    }
    if (it.what == "segv") std::raise(SIGSEGV);
    if (it.what == "sigterm") std::raise(SIGTERM);
    if (it.what == "nan") nan = true;
    if (it.what == "hang" || it.what == "hang-kernel") {
      std::fprintf(stderr, "gmi_drl: GMI_DRL_FAULT: rank %d %s before iteration %lld\n", rank_,
                   it.what == "hang" ? "stops (sleeps in host code)" : "launches a kernel that never returns",
                   static_cast<long long>(iteration));
      std::fflush(stderr);
      if (it.what == "hang-kernel") {
        fault::launch_endless_kernel(ExecSpace());
      } else {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
    }
  }
  return nan;
}

namespace {
/// Zeros into DIR/fill-in-checkpoint.filler until the file system is full (or 256 MiB).
void fill_directory_of(const std::string& path) {
  const std::string dir = path.substr(0, path.find_last_of('/') + 1);
  std::FILE* f = std::fopen((dir + "fill-in-checkpoint.filler").c_str(), "wb");
  if (!f) return;
  static const std::vector<char> chunk(1 << 16, 0);
  for (int i = 0; i < 4096 && std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size(); ++i) {
  }
  std::fclose(f);
  std::fprintf(stderr, "gmi_drl: GMI_DRL_FAULT: filled the file system of %s\n", dir.c_str());
}
}  // namespace

std::function<void()> Faults::in_checkpoint(std::int64_t iteration, const std::string& path) const {
  double sleep = 0;
  bool kill = false, fill = false;
  for (const Item& it : items_) {
    if (it.what == "slow-checkpoint") sleep += it.n;
    const bool here = it.rank == rank_ && std::int64_t(it.n) == iteration;
    if (it.what == "kill-in-checkpoint" && here) kill = true;
    if (it.what == "fill-in-checkpoint" && here) fill = true;
  }
  if (sleep == 0 && !kill && !fill) return {};
  return [sleep, kill, fill, path, rank = rank_] {
    if (sleep > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep));
    if (fill) fill_directory_of(path);
    if (kill) {
      std::fprintf(stderr, "gmi_drl: GMI_DRL_FAULT: rank %d kills itself while writing a checkpoint\n", rank);
      std::raise(SIGKILL);
    }
  };
}

}  // namespace gmi::runtime
