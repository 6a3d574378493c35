#include "src/algos/trainer_state.hpp"

#include "kernels/core/error.hpp"
#include "kernels/core/host_copy.hpp"

namespace gmi::algos {
namespace {

/// `f(name, view, field)` for each shared buffer of `b` the trainer has, in TrainerState's order.
template <class F>
void for_each_shared(const StateBuffers& b, F&& f) {
  if (b.params.size() > 0) f("params", b.params, &TrainerState::params);
  if (b.adam_m.size() > 0) f("adam_m", b.adam_m, &TrainerState::adam_m);
  if (b.adam_v.size() > 0) f("adam_v", b.adam_v, &TrainerState::adam_v);
  if (b.obs_rms.size() > 0) f("obs_rms", b.obs_rms, &TrainerState::obs_rms);
  if (b.ret_rms.size() > 0) f("ret_rms", b.ret_rms, &TrainerState::ret_rms);
}

/// The same for this GMI's buffers.
template <class F>
void for_each_own(const StateBuffers& b, F&& f) {
  if (b.obs.size() > 0) f("obs", b.obs, &TrainerState::obs);
  if (b.return_acc.size() > 0) f("return_acc", b.return_acc, &TrainerState::return_acc);
}

template <class T>
const std::vector<T>& required(const std::vector<T>* t, const std::string& name, std::size_t size,
                               const std::string& who) {
  GMI_REQUIRE(t && (size == kAnySize || t->size() == size), who + " state: " + name + " missing or of the wrong size");
  return *t;
}

}  // namespace

TrainerState save_buffers(const ExecSpace& space, const StateBuffers& b) {
  space.fence();
  TrainerState s;
  auto save = [&](const char*, const auto& view, auto field) { s.*field = to_host(view); };
  for_each_shared(b, save);
  for_each_own(b, save);
  if (b.env) s.env = b.env->save_state(space);
  return s;
}

void load_shared_buffers(const ExecSpace& space, const StateBuffers& b, const TrainerState& s) {
  space.fence();
  for_each_shared(b, [&](const char* name, const auto& view, auto field) { to_device(view, s.*field, name); });
}

void restart_episodes(const ExecSpace& space, const StateBuffers& b, std::uint64_t first_episode) {
  if (b.return_acc.size() > 0) Kokkos::deep_copy(b.return_acc, 0.0f);
  if (b.env) b.env->reset_all(space, b.obs.data(), first_episode);
}

void load_own_buffers(const ExecSpace& space, const StateBuffers& b, const TrainerState& s) {
  for_each_own(b, [&](const char* name, const auto& view, auto field) { to_device(view, s.*field, name); });
  if (b.env) b.env->load_state(space, s.env);
  space.fence();
}

const std::vector<float>& required_tensor(const TrainerState& s, const std::string& name, std::size_t size,
                                          const std::string& who) {
  return required(s.tensor(name), name, size, who);
}

const std::vector<double>& required_tensor64(const TrainerState& s, const std::string& name, std::size_t size,
                                             const std::string& who) {
  return required(s.tensor64(name), name, size, who);
}

}  // namespace gmi::algos
