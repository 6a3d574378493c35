#include "src/tools/roofline.hpp"

#include <fmt/format.h>

#include "kernels/core/error.hpp"
#include "kernels/core/kokkos.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gmi::tools {
namespace {

struct Row {
  const char* match;  ///< a substring of the device name
  const char* label;
  double fp32, tf32, bf16, bw;  ///< TFLOP/s (dense) and TB/s
};
// NVIDIA datasheets (boost clock; tensor figures halved where quoted with sparsity).  More
// specific names first.
constexpr Row kTable[] = {
    {"H100 NVL", "H100 NVL", 60.0, 417.5, 835.5, 3.9},
    {"H100 PCIe", "H100 PCIe", 51.2, 378.0, 756.0, 2.0},
    {"H100", "H100 SXM5", 66.9, 494.7, 989.4, 3.35},
    {"H200", "H200 SXM", 66.9, 494.7, 989.4, 4.8},
    {"A100-SXM4-40GB", "A100 SXM4 40GB", 19.5, 156.0, 312.0, 1.555},
    {"A100 80GB PCIe", "A100 80GB PCIe", 19.5, 156.0, 312.0, 1.935},
    {"A100-PCIE-40GB", "A100 PCIe 40GB", 19.5, 156.0, 312.0, 1.555},
    {"A100", "A100 SXM4 80GB", 19.5, 156.0, 312.0, 2.039},
};

// Sum over layers of inputs x outputs (multiply-adds per sample), and of the first layer only.
double macs(const std::vector<std::pair<int, int>>& net) {
  double m = 0;
  for (const auto& [i, o] : net) m += double(i) * o;
  return m;
}
double first(const std::vector<std::pair<int, int>>& net) {
  return net.empty() ? 0.0 : double(net.front().first) * net.front().second;
}
double outputs(const std::vector<std::pair<int, int>>& net) {
  double n = 0;
  for (const auto& l : net) n += l.second;
  return n;
}

}  // namespace

DevicePeaks peaks_for(const std::string& name, int sms, double sm_clock_khz, double mem_clock_khz, int bus_bits) {
  DevicePeaks p;
  p.model = name;
  for (const Row& r : kTable)
    if (name.find(r.match) != std::string::npos) {
      p.source = fmt::format("table: {} (NVIDIA datasheet, dense, boost clock)", r.label);
      p.fp32 = r.fp32 * 1e12, p.tf32 = r.tf32 * 1e12, p.bf16 = r.bf16 * 1e12, p.bytes_per_s = r.bw * 1e12;
      return p;
    }
  p.source = "derived from the device's attributes (SMs x 128 FP32 lanes x 2 x clock; 2 x memory clock x bus "
             "width); tensor-core peaks unknown";
  p.fp32 = double(sms) * 128 * 2 * sm_clock_khz * 1e3;
  p.bytes_per_s = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8.0;
  return p;
}

DevicePeaks device_peaks() {
#if defined(KOKKOS_ENABLE_CUDA)
  int dev = 0, clock = 0, mem_clock = 0, bus = 0;
  GMI_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  GMI_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  GMI_CUDA_CHECK(cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, dev));
  GMI_CUDA_CHECK(cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, dev));
  GMI_CUDA_CHECK(cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, dev));
  return peaks_for(prop.name, prop.multiProcessorCount, clock, mem_clock, bus);
#else
  DevicePeaks p;
  p.model = "host";
  p.source = "none: host builds have no peak table (fractions of peak are left out)";
  return p;
#endif
}

std::pair<double, std::string> matmul_peak(const DevicePeaks& p, const std::string& matmul, bool fused) {
  if (matmul == "bf16") return {p.bf16, "BF16 tensor cores"};
  if (matmul == "tf32") return {p.tf32, "TF32 tensor cores"};
  if (fused) return {p.tf32 / 3, "3xTF32 tensor cores (TF32 peak / 3)"};
  return {p.fp32, "FP32 CUDA cores"};
}

bool is_matmul_phase(algos::Phase ph) {
  using algos::Phase;
  return ph == Phase::Inference || ph == Phase::UpdateForward || ph == Phase::UpdateBackward ||
         ph == Phase::UpdateFused;
}

PhaseWork ppo_phase_work(const PpoShape& s) {
  using algos::Phase;
  PhaseWork w{};
  auto at = [&](Phase p) -> Work& { return w[std::size_t(p)]; };
  const double N = s.num_envs, T = s.num_steps, od = s.obs_dim, ad = s.act_dim, P = s.params;
  const double steps = N * T;
  const double updates = s.epochs * s.minibatches;
  const double samples = s.epochs * steps;  // every sample once per epoch
  const double mac = macs(s.trunk) + macs(s.actor) + macs(s.critic);
  // a trunk's heads compute their input gradients: only the trunk's first layer skips one
  const double mac_first = s.trunk.empty() ? first(s.actor) + first(s.critic) : first(s.trunk);
  const double outs = outputs(s.trunk) + outputs(s.actor) + outputs(s.critic);
  const double value_macs = macs(s.trunk) + macs(s.critic);  // V(s) alone: the trunk and the value head
  const double act_floats = s.continuous ? 2 * ad : ad;  // sampled (and clipped) actions

  // Env step: the state read and written (taken as one observation's size each way), the action
  // read, the next observation, the reward and two flags written.
  if (s.device_env) at(Phase::EnvStep).bytes = steps * (4 * (3 * od + ad + 1) + 2);
  // Inference: actor and critic on every observation, V(s_T) at the end; observations read,
  // actions, log-probabilities and values written, the weights read once per step.
  at(Phase::Inference).flops = 2 * steps * mac + 2 * N * value_macs;
  const double critic_params = value_macs + outputs(s.trunk) + outputs(s.critic);  // weights and biases
  at(Phase::Inference).bytes = steps * 4 * (od + act_floats + 2) + T * 4 * P + 4 * critic_params + N * 4 * od;
  // Advantages: rewards, values, flags in; advantages and returns out; explained variance reads two.
  at(Phase::Advantages).flops = 10 * steps;
  at(Phase::Advantages).bytes = steps * (4 * 6 + 2);
  // Update: forward 2 x MACs per sample; backward 2 x MACs for the weight gradients and 2 x MACs
  // for the input gradients of every layer but the first.
  const double fwd = 2 * samples * mac, bwd = samples * (4 * mac - 2 * mac_first);
  const double gather = samples * 4 * (od + ad + 4);  // observation, action, log-prob, advantage, return, value
  if (s.fused_update) {
    at(Phase::UpdateFused).flops = fwd + bwd;
    at(Phase::UpdateFused).bytes = gather + updates * 4 * 2 * P;  // gradients written (and read back)
  } else {
    at(Phase::UpdateForward).flops = fwd;
    at(Phase::UpdateForward).bytes = 2 * gather + samples * 4 * outs;  // gathered copy; activations out
    at(Phase::UpdateBackward).flops = bwd;
    at(Phase::UpdateBackward).bytes = samples * 4 * (2 * outs + od) + updates * 4 * P;
  }
  if (s.reduction) at(Phase::Reduction).bytes = updates * 4 * 2 * P;
  // Gradient norm (P read) and Adam (parameters, gradients, two moments read; three written).
  at(Phase::Optimizer).flops = updates * 14 * P;
  at(Phase::Optimizer).bytes = updates * 4 * 8 * P;
  // The observation normaliser's update reads the rollout's observations.
  if (s.normalize_obs) at(Phase::Other).bytes = steps * 4 * od;
  return w;
}

}  // namespace gmi::tools
