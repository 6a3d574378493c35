#include "src/algos/trainer.hpp"

#include "kernels/core/error.hpp"

namespace gmi::algos {

const std::vector<float>* TrainerState::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.first == name) return &t.second;
  return nullptr;
}

const std::vector<double>* TrainerState::tensor64(const std::string& name) const {
  for (const auto& t : tensors64)
    if (t.first == name) return &t.second;
  return nullptr;
}

std::int64_t TrainerState::counter(const std::string& name) const {
  for (const auto& c : counters)
    if (c.first == name) return c.second;
  throw Error("trainer state: no counter '" + name + "'");
}


}  // namespace gmi::algos
