"""Run every bench script and write the Markdown table bench/RESULTS.md (regenerated each run).

Each script runs in a fresh subprocess of this interpreter (so the PyTorch column appears when
`import torch` works here), prints its measurements as RESULT lines (see bench/_harness.py), and
this script collects them into one table with the machine's description: CPU, load, BLAS (from
threadpoolctl if installed, else NumPy's build configuration and the OpenBLAS library's own
report), versions and thread settings.

The distributed scripts (allreduce.py, ddp_scaling.py) run only when mpi4py is importable and the
GPU script (gpu.py) only when a CUDA backend is available; otherwise they are listed as skipped,
with the reason. Scripts this file does not know about are run as well.

    python bench/run_all.py [--quick] [--only tiny_op,mlp_step] [--out bench/RESULTS.md]
                            [--threads N] [--no-torch] [--default-malloc] [--timeout 1800]

--threads N sets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS for the scripts (and so
PyTorch's intra-op threads), e.g. on a loaded machine; by default they inherit the environment.
--default-malloc leaves glibc's malloc thresholds as they are instead of pinning them (see
core/_malloc.py: otherwise the cost of NumPy's large temporaries depends on the process's history).
A benchmark reports numbers; it fails only when a script fails.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

BENCH = pathlib.Path(__file__).resolve().parent
ROOT = BENCH.parent

# the issue's workloads, in the order of its table; then the other measurements
GOAL_SCRIPTS = ["tiny_op", "tiny_graph", "big_add", "mlp_step", "lenet_step", "grad_penalty", "import_time",
                "mlp_memory"]
INFO_SCRIPTS = ["resnet18", "dataloader", "autograd_graph", "conv", "lstm_step", "sparse",
                "gpt_step", "makemore_step", "lstm_lm_step", "attention", "cross_entropy"]
# written by others; run only where their requirement is met
GATED_SCRIPTS = {"allreduce": "mpi", "ddp_scaling": "mpi", "gpu": "cuda"}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# -- which scripts ------------------------------------------------------------------------------------------
def all_scripts() -> list[str]:
    known = GOAL_SCRIPTS + INFO_SCRIPTS + list(GATED_SCRIPTS)
    found = sorted(p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_") and p.stem != "run_all")
    return [s for s in known if s in found or s in GATED_SCRIPTS] + [s for s in found if s not in known]


_REQ_CACHE: dict = {}


def _mpi_reason() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install -e '.[mpi]')"
    # import it in a child: MPI initialises on import, which this process should not do
    p = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return f"mpi4py is not importable: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def _cuda_reason() -> str | None:
    code = ("from tensorplug.dispatch import registry\n"
            "c = registry.candidates('cuda')\n"
            "r = [b.is_available() for b in c]\n"
            "ok = [x for x in r if x[0]]\n"
            "print('OK' if ok else '; '.join(x[1] for x in r) or 'no backend serves device cuda')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    out = p.stdout.strip()
    if p.returncode != 0:
        return f"could not ask tensorplug about CUDA: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return None if out == "OK" else f"CUDA is not available: {out}"


def requirement_unmet(script: str) -> str | None:
    """Why `script` (a name without .py) cannot run here, or None when it can."""
    req = GATED_SCRIPTS.get(script)
    if req is None:
        return None
    if req not in _REQ_CACHE:
        _REQ_CACHE[req] = _mpi_reason() if req == "mpi" else _cuda_reason()
    return _REQ_CACHE[req]


def script_args(script: str, quick: bool, no_torch: bool) -> list[str]:
    """The options to pass: --quick / --no-torch where the script knows them (others' scripts may not)."""
    path = BENCH / f"{script}.py"
    text = path.read_text(errors="replace")
    knows = (lambda opt: opt in text) if script in GATED_SCRIPTS else (lambda opt: True)
    out = []
    if quick and knows("--quick"):
        out.append("--quick")
    if no_torch and knows("--no-torch"):
        out.append("--no-torch")
    return out


# -- running ------------------------------------------------------------------------------------------------
def run_script(script: str, args, env) -> dict:
    path = BENCH / f"{script}.py"
    cmd = [sys.executable, str(path), *script_args(script, args.quick, args.no_torch)]
    print(f"\n### {script}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env, cwd=ROOT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")) + \
            f"\n(killed after {args.timeout} s)"
    wall = time.perf_counter() - t0
    results = []
    for line in out.splitlines():
        if line.startswith("RESULT "):
            try:
                rec = json.loads(line[len("RESULT "):])
            except json.JSONDecodeError:
                rec = None
            if isinstance(rec, dict) and all(k in rec for k in ("workload", "tensorplug", "floor")):
                rec["script"] = script
                results.append(rec)
                continue
        print(line)
    if rc != 0:
        print(err[-3000:], file=sys.stderr)
    print(f"### {script}: exit {rc}, {len(results)} result(s), {wall:.1f} s", flush=True)
    return {"script": script, "rc": rc, "results": results, "stdout": out, "stderr": err, "wall_s": wall}


