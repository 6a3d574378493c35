#!/usr/bin/env bash
# Install CUTLASS's C++ headers (header-only; the GPU build's tile kernels, kernels/nn/tile_gemm.cpp)
# in one command:
#
#   cmake/deps-cutlass.sh [PREFIX]        (default PREFIX: .deps/cutlass in the source tree)
#
# It downloads the nvidia-cutlass wheel of PyPI (version $GMI_CUTLASS_VERSION, default 4.2.0.0;
# the wheel carries CUTLASS's include/ tree) and unpacks include/ into PREFIX/include.  The `cuda`
# preset finds PREFIX when it is .deps/cutlass, or CUTLASS_ROOT=PREFIX.  Needs python3 with pip.
# Bad input gets one line on stderr, "deps-cutlass: error: ...", and exit status 2.
set -euo pipefail

die() { echo "deps-cutlass: error: $*" >&2; exit 2; }
[ $# -le 1 ] || die "expected at most one argument, PREFIX; usage: cmake/deps-cutlass.sh [PREFIX]"
here="$(cd "$(dirname "$0")/.." && pwd -P)"
prefix="$(realpath -m -- "${1:-$here/.deps/cutlass}")"
version="${GMI_CUTLASS_VERSION:-4.2.0.0}"
command -v python3 >/dev/null 2>&1 || die "python3 not found (pip downloads the nvidia-cutlass wheel)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "nvidia-cutlass==$version" \
  || die "pip could not download nvidia-cutlass==$version"
wheel=""
for w in "$tmp"/nvidia_cutlass-*.whl; do [ -f "$w" ] && wheel="$w"; done
[ -n "$wheel" ] || die "pip left no nvidia_cutlass wheel in $tmp"
mkdir -p "$prefix" || die "cannot create PREFIX '$prefix'"
rm -rf "$prefix/include"   # no headers of another version left beside these
python3 - "$wheel" "$prefix" <<'PY'
import os, sys, zipfile
wheel, prefix = sys.argv[1], sys.argv[2]
root = "cutlass_library/source/"
n = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.endswith("/") or not name.startswith(root + "include/"):
            continue
        dest = os.path.join(prefix, name[len(root):])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(z.read(name))
        n += 1
if not os.path.isfile(os.path.join(prefix, "include/cutlass/gemm/device/gemm.h")):
    print("deps-cutlass: error: the wheel has no include/cutlass/gemm/device/gemm.h", file=sys.stderr)
    sys.exit(2)
print(f"deps-cutlass: CUTLASS headers ({n} files) in {prefix}/include")
PY
