#!/usr/bin/env python3
"""Check cmake/deps-cuda.sh's argument handling and its CUDA 13 patches, without CUDA or a GPU.

  check_deps_cuda.py SCRIPT CASE

Runs SCRIPT in a fresh temporary directory with stub `nvcc` and `nvidia-smi` first on PATH (the
real ones are never run) on a stub Kokkos tree holding the lines the script patches, with
--prepare-only where it gets that far, so nothing is built.  Bad input must fail with exit
status 2 and exactly one line on stderr; good input must patch a copy and leave the source alone.
Exit status 0 when the case holds, 1 otherwise with what was expected and what came.
"""
import os
import re
import subprocess
import sys
import tempfile

WRAPPER = '#!/bin/sh\n# sm_70 is supported by every CUDA version from 9-12\n\ndefault_arch="sm_70"\n#default_arch="sm_80"\n'
INSTANCE_OLD = """  cudaError_t cuda_graph_add_dependencies_wrapper(
      cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
      size_t numDependencies) const {
    set_cuda_device();
    return cudaGraphAddDependencies(graph, from, to, numDependencies);
  }
  cudaError_t cuda_mem_prefetch_async_wrapper(const void* devPtr, size_t count,
                                              int dstDevice) const {
    set_cuda_device();
    return cudaMemPrefetchAsync(devPtr, count, dstDevice, m_stream);
  }
"""
INSTANCE_NEW = INSTANCE_OLD.replace(
    "cudaGraphAddDependencies(graph, from, to, numDependencies)",
    "cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies)").replace(
    "cudaMemPrefetchAsync(devPtr, count, dstDevice, m_stream)",
    "cudaMemPrefetchAsync(devPtr, count, cudaMemLocation{cudaMemLocationTypeDevice, dstDevice}, 0, m_stream)")
INSTANCE = "core/src/Cuda/Kokkos_Cuda_Instance.hpp"


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def read(path):
    with open(path) as f:
        return f.read()


class Case:
    def __init__(self, script, tmp):
        self.script, self.tmp = script, tmp
        self.problems = []
        self.stubs = os.path.join(tmp, "stubs")
        self.kokkos = os.path.join(tmp, "kokkos")
        self.prefix = os.path.join(tmp, "prefix")
        for name, text in [("CMakeLists.txt", "project(Kokkos)\n"),
                           ("core/src/Kokkos_Core.hpp", "// stub\n"),
                           (INSTANCE, INSTANCE_OLD)]:
            write(os.path.join(self.kokkos, name), text)
        write(os.path.join(self.kokkos, "bin/nvcc_wrapper"), WRAPPER, 0o755)
        self.toolkit("13.0", [75, 80, 86, 87, 89, 90, 100, 120])
        self.gpus(None)

    def toolkit(self, version, archs):
        write(os.path.join(self.stubs, "nvcc"),
              '#!/bin/sh\ncase "$1" in\n'
              f'  --version) echo "Cuda compilation tools, release {version}, V{version}.1";;\n'
              f'  --list-gpu-arch) for a in {" ".join(map(str, archs))}; do echo compute_$a; done;;\n'
              '  *) echo "stub nvcc: $*" >&2; exit 1;;\nesac\n', 0o755)

    def gpus(self, caps):
        """caps: compute capabilities nvidia-smi reports, or None for a machine without a GPU."""
        body = ('echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."; exit 9'
                if caps is None else "printf '%s\\n' " + " ".join(caps))
        write(os.path.join(self.stubs, "nvidia-smi"), "#!/bin/sh\n" + body + "\n", 0o755)

    def run(self, *args, env=None):
        e = {k: v for k, v in os.environ.items() if k not in ("GMI_KOKKOS_ARCH", "CUDA_HOME", "CUDA_ROOT")}
        e["PATH"] = self.stubs + ":/usr/bin:/bin"
        e.update(env or {})
        p = subprocess.run(["bash", self.script, *args], cwd=self.tmp, env=e,
                           capture_output=True, text=True, timeout=60)
        print("$ deps-cuda.sh", " ".join(args))
        print(f"exit status {p.returncode}\nstdout:\n{p.stdout}stderr:\n{p.stderr}")
        return p

    def check(self, cond, what):
        if not cond:
            self.problems.append(what)

    def error(self, regex, *args, env=None):
        """The script fails with status 2 and one stderr line matching regex."""
        p = self.run(*args, env=env)
        lines = p.stderr.splitlines()
        self.check(p.returncode == 2, f"exit status {p.returncode}, expected 2")
        self.check(len(lines) == 1, f"stderr has {len(lines)} lines, expected exactly one")
        self.check(bool(lines) and re.search(regex, lines[0]), f"stderr line does not match {regex!r}")
        self.check(not os.path.exists(self.prefix), "PREFIX was created although the input is bad")

    def prepare(self, *args, env=None, source=None):
        p = self.run("--prepare-only", *args, source or self.kokkos, self.prefix, env=env)
        self.check(p.returncode == 0, f"exit status {p.returncode}, expected 0")
        self.check(p.stderr == "", "expected nothing on stderr")
        return p.stdout

    def copied(self, name):
        return read(os.path.join(self.prefix, "src", "kokkos", name))