# -- the machine ---------------------------------------------------------------------------------------------
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def blas_info(env) -> list[str]:
    """Lines describing NumPy's BLAS (and PyTorch's, when importable), from a child process with the
    scripts' environment (so that thread settings apply)."""
    code = r'''
import json, glob, os, ctypes
import numpy as np
out = {}
try:
    from threadpoolctl import threadpool_info
    out["threadpoolctl"] = [{k: d.get(k) for k in ("internal_api", "version", "architecture", "num_threads", "threading_layer")} for d in threadpool_info()]
except Exception as e:
    out["threadpoolctl_missing"] = f"{type(e).__name__}: {e}"
try:
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    out["numpy_blas"] = {k: blas.get(k) for k in ("name", "version", "openblas configuration")}
except Exception as e:
    out["numpy_blas"] = f"unavailable ({e})"
# the OpenBLAS library NumPy loaded: ask it for its run-time kernel and thread count
libs = []
try:
    with open("/proc/self/maps") as f:
        libs = sorted({l.split()[-1] for l in f if "blas" in l.lower() and ".so" in l})
except OSError:
    pass
for path in libs:
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        continue
    for core, thr in (("scipy_openblas_get_corename64_", "scipy_openblas_get_num_threads64_"),
                      ("scipy_openblas_get_corename", "scipy_openblas_get_num_threads"),
                      ("openblas_get_corename64_", "openblas_get_num_threads64_"),
                      ("openblas_get_corename", "openblas_get_num_threads")):
        if hasattr(lib, core):
            getattr(lib, core).restype = ctypes.c_char_p
            out["openblas_runtime"] = {"library": os.path.basename(path), "corename": getattr(lib, core)().decode(),
                                       "num_threads": getattr(lib, thr)() if hasattr(lib, thr) else None}
            break
try:
    import torch
    import re
    cfg = torch.__config__.show()
    keep = [l.strip(" -") for l in cfg.splitlines()
            if any(s in l for s in ("CPU capability", "Math Kernel Library Version", "MKL-DNN"))]
    keep = [re.sub(r" for Intel\(R\).*| \(Git Hash.*", "", l) for l in keep]
    keep += [m.group(0) for m in re.finditer(r"(BLAS_INFO|LAPACK_INFO)=[^,]*", cfg)]
    out["torch"] = {"version": torch.__version__, "num_threads": torch.get_num_threads(), "config": keep}
except Exception:
    pass
print(json.dumps(out))
'''
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    try:
        info = json.loads(p.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return [f"- BLAS: could not be determined ({p.stderr.strip()[-300:]})"]
    lines = []
    if "threadpoolctl" in info:
        for d in info["threadpoolctl"]:
            lines.append(f"- BLAS (threadpoolctl): {d.get('internal_api')} {d.get('version')}, kernel "
                         f"**{d.get('architecture')}**, {d.get('num_threads')} threads"
                         + (f", {d['threading_layer']}" if d.get("threading_layer") else ""))
    nb = info.get("numpy_blas")
    if isinstance(nb, dict):
        lines.append(f"- NumPy's BLAS (numpy.show_config): {nb.get('name')} {nb.get('version')}"
                     + (f" — `{nb['openblas configuration']}`" if nb.get("openblas configuration") else ""))
    elif nb:
        lines.append(f"- NumPy's BLAS: {nb}")
    rt = info.get("openblas_runtime")
    if rt and "threadpoolctl" not in info:
        lines.append(f"- OpenBLAS at run time ({rt['library']}): kernel **{rt['corename']}**, "
                     f"{rt['num_threads']} threads (threadpoolctl not installed)")
    t = info.get("torch")
    if t:
        lines.append(f"- PyTorch {t['version']}: {t['num_threads']} intra-op threads; "
                     + "; ".join(t["config"]))
    return lines


def _allocator(env) -> str:
    code = "import sys; sys.path.insert(0, sys.argv[1]); import _harness; print(_harness.MALLOC)"
    p = subprocess.run([sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, env=env, timeout=120)
    return p.stdout.strip() or "unknown"


def machine_lines(env, load_before, load_after, args) -> list[str]:
    import numpy as np
    torch_v = _version("torch")
    threads = {k: env[k] for k in THREAD_VARS if k in env}
    lines = [
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical CPUs"
        + (f" ({len(os.sched_getaffinity(0))} usable)" if hasattr(os, "sched_getaffinity") else ""),
        f"- OS: {platform.platform()}",
        f"- load average (1 min) before / after the run: {load_before:.2f} / {load_after:.2f}"
        if load_before is not None else "- load average: unknown",
        f"- Python {platform.python_version()} ({sys.executable}), NumPy {np.__version__}, "
        f"tensorplug {_version('tensorplug') or '?'}, "
        + (f"PyTorch {torch_v}" if torch_v and not args.no_torch else "PyTorch not installed (no PyTorch column)"
           if not torch_v else "PyTorch column turned off (--no-torch)"),
        "- thread settings: " + (", ".join(f"{k}={v}" for k, v in threads.items()) if threads
                                 else "none (library defaults)"),
        f"- allocator in the scripts: {_allocator(env)}",
        # a core type named here overrides OpenBLAS's own choice of GEMM kernel (docs/performance-notes.md)
        "- OpenBLAS variables: " + (", ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("OPENBLAS_"))
                                    or "none"),
    ]
    return lines + blas_info(env)


# -- the report ---------------------------------------------------------------------------------------------
def _fmt(v, unit):
    sys.path.insert(0, str(BENCH))
    import _harness
    return _harness.fmt(v, unit)


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def _value(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _ratio(r):
    return "-" if r is None else f"{r:.2f}×"


def write_markdown(path, runs, skipped, machine, args, started, elapsed):
    recs = [r for run in runs for r in run["results"]]
    goals = [r for r in recs if r.get("goal") is not None]
    info = [r for r in recs if r.get("goal") is None]
    have_torch = any(r.get("torch") is not None for r in recs)
    lines = ["# Benchmark results", "",
             f"Generated by `python bench/run_all.py{' --quick' if args.quick else ''}"
             f"{' --threads ' + str(args.threads) if args.threads else ''}"
             f"{' --default-malloc' if args.default_malloc else ''}{' --no-torch' if args.no_torch else ''}` on {started} "
             f"({elapsed:.0f} s). Regenerated on every run; do not edit by hand.",
             "Medians, tensorplug and its floor measured in the same process, interleaved; "
             "ratio = tensorplug / floor (lower is better). The issue treats differences under 1.2× as noise.",
             ""]
    if args.quick:
        lines += ["**QUICK RUN: tiny sizes, the numbers are meaningless.**", ""]
    lines += ["## Machine", ""] + machine + [""]

    def table(rows, with_goal):
        head = ["workload", "tensorplug", "floor", "ratio"] + (["goal", "verdict"] if with_goal else [])
        show_torch = have_torch and any(r.get("torch") is not None for r in rows)
        if show_torch:
            head += ["PyTorch", "tensorplug / PyTorch"]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            u = r.get("unit", "s")
            row = [_cell(r["workload"]), _fmt(r["tensorplug"], u),
                   f"{_fmt(r['floor'], u)} ({_cell(r.get('floor_name', ''))})", _ratio(r.get("ratio"))]
            if with_goal:
                row += [f"≤ {r['goal']:.3g}×", r.get("verdict", "")]
            if show_torch:
                row += [_fmt(r.get("torch"), u), _ratio(r.get("tensorplug_vs_torch"))]
            out.append("| " + " | ".join(row) + " |")
        return out + [""]

    issue = [r for r in goals if r["script"] in GOAL_SCRIPTS]
    other_goals = [r for r in goals if r["script"] not in GOAL_SCRIPTS]
    met = sum(r["verdict"] == "met" for r in issue)
    lines += ["## The issue's goals", "", f"{met} of {len(issue)} goals met."]
    lenet = [r for r in issue if r["script"] == "lenet_step" and r.get("torch")]
    if lenet:
        r = lenet[0]
        lines.append(f"LeNet-5 step against PyTorch: tensorplug takes {r['tensorplug_vs_torch']:.2f}× PyTorch's time "
                     f"({_fmt(r['tensorplug'], 's')} against {_fmt(r['torch'], 's')}).")
    lines += [""] + table(issue, True)
    if other_goals:
        met = sum(r["verdict"] == "met" for r in other_goals)
        scripts = sorted({r["script"] for r in other_goals})
        lines += ["## Other goals (" + ", ".join(f"`bench/{s}.py`" for s in scripts) + ")", "",
                  f"{met} of {len(other_goals)} goals met.", ""] + table(other_goals, True)
    if info:
        lines += ["## Other measurements (no goal)", ""] + table(info, False)
    details = [r for r in recs if r.get("extra") or r.get("note")]
    if details:
        lines += ["## Details", ""]
        for r in details:
            bits = [f"{k.replace('_', ' ')}: {_value(v)}" for k, v in (r.get("extra") or {}).items()]
            if r.get("note"):
                bits.append(r["note"])
            lines.append(f"- {r['workload']} (`bench/{r['script']}.py`): " + "; ".join(bits))
        lines.append("")
    raw = [run for run in runs if run["rc"] == 0 and not run["results"]]
    if raw:
        lines += ["## Scripts with their own report format", "",
                  "These print no RESULT lines; their output as printed:", ""]
        for run in raw:
            out = [ln for ln in run["stdout"].rstrip().splitlines() if ln.strip()][-40:]
            lines += [f"`bench/{run['script']}.py`:", "", "```", *out, "```", ""]
    failed = [run for run in runs if run["rc"] != 0]
    if skipped or failed:
        lines += ["## Not measured", ""]
        for name, why in skipped:
            lines.append(f"- `bench/{name}.py`: skipped — {why}")
        for run in failed:
            tail = (run["stderr"].strip().splitlines() or ["(no output on stderr)"])[-1]
            lines.append(f"- `bench/{run['script']}.py`: exit {run['rc']} — `{tail[:300]}`")
        lines.append("")
    lines += ["Scripts: " + ", ".join(f"`{run['script']}` ({run['wall_s']:.0f} s)" for run in runs), ""]
    pathlib.Path(path).write_text("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test; numbers meaningless)")
    ap.add_argument("--only", default=None, help="comma-separated script names (without .py)")
    ap.add_argument("--out", default=str(BENCH / "RESULTS.md"))
    ap.add_argument("--threads", type=int, default=None, help="BLAS / OpenMP threads for the scripts")
    ap.add_argument("--no-torch", action="store_true", help="leave out the PyTorch column")
    ap.add_argument("--default-malloc", action="store_true",
                    help="leave glibc's malloc thresholds alone (see bench/_harness.py; default: pinned)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per script (default 1800, quick 120)")
    args = ap.parse_args(argv)
    if args.timeout is None:
        args.timeout = 120 if args.quick else 1800

    env = dict(os.environ)
    if args.threads:
        for k in THREAD_VARS:
            env[k] = str(args.threads)
    if args.default_malloc:
        env["TENSORPLUG_MALLOC"] = "default"
    names = all_scripts()
    if args.only:
        wanted = [s.strip().removesuffix(".py") for s in args.only.split(",") if s.strip()]
        unknown = [s for s in wanted if s not in names]
        if unknown:
            ap.error(f"unknown script(s) {', '.join(unknown)}; known: {', '.join(names)}")
        names = [s for s in names if s in wanted]

    started = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    t0 = time.perf_counter()
    runs, skipped = [], []
    for name in names:
        if not (BENCH / f"{name}.py").exists():
            skipped.append((name, "the script does not exist (yet)"))
            print(f"\n### {name}: skipped, bench/{name}.py does not exist", flush=True)
            continue
        why = requirement_unmet(name)
        if why:
            skipped.append((name, why))
            print(f"\n### {name}: skipped, {why}", flush=True)
            continue
        runs.append(run_script(name, args, env))
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    machine = machine_lines(env, load_before, load_after, args)
    write_markdown(args.out, runs, skipped, machine, args, started, time.perf_counter() - t0)
    print(f"\nwrote {args.out}")
    failed = [r["script"] for r in runs if r["rc"] != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
