#pragma once
/// \file
/// \brief Orthogonal initialisation (torch.nn.init.orthogonal_, as CleanRL's layer_init), on the
/// host: QR of a Gaussian matrix through LAPACK, signs fixed by diag(R), scaled by a gain.
/// Weights are therefore identical on every rank and in CPU and GPU builds for the same seed.
#include <cstdint>
#include <vector>

#include "kernels/nn/mlp.hpp"

namespace gmi::nn {

/// Fill W (rows × cols, column-major) with gain * a random matrix with orthonormal rows or columns.
/// `stream` distinguishes matrices drawn under the same seed.
void orthogonal(double* W, int rows, int cols, double gain, std::uint64_t seed, std::uint64_t stream);

/// Initialise one MLP inside a host flat buffer: hidden layers with gain `hidden_gain`, the output
/// layer with `output_gain`, biases zero.  `stream` is the MLP's index (actor 0, critic 1, ...).
template <class Scalar>
void init_mlp(std::vector<Scalar>& flat, const MlpLayout& layout, double hidden_gain,
              double output_gain, std::uint64_t seed, std::uint64_t stream);

/// Initialise one MLP as torch.nn.Linear does by default (what CleanRL's DQN and SAC networks
/// keep): every weight and bias uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)] (kaiming_uniform_
/// with a = sqrt(5)), drawn from Philox under (seed, stream).
template <class Scalar>
void init_mlp_uniform(std::vector<Scalar>& flat, const MlpLayout& layout, std::uint64_t seed, std::uint64_t stream);

}  // namespace gmi::nn
