#!/usr/bin/env python3
"""Function lengths in the C++ sources (src/, mpi/, kernels/): a brace-matching scanner.

    python3 postprocess/code_metrics.py                      # functions over 120 lines, longest first
    python3 postprocess/code_metrics.py --max-lines 80 src/runtime
    python3 postprocess/code_metrics.py --check --allow tests/postprocess/long_functions.allow

A function's length counts every line from the first line of its declaration (its `template`
line included) to its closing brace.  Lambdas and local classes count towards the function that
holds them.  The scanner removes comments, string and character literals (raw strings included)
and keeps only the first branch of every `#if` (so both branches of an `#ifdef` never open the
same function twice).  It is a scanner, not a compiler: a brace hidden in a macro is not seen.

--check compares with an allow list (one `path name max_lines` per line, `#` comments): a
function over the limit that is not listed fails, a listed one that grew past its max_lines
fails, and a listed one that is no longer over the limit (or no longer exists) fails too, so the
list can only shrink.  Exit status 0 when all is well, 1 otherwise (one line per problem).
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIRS = ("src", "mpi", "kernels")
EXTENSIONS = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inl"}
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return", "sizeof", "decltype",
           "alignof", "static_assert", "noexcept", "requires"}


@dataclass
class Function:
    path: str  # relative to the repository root
    line: int  # first line of the declaration
    length: int  # lines, declaration to closing brace
    name: str  # enclosing namespaces and classes, then the name ("gmi::runtime::train")


def strip_code(text: str) -> str:
    """The source with comments, literals and preprocessor lines blanked (newlines kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    at_line_start = True
    skip_depth = 0  # > 0: inside an #else/#elif branch being skipped (nesting level)
    cond_depth = 0

    def blank(s: str) -> str:
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            # A directive, with its backslash continuations.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                if k > 0 and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            directive = text[i:k]
            word = re.match(r"#\s*(\w*)", directive).group(1)
            if word in ("if", "ifdef", "ifndef"):
                cond_depth += 1
                if skip_depth:
                    skip_depth += 1
            elif word in ("else", "elif", "elifdef", "elifndef"):
                if skip_depth == 0:
                    skip_depth = 1
            elif word == "endif":
                cond_depth = max(0, cond_depth - 1)
                if skip_depth:
                    skip_depth -= 1
            out.append(blank(directive))
            i = k
            continue
        if skip_depth:
            k = text.find("\n", i)
            if k < 0:
                k = n
            out.append(" " * (k - i))
            i = k
            if i < n:
                out.append("\n")
                i += 1
                at_line_start = True
            continue
        at_line_start = False
        if c == "\n":
            out.append(c)
            i += 1
            at_line_start = True
            continue
        if text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            out.append(" " * (k - i))
            i = k
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(blank(text[i:k]))
            i = k
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(', text[i:i + 24])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + blank(text[i + 2:end - 2]) + "  ")
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + blank(text[i + 1:j - 1]) + c)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _name_of(header: str) -> str | None:
    """The function's name from the text before its body, or None if it is not a function."""
    h = " ".join(header.split())
    h = re.sub(r"^(template\s*<.*?>\s*)+", "", h)
    if "(" not in h:
        return None
    # The parameter list is the first '(' outside angle brackets; its name is what comes before.
    depth = 0
    for k, ch in enumerate(h):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0:
            before = h[:k].rstrip()
            if before.endswith("operator") or re.search(r"operator\s*\S+$", before):
                if h[k:].startswith("()") and before.endswith("operator"):
                    before += "()"
                m = re.search(r"([\w:~]*operator\s*\S*)$", before)
                return m.group(1).replace(" ", "") if m else "operator"
            m = re.search(r"([\w:~]+(?:<[^()]*>)?)$", before)
            if not m:
                return "<lambda>" if before.endswith("]") else None
            name = m.group(1)
            if name in CONTROL:
                return None
            m2 = re.search(r"(\w+)\s*=\s*\[[^\]]*\]$", before)
            if m2:
                return m2.group(1)
            if before.endswith("]"):
                return "<lambda>"
            return name
    return None


def functions_in(path: Path, rel: str) -> list[Function]:
    code = strip_code(path.read_text(errors="replace"))
    found: list[Function] = []
    # Scopes: ("ns"|"class"|"other", name) for braces at namespace/class level.
    scopes: list[tuple[str, str]] = []
    header_start = 0  # where the current declaration's text begins
    line = 1
    func_depth = 0  # > 0: inside a function body
    func_start_line = 0
    func_name = ""
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "\n":
            line += 1
        elif func_depth:
            if c == "{":
                func_depth += 1
            elif c == "}":
                func_depth -= 1
                if func_depth == 0:
                    prefix = "::".join(s[1] for s in scopes if s[1])
                    found.append(Function(rel, func_start_line, line - func_start_line + 1,
                                          f"{prefix}::{func_name}" if prefix else func_name))
                    header_start = i + 1
        elif c == ";":
            header_start = i + 1
        elif c == "}":
            if scopes:
                scopes.pop()
            header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            stripped = header.strip()
            kind, name = "other", ""
            if re.search(r"\bnamespace\b", stripped) and "(" not in stripped:
                kind = "ns"
                m = re.search(r"namespace\s+([\w:]+)\s*$", stripped)
                name = m.group(1) if m else ""
            elif re.match(r'extern\s*""$', stripped):
                kind = "ns"
            elif re.match(r"^(template\s*<.*?>\s*)?(class|struct|union)\b", " ".join(stripped.split())) \
                    and not stripped.endswith(")"):
                kind = "class"
                m = re.match(r"^(?:template\s*<.*?>\s*)?(?:class|struct|union)\s+(?:\w+\s+)*?(\w+)\s*(?:final\s*)?(?::|$)",
                             " ".join(stripped.split()))
                name = m.group(1) if m else ""
            elif re.match(r"^(enum)\b", stripped) or re.search(r"=\s*$", stripped):
                kind = "other"
            else:
                fname = _name_of(stripped)
                # A brace after an identifier in a constructor's initialiser list (`x_{v}`) is
                # not the body: the body follows ')' or '}' or a qualifier.
                ctor_init = re.search(r"\)\s*:(?!:)", " ".join(stripped.split()))
                if fname is not None and ctor_init and re.search(r"[\w>]$", stripped) and \
                        not re.search(r"\b(const|noexcept|override|final|mutable)$", stripped):
                    fname = None
                    # Skip the initialiser's braces: treat them as part of the header.
                    depth = 1
                    j = i + 1
                    while j < n and depth:
                        if code[j] == "{":
                            depth += 1
                        elif code[j] == "}":
                            depth -= 1
                        elif code[j] == "\n":
                            line += 1
                        j += 1
                    i = j
                    continue
                if fname is not None:
                    first = len(header) - len(header.lstrip())
                    func_start_line = line - code[header_start + first:i].count("\n")
                    func_name = fname
                    func_depth = 1
                    i += 1
                    continue
            scopes.append((kind, name if kind in ("ns", "class") else ""))
            header_start = i + 1
        i += 1
    return found


def scan(paths: list[Path]) -> list[Function]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.suffix in EXTENSIONS and f.is_file())
        elif p.is_file():
            files.append(p)
    out: list[Function] = []
    for f in files:
        try:
            rel = str(f.resolve().relative_to(ROOT))
        except ValueError:
            rel = str(f)
        out += functions_in(f, rel)
    return out


