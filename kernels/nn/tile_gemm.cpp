#include "kernels/nn/tile_gemm.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>

#include "kernels/core/error.hpp"
#include "kernels/core/profile_region.hpp"
#include "kernels/core/side_stream.hpp"
#include "kernels/nn/blas.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(GMI_HAVE_CUTLASS)
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/linear_combination_generic.h>
#include <cutlass/gemm/device/gemm.h>
#define GMI_TILE_GEMM 1
#if defined(GMI_HAVE_TILE_GEMM_SM90)
#include "kernels/nn/tile_gemm_sm90.hpp"
#endif
#else
#define GMI_TILE_GEMM 0
#endif

namespace gmi::nn::tile_gemm {

namespace {
bool g_on = true;
int g_min_batch = kDefaultMinBatch;
}  // namespace

void set_enabled(bool on) { g_on = on; }
void set_min_batch(int columns) { g_min_batch = columns > 0 ? columns : kDefaultMinBatch; }

#if GMI_TILE_GEMM

namespace {

/// f applied to each element of an epilogue fragment (CUTLASS's activation-functor concept).
template <Activation A, class T>
struct ActFragment {
  CUTLASS_HOST_DEVICE T operator()(T const& x) const { return Act<A>::f(x); }
};
template <Activation A, class T, int N>
struct ActFragment<A, cutlass::Array<T, N>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& x) const {
    cutlass::Array<T, N> y;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) y[i] = Act<A>::f(x[i]);
    return y;
  }
};
template <Activation A>
struct ActFn {
  template <class T>
  using Fragment = ActFragment<A, T>;
};

/// The activation of an Act<A> (what nn::dispatch passes) as a constant.
template <class>
struct ActKind;
template <Activation A>
struct ActKind<Act<A>> : std::integral_constant<Activation, A> {};

constexpr int kAlign = 4;  ///< floats per vector access (16 bytes)

/// D = f(accumulator + C): the bias arrives as C, a column-major matrix of leading dimension 0.
/// Count: floats per epilogue access (4 on tensor cores, 1 for the SIMT kernels).
template <template <class> class F, int Count>
using BiasActOp = cutlass::epilogue::thread::LinearCombinationGeneric<
    F, float, Count, float, float, cutlass::epilogue::thread::ScaleType::NoBetaScaling>;

/// D = accumulator * f'(C), C the lower layer's stored outputs (the derivative from the output).
template <Activation A, int Count>
class ActGradOp {
 public:
  using ElementOutput = float;
  using ElementAccumulator = float;
  using ElementCompute = float;
  static bool const kIsHeavy = false;
  static int const kCount = Count;
  using FragmentOutput = cutlass::Array<float, kCount>;
  using FragmentAccumulator = cutlass::Array<float, kCount>;
  using FragmentSource = FragmentOutput;
  using FragmentCompute = FragmentOutput;
  struct Params {};

  CUTLASS_HOST_DEVICE explicit ActGradOp(Params const&) {}
  CUTLASS_HOST_DEVICE bool is_source_needed() const { return true; }
  CUTLASS_HOST_DEVICE void set_k_partition(int, int) {}
  CUTLASS_HOST_DEVICE FragmentOutput operator()(FragmentAccumulator const& acc, FragmentSource const& y) const {
    FragmentOutput d;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kCount; ++i) d[i] = acc[i] * Act<A>::df_from_y(y[i]);
    return d;
  }
  CUTLASS_HOST_DEVICE FragmentOutput operator()(FragmentAccumulator const& acc) const { return acc; }
};

using Col = cutlass::layout::ColumnMajor;
using Row = cutlass::layout::RowMajor;

