// The roofline model of `gmi_drl bench`: device peaks from the datasheet table or the device's
// attributes, the matrix-product peak per device.matmul, and the per-phase work of a small PPO
// iteration counted by hand below.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

#include "src/algos/phases.hpp"
#include "src/tools/roofline.hpp"

namespace gmi::tools {
namespace {

using algos::Phase;

TEST(Roofline, DatasheetPeaksByDeviceName) {
  const DevicePeaks sxm = peaks_for("NVIDIA H100 80GB HBM3", 132, 1980000, 2619000, 5120);
  EXPECT_DOUBLE_EQ(sxm.fp32, 66.9e12);
  EXPECT_DOUBLE_EQ(sxm.tf32, 494.7e12);
  EXPECT_DOUBLE_EQ(sxm.bf16, 989.4e12);
  EXPECT_DOUBLE_EQ(sxm.bytes_per_s, 3.35e12);
  EXPECT_NE(sxm.source.find("H100 SXM5"), std::string::npos);
  // More specific names are not taken for the SXM part.
  EXPECT_DOUBLE_EQ(peaks_for("NVIDIA H100 PCIe", 114, 1755000, 1593000, 5120).bytes_per_s, 2.0e12);
  EXPECT_DOUBLE_EQ(peaks_for("NVIDIA H100 NVL", 132, 1785000, 2619000, 6144).bytes_per_s, 3.9e12);
  EXPECT_DOUBLE_EQ(peaks_for("NVIDIA H200", 132, 1980000, 3201000, 6144).bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(peaks_for("NVIDIA A100-SXM4-40GB", 108, 1410000, 1215000, 5120).bytes_per_s, 1.555e12);
  EXPECT_DOUBLE_EQ(peaks_for("NVIDIA A100-SXM4-80GB", 108, 1410000, 1593000, 5120).bytes_per_s, 2.039e12);
}

TEST(Roofline, UnknownDevicesDeriveFp32AndBandwidthFromAttributes) {
  // An L4: 58 SMs at 2.04 GHz, GDDR6 at 6.251 GHz on a 192-bit bus.
  const DevicePeaks p = peaks_for("NVIDIA L4", 58, 2040000, 6251000, 192);
  EXPECT_NEAR(p.fp32, 58.0 * 128 * 2 * 2.04e9, 1e3);
  EXPECT_NEAR(p.bytes_per_s, 2 * 6.251e9 * 24, 1e3);
  EXPECT_EQ(p.tf32, 0);
  EXPECT_EQ(p.bf16, 0);
  EXPECT_TRUE(p.known());
  EXPECT_NE(p.source.find("derived"), std::string::npos);
}

TEST(Roofline, MatmulPeakFollowsPrecisionAndKernels) {
  const DevicePeaks p = peaks_for("NVIDIA H100 80GB HBM3", 132, 1980000, 2619000, 5120);
  EXPECT_DOUBLE_EQ(matmul_peak(p, "fp32", false).first, 66.9e12);          // cuBLAS SGEMM
  EXPECT_DOUBLE_EQ(matmul_peak(p, "fp32", true).first, 494.7e12 / 3);      // 3xTF32 in the fused kernels
  EXPECT_DOUBLE_EQ(matmul_peak(p, "tf32", true).first, 494.7e12);
  EXPECT_DOUBLE_EQ(matmul_peak(p, "bf16", false).first, 989.4e12);
  EXPECT_TRUE(is_matmul_phase(Phase::UpdateFused));
  EXPECT_FALSE(is_matmul_phase(Phase::EnvStep));
}

TEST(Roofline, PhaseWorkOfASmallIterationCountedByHand) {
  // 2 envs x 3 steps, one epoch of one minibatch, 4 observations, 2 discrete actions; actor
  // 4-8-2, critic 4-8-1; 107 parameters.  Multiply-adds per sample: 32 + 16 + 32 + 8 = 88, of
  // which the first layers' 32 + 32 = 64.
  PpoShape s;
  s.num_envs = 2, s.num_steps = 3, s.epochs = 1, s.minibatches = 1;
  s.obs_dim = 4, s.act_dim = 1;
  s.actor = {{4, 8}, {8, 2}};
  s.critic = {{4, 8}, {8, 1}};
  s.params = 107;
  s.fused_update = true;
  s.reduction = true;
  const PhaseWork w = ppo_phase_work(s);
  auto at = [&](Phase p) { return w[std::size_t(p)]; };
  EXPECT_DOUBLE_EQ(at(Phase::EnvStep).bytes, 6 * (4 * (12 + 1 + 1) + 2));
  EXPECT_DOUBLE_EQ(at(Phase::Inference).flops, 2 * 6 * 88 + 2 * 2 * 40);   // + V(s_T) of 2 envs
  // Per step: observations in, action, log-prob and value out, all weights; V(s_T) reads the
  // critic's 8 * 4 + 8 + 8 * 1 + 1 = 49 weights and the 2 last observations.
  EXPECT_DOUBLE_EQ(at(Phase::Inference).bytes, 6 * 4 * 7 + 3 * 4 * 107 + 4 * 49 + 2 * 4 * 4);
  EXPECT_DOUBLE_EQ(at(Phase::UpdateFused).flops, 2 * 6 * 88 + 6 * (4 * 88 - 2 * 64));
  EXPECT_DOUBLE_EQ(at(Phase::UpdateFused).bytes, 6 * 4 * 9 + 2 * 4 * 107);
  EXPECT_DOUBLE_EQ(at(Phase::UpdateForward).flops, 0);
  EXPECT_DOUBLE_EQ(at(Phase::Reduction).bytes, 2 * 4 * 107);
  EXPECT_DOUBLE_EQ(at(Phase::Optimizer).bytes, 8 * 4 * 107);
  // The layered kernels do the same arithmetic, split into forward and backward.
  s.fused_update = false;
  s.reduction = false;
  const PhaseWork l = ppo_phase_work(s);
  EXPECT_DOUBLE_EQ(l[std::size_t(Phase::UpdateForward)].flops, 2 * 6 * 88);
  EXPECT_DOUBLE_EQ(l[std::size_t(Phase::UpdateForward)].flops + l[std::size_t(Phase::UpdateBackward)].flops,
                   at(Phase::UpdateFused).flops);
  EXPECT_DOUBLE_EQ(l[std::size_t(Phase::Reduction)].bytes, 0);
  // Host-simulated envs move nothing through device memory.
  s.device_env = false;
  EXPECT_DOUBLE_EQ(ppo_phase_work(s)[std::size_t(Phase::EnvStep)].bytes, 0);
}

TEST(PhaseClock, ChargesTheTimeSinceTheLastBoundaryToThePhaseThatEnded) {
  algos::PhaseClock c;
  const ExecSpace space;
  c.start(space);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.mark(space, Phase::EnvStep);
  c.mark(space, Phase::Inference);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  c.mark(space, Phase::EnvStep);
  EXPECT_GE(c.seconds(Phase::EnvStep), 0.030);
  EXPECT_LT(c.seconds(Phase::Inference), 0.005);
  EXPECT_EQ(c.seconds(Phase::Optimizer), 0);
  std::set<std::string> names;
  for (int p = 0; p < algos::kNumPhases; ++p) names.insert(algos::phase_name(Phase(p)));
  EXPECT_EQ(names.size(), std::size_t(algos::kNumPhases));
}

}  // namespace
}  // namespace gmi::tools