def read_allow(path: Path) -> dict[tuple[str, str], int]:
    allowed: dict[tuple[str, str], int] = {}
    for k, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if len(parts) != 3 or not parts[2].isdigit():
            raise SystemExit(f"{path}:{k}: expected 'path name max_lines', got '{raw.strip()}'")
        allowed[(parts[0], parts[1])] = int(parts[2])
    return allowed


def check(funcs: list[Function], limit: int, allow: dict[tuple[str, str], int], allow_path: str) -> list[str]:
    problems: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    for f in funcs:
        key = (f.path, f.name)
        seen[key] = max(seen.get(key, 0), f.length)
        if f.length <= limit:
            continue
        if key not in allow:
            problems.append(f"{f.path}:{f.line}: {f.name} is {f.length} lines (limit {limit}): split it into "
                            f"named steps (the allow list {allow_path} only shrinks)")
        elif f.length > allow[key]:
            problems.append(f"{f.path}:{f.line}: {f.name} is {f.length} lines, more than the {allow[key]} its entry "
                            f"in {allow_path} allows: split it rather than grow it")
    for key, most in allow.items():
        if seen.get(key, 0) <= limit:
            problems.append(f"{allow_path}: {key[0]} {key[1]} is "
                            f"{'gone' if key not in seen else f'{seen[key]} lines now'}: remove its entry")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help=f"files or folders (default: {' '.join(DEFAULT_DIRS)} of the repository)")
    ap.add_argument("--max-lines", type=int, default=120, help="list functions longer than this (default 120)")
    ap.add_argument("--allow", help="allow list for --check: 'path name max_lines' per line")
    ap.add_argument("--check", action="store_true", help="fail on long functions missing from --allow")
    a = ap.parse_args(argv)
    paths = [Path(p) for p in a.paths] or [ROOT / d for d in DEFAULT_DIRS]
    funcs = scan(paths)
    if a.check:
        allow = read_allow(Path(a.allow)) if a.allow else {}
        problems = check(funcs, a.max_lines, allow, a.allow or "(no allow list)")
        for p in problems:
            print(p)
        if not problems:
            print(f"{len(funcs)} functions, none over {a.max_lines} lines outside the allow list")
        return 1 if problems else 0
    long = sorted((f for f in funcs if f.length > a.max_lines), key=lambda f: (-f.length, f.path, f.line))
    for f in long:
        print(f"{f.length:5d}  {f.path}:{f.line}  {f.name}")
    print(f"{len(long)} of {len(funcs)} functions over {a.max_lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
