"""Every bench script runs on a tiny size (--quick) and prints its RESULT line, so that none rots.

Nothing is timed here: the benchmark is not a test. Each script runs in a subprocess of this
interpreter with one BLAS / OpenMP thread (tiny sizes; avoids oversubscribing a CI machine). The
scripts that need mpi4py or CUDA (see bench/run_all.py) are skipped where that is missing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
TIMEOUT = 60


def _load_run_all():
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


run_all = _load_run_all()
SCRIPTS = [s for s in run_all.all_scripts() if (BENCH / f"{s}.py").exists()]


def _env():
    env = dict(os.environ)
    for k in run_all.THREAD_VARS:
        env[k] = "1"
    return env


def _results(stdout):
    out = []
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            try:
                out.append(json.loads(line[len("RESULT "):]))
            except json.JSONDecodeError:
                pass
    return out


def test_the_issue_workloads_have_scripts():
    for name in run_all.GOAL_SCRIPTS + run_all.INFO_SCRIPTS:
        assert (BENCH / f"{name}.py").exists(), name


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_runs_quick(script):
    why = run_all.requirement_unmet(script)
    if why:
        pytest.skip(why)
    cmd = [sys.executable, str(BENCH / f"{script}.py"), *run_all.script_args(script, quick=True, no_torch=False)]
    gated = script in run_all.GATED_SCRIPTS        # the MPI / GPU scripts, with a report format of their own
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT * (2 if gated else 1), cwd=ROOT,
                       env=_env())
    assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    results = [r for r in _results(p.stdout) if "workload" in r]
    if gated and not results:
        assert p.stdout.strip(), f"{script} printed nothing"
        return
    assert results, f"{script} printed no RESULT line:\n{p.stdout[-2000:]}"
    for r in results:
        assert r["tensorplug"] > 0 and r["floor"] > 0, r
        assert r["ratio"] == pytest.approx(r["tensorplug"] / r["floor"]), r
    assert "ratio" in p.stdout


def test_run_all_writes_the_table(tmp_path):
    out = tmp_path / "RESULTS.md"
    cmd = [sys.executable, str(BENCH / "run_all.py"), "--quick", "--no-torch", "--only", "tiny_op,mlp_memory",
           "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT, env=_env())
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    text = out.read_text()
    assert "| workload |" in text and "c = a + b" in text and "peak memory" in text
    assert "BLAS" in text and "NumPy" in text
