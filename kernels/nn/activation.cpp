#include "kernels/nn/activation.hpp"

#include "kernels/core/error.hpp"

namespace gmi::nn {

Activation parse_activation(const std::string& name) {
  if (name == "tanh") return Activation::Tanh;
  if (name == "relu") return Activation::Relu;
  if (name == "elu") return Activation::Elu;
  throw InputError("unknown activation '" + name + "': expected tanh, relu or elu");
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::Tanh: return "tanh";
    case Activation::Relu: return "relu";
    case Activation::Elu: return "elu";
  }
  return "?";
}

}  // namespace gmi::nn
