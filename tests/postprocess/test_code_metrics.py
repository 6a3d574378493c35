"""postprocess/code_metrics.py: function lengths from a brace-matching scanner, against sources
written here whose lengths are known, and its --check against an allow list."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "postprocess", "code_metrics.py")
sys.path.insert(0, os.path.join(ROOT, "postprocess"))
import code_metrics  # noqa: E402

SOURCE = r'''#include <string>
namespace gmi::demo {
namespace {
/* a comment with { braces */
template <class T>
int twice(T x) {  // "}" in a comment
  const char* s = "}}}";
  const char c = '{';
  auto raw = R"x(}})x";
  return 2 * x + s[0] + c + raw[0];
}
}  // namespace

struct Point {
  int x = 0, y{0};
  Point(int a, int b) : x(a), y{b} {
    if (a > b) {
      x = b;
    }
  }
  int sum() const { return x + y; }
};

#ifdef SOMETHING
void f() {
#else
void f() {
#endif
  for (int i = 0; i < 3; ++i) {
  }
}

const int table[] = {1, 2, 3};
int Point_size() { return int(sizeof(Point)); }
}  // namespace gmi::demo
'''


def scan(tmp_path, text=SOURCE):
    p = tmp_path / "demo.cpp"
    p.write_text(text)
    return {f.name: (f.line, f.length) for f in code_metrics.functions_in(p, "demo.cpp")}


def test_lengths_and_names(tmp_path):
    found = scan(tmp_path)
    assert found == {
        "gmi::demo::twice": (5, 7),          # from its template line to its closing brace
        "gmi::demo::Point::Point": (16, 5),  # the initialiser list's y{b} is not its body
        "gmi::demo::Point::sum": (21, 1),
        "gmi::demo::f": (25, 7),             # only the first #if branch opens it
        "gmi::demo::Point_size": (34, 1),
    }


def run_check(tmp_path, allow_text, limit):
    (tmp_path / "demo.cpp").write_text(SOURCE)
    allow = tmp_path / "allow.txt"
    allow.write_text(allow_text)
    return subprocess.run([sys.executable, SCRIPT, "--check", "--max-lines", str(limit), "--allow", str(allow),
                           str(tmp_path / "demo.cpp")], capture_output=True, text=True, timeout=60)


def test_check_fails_on_a_new_long_function(tmp_path):
    r = run_check(tmp_path, "", 6)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and "gmi::demo::twice is 7 lines (limit 6)" in r.stdout and "gmi::demo::f is 7 lines" in r.stdout


def test_check_passes_with_the_allow_list(tmp_path):
    name = os.path.join(str(tmp_path), "demo.cpp")
    r = run_check(tmp_path, f"{name} gmi::demo::twice 7\n{name} gmi::demo::f 7  # why\n", 6)
    assert r.returncode == 0, r.stdout


def test_check_fails_when_an_allowed_function_grows_or_shrinks(tmp_path):
    name = os.path.join(str(tmp_path), "demo.cpp")
    grew = run_check(tmp_path, f"{name} gmi::demo::twice 6\n{name} gmi::demo::f 7\n", 5)
    assert grew.returncode == 1 and "more than the 6 its entry" in grew.stdout
    short = run_check(tmp_path, f"{name} gmi::demo::twice 7\n{name} gmi::demo::f 7\n", 7)
    assert short.returncode == 1 and "gmi::demo::twice is 7 lines now: remove its entry" in short.stdout