/// Tile shapes (of the transposed problem CUTLASS runs for column-major D: batch columns by output
/// rows by k: 16 on tensor cores, 8 for the SIMT kernels), warp tiles and pipeline stages.
template <int TM, int TN, int WM, int WN, int Stages, int TK = 16>
struct Tiles {
  using Block = cutlass::gemm::GemmShape<TM, TN, TK>;
  using Warp = cutlass::gemm::GemmShape<WM, WN, TK>;
  static constexpr int kStages = Stages;
};
/// The candidates auto times (large batches favour the wide tiles, small ones the narrow: a batch
/// of 4,096 makes 32 blocks of 128 x 256, 128 of 64 x 128).  Each output element sums its products
/// in the same k order under every candidate, so the choice never changes a result's bits.
template <class Fn>
bool with_tiles(int candidate, Fn&& fn) {
  switch (candidate) {
    case 0: return fn(Tiles<128, 128, 64, 64, 4>{});
    case 1: return fn(Tiles<128, 256, 64, 64, 3>{});
    case 2: return fn(Tiles<64, 128, 32, 64, 4>{});
  }
  return false;
}
/// fp32's candidates: SIMT kernels (CUDA cores; CUTLASS's sgemm tiles).
template <class Fn>
bool with_simt_tiles(int candidate, Fn&& fn) {
  switch (candidate) {
    case 0: return fn(Tiles<128, 128, 32, 64, 4, 8>{});
    case 1: return fn(Tiles<256, 128, 64, 64, 3, 8>{});
    case 2: return fn(Tiles<64, 128, 32, 64, 4, 8>{});
  }
  return false;
}
constexpr int kCandidates = 3;

/// The GEMM of a precision: TF32 tensor cores (AlignAB floats per access of A and B: 4, or 1 where
/// a width of theirs is not a multiple of 4; the epilogue 4) or, for fp32, SIMT (1 float per access).
/// Float operands, column-major B and D.
template <bool Simt, class LayoutA, class Epilogue, class T, int AlignAB>
using Gemm = cutlass::gemm::device::Gemm<
    float, LayoutA, float, Col, float, Col, float,
    std::conditional_t<Simt, cutlass::arch::OpClassSimt, cutlass::arch::OpClassTensorOp>, cutlass::arch::Sm80,
    typename T::Block, typename T::Warp,
    std::conditional_t<Simt, cutlass::gemm::GemmShape<1, 1, 1>, cutlass::gemm::GemmShape<16, 8, 8>>, Epilogue,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, T::kStages, AlignAB, AlignAB, false,
    cutlass::arch::OpMultiplyAdd>;

/// Calls fn(tiles, simt, align) for a precision's candidate: TF32 at alignment 4 or 1, FP32 (SIMT).
template <class Fn>
bool with_kernel(int candidate, int align, Fn&& fn) {
  using One = std::integral_constant<int, 1>;
  using Four = std::integral_constant<int, kAlign>;
  if (blas::matmul_precision() == blas::MatmulPrecision::FP32)
    return with_simt_tiles(candidate, [&](auto t) { return fn(t, std::true_type{}, One{}); });
  return with_tiles(candidate, [&](auto t) {
    return align == kAlign ? fn(t, std::false_type{}, Four{}) : fn(t, std::false_type{}, One{});
  });
}

template <class G>
bool launch(const ExecSpace& space, int m, int n, int k, typename G::TensorRefA a, typename G::TensorRefB b,
            typename G::TensorRefC c, typename G::TensorRefD d, typename G::EpilogueOutputOp::Params epi) {
  typename G::Arguments args({m, n, k}, a, b, c, d, epi);
  G op;
  if (op.can_implement(args) != cutlass::Status::kSuccess) return false;
  const cutlass::Status st = op(args, nullptr, space.cuda_stream());
  GMI_REQUIRE(st == cutlass::Status::kSuccess,
              std::string("tile_gemm: the CUTLASS kernel failed to launch: ") + cutlass::cutlassGetStatusString(st));
  return true;
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % (kAlign * sizeof(float)) == 0; }

/// The candidate each problem (operation, activation, alignment, precision, widths, batch bucket)
/// runs: timed on its first call outside a graph capture; -1: none applies.  force_tiles()
/// overrides it.
std::map<std::array<int, 7>, int> g_choice;
int g_forced = -1;

