#pragma once
/// \file
/// \brief Running a command under MPI with gmi_drl's error policy (STYLE.md, practice 6): bad
/// input is seen alike on every rank, so rank 0 prints one `gmi_drl: error:` line and every rank
/// returns 2; a wait on other GMIs that ran out (mpi::TimeoutError) prints its line and ends the
/// whole job with status 3; any other failure is this rank's own, so it prints and ends the whole
/// job.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/environment.hpp"
#include "src/io/h5.hpp"
#include "src/runtime/logging.hpp"

namespace gmi::runtime {

template <class F>
int run_mpi_command(int* argc, char*** argv, const std::string& log_level, F&& body) {
  mpi::Environment mpi(argc, argv);
  setup_logging(mpi.rank(), log_level);
  try {
    return body(mpi);
  } catch (const InputError& e) {
    if (mpi.rank() == 0) std::fprintf(stderr, "gmi_drl: error: %s\n", e.what());
    return 2;
  } catch (const mpi::TimeoutError& e) {
    std::fprintf(stderr, "gmi_drl: error: %s\n", e.what());
    mpi::Environment::abort(3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi_drl: fatal: %s\n", e.what());
    if (mpi.size() > 1) mpi::Environment::abort(1);
    if (io::open_files() > 0) {  // MPI_Finalize would run HDF5's clean-up of a failed file and crash
      std::fflush(nullptr);
      std::_Exit(1);
    }
    return 1;
  }
}

}  // namespace gmi::runtime