def run_case(c, name):
    k, pre = c.kokkos, c.prefix
    if name == "no_args":
        c.error(r"^deps-cuda: error: expected KOKKOS_SOURCE and PREFIX, got 0 argument\(s\); usage: ")
    elif name == "one_arg":
        c.error(r"^deps-cuda: error: expected KOKKOS_SOURCE and PREFIX, got 1 argument\(s\); usage: ", k)
    elif name == "unknown_option":
        c.error(r"^deps-cuda: error: unknown option '--cuda'; usage: ", "--cuda", k, pre)
    elif name == "not_a_directory":
        c.error(r"^deps-cuda: error: KOKKOS_SOURCE '.*/nope' is not a directory$",
                os.path.join(c.tmp, "nope"), pre)
    elif name == "not_kokkos":
        os.remove(os.path.join(k, "core/src/Kokkos_Core.hpp"))
        c.error(r"^deps-cuda: error: KOKKOS_SOURCE '.*/kokkos' is not a Kokkos source tree "
                r"\(no core/src/Kokkos_Core\.hpp\); pass a checkout of github\.com/kokkos/kokkos$", k, pre)
    elif name == "prefix_inside_source":
        c.prefix = os.path.join(k, "install")
        c.error(r"^deps-cuda: error: PREFIX '.*/kokkos/install' is inside KOKKOS_SOURCE '.*/kokkos'; "
                r"install elsewhere$", k, c.prefix)
    elif name == "no_arch_without_gpu":
        c.error(r"^deps-cuda: error: no GPU found \(nvidia-smi\) to detect the architecture: pass --arch "
                r"\(one of .*HOPPER90.*\) or set GMI_KOKKOS_ARCH$", k, pre)
    elif name == "unknown_arch":
        c.error(r"^deps-cuda: error: unknown architecture 'PASCAL99' \(from --arch\): expected one of "
                r"VOLTA70, .*, BLACKWELL120, sm_XX or a compute capability like 9\.0$", "--arch", "PASCAL99", k, pre)
    elif name == "arch_too_old_for_cuda13":
        c.error(r"^deps-cuda: error: CUDA 13\.0 \(.*/stubs/nvcc\) cannot compile for sm_70 \(VOLTA70, from "
                r"GMI_KOKKOS_ARCH\)$", k, pre, env={"GMI_KOKKOS_ARCH": "7.0"})
    elif name == "mixed_gpus":
        c.gpus(["8.0", "9.0"])
        c.error(r"^deps-cuda: error: GPUs of different compute capabilities \(8\.0 9\.0\); choose one with --arch$",
                k, pre)
    elif name == "cuda13_patches":
        # two H100s detected; the copy is patched, the source left alone
        c.gpus(["9.0", "9.0"])
        out = c.prepare()
        c.check("CUDA 13.0 (" in out and "architecture HOPPER90 (sm_90, from nvidia-smi)" in out,
                "the toolkit and the detected architecture are not reported")
        c.check(out.count("deps-cuda: patched ") == 3, "expected three 'patched' lines")
        c.check('default_arch="${NVCC_WRAPPER_DEFAULT_ARCH:-sm_90}"\n' in c.copied("bin/nvcc_wrapper"),
                "nvcc_wrapper's default architecture is not sm_90 (overridable)")
        c.check('#default_arch="sm_80"' in c.copied("bin/nvcc_wrapper"), "a comment line was changed")
        c.check(c.copied(INSTANCE) == INSTANCE_NEW, "Kokkos_Cuda_Instance.hpp is not patched as expected")
        c.check(read(os.path.join(k, INSTANCE)) == INSTANCE_OLD
                and read(os.path.join(k, "bin/nvcc_wrapper")) == WRAPPER, "the source tree was modified")
        # idempotent: a source that already has the CUDA 13 calls is copied unchanged
        patched = os.path.join(c.tmp, "patched")
        os.rename(os.path.join(pre, "src", "kokkos"), patched)
        out = c.prepare("--arch", "sm_90", source=patched)
        c.check("deps-cuda: patched " not in out and out.count("needs no patch") == 3,
                "a patched source was patched again")
        c.check(c.copied(INSTANCE) == INSTANCE_NEW, "a patched source changed when copied")
    elif name == "env_arch":
        out = c.prepare(env={"GMI_KOKKOS_ARCH": "ampere80"})
        c.check("architecture AMPERE80 (sm_80, from GMI_KOKKOS_ARCH)" in out, "GMI_KOKKOS_ARCH not used")
        c.check('default_arch="${NVCC_WRAPPER_DEFAULT_ARCH:-sm_80}"\n' in c.copied("bin/nvcc_wrapper"),
                "nvcc_wrapper's default architecture is not sm_80")
    elif name == "cuda12_no_patches":
        c.toolkit("12.6", [50, 60, 70, 75, 80, 86, 87, 89, 90])
        out = c.prepare("--arch", "Kokkos_ARCH_HOPPER90")
        c.check("CUDA 12.6 < 13: no patches" in out, "CUDA 12 is not reported as needing no patches")
        c.check(c.copied(INSTANCE) == INSTANCE_OLD and c.copied("bin/nvcc_wrapper") == WRAPPER,
                "the copy was patched for CUDA 12")
    else:
        print(f"unknown case {name!r}")
        return 1
    for msg in c.problems:
        print("FAIL: " + msg)
    return 1 if c.problems else 0


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    script, name = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="deps_cuda_") as tmp:
        rc = run_case(Case(script, tmp), name)
    print("OK" if rc == 0 else "FAILED")
    return rc


if __name__ == "__main__":
    sys.exit(main())
