#include "src/checkpoint/store.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/environment.hpp"
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
  // A full disk: the newest checkpoint's size (10 % and 64 KiB more) must be free, or nothing is
  // written and the run stops with its checkpoints as they are (rank 0 decides for every rank).
  double space[3] = {0, 0, 0};  // bytes free, bytes needed, enough: rank 0's, summed to every rank
  if (rank == 0) {
    space[2] = 1;
    const std::vector<std::string> all = list();
    std::error_code ec;
    const auto last = all.empty() ? 0 : fs::file_size(all.back(), ec);
    struct statvfs sv {};
    if (!ec && last > 0 && ::statvfs(dir_.c_str(), &sv) == 0) {
      space[0] = double(sv.f_bavail) * double(sv.f_frsize);
      space[1] = 1.1 * double(last) + double(1 << 16);
      space[2] = space[0] >= space[1] ? 1 : 0;
    }
  }
  mpi::allreduce_sum(space, 3, comm);
  const auto newest = [this] {
    const std::vector<std::string> all = list();
    return all.empty() ? std::string("none") : all.back();
  };
  if (space[2] == 0)
    throw InputError(fmt::format(
        "checkpoint of iteration {} not written: {:.1f} MiB free in {}, about {:.1f} MiB needed (the disk is "
        "full); the newest checkpoint is {}: free space, then --resume latest",
        iteration, space[0] / (1 << 20), dir_, space[1] / (1 << 20), newest()));
  mpi::barrier(comm, "the checkpoint barrier (MPI_Ibarrier)");
  try {
    write(partial);  // collective; the file is flushed and closed when it returns
  } catch (const std::exception& e) {
    // Most often the disk filled up during the write: say so, and leave no partial file behind.
    struct statvfs sv {};
    const double free_mib = ::statvfs(dir_.c_str(), &sv) == 0 ? double(sv.f_bavail) * double(sv.f_frsize) / (1 << 20) : -1;
    if (rank == 0) {
      std::error_code ec;
      fs::remove(partial, ec);
    }
    throw Error(fmt::format("writing {} failed ({:.1f} MiB free there now; the newest checkpoint is {}): {}", partial,
                            free_mib, newest(), e.what()));
  }
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
