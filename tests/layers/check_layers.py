#!/usr/bin/env python3
"""The layers of the tree, checked over its `#include` lines (issue 28, STYLE.md practice 1).

    kernels/  ->  mpi/  ->  src/        (an arrow: "may be included by")

Four rules over every C++/CUDA file in kernels/, mpi/ and src/ (tests/ is exempt: a test may call
MPI directly to set up or check what it tests):

 1. No include cycle among files.  A header and its source (`a.hpp`, `a.cpp`) are one unit, as
    in "mpi/deadline": `deadline.cpp` including `environment.hpp` while `environment.cpp`
    includes `deadline.hpp` is a cycle although no header includes itself.
 2. No include cycle among folders: the second level (`kernels/envs`, `kernels/nn`, `mpi`,
    `src/gmi`, `src/runtime`, ...; deeper folders count as their second-level folder).
 3. The layers point one way: kernels/ includes neither mpi/ nor src/, mpi/ does not include src/.
 4. Only mpi/ talks to MPI or NCCL: no file outside it includes <mpi.h> or <nccl.h> or calls
    an `MPI_Xxx(...)` or `ncclXxx(...)` function (comments and string literals do not count; MPI
    handles and constants such as MPI_Comm or MPI_COMM_WORLD, passed on to mpi/'s functions, are
    data, not calls; src/ gets them from mpi/comm.hpp).
    The one exception is the error header's GMI_MPI_CHECK/GMI_NCCL_CHECK definitions
    (kernels/core/error.hpp): macros that expand only where they are used, which rule 4 then
    checks like any other code.

A cycle left to a named piece of work is listed in PENDING (its include edges, with the reason):
the cycle checks leave those edges out, and an entry whose edge is gone fails, so the list only
shrinks.

Usage:  check_layers.py [--root DIR] [--list] [--strict]
  exit 0 and one summary line when the tree keeps the rules, else exit 1 and one block per
  broken rule naming the files and the #include lines (file:line) involved.
  --list also prints the edges of the folder graph and the DFS back edges of both graphs;
  --strict ignores PENDING.
"""
import argparse
import os
import re
import sys
from collections import defaultdict

ROOTS = ("kernels", "mpi", "src")
LAYER = {"kernels": 0, "mpi": 1, "src": 2}
SOURCE_EXT = (".hpp", ".h", ".cpp", ".cc", ".cu", ".cuh", ".inl", ".ipp")

# Macro definitions that may name MPI/NCCL calls outside mpi/ (see rule 4 above).
ALLOWED_DEFINES = {"kernels/core/error.hpp": {"GMI_MPI_CHECK", "GMI_NCCL_CHECK"}}

# Include edges that close a cycle, left to a named piece of work, each with the reason.  The
# cycle checks run without them; an entry whose edge is gone fails (remove it then).
PENDING = {}
PENDING_WHY = {}  # reason per tag of PENDING

INCLUDE_LOCAL = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
INCLUDE_SYSTEM = re.compile(r'^[ \t]*#[ \t]*include[ \t]*<((?:mpi|nccl)[\w.]*\.h)>', re.M)
MPI_CALL = re.compile(r"\b(P?MPI_[A-Z][a-z_]\w*|nccl[A-Z]\w*)\s*\(")


def strip_comments(text, strings=False):
    """Blank out comments (and, with strings=True, the contents of string and character
    literals), keeping every newline so that line numbers still hold."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        two = text[i:i + 2]
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif two == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == 'R' and text[i:i + 2] == 'R"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            body = text[i:j]
            out.append('R""' + "".join(ch for ch in body if ch == "\n") if strings else body)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            # An include's "path" is a literal too: keep it unless asked to blank literals.
            out.append(c + c if strings else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_defines(text, names):
    """Blank the #define of each macro in `names` (with its continuation lines)."""
    lines = text.split("\n")
    k = 0
    while k < len(lines):
        m = re.match(r"\s*#\s*define\s+(\w+)", lines[k])
        if m and m.group(1) in names:
            while True:
                cont = lines[k].rstrip().endswith("\\")
                lines[k] = ""
                k += 1
                if not cont or k >= len(lines):
                    break
        else:
            k += 1
    return "\n".join(lines)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def unit(path):
    """mpi/deadline.cpp -> mpi/deadline: a header and its source are one unit."""
    return os.path.splitext(path)[0]