/// Runs `launch_with(candidate)` with the problem's candidate, timing every candidate first (each
/// once to warm up, then 5 launches between two events) when the problem is new.
template <class F>
bool tuned(const ExecSpace& space, const std::array<int, 7>& key, F&& launch_with) {
  if (g_forced >= 0) return launch_with(g_forced);
  if (const auto it = g_choice.find(key); it != g_choice.end()) return it->second >= 0 && launch_with(it->second);
  if (SideStream::capturing(space)) return launch_with(0);  // no timing inside a capture; same bits
  // Alone on the GPU: work queued on other streams (a backward pass's weight gradients on its side
  // stream) would slow the first candidates only.
  GMI_CUDA_CHECK(cudaDeviceSynchronize());
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    Events() {
      GMI_CUDA_CHECK(cudaEventCreate(&start));
      GMI_CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~Events() {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    }
  } ev;
  int pick = -1;
  float best = 0;
  for (int c = 0; c < kCandidates; ++c) {
    if (!launch_with(c)) continue;
    GMI_CUDA_CHECK(cudaEventRecord(ev.start, space.cuda_stream()));
    for (int r = 0; r < 5; ++r) launch_with(c);
    GMI_CUDA_CHECK(cudaEventRecord(ev.stop, space.cuda_stream()));
    GMI_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    GMI_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    if (pick < 0 || ms < best) pick = c, best = ms;
  }
  g_choice[key] = pick;
  return pick >= 0 && launch_with(pick);
}

/// A Kokkos profiling region named with the operation and shape while a tool listens (bench
/// --kernel-times times the tile kernels by it, as blas.cpp's BLAS calls).
struct Region : ProfileRegion {
  Region(const char* what, Activation act, int m, int n, int k)
      : ProfileRegion([&] {
          return std::string("gmi::tile_gemm::") + what + " " + activation_name(act) + " " + std::to_string(m) + "x" +
                 std::to_string(n) + "x" + std::to_string(k);
        }) {}
};

#if defined(GMI_HAVE_TILE_GEMM_SM90)
/// The Hopper kernels' activation, where they have one.
template <Activation A>
constexpr bool kHopperAct = A == Activation::Tanh || A == Activation::Relu;
static_assert(sm90::kCandidates == kCandidates, "tile_gemm: a candidate index names one shape in each family");
template <Activation A>
constexpr sm90::Act kSm90Act = A == Activation::Tanh ? sm90::Act::Tanh : sm90::Act::Relu;

/// Whether a TF32 problem runs the Hopper kernels (tile_gemm_sm90.hpp) instead of the sm_80 ones:
/// an sm_90 device, an activation they have, 16-byte operands (widths multiples of 4).  A problem
/// takes one family or the other, whatever the candidate, so every candidate gives the same bits.
template <Activation A>
bool hopper(int align, int out, int in) {
  static const bool sm90_device = Kokkos::Cuda().cuda_device_prop().major == 9;
  return kHopperAct<A> && sm90_device && blas::matmul_precision() == blas::MatmulPrecision::TF32 &&
         align == kAlign && out % kAlign == 0 && in % kAlign == 0;
}

#endif

template <Activation A>
bool forward_with(const ExecSpace& space, int candidate, int align, int out, int in, int B, const float* W,
                  const float* b, const float* X, float* Z) {
#if defined(GMI_HAVE_TILE_GEMM_SM90)
  if constexpr (kHopperAct<A>)
    if (hopper<A>(align, out, in))
      return sm90::forward(space.cuda_stream(), candidate, kSm90Act<A>, out, in, B, W, b, X, Z);
#endif
  return with_kernel(candidate, align, [&](auto tiles, auto simt, auto align_ab) {
    constexpr bool kSimt = decltype(simt)::value;
    using G = Gemm<kSimt, Col, BiasActOp<ActFn<A>::template Fragment, kSimt ? 1 : kAlign>, decltype(tiles),
                   decltype(align_ab)::value>;
    return launch<G>(space, out, B, in, {W, Col(out)}, {X, Col(in)}, {b, Col(0)}, {Z, Col(out)},
                     typename G::EpilogueOutputOp::Params(1.0f, 1.0f));
  });
}

template <Activation A>
bool input_grad_with(const ExecSpace& space, int candidate, int align, int out, int in, int B, const float* W,
                     const float* dZ, const float* Y, float* dZin) {
#if defined(GMI_HAVE_TILE_GEMM_SM90)
  if constexpr (kHopperAct<A>)
    if (hopper<A>(align, out, in))
      return sm90::input_grad(space.cuda_stream(), candidate, kSm90Act<A>, out, in, B, W, dZ, Y, dZin);
#endif
  return with_kernel(candidate, align, [&](auto tiles, auto simt, auto align_ab) {
    constexpr bool kSimt = decltype(simt)::value;
    // W^T (in x out) is W read row-major
    using G = Gemm<kSimt, Row, ActGradOp<A, kSimt ? 1 : kAlign>, decltype(tiles), decltype(align_ab)::value>;
    return launch<G>(space, in, B, out, {W, Row(out)}, {dZ, Col(out)}, {Y, Col(in)}, {dZin, Col(in)},
                     typename G::EpilogueOutputOp::Params{});
  });
}

