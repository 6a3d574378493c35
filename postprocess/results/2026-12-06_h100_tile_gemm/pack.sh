#!/usr/bin/env bash
# Pack stripped binaries, the libraries the GPU image lacks and the model files into .gpu/c1.tar.xz.
set -euo pipefail
cd /work/main
rm -rf /tmp/pk && mkdir -p /tmp/pk/bin /tmp/pk/assets
for b in gmi_drl "$@"; do cp build/cuda/bin/$b /tmp/pk/bin/ 2>/dev/null || cp build/cuda/tests/*/$b /tmp/pk/bin/; done
strip /tmp/pk/bin/*
bash /work/shared/device/bundle-libs.sh /tmp/pk /tmp/pk/bin/* > /dev/null
rm -f /tmp/pk/lib/libcrypto* /tmp/pk/lib/libssl* /tmp/pk/lib/libcurl* /tmp/pk/lib/libgnutls* /tmp/pk/lib/libz.so* /tmp/pk/lib/libzstd* /tmp/pk/lib/libopenblas* /tmp/pk/lib/libblas* /tmp/pk/lib/liblapack* /tmp/pk/lib/libgfortran* 2>/dev/null || true
A=/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/gymnasium/envs/mujoco/assets
cp $A/*.xml /tmp/pk/assets/
BA=/tmp/vbrax/lib/python3.11/site-packages/brax/envs/assets
[ -d $BA ] && { cp $BA/ant.xml /tmp/pk/assets/brax_ant.xml; cp $BA/humanoid.xml /tmp/pk/assets/brax_humanoid.xml; }
cp /work/shared/device/env.sh .gpu/env.sh
tar cf - -C /tmp/pk bin lib assets | xz -9 -T1 > .gpu/c1.tar.xz   # one stream: the binaries share most bytes
du -sh .gpu/c1.tar.xz /tmp/pk/bin /tmp/pk/lib
