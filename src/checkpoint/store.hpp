#pragma once
/// \file
/// \brief A run's checkpoints: <run_dir>/checkpoints/ckpt-<iteration, 9 digits>.h5.  A checkpoint
/// is written under a temporary name (…h5.partial), flushed and closed by all GMIs, renamed by
/// rank 0, and only then counted; a crash mid-write leaves at most a .partial file, which is
/// never read and is removed by the next run.  The newest `keep` checkpoints are kept.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mpi/comm.hpp"

namespace gmi::checkpoint {

class Store {
 public:
  Store(std::string run_dir, int keep);

  const std::string& dir() const { return dir_; }
  std::string path_for(std::int64_t iteration) const;

  /// Complete checkpoint files (by name; not verified), oldest first.
  std::vector<std::string> list() const;

  /// Collective over `comm`: `write(partial_path)` on every rank, then rank 0 renames the file
  /// into place, syncs the directory and removes checkpoints beyond `keep`; then a barrier.
  /// Returns the final path.  A disk without room for another checkpoint of the newest one's
  /// size is an InputError before anything is written; a failed write removes its partial file.
  std::string save(std::int64_t iteration, MPI_Comm comm,
                   const std::function<void(const std::string& partial)>& write) const;

  /// Remove .partial files left by a crash (rank 0; logs what it removed).
  void remove_partials() const;

 private:
  std::string dir_;
  int keep_;
};

/// The newest checkpoint in `files` (oldest first) that passes verify(); each one skipped is
/// logged as a warning with its problem.  Returns "" when `files` is empty; throws
/// gmi::InputError when none is valid.
std::string newest_valid(const std::vector<std::string>& files, const std::string& where);

}  // namespace gmi::checkpoint