/// Whether the tile kernels take a product whose result has `rows` rows (a multiple of 4: the
/// tensor-core epilogue writes 4 floats at a time) and whose result and epilogue operands sit at
/// 16-byte boundaries: TF32 and FP32 (SIMT; 3xTF32 tiles ran slower than cuBLAS's FP32 products
/// for 256-wide layers on an H100); bf16 has its own path; batches of at least set_min_batch()'s
/// columns.
bool fits(int rows, int B, std::initializer_list<const void*> epilogue_ptrs) {
  const auto precision = blas::matmul_precision();
  if (!g_on || precision == blas::MatmulPrecision::BF16 || rows % kAlign || B < g_min_batch) return false;
  // TF32's mma.sync needs sm_80 (a build for an older GPU compiles those kernels to a trap)
  static const bool tensor_cores = Kokkos::Cuda().cuda_device_prop().major >= 8;
  if (precision == blas::MatmulPrecision::TF32 && !tensor_cores) return false;
  for (const void* p : epilogue_ptrs)
    if (!aligned(p)) return false;
  return true;
}

/// A batch's bucket for the timed choice (the next power of two: batches that vary by the
/// iteration, as PPO's bootstrap over truncated episodes, share one timing).
int bucket(int B) {
  int b = 1;
  while (b < B && b < (1 << 30)) b *= 2;
  return b;
}

/// 4 where the product's operands A and B allow 16-byte accesses, else 1.
int operand_alignment(int lda, int ldb, const void* a, const void* b) {
  return lda % kAlign == 0 && ldb % kAlign == 0 && aligned(a) && aligned(b) ? kAlign : 1;
}

/// Operation `op` (0 forward, 1 input gradient) of a layer: launch(candidate, activation constant)
/// with the problem's tile shape.
template <class F>
bool run(const ExecSpace& space, int op, Activation act, int align, int out, int in, int B, F&& launch) {
  return tuned(space, {op, int(act), align, int(blas::matmul_precision()), out, in, bucket(B)},
               [&](int c) {
                 bool done = false;
                 dispatch(act, [&](auto a) { done = launch(c, ActKind<decltype(a)>{}); });
                 return done;
               });
}

}  // namespace

bool enabled() { return g_on; }

bool forward(const ExecSpace& space, Activation act, int out, int in, int B, const float* W, const float* b,
             const float* X, float* Z) {
  if (!fits(out, B, {b, Z})) return false;
  const Region region("forward", act, out, B, in);
  const int align = operand_alignment(out, in, W, X);
  return run(space, 0, act, align, out, in, B, [&](int c, auto a) {
    return forward_with<decltype(a)::value>(space, c, align, out, in, B, W, b, X, Z);
  });
}

bool input_grad(const ExecSpace& space, Activation act, int out, int in, int B, const float* W, const float* dZ,
                const float* Y, float* dZin) {
  if (!fits(in, B, {Y, dZin})) return false;
  const Region region("input_grad", act, in, B, out);
  const int align = operand_alignment(out, out, W, dZ);
  return run(space, 1, act, align, out, in, B, [&](int c, auto a) {
    return input_grad_with<decltype(a)::value>(space, c, align, out, in, B, W, dZ, Y, dZin);
  });
}

int candidates() { return kCandidates; }
void force_tiles(int candidate) { g_forced = candidate < kCandidates ? candidate : -1; }

#else  // no CUTLASS or a host build: the callers run cuBLAS / CBLAS and separate passes

bool enabled() { return false; }
int candidates() { return 0; }
void force_tiles(int) {}
bool forward(const ExecSpace&, Activation, int, int, int, const float*, const float*, const float*, float*) {
  return false;
}
bool input_grad(const ExecSpace&, Activation, int, int, int, const float*, const float*, const float*, float*) {
  return false;
}

#endif

}  // namespace gmi::nn::tile_gemm
