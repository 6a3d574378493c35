#include "src/runtime/train.hpp"

#include "src/runtime/mpi_command.hpp"
#include "src/runtime/training.hpp"

namespace gmi::runtime {
namespace {

/// The steps of a run, in order; each one's file is named in training.hpp.
int train(const TrainOptions& o, mpi::Environment& mpi) {
  training::Run run(o, mpi);
  training::load_config(run);
  training::set_up(run);
  if (!training::restore(run)) return 0;  // the checkpoint is at the last iteration already
  const bool finished = training::iterate(run);  // false: a signal stopped it (a checkpoint was written)
  run.trainer->end_run();
  if (finished) training::finish(run);
  return 0;
}

}  // namespace

int run_training(const TrainOptions& o, int* argc, char*** argv) {
  return run_mpi_command(argc, argv, o.log_level, [&](mpi::Environment& mpi) { return train(o, mpi); });
}

}  // namespace gmi::runtime
