"""The environment registry (kernels/envs/registry.cpp) as the reference scripts see it: the
`gmi_env_list` tool prints one environment a line (name, kind, why this build cannot run it).
The scripts iterate it instead of spelling the names, so a registered environment without a
reference case fails its comparison."""
import subprocess
import sys


def registered_envs(env_list, kind):
    """{name: why this build cannot run it ("" if it can)} of the registered environments of
    `kind` ("device", "mujoco", "physics", "multi-agent"), in the registry's order."""
    p = subprocess.run([env_list], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{env_list} failed with status {p.returncode}:\n{p.stderr}")
    envs = {}
    for line in p.stdout.splitlines():
        name, k, why = (line.split("\t") + ["", ""])[:3]
        if k == kind:
            envs[name] = why
    return envs


class Report:
    """Mismatch lines of a reference comparison: the first `most` printed as they come, all kept."""

    def __init__(self, most=20):
        self.lines, self.most = [], most

    def add(self, msg):
        if len(self.lines) < self.most:
            print("MISMATCH " + msg)
        self.lines.append(msg)


def unmatched(registered, referenced, script):
    """One line per registered environment without a reference case in `script`, and per
    reference case naming an environment the registry does not have."""
    lines = [f"{n}: registered environment without a reference case ({script})" for n in registered
             if n not in referenced]
    lines += [f"{n}: reference case for an environment the registry does not have ({script})" for n in referenced
              if n not in registered]
    return lines
