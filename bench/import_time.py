"""Import time: `python -c "import tensorplug"` next to `python -c "import numpy"`.

Each is a fresh interpreter (this one, sys.executable) started as a subprocess, timed from the
outside (interpreter start-up included on both sides), run alternately --runs times (>= 7);
medians. Both sides import from bytecode caches, as a user's install has them: NumPy's wheel ships
its .pyc files, and the subprocesses run without PYTHONDONTWRITEBYTECODE so that the warm-up import
writes tensorplug's (an editable checkout has none; compiling the sources on every import would be
measured instead). Goal: import tensorplug <= 2x import numpy. The PyTorch column is `import torch`
(left out with --quick).

    python bench/import_time.py [--quick] [--runs 11] [--no-torch]
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import _harness as H


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_import(module: str, cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, cwd=cwd, env=_ENV,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--runs", type=int, default=None)
    args = p.parse_args(argv)
    runs = args.runs or args.repeat or (3 if args.quick else 11)
    H.header("import time", args, runs=runs)
    mods = {"tensorplug": "tensorplug", "floor": "numpy"}
    if H.get_torch(args) is not None and not args.quick:   # (torch's import takes seconds: not in --quick)
        mods["torch"] = "torch"
    times = {k: [] for k in mods}
    with tempfile.TemporaryDirectory() as cwd:        # nothing importable from the working directory
        env_cwd = os.path.realpath(cwd)
        for k, m in mods.items():                     # warm the file system cache
            time_import(m, env_cwd)
        for _ in range(runs):
            for k, m in mods.items():
                times[k].append(time_import(m, env_cwd))
    med = {k: statistics.median(v) for k, v in times.items()}
    H.result("import time", med["tensorplug"], med["floor"], floor_name="import numpy", goal=2.0,
             torch=med.get("torch"), args=args, note=f"median of {runs} fresh interpreters each")


if __name__ == "__main__":
    main()
