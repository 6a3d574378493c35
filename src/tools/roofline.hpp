#pragma once
/// \file
/// \brief The distance of every phase of a PPO iteration to the device's limits (`gmi_drl bench`):
/// the device's peak FLOP/s per precision and its memory bandwidth, and an analytic count of the
/// floating-point operations and device-memory bytes each phase needs.  Counts are compulsory
/// traffic (each input read once, each output written once; no re-reads, no padding), with one
/// estimate: an env's state is taken as one observation's size read and written per step (a
/// simulator with a larger or smaller state moves more or less).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "src/algos/phases.hpp"

namespace gmi::tools {

/// Peak rates of a device.  Tensor-core figures are dense (no structured sparsity), at boost clock.
struct DevicePeaks {
  std::string model;         ///< the device's name
  std::string source;        ///< where the figures come from (a table row, the device's attributes, none)
  double fp32 = 0;           ///< FLOP/s on the CUDA cores
  double tf32 = 0;           ///< FLOP/s, TF32 tensor cores (0: unknown)
  double bf16 = 0;           ///< FLOP/s, BF16 tensor cores with fp32 accumulation (0: unknown)
  double bytes_per_s = 0;    ///< device-memory bandwidth
  bool known() const { return bytes_per_s > 0; }
};

/// Peaks of a device by name (NVIDIA datasheets for H100 SXM/PCIe/NVL, H200, A100); any other
/// name: FP32 and bandwidth derived from the attributes (SMs x 128 lanes x 2 x clock; 2 x memory
/// clock x bus width), tensor peaks unknown.  Clocks in kHz, as CUDA reports them.
DevicePeaks peaks_for(const std::string& name, int sms, double sm_clock_khz, double mem_clock_khz, int bus_bits);
/// The peaks of this process's CUDA device; host builds: none (source says so).
DevicePeaks device_peaks();

/// The peak that bounds matrix products with device.matmul `matmul` on the fused (3xTF32 for
/// fp32) or layered (cuBLAS) kernels, and its name for the output.
std::pair<double, std::string> matmul_peak(const DevicePeaks& p, const std::string& matmul, bool fused);

/// The sizes that set a PPO iteration's work (one GMI).
struct PpoShape {
  double num_envs = 0, num_steps = 0, epochs = 0, minibatches = 0;
  int obs_dim = 0, act_dim = 0;
  bool continuous = false;
  std::vector<std::pair<int, int>> actor, critic;  ///< (inputs, outputs) of each layer
  std::vector<std::pair<int, int>> trunk;          ///< shared hidden layers (policy.shared_hidden; the heads on top)
  double params = 0;
  bool fused_update = false;   ///< the fused update kernels (else layered forward and backward)
  bool reduction = false;      ///< gradients averaged over GMIs
  bool normalize_obs = false;
  bool device_env = true;      ///< false: the envs step on host threads (no device traffic counted)
};

struct Work {
  double flops = 0;  ///< floating-point operations per iteration
  double bytes = 0;  ///< device-memory bytes per iteration
};
using PhaseWork = std::array<Work, algos::kNumPhases>;

/// The work of every phase of one PPO iteration of `s` (algos::Phase order).
PhaseWork ppo_phase_work(const PpoShape& s);
/// Whether a phase's FLOPs are matrix products (bounded by the matmul peak) rather than
/// element-wise work (the FP32 peak).
bool is_matmul_phase(algos::Phase p);

}  // namespace gmi::tools
