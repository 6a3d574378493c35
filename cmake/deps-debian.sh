#!/usr/bin/env bash
# Install what gmi_drl's CPU build needs on Debian 12 / Ubuntu 22.04+ (idempotent; uses sudo when
# not root), MuJoCo's wheel (its C library) and Gymnasium's (the MuJoCo tasks' model files)
# included.  With --test also what the tests need: the Python packages they compare against and
# plot with (Gymnasium with its MuJoCo environments, h5py, matplotlib, pytest; onnx and onnxruntime
# to check exported models; tensorboard to read event files back) and a Slurm to submit jobs to
# (slurm-wlm, munge; tests/slurm/local-slurm.sh starts it on localhost).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config python3 python3-pip
      libopenmpi-dev openmpi-bin libhdf5-openmpi-dev libtrilinos-kokkos-dev libopenblas-dev
      librandom123-dev libyaml-cpp-dev libspdlog-dev libcli11-dev nlohmann-json3-dev googletest libgtest-dev
      libonnx-dev libprotobuf-dev)
[ "${1:-}" = "--test" ] && pkgs+=(slurm-wlm munge)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps-debian: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
pip_install() {
  python3 -m pip install -q "$@" 2>/dev/null || python3 -m pip install -q --break-system-packages "$@"
}
# MuJoCo's C library and headers come with its Python wheel (Debian's libmujoco-dev is too old);
# the build finds them there (cmake/GmiDependencies.cmake).
if ! python3 -c "import mujoco" 2>/dev/null; then
  echo "deps-debian: installing mujoco (pip)"
  pip_install mujoco
fi
# The MuJoCo tasks' v5 model files are Gymnasium's (envs/mujoco/assets); its wheel is pure Python.
# gmi_drl finds them where pip put them, also when Gymnasium comes after the build was configured.
if ! python3 -c "import gymnasium" 2>/dev/null; then
  echo "deps-debian: installing gymnasium (pip: the MuJoCo tasks' model files)"
  pip_install gymnasium
fi
if [ "${1:-}" = "--test" ]; then
  if ! python3 -c "import gymnasium, gymnasium.envs.mujoco, h5py, numpy, matplotlib, pytest, onnx, onnxruntime, tensorboard" 2>/dev/null; then
    echo "deps-debian: installing gymnasium[mujoco] h5py numpy matplotlib pytest onnx onnxruntime tensorboard (pip)"
    pip_install "gymnasium[mujoco]" h5py numpy matplotlib pytest onnx onnxruntime tensorboard
  fi
fi