def folder(path):
    """kernels/envs/mujoco/x.hpp -> kernels/envs; mpi/x.hpp -> mpi; src/main.cpp -> src."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def scan(root):
    """Files, their local includes resolved to tree paths, and rule-4 findings."""
    files = []
    for top in ROOTS:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(SOURCE_EXT):
                    files.append(os.path.relpath(os.path.join(d, name), root).replace(os.sep, "/"))
    known = set(files)
    includes = []  # (from, to, line)
    mpi_uses = []  # (file, line, what)
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            raw = fh.read()
        code = strip_comments(raw)
        for m in INCLUDE_LOCAL.finditer(code):
            target = m.group(1)
            here = os.path.normpath(os.path.join(os.path.dirname(f), target)).replace(os.sep, "/")
            if target in known:
                includes.append((f, target, line_of(code, m.start())))
            elif here in known:
                includes.append((f, here, line_of(code, m.start())))
            # else: a generated or third-party header (gmi_version.hpp): not part of the graph.
        if f.split("/")[0] == "mpi":
            continue
        for m in INCLUDE_SYSTEM.finditer(code):
            mpi_uses.append((f, line_of(code, m.start()), "#include <%s>" % m.group(1)))
        bare = strip_comments(strip_defines(raw, ALLOWED_DEFINES.get(f, set())), strings=True)
        for m in MPI_CALL.finditer(bare):
            mpi_uses.append((f, line_of(bare, m.start()), "calls %s()" % m.group(1)))
    return files, includes, mpi_uses


def strongly_connected(nodes, edges):
    """Tarjan's algorithm (iterative); returns the components with more than one node."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def one_cycle(comp, edges):
    """A shortest cycle through the component's first node (breadth-first)."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [comp[0]]


def back_edges(nodes, edges):
    """The edges that close a cycle in a depth-first search in sorted order."""
    state, out = {}, []
    for start in sorted(nodes):
        if start in state:
            continue
        state[start] = 1
        work = [(start, iter(sorted(edges[start])))]
        while work:
            v, it = work[-1]
            for w in it:
                if state.get(w) == 1:
                    out.append((v, w))
                elif w not in state:
                    state[w] = 1
                    work.append((w, iter(sorted(edges[w]))))
                    break
            else:
                state[v] = 2
                work.pop()
    return out


def graph(includes, key, skip=()):
    nodes, edges, why = set(), defaultdict(set), defaultdict(list)
    for a, b, line in includes:
        if (unit(a), unit(b)) in skip:
            continue
        u, v = key(a), key(b)
        nodes.update((u, v))
        if u != v:
            edges[u].add(v)
            why[(u, v)].append("%s:%d includes %s" % (a, line, b))
    return nodes, edges, why


def check(root, listing=False, pending=None):
    """Returns (problems, summary): one text block per broken rule.  `pending`: the include
    edges (between units) left out of the cycle checks (default PENDING)."""
    pending = PENDING if pending is None else pending
    files, includes, mpi_uses = scan(root)
    problems = []
    present = {(unit(a), unit(b)) for a, b, _ in includes}
    stale = sorted(e for e in pending if e not in present)
    if stale:
        problems.append("\n".join(
            ["pending include edges that are gone (remove them from PENDING in "
             "tests/layers/check_layers.py):"] + ["    %s -> %s" % e for e in stale]))
    if listing and pending:
        print("left out of the cycle checks (PENDING):")
        for (u, v), why in sorted(pending.items()):
            print("    %s -> %s: %s" % (u, v, PENDING_WHY.get(why, why)))
    for kind, key in (("files (a header and its source as one unit)", unit),
                      ("folders", folder)):
        nodes, edges, why = graph(includes, key, skip=set(pending))
        for comp in strongly_connected(nodes, edges):
            cyc = one_cycle(comp, edges)
            lines = ["include cycle among %s: %s" % (kind, " -> ".join(cyc))]
            members = set(comp)
            for u in comp:
                for v in sorted(edges[u] & members):
                    lines.append("    %s -> %s: %s" % (u, v, "; ".join(why[(u, v)][:3])
                                                         + (" ..." if len(why[(u, v)]) > 3 else "")))
            problems.append("\n".join(lines))
        if listing:
            print("DFS back edges among %s:" % kind)
            for u, v in back_edges(nodes, edges):
                print("    %s -> %s   (%s)" % (u, v, why[(u, v)][0]))
            if key is folder:
                print("folder edges:")
                for u in sorted(edges):
                    for v in sorted(edges[u]):
                        print("    %s -> %s (%d includes)" % (u, v, len(why[(u, v)])))
    wrong_way = [(a, b, line) for a, b, line in includes
                 if LAYER[a.split("/")[0]] < LAYER[b.split("/")[0]]]
    if wrong_way:
        problems.append("\n".join(
            ["includes against the layers (kernels -> mpi -> src: kernels/ includes neither mpi/ "
             "nor src/, mpi/ does not include src/):"]
            + ["    %s:%d includes %s" % (a, line, b) for a, b, line in wrong_way]))
    if mpi_uses:
        problems.append("\n".join(
            ["MPI or NCCL used outside mpi/ (put the call behind an mpi/ function):"]
            + ["    %s:%d %s" % u for u in mpi_uses]))
    summary = "layers: %d files, %d #include edges: no cycle among files or folders, " \
              "kernels -> mpi -> src holds, MPI/NCCL only in mpi/" % (len(files), len(includes))
    if pending:
        summary += " (%d include edge(s) pending: %s)" % (
            len(pending), "; ".join(sorted(set(PENDING_WHY.get(w, w) for w in pending.values()))))
    return problems, summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")),
                   help="the repository root (holding kernels/, mpi/, src/)")
    p.add_argument("--list", action="store_true", help="print the folder graph and back edges")
    p.add_argument("--strict", action="store_true", help="no PENDING edges: every cycle fails")
    args = p.parse_args()
    for top in ROOTS:
        if not os.path.isdir(os.path.join(args.root, top)):
            print("check_layers: %s has no %s/ (give the repository root with --root)"
                  % (args.root, top), file=sys.stderr)
            return 2
    problems, summary = check(args.root, args.list, {} if args.strict else None)
    if problems:
        for block in problems:
            print("layers: " + block, file=sys.stderr)
        print("layers: %d rule(s) broken (see tests/layers/check_layers.py for the rules)"
              % len(problems), file=sys.stderr)
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
