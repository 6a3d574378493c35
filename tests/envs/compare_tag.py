#!/usr/bin/env python3
"""Runs `gmi_drl env --random-actions` for every multi-agent game of the registry (`gmi_env_list`:
both Tag games) in several settings and replays every environment's 200 steps in the independent NumPy reference (tag_reference.py):
the state before every step, every observation (after resets too), final observation, reward
and terminated/truncated flag must agree (gridworld exactly, continuous within 1e-5).  At each
reset the reference takes the new episode's initial state from the file, after checking that it
is a valid start.  Also checks that the parameters the program resolved are WarpDrive's defaults
plus the settings (the file's params attribute).  A registered multi-agent game without a setting
in SETTINGS below fails.

    compare_tag.py --gmi build/cpu/bin/gmi_drl --env-list build/cpu/bin/gmi_env_list --workdir /tmp/tag
"""
import argparse
import json
import math
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tag_reference as ref  # noqa: E402
from env_registry import registered_envs, unmatched  # noqa: E402

STEPS = 200

# WarpDrive's constructor defaults (TagGridWorld.__init__, TagContinuous.__init__).
GRID = dict(num_taggers=10, num_runners=1, grid_length=10, episode_length=100, starting_location_x=[],
            starting_location_y=[], wall_hit_penalty=0.1, tag_reward_for_tagger=10.0, tag_penalty_for_runner=2.0,
            step_cost_for_tagger=0.01, use_full_observation=True)
CONT = dict(num_taggers=1, num_runners=10, grid_length=10.0, episode_length=100, starting_location_x=[],
            starting_location_y=[], starting_directions=[], max_speed=1.0, skill_level_runner=1.0,
            skill_level_tagger=1.0, max_acceleration=1.0, min_acceleration=-1.0, max_turn=np.pi / 2,
            min_turn=-np.pi / 2, num_acceleration_levels=10, num_turn_levels=10, edge_hit_penalty=-0.0,
            use_full_observation=True, num_other_agents_observed=2, tagging_distance=0.01, tag_reward_for_tagger=1.0,
            step_penalty_for_tagger=-0.0, tag_penalty_for_runner=-1.0, step_reward_for_runner=0.0,
            end_of_game_reward_for_runner=1.0, runner_exits_game_after_tagged=True)

G, C = "TagGridworld-v0", "TagContinuous-v0"
# (label, game, envs, seed, settings, must see a reset within 200 steps)
SETTINGS = [
    ("grid defaults", G, 3, 1, {}, True),
    ("grid few, nearest", G, 4, 2, dict(num_taggers=2, grid_length=5, use_full_observation=False,
                                        episode_length=40), True),
    ("grid many, full", G, 2, 3, dict(num_taggers=120, grid_length=12, episode_length=60), True),
    ("grid many, nearest", G, 2, 4, dict(num_taggers=200, grid_length=30, use_full_observation=False,
                                         episode_length=70), True),
    ("grid given start (WarpDrive's centre/corner)", G, 2, 5,
     dict(num_taggers=3, grid_length=6, starting_location_x=[3, 3, 3, 0], starting_location_y=[3, 3, 3, 0],
          wall_hit_penalty=0.2, tag_penalty_for_runner=5.0, step_cost_for_tagger=0.05, episode_length=50), True),
    ("cont defaults, short episodes", C, 2, 6, dict(episode_length=60), True),
    ("cont few, nearest, stays after tag", C, 3, 7,
     dict(num_taggers=2, num_runners=3, use_full_observation=False, runner_exits_game_after_tagged=False,
          tagging_distance=0.2, step_penalty_for_tagger=-0.1, skill_level_tagger=2.0, skill_level_runner=0.5,
          max_acceleration=0.5, min_acceleration=-0.5, num_acceleration_levels=3, num_turn_levels=3,
          max_turn=np.pi / 4, min_turn=-np.pi / 4, episode_length=50), True),
    ("cont many, nearest, exits", C, 2, 8,
     dict(num_taggers=20, num_runners=180, use_full_observation=False, num_other_agents_observed=10,
          tagging_distance=0.05, max_acceleration=0.5, episode_length=80), True),
    ("cont nearest K 24 (multi-pass selection)", C, 2, 12,
     dict(num_taggers=6, num_runners=40, use_full_observation=False, num_other_agents_observed=24,
          tagging_distance=0.05, episode_length=70), True),
    ("cont many, full, all tagged", C, 2, 9,
     dict(num_taggers=10, num_runners=40, tagging_distance=0.15, grid_length=5.0, episode_length=150), True),
    ("cont given start, edges", C, 2, 10,
     dict(num_taggers=2, num_runners=2, starting_location_x=[0.5, 9.5, 0.2, 9.8],
          starting_location_y=[9.5, 0.5, 0.1, 9.9], starting_directions=[0, np.pi / 2, np.pi, 1.5 * np.pi],
          edge_hit_penalty=-0.5, end_of_game_reward_for_runner=2.0, tagging_distance=0.0, num_acceleration_levels=2,
          num_turn_levels=4, episode_length=30, use_full_observation=False, num_other_agents_observed=3), True),
    ("cont WarpDrive tag_continuous.yaml", C, 1, 11,
     dict(num_taggers=10, num_runners=100, grid_length=20.0, episode_length=500, max_acceleration=0.1,
          min_acceleration=-0.1, max_turn=2.356, min_turn=-2.356, num_acceleration_levels=20, num_turn_levels=20,
          use_full_observation=False, num_other_agents_observed=10, tag_reward_for_tagger=10.0,
          tag_penalty_for_runner=-10.0, step_penalty_for_tagger=0.0, step_reward_for_runner=0.0,
          edge_hit_penalty=0.0, end_of_game_reward_for_runner=1.0, tagging_distance=0.02), False),
]


