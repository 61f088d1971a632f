"""Shared by the workers: a watchdog, result collection, and one JSON line from rank 0."""
from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import traceback

# a deadlock turns into a failure with every rank's stack, well before the test's hard timeout
faulthandler.dump_traceback_later(float(os.environ.get("WORKER_WATCHDOG_S", "45")), exit=True)

import tensorplug.distributed as dist  # noqa: E402


class Checks:
    """Named checks run on every rank; `report()` gathers them to rank 0, which prints
    `RESULT {"size": n, "checks": {name: [None | error text per rank]}}`."""

    def __init__(self):
        self.results = {}
        self.seconds = {}

    def run(self, name, fn, *args):
        t0 = time.perf_counter()
        try:
            fn(*args)
            self.results[name] = None
        except Exception as e:  # noqa: BLE001 - reported to the test
            self.results[name] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
        self.seconds[name] = round(time.perf_counter() - t0, 4)

    def report(self, **extra):
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        every = comm.gather(self.results, root=0)
        if comm.rank == 0:
            names = list(dict.fromkeys(n for r in every for n in r))
            out = {"size": comm.size, "checks": {n: [r.get(n, "missing on this rank") for r in every]
                                                 for n in names}, "seconds": self.seconds, **extra}
            sys.stdout.write("RESULT " + json.dumps(out) + "\n")
            sys.stdout.flush()
        comm.Barrier()
