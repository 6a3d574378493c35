"""check_layers.py catches each kind of break: trees with one planted fault each (pytest)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_layers  # noqa: E402

CLEAN = {
    "kernels/core/error.hpp": (
        "#pragma once\n"
        "#define GMI_MPI_CHECK(call)            \\\n"
        "  do {                                 \\\n"
        "    if ((call) != MPI_SUCCESS) fail(); \\\n"
        "  } while (0)\n"
        "#define GMI_NCCL_CHECK(call) do { if ((call) != ncclSuccess) fail(ncclGetErrorString(call)); } while (0)\n"),
    "kernels/envs/cartpole.hpp": '#pragma once\n#include "kernels/core/error.hpp"\n',
    "kernels/envs/registry.hpp": '#pragma once\n#include "kernels/envs/cartpole.hpp"\n',
    "kernels/envs/registry.cpp": '#include "kernels/envs/registry.hpp"\n#include "cartpole.hpp"\n',
    "mpi/comm.hpp": "#pragma once\n#include <mpi.h>\n",
    "mpi/environment.hpp": '#pragma once\n#include <mpi.h>\n#include "kernels/core/error.hpp"\n',
    "mpi/environment.cpp": ('#include "mpi/environment.hpp"\n#include <nccl.h>\n'
                            "void f() { GMI_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); ncclCommDestroy(c); }\n"),
    "src/gmi/session.hpp": '#pragma once\n#include "mpi/environment.hpp"\n#include "mpi/comm.hpp"\n',
    "src/gmi/session.cpp": ('#include "src/gmi/session.hpp"\n#include "gmi_version.hpp"\n'
                            "// MPI_Allreduce(...) in a comment, and in a string:\n"
                            'const char* s = "MPI_Ibarrier() and ncclAllReduce()";\n'
                            "/* MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD); */\n"
                            "MPI_Comm c = MPI_COMM_WORLD;  // a handle is data, not a call\n"),
    "src/runtime/train.cpp": '#include "src/gmi/session.hpp"\n',
    "tests/mpi/test_x.cpp": '#include <mpi.h>\nvoid t() { MPI_Barrier(MPI_COMM_WORLD); }\n',
}


def make_tree(tmp_path, changes):
    files = dict(CLEAN)
    files.update(changes)
    for path, text in files.items():
        if text is None:
            continue
        full = tmp_path / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return str(tmp_path)


def run(root, *args):
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_layers.py"), "--root", root, *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def test_clean_tree_passes(tmp_path):
    code, out = run(make_tree(tmp_path, {}), "--strict")
    assert code == 0, out
    assert "no cycle among files or folders" in out


def test_file_cycle_through_a_source(tmp_path):
    # mpi/deadline <-> mpi/environment as at 5244d1e: no header includes itself, the units do.
    root = make_tree(tmp_path, {
        "mpi/deadline.hpp": "#pragma once\n",
        "mpi/deadline.cpp": '#include "mpi/deadline.hpp"\n#include "mpi/environment.hpp"\n',
        "mpi/environment.cpp": '#include "mpi/environment.hpp"\n#include "mpi/deadline.hpp"\n',
    })
    code, out = run(root, "--strict")
    assert code == 1
    assert "include cycle among files (a header and its source as one unit): " \
           "mpi/deadline -> mpi/environment -> mpi/deadline" in out
    assert "mpi/environment.cpp:2 includes mpi/deadline.hpp" in out
    assert "among folders" not in out


def test_file_cycle_by_relative_include(tmp_path):
    root = make_tree(tmp_path, {"kernels/envs/cartpole.hpp": '#pragma once\n#include "registry.hpp"\n'})
    code, out = run(root, "--strict")
    assert code == 1
    assert "kernels/envs/cartpole -> kernels/envs/registry -> kernels/envs/cartpole" in out


def test_folder_cycle_without_a_file_cycle(tmp_path):
    # src/runtime <-> src/gmi as at 5244d1e: train.cpp -> session.hpp -> runtime/kokkos_scope.hpp.
    root = make_tree(tmp_path, {
        "src/runtime/kokkos_scope.hpp": "#pragma once\n",
        "src/gmi/session.hpp": '#pragma once\n#include "mpi/environment.hpp"\n#include "src/runtime/kokkos_scope.hpp"\n',
    })
    code, out = run(root, "--strict")
    assert code == 1
    assert "among files" not in out
    assert "include cycle among folders: src/gmi -> src/runtime -> src/gmi" in out
    assert "src/gmi/session.hpp:3 includes src/runtime/kokkos_scope.hpp" in out
    assert "src/runtime/train.cpp:1 includes src/gmi/session.hpp" in out


def test_deeper_folders_count_as_their_second_level(tmp_path):
    root = make_tree(tmp_path, {
        "kernels/envs/mujoco/envs.hpp": '#pragma once\n#include "kernels/nn/mlp.hpp"\n',
        "kernels/nn/mlp.hpp": '#pragma once\n#include "kernels/envs/cartpole.hpp"\n',
        "kernels/envs/registry.cpp": '#include "kernels/envs/registry.hpp"\n#include "kernels/envs/mujoco/envs.hpp"\n',
        "kernels/envs/cartpole.hpp": '#pragma once\n#include "kernels/core/error.hpp"\n#include "kernels/nn/mlp.hpp"\n',
    })
    code, out = run(root, "--strict")
    assert code == 1
    assert "include cycle among files" in out  # cartpole <-> mlp
    assert "include cycle among folders: kernels/envs -> kernels/nn -> kernels/envs" in out


@pytest.mark.parametrize("path,target", [
    ("kernels/envs/cartpole.hpp", "mpi/environment.hpp"),
    ("kernels/envs/cartpole.hpp", "src/gmi/session.hpp"),
    ("mpi/environment.cpp", "src/gmi/session.hpp"),
])
def test_includes_against_the_layers(tmp_path, path, target):
    root = make_tree(tmp_path, {path: '#pragma once\n#include "%s"\n' % target})
    code, out = run(root, "--strict")
    assert code == 1
    assert "includes against the layers" in out
    assert "%s:2 includes %s" % (path, target) in out


@pytest.mark.parametrize("path,text,found", [
    ("src/gmi/session.cpp", "#include <mpi.h>\n", "src/gmi/session.cpp:1 #include <mpi.h>"),
    ("src/io/h5.hpp", "#pragma once\n#include <nccl.h>\n", "src/io/h5.hpp:2 #include <nccl.h>"),
    ("src/tools/bench.cpp", "void f() {\n  GMI_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));\n}\n",
     "src/tools/bench.cpp:2 calls MPI_Barrier()"),
    ("src/gmi/mps.cpp", "int r;\nvoid f() { MPI_Comm_rank (MPI_COMM_WORLD, &r); }\n",
     "src/gmi/mps.cpp:2 calls MPI_Comm_rank()"),
    ("kernels/nn/blas.cpp", "void f() { ncclAllReduce(a, b, n, t, o, c, s); }\n",
     "kernels/nn/blas.cpp:1 calls ncclAllReduce()"),
    # A macro outside the allowed definitions is code like any other.
    ("kernels/core/error.hpp", CLEAN["kernels/core/error.hpp"] + "#define GMI_ABORT() MPI_Abort(MPI_COMM_WORLD, 1)\n",
     "kernels/core/error.hpp:7 calls MPI_Abort()"),
])
def test_mpi_outside_mpi(tmp_path, path, text, found):
    code, out = run(make_tree(tmp_path, {path: text}), "--strict")
    assert code == 1
    assert "MPI or NCCL used outside mpi/" in out
    assert found in out


def test_pending_edges_are_left_out_and_must_exist(tmp_path):
    root = make_tree(tmp_path, {
        "src/algos/trainer.hpp": "#pragma once\n",
        "src/algos/trainer.cpp": '#include "src/algos/trainer.hpp"\n#include "src/algos/ppo/ppo.hpp"\n',
        "src/algos/ppo/ppo.hpp": '#pragma once\n#include "src/algos/trainer.hpp"\n',
    })
    problems, _ = check_layers.check(root, pending={})
    assert any("src/algos/ppo/ppo -> src/algos/trainer" in p for p in problems)
    problems, summary = check_layers.check(root, pending={("src/algos/trainer", "src/algos/ppo/ppo"): "why"})
    assert problems == [], problems
    assert "1 include edge(s) pending: why" in summary
    problems, _ = check_layers.check(root, pending={("src/algos/trainer", "src/algos/dqn/dqn"): "why"})
    assert any("pending include edges that are gone" in p and "src/algos/trainer -> src/algos/dqn/dqn" in p
               for p in problems)