def arg_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ",".join(repr(float(x)) for x in v) + "]"
    return repr(v)


def expected_params(game, settings):
    own, other = (GRID, CONT) if game == G else (CONT, GRID)
    return {**other, **own, **settings}


def check_params(label, resolved, expected):
    for key, want in expected.items():
        got = resolved[key]
        if isinstance(want, list):
            ok = len(got) == len(want) and np.allclose(got, want, rtol=0, atol=1e-12)
        elif isinstance(want, float):
            ok = math.isclose(got, want, rel_tol=1e-15, abs_tol=0)
        else:
            ok = got == want
        assert ok, f"{label}: resolved env.{key} = {got}, expected {want} (WarpDrive's default or the setting)"


def agent_rows(f, roles, envs, key, t, e):
    """Role by role, the rows of env e at step t: [agents, ...] in agent order."""
    parts = []
    for r in roles:
        d = f[r][key]
        n = d.shape[1] // envs
        parts.append(d[t, e * n:(e + 1) * n])
    return np.concatenate(parts)


def check_start(label, game, p, s):
    """A new episode's initial state (loaded from the file) must be a valid start."""
    assert s["timestep"] == 0, f"{label}: a new episode starts at timestep {s['timestep']}"
    x, y = np.asarray(s["loc_x"]), np.asarray(s["loc_y"])
    if p["starting_location_x"]:
        assert np.allclose(x, np.float32(p["starting_location_x"])) and np.allclose(y, np.float32(p["starting_location_y"])), \
            f"{label}: start differs from the given starting_location"
    elif game == G:
        L = int(p["grid_length"])
        assert np.all((x[:-1] >= 1) & (x[:-1] <= L - 1) & (y[:-1] >= 1) & (y[:-1] <= L - 1)), f"{label}: tagger start"
        assert x[-1] == 0 and y[-1] == 0, f"{label}: the runner starts at (0, 0)"
    else:
        L = np.float32(p["grid_length"])
        assert np.all((x >= 0) & (x <= L) & (y >= 0) & (y <= L)), f"{label}: start outside the square"
    if game == C:
        assert np.all(np.asarray(s["speed"]) == 0) and np.all(np.asarray(s["acceleration"]) == 0)
        assert np.all(np.asarray(s["still_in_game"]) == 1)
        d = np.asarray(s["direction"], dtype=np.float64)
        if p["starting_directions"]:
            assert np.allclose(d, np.float32(p["starting_directions"]))
        else:
            k = d / (np.pi / 2)
            assert np.allclose(k, np.round(k), atol=1e-6) and np.all((k > -0.5) & (k < 3.5)), f"{label}: direction {d}"


