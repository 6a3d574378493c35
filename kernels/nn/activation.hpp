#pragma once
/// \file
/// \brief Hidden-layer activations.  Each derivative is written in terms of the activation's
/// output y, so the backward pass needs only the stored outputs.
#include <string>

#include "kernels/core/kokkos.hpp"

namespace gmi::nn {

enum class Activation { Tanh, Relu, Elu };

/// "tanh" | "relu" | "elu"; throws gmi::InputError otherwise.
Activation parse_activation(const std::string& name);
const char* activation_name(Activation a);

template <Activation A>
struct Act;

template <>
struct Act<Activation::Tanh> {
  template <class S>
  KOKKOS_FORCEINLINE_FUNCTION static S f(S x) { return math::tanh(x); }
  template <class S>
  KOKKOS_FORCEINLINE_FUNCTION static S df_from_y(S y) { return S(1) - y * y; }
};

template <>
struct Act<Activation::Relu> {
  template <class S>
  KOKKOS_FORCEINLINE_FUNCTION static S f(S x) { return x > S(0) ? x : S(0); }
  template <class S>
  KOKKOS_FORCEINLINE_FUNCTION static S df_from_y(S y) { return y > S(0) ? S(1) : S(0); }
};

/// ELU with alpha = 1: x for x > 0, exp(x) - 1 otherwise; derivative exp(x) = y + 1 there.
template <>
struct Act<Activation::Elu> {
  template <class S>
  KOKKOS_FORCEINLINE_FUNCTION static S f(S x) { return x > S(0) ? x : math::expm1(x); }
  template <class S>
  KOKKOS_FORCEINLINE_FUNCTION static S df_from_y(S y) { return y > S(0) ? S(1) : y + S(1); }
};

/// Calls f.template operator()<Act<A>>() for the runtime activation a (kernels are templated on
/// the activation so that no branch on it runs per element).
template <class F>
void dispatch(Activation a, F&& f) {
  switch (a) {
    case Activation::Tanh: f(Act<Activation::Tanh>{}); break;
    case Activation::Relu: f(Act<Activation::Relu>{}); break;
    case Activation::Elu: f(Act<Activation::Elu>{}); break;
  }
}

}  // namespace gmi::nn
