#!/usr/bin/env bash
# Build and install Kokkos with CUDA for gmi_drl's `cuda` preset, in one command:
#
#   cmake/deps-cuda.sh [--arch ARCH] [--jobs N] [--prepare-only] KOKKOS_SOURCE PREFIX
#
# KOKKOS_SOURCE is a Kokkos source tree (a checkout of github.com/kokkos/kokkos, a release tarball);
# it is never modified: the script copies it to PREFIX/src/kokkos, patches the copy where the CUDA
# toolkit needs it (see cmake/README.md), builds in PREFIX/src/kokkos-build (Release, CUDA, the
# host's Serial backend) and installs to PREFIX.  Then:
#   KOKKOS_ROOT=PREFIX cmake --preset cuda && cmake --build --preset cuda
#
# CUDA toolkit: the nvcc on PATH, else $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc.
# Architecture: --arch, else $GMI_KOKKOS_ARCH, else the GPU's compute capability from nvidia-smi.
# ARCH is a Kokkos name (HOPPER90, AMPERE80, ...), sm_90 or a compute capability (9.0).
# --jobs N: parallel compile jobs (default: the build tool's).  --prepare-only: copy and patch the
# source into PREFIX/src/kokkos and stop (to look at the patches; the tests use it).
# Bad input gets one line on stderr, "deps-cuda: error: ...", and exit status 2.
set -euo pipefail

die() { echo "deps-cuda: error: $*" >&2; exit 2; }
say() { echo "deps-cuda: $*"; }
usage="usage: cmake/deps-cuda.sh [--arch HOPPER90|AMPERE80|...] [--jobs N] [--prepare-only] KOKKOS_SOURCE PREFIX"

# compute capability (two digits, no dot) <-> Kokkos_ARCH_* name, as in Kokkos' cmake/kokkos_arch.cmake
archs="70:VOLTA70 72:VOLTA72 75:TURING75 80:AMPERE80 86:AMPERE86 87:AMPERE87 89:ADA89 90:HOPPER90
       100:BLACKWELL100 120:BLACKWELL120"
arch_names() { local p out=""; for p in $archs; do out+="${out:+, }${p#*:}"; done; echo "$out"; }
# normalise ARCH (HOPPER90, Kokkos_ARCH_HOPPER90, sm_90, 9.0, 90) to "90:HOPPER90"; empty if unknown
arch_lookup() {
  local a="${1#Kokkos_ARCH_}" p cc
  a="${a^^}"
  case "$a" in
    SM_*) cc="${a#SM_}" ;;
    [0-9]*.[0-9]) cc="${a/./}" ;;
    [0-9]*) cc="$a" ;;
    *) cc="" ;;
  esac
  for p in $archs; do
    if [ "${p#*:}" = "$a" ] || [ "${p%%:*}" = "$cc" ]; then echo "$p"; return; fi
  done
}