def compare(label, game, envs, seed, settings, want_reset, exe, workdir, steps=STEPS, tolerance=None):
    path = os.path.join(workdir, label.replace(" ", "_").replace(",", "").replace("'", "").replace("/", "_") + ".h5")
    cmd = [exe, "env", "--name", game, "--num-envs", str(envs), "--steps", str(steps), "--random-actions",
           "--seed", str(seed), "--out", path]
    for k, v in settings.items():
        cmd += ["--set", f"env.{k}={arg_text(v)}"]
    subprocess.run(cmd, check=True)
    exact = game == G
    tol = tolerance if tolerance is not None else 0.0 if exact else 1e-5
    worst = 0.0
    resets = tags = 0
    with h5py.File(path, "r") as f:
        roles = json.loads(f.attrs["roles"])
        params = json.loads(f.attrs["params"])
        check_params(label, params, expected_params(game, settings))
        st = f["state"]
        names = list(st.keys())

        def state(t, e):
            s = {n: st[n][t, e] for n in names if n != "timestep"}
            s["timestep"] = int(st["timestep"][t, e, 0])
            return s

        def near(what, t, e, got, want):
            nonlocal worst
            got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
            assert got.shape == want.shape, f"{label}: {what} shape {got.shape} vs {want.shape}"
            err = float(np.max(np.abs(got - want))) if got.size else 0.0
            worst = max(worst, err)
            if err > tol:
                i = np.unravel_index(np.argmax(np.abs(got - want)), got.shape)
                raise AssertionError(f"{label}: env {e} step {t}: {what} differs by {err:g} at {i}: "
                                     f"gmi_drl {got[i]!r}, reference {want[i]!r}")

        for e in range(envs):
            g = ref.make_game(game, params)
            actions = [agent_rows(f, roles, envs, "action", t, e).astype(np.int64) for t in range(steps)]

            def next_start(t, e=e):
                s = state(t + 1, e)
                check_start(label, game, params, s)
                return s

            s0 = state(0, e)
            check_start(label, game, params, s0)
            out = ref.rollout(g, s0, actions, next_start)
            for t in range(steps + 1):
                for n in names:
                    want = out["state"][t][n]
                    near(f"state {n}", t, e, st[n][t, e].reshape(np.shape(want)), want)
                near("obs", t, e, agent_rows(f, roles, envs, "obs", t, e), out["obs"][t])
                if t == steps:
                    break
                near("reward", t, e, agent_rows(f, roles, envs, "reward", t, e), out["reward"][t])
                near("final_obs", t, e, agent_rows(f, roles, envs, "final_obs", t, e), out["final_obs"][t])
                for flag in ("terminated", "truncated"):
                    got = agent_rows(f, roles, envs, flag, t, e)
                    assert np.all(got == int(out[flag][t])), \
                        f"{label}: env {e} step {t}: {flag} {got} vs reference {out[flag][t]}"
                resets += int(out["terminated"][t] or out["truncated"][t])
                tags += out["tags"][t]
    assert resets > 0 or not want_reset or steps < STEPS, f"{label}: no episode ended within {steps} steps"
    agents = ref.make_game(game, params).agents
    print(f"ok  {label}: {game}, {envs} envs x {agents} agents, {steps} steps, {resets} episode ends, "
          f"{tags} tags, largest difference {worst:.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gmi", required=True, help="the gmi_drl program")
    ap.add_argument("--env-list", required=True, help="the gmi_env_list program (the registry)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", default="", help="run only settings whose label contains this")
    ap.add_argument("--steps", type=int, default=STEPS, help="steps per setting (fewer: no episode end required)")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="largest difference allowed (default: 0 for the gridworld, 1e-5 for the continuous game)")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    games = registered_envs(a.env_list, "multi-agent")
    problems = unmatched(games, {s[1] for s in SETTINGS}, "tests/envs/compare_tag.py")
    problems += [f"{g}: this build cannot run it ({why})" for g, why in games.items() if why]
    if problems:
        sys.exit("compare_tag: FAILED\n" + "\n".join(problems))
    for game in games:
        for s in SETTINGS:
            if s[1] == game and a.only in s[0]:
                compare(*s, a.gmi, a.workdir, a.steps, a.tolerance)


if __name__ == "__main__":
    main()
