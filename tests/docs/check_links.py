#!/usr/bin/env python3
"""Check the repository's Markdown files: every relative link [..](path) and anchor (#heading)
resolves, and every repository path named in a code block or in inline code exists.

Usage: check_links.py [REPO_ROOT]   (default: two levels above this file)
Prints one line per problem (file:line: what) and exits 1 if there is any.

Paths that another branch is adding may be listed, one a line, in tests/docs/pending_paths.txt;
they are accepted while they do not exist, and become an error once they do (remove the line).
"""
import fnmatch
import os
import re
import subprocess
import sys
import unicodedata

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
# the fixed top level: a code token starting with one of these and a '/' names a repository path
TOP = ("src", "kernels", "mpi", "config", "jobs", "tests", "postprocess", "cmake", ".ci")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
ANCHOR_TAG = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def markdown_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                             check=True, capture_output=True, text=True).stdout.split("\n")
        return sorted(f for f in out if f and os.path.isfile(os.path.join(ROOT, f)))
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk, skipping build trees
        found = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith(".") or x == ".ci"]
            dirs[:] = [x for x in dirs if not (d == ROOT and (x.startswith("build") or x == "shared"))]
            found += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(".md")]
        return sorted(found)


def slug(text):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = text.strip().lower()
    out = []
    for ch in text:
        if ch in " -_" or unicodedata.category(ch)[0] in "LN":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def split_code(lines):
    """(line number, text outside code, code blocks' lines, the fence's info string) per line."""
    fence = None
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m and fence is None:
            fence = (m.group(1), line.strip()[3:].strip())
            continue
        if m and fence is not None and line.strip().startswith(fence[0]):
            fence = None
            continue
        yield n, line, fence


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for _, line, fence in split_code(lines):
            if fence is not None:
                continue
            for a in ANCHOR_TAG.findall(line):
                found.add(a)
            m = HEADING.match(line)
            if m:
                s = slug(m.group(2))
                k = seen.get(s, 0)
                seen[s] = k + 1
                found.add(s if k == 0 else f"{s}-{k}")
        _anchors[path] = found
    return _anchors[path]


def load_pending():
    p = os.path.join(ROOT, "tests", "docs", "pending_paths.txt")
    if not os.path.isfile(p):
        return set()
    with open(p, encoding="utf-8") as f:
        return {l.strip() for l in f if l.strip() and not l.startswith("#")}


def repo_path_exists(p):
    if any(c in p for c in "*?["):
        return bool(glob_repo(p))
    return os.path.exists(os.path.join(ROOT, p))


def glob_repo(pattern):
    d = os.path.join(ROOT, os.path.dirname(pattern))
    if not os.path.isdir(d) or any(c in os.path.dirname(pattern) for c in "*?["):
        return []
    return fnmatch.filter(os.listdir(d), os.path.basename(pattern))


def path_token(tok):
    """The repository path a code token names, or None (outputs, placeholders, options)."""
    tok = tok.strip("'\"(),;:")
    if "=" in tok:
        tok = tok.split("=", 1)[1].strip("'\"")
    tok = tok.split(":", 1)[0] if tok.startswith(("src/", "kernels/", "mpi/", "tests/")) else tok
    if "/" not in tok or tok.split("/", 1)[0] not in TOP:
        return None
    if any(c in tok for c in "<>{}$~") or "..." in tok or tok.endswith("."):
        return None
    return tok.rstrip("/") or None


def main():
    pending = load_pending()
    problems = []
    used_pending = set()
    for md in markdown_files():
        full = os.path.join(ROOT, md)
        with open(full, encoding="utf-8") as f:
            lines = f.read().split("\n")
        here = os.path.dirname(full)
        for n, line, fence in split_code(lines):
            where = f"{md}:{n}"
            if fence is not None:  # a command block: the repository paths it names must exist
                if fence[1] in ("bash", "sh", "shell", "console", ""):
                    for tok in line.split("#", 1)[0].split():
                        p = path_token(tok)
                        if p and not repo_path_exists(p):
                            if p in pending:
                                used_pending.add(p)
                            else:
                                problems.append(f"{where}: code block names '{p}', which does not exist")
                continue
            for code in INLINE.findall(line):
                for tok in code[1].split():
                    p = path_token(tok)
                    if p and not repo_path_exists(p):
                        if p in pending:
                            used_pending.add(p)
                        else:
                            problems.append(f"{where}: `{code[1]}` names '{p}', which does not exist")
            text = INLINE.sub("", line)
            for _, target in LINK.findall(text):
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                dest = full if not path else os.path.normpath(
                    os.path.join(ROOT, path.lstrip("/")) if path.startswith("/") else os.path.join(here, path))
                rel = os.path.relpath(dest, ROOT)
                if rel.startswith(".."):
                    problems.append(f"{where}: link '{target}' leaves the repository")
                    continue
                if not os.path.exists(dest):
                    if rel in pending:
                        used_pending.add(rel)
                    else:
                        problems.append(f"{where}: link '{target}': {rel} does not exist")
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append(f"{where}: link '{target}': no heading '#{anchor}' in {rel}")
    for p in sorted(pending):
        if os.path.exists(os.path.join(ROOT, p)):
            problems.append(f"tests/docs/pending_paths.txt: '{p}' exists now: remove it from the list")
    for p in problems:
        print(p)
    print(f"check_links: {len(markdown_files())} Markdown files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