arch_arg="" jobs="" prepare_only=0 pos=()
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) [ $# -ge 2 ] || die "--arch needs a value, e.g. --arch HOPPER90"; arch_arg="$2"; shift 2 ;;
    --arch=*) arch_arg="${1#--arch=}"; shift ;;
    --jobs|-j) [ $# -ge 2 ] || die "--jobs needs a number"; jobs="$2"; shift 2 ;;
    --jobs=*) jobs="${1#--jobs=}"; shift ;;
    --prepare-only) prepare_only=1; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) die "unknown option '$1'; $usage" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[ ${#pos[@]} -eq 2 ] || die "expected KOKKOS_SOURCE and PREFIX, got ${#pos[@]} argument(s); $usage"
src="${pos[0]}" prefix="${pos[1]}"
[ -z "$jobs" ] || [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs '$jobs' is not a positive number"

[ -d "$src" ] || die "KOKKOS_SOURCE '$src' is not a directory"
for f in CMakeLists.txt core/src/Kokkos_Core.hpp bin/nvcc_wrapper; do
  [ -f "$src/$f" ] || die "KOKKOS_SOURCE '$src' is not a Kokkos source tree (no $f); pass a checkout of github.com/kokkos/kokkos"
done
src="$(cd "$src" && pwd -P)"
prefix="$(realpath -m -- "$prefix")"
case "$prefix/" in
  "$src"/*) die "PREFIX '$prefix' is inside KOKKOS_SOURCE '$src'; install elsewhere" ;;
esac

# --- the architecture
if [ -n "$arch_arg" ]; then
  arch_from="--arch"; arch_in="$arch_arg"
elif [ -n "${GMI_KOKKOS_ARCH:-}" ]; then
  arch_from="GMI_KOKKOS_ARCH"; arch_in="$GMI_KOKKOS_ARCH"
elif command -v nvidia-smi >/dev/null 2>&1 \
     && caps="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sort -u)" \
     && [ -n "$caps" ]; then
  [ "$(echo "$caps" | wc -l)" -eq 1 ] \
    || die "GPUs of different compute capabilities ($(echo $caps)); choose one with --arch"
  arch_from="nvidia-smi"; arch_in="$caps"
else
  die "no GPU found (nvidia-smi) to detect the architecture: pass --arch (one of $(arch_names); H100: HOPPER90, A100: AMPERE80) or set GMI_KOKKOS_ARCH"
fi
arch="$(arch_lookup "$arch_in")"
[ -n "$arch" ] || die "unknown architecture '$arch_in' (from $arch_from): expected one of $(arch_names), sm_XX or a compute capability like 9.0"
sm="sm_${arch%%:*}" kokkos_arch="${arch#*:}"

# --- the CUDA toolkit
if command -v nvcc >/dev/null 2>&1; then
  nvcc="$(command -v nvcc)"
elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  nvcc="$CUDA_HOME/bin/nvcc"
elif [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
else
  die "no CUDA toolkit: nvcc is not on PATH, nor in \$CUDA_HOME/bin or /usr/local/cuda/bin; install CUDA or set CUDA_HOME"
fi
cuda_version="$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')"
[ -n "$cuda_version" ] || die "cannot read the CUDA version from '$nvcc --version'"
cuda_major="${cuda_version%%.*}"
# nvcc_wrapper runs the nvcc on PATH (or $CUDA_ROOT/bin/nvcc): make it the one found here.
export PATH="$(dirname "$nvcc"):$PATH"

# (the list is read whole first: with pipefail, grep -q closing the pipe at its first match could
# fail nvcc with SIGPIPE while it still writes, and the check with it)
gpu_archs="$("$nvcc" --list-gpu-arch 2>/dev/null || true)"
grep -qx "compute_${arch%%:*}" <<<"$gpu_archs" \
  || die "CUDA $cuda_version ($nvcc) cannot compile for $sm ($kokkos_arch, from $arch_from)"
say "CUDA $cuda_version ($nvcc), architecture $kokkos_arch ($sm, from $arch_from)"

# --- a copy of the source, patched for this CUDA
work="$prefix/src"
copy="$work/kokkos" build="$work/kokkos-build"
mkdir -p "$work" 2>/dev/null || die "cannot create PREFIX '$prefix'"
rm -rf "$copy"
mkdir -p "$copy"
tar -C "$src" --exclude=./.git -cf - . | tar -C "$copy" -xf -
say "copied $src to $copy"

# patch FILE OLD NEW WHAT: replace the line OLD (fixed string, leading blanks ignored) by NEW,
# keeping its indentation, when the file still has it.
patch_line() {
  local file="$copy/$1" old="$2" new="$3" what="$4"
  if grep -qF -- "$old" "$file"; then
    OLD="$old" NEW="$new" perl -0pi -e 's/^([ \t]*)\Q$ENV{OLD}\E/$1$ENV{NEW}/mg' "$file"
    grep -qF -- "$new" "$file" || die "patching $1 failed ($what)"
    say "patched $1: $what"
  else
    say "$1 needs no patch (the old line is not there: $what)"
  fi
}
if [ "$cuda_major" -ge 13 ]; then
  # CUDA 13 dropped sm_70, nvcc_wrapper's default when no -arch is given (CMake's compiler checks).
  patch_line bin/nvcc_wrapper 'default_arch="sm_70"' \
    "default_arch=\"\${NVCC_WRAPPER_DEFAULT_ARCH:-$sm}\"" "default architecture sm_70 -> $sm"
  # CUDA 13: cudaGraphAddDependencies(graph, from, to, edgeData, n).
  patch_line core/src/Cuda/Kokkos_Cuda_Instance.hpp \
    'return cudaGraphAddDependencies(graph, from, to, numDependencies);' \
    'return cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies);' \
    "cudaGraphAddDependencies gets CUDA 13's edge-data argument (nullptr)"
  # CUDA 13: cudaMemPrefetchAsync(ptr, count, cudaMemLocation, flags, stream).
  patch_line core/src/Cuda/Kokkos_Cuda_Instance.hpp \
    'return cudaMemPrefetchAsync(devPtr, count, dstDevice, m_stream);' \
    'return cudaMemPrefetchAsync(devPtr, count, cudaMemLocation{cudaMemLocationTypeDevice, dstDevice}, 0, m_stream);' \
    "cudaMemPrefetchAsync takes CUDA 13's cudaMemLocation and flags"
else
  say "CUDA $cuda_version < 13: no patches"
fi

if [ "$prepare_only" -eq 1 ]; then
  say "--prepare-only: the patched source is in $copy; not building"
  exit 0
fi

# --- configure, build, install
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
[ -f "$build/CMakeCache.txt" ] && ! grep -q "Kokkos_ARCH_${kokkos_arch}:BOOL=ON" "$build/CMakeCache.txt" \
  && rm -rf "$build"   # another architecture: start afresh
start=$(date +%s)
cmake -S "$copy" -B "$build" "${gen[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_CXX_COMPILER="$copy/bin/nvcc_wrapper" \
  -DKokkos_ENABLE_SERIAL=ON \
  -DKokkos_ENABLE_CUDA=ON \
  -DKokkos_ENABLE_CUDA_LAMBDA=ON \
  -DKokkos_ARCH_"$kokkos_arch"=ON \
  -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF
cmake --build "$build" ${jobs:+-j "$jobs"}
cmake --install "$build"
[ -x "$prefix/bin/nvcc_wrapper" ] || die "the installation at $prefix has no bin/nvcc_wrapper"
say "installed Kokkos (CUDA $cuda_version, $kokkos_arch) to $prefix in $(( $(date +%s) - start )) s"
say "next: KOKKOS_ROOT=$prefix cmake --preset cuda && cmake --build --preset cuda"
