#include "src/checkpoint/store.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/topology.hpp"
#include "src/checkpoint/checkpoint.hpp"

namespace gmi::checkpoint {
namespace fs = std::filesystem;

namespace {
const std::regex kName(R"(ckpt-(\d{9})\.h5)");

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

Store::Store(std::string run_dir, int keep) : dir_(std::move(run_dir) + "/checkpoints"), keep_(keep) {}

std::string Store::path_for(std::int64_t iteration) const {
  return fmt::format("{}/ckpt-{:09d}.h5", dir_, iteration);
}

std::vector<std::string> Store::list() const {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (std::regex_match(e.path().filename().string(), kName)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());  // fixed-width iteration numbers sort by name
  return out;
}

std::string Store::save(std::int64_t iteration, MPI_Comm comm,
                        const std::function<void(const std::string&)>& write) const {
  const int rank = mpi::comm_rank(comm);
  const std::string final_path = path_for(iteration), partial = final_path + ".partial";
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (!fs::is_directory(dir_)) throw Error(dir_ + ": cannot create the checkpoint directory");
  }
  mpi::barrier(comm, "the checkpoint barrier (MPI_Ibarrier)");
  write(partial);  // collective; the file is flushed and closed when it returns
  mpi::barrier(comm, "the checkpoint barrier (MPI_Ibarrier)");
  if (rank == 0) {
    fsync_path(partial, O_RDONLY);
    if (std::rename(partial.c_str(), final_path.c_str()) != 0)
      throw Error(fmt::format("{}: cannot rename to {}", partial, final_path));
    fsync_path(dir_, O_RDONLY | O_DIRECTORY);
    std::vector<std::string> all = list();
    for (std::size_t i = 0; i + std::size_t(keep_) < all.size(); ++i) {
      std::error_code ec;
      fs::remove(all[i], ec);
      if (ec) spdlog::warn("checkpoint {}: cannot remove ({})", all[i], ec.message());
    }
  }
  mpi::barrier(comm, "the checkpoint barrier (MPI_Ibarrier)");
  return final_path;
}

void Store::remove_partials() const {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".partial") == 0) {
      spdlog::warn("removing {}: an unfinished checkpoint (a run stopped while writing it)", e.path().string());
      fs::remove(e.path(), ec);
    }
  }
}

std::string newest_valid(const std::vector<std::string>& files, const std::string& where) {
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    try {
      verify(*it);
      return *it;
    } catch (const InputError& e) {
      spdlog::warn("skipping checkpoint {}", e.what());
    }
  }
  if (files.empty()) return "";
  throw InputError(fmt::format("{}: none of the {} checkpoint(s) is valid (see the warnings above)", where, files.size()));
}

}  // namespace gmi::checkpoint
