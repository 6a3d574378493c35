#pragma once
/// \file
/// \brief The node's NVIDIA MPS control daemon for the GMIs of a job (papers 000 §3.1, 003
/// §3.1): the node's first rank starts `nvidia-cuda-mps-control -d` in a job-private pipe
/// directory when no daemon answers there, before any rank initialises CUDA, and asks it to stop
/// when it exits (`quit`: the daemon exits once its clients, the node's GMIs, are gone), also
/// after errors on that rank.  A daemon that cannot be started or reached is one error on every
/// rank.
#include <string>

#include "mpi/comm.hpp"

namespace gmi::instances {

class MpsDaemon {
 public:
  /// Collective over MPI_COMM_WORLD.  `node` is the node communicator; `configured_dir` is
  /// gmi.mps_dir ("" chooses: $CUDA_MPS_PIPE_DIRECTORY when a daemon answers there, else a
  /// job-private directory: a daemon this job starts is never in a directory it does not own).
  MpsDaemon(MPI_Comm node, const std::string& configured_dir);
  ~MpsDaemon();
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;

  const std::string& pipe_dir() const { return pipe_dir_; }
  const std::string& log_dir() const { return log_dir_; }
  /// True on the rank that started the daemon (and will stop it).
  bool owner() const { return owner_; }
  /// True when the daemon was already running (then nobody in this job stops it).
  bool reused() const { return reused_; }

 private:
  std::string pipe_dir_, log_dir_;
  bool owner_ = false, reused_ = false;
};

/// For GMIs that do not use MPS (gmi.backend none or mig): when $CUDA_MPS_PIPE_DIRECTORY is set
/// but no daemon answers there (none, or one that is quitting), unset it and
/// $CUDA_MPS_LOG_DIRECTORY in this process before CUDA starts, so that CUDA does not try to
/// connect (cudaErrorMpsConnectionFailed).  Collective over `node` (its first rank asks).
void forget_unanswered_mps_directory(MPI_Comm node);

}  // namespace gmi::instances
