"""One MPI communicator from processes that no MPI launcher started (env://, tcp://, file://, store=).

MPICH 5.0 cannot connect two singleton processes (plain `python script.py` that initialise MPI):
Connect/Accept fail in `MPIDI_check_disjoint_lpids` because both get the same process ids (upstream
pmodels/mpich issue 7805). Two processes each under `mpiexec -n 1` connect fine. So, before MPI is
initialised, a process with no launcher starts `mpiexec -pmi-port -n 1 python pmi_holder.py`: the
holder publishes hydra's PMI address (PMI_PORT, PMI_ID, PMI_HOSTNAME) and stays alive until this
process has gone; with those variables set, MPI initialises as a 1-process job of that hydra.

Then rank 0 opens an MPI port and publishes its name through the store; the ranks joined so far
accept the next rank together (rank order) and merge with it, so the merged ranks are the requested
ones. Every rank first waits (bounded by the init timeout) until all ranks have registered in the
store, so no Accept or Connect waits for a process that never came. This path is MPICH's (hydra's
`-pmi-port`); with another MPI the holder fails to start and the error says so.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta

__all__ = ["under_launcher", "start_pmi_holder", "connect_world"]

HOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pmi_holder.py")
PMI_VARS = ("PMI_PORT", "PMI_ID", "PMI_HOSTNAME")


def under_launcher() -> bool:
    """Whether an MPI launcher (not our own holder) started this process."""
    from tensorplug.distributed.rendezvous import mpi_launcher
    return mpi_launcher() is not None


def _mpiexec():
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")


def start_pmi_holder(timeout=30.0):
    """Make this process (MPI not yet initialised, no launcher) a 1-process job of its own hydra:
    start the holder and put its PMI variables in the environment. RuntimeError when that cannot be
    done (no mpiexec, not MPICH's)."""
    if "mpi4py.MPI" in sys.modules:
        raise RuntimeError("connecting processes that no MPI launcher started must happen before MPI is "
                           "initialised in this process (mpi4py.MPI was imported already)")
    exe = _mpiexec()
    if exe is None:
        raise RuntimeError("connecting processes that no MPI launcher started needs MPICH's mpiexec (from "
                           "`pip install mpich`) next to the Python executable or on PATH; none was found")
    tmpdir = tempfile.mkdtemp(prefix="tensorplug-pmi-")
    envfile = os.path.join(tmpdir, "env")
    log = open(os.path.join(tmpdir, "log"), "w+b")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(exe) + os.pathsep + env.get("PATH", "")
    proc = subprocess.Popen([exe, "-pmi-port", "-n", "1", sys.executable, HOLDER, envfile, str(os.getpid())],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not os.path.exists(envfile):
            code = proc.poll()
            if code is not None or time.monotonic() > deadline:
                if code is None:
                    proc.kill()
                    proc.wait()
                log.seek(0)
                out = log.read().decode(errors="replace").strip()
                raise RuntimeError(
                    f"connecting processes that no MPI launcher started needs MPICH's hydra mpiexec "
                    f"(`mpiexec -pmi-port`), and {exe} ({_flavor(exe)}) "
                    f"{'exited with code %s' % code if code is not None else 'did not start in %gs' % timeout}"
                    f"{': ' + out[-600:] if out else ''}. With another MPI, start the job with its launcher "
                    f"(mpiexec -n N / tensorplug run -n N) instead")
            time.sleep(0.005)
        with open(envfile) as f:
            pmi = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    finally:
        log.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
    os.environ.update({k: pmi.get(k, "") for k in PMI_VARS})
    os.environ["TENSORPLUG_PMI_HOLDER"] = str(proc.pid)
    _holders.append(proc)           # it exits by itself once this process has gone
    return proc


_holders = []


def forget_pmi_environment():
    """After MPI is initialised: drop the holder's variables, so that child processes (a launcher, a
    data-loader worker) do not take themselves for ranks of this hydra."""
    if os.environ.get("TENSORPLUG_PMI_HOLDER"):
        for k in PMI_VARS + ("TENSORPLUG_PMI_HOLDER",):
            os.environ.pop(k, None)


def _flavor(exe):
    try:
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=5).stdout.lower()
    except (OSError, subprocess.SubprocessError):
        return "its --version failed"
    if "open mpi" in text or "openrte" in text or "prrte" in text:
        return "Open MPI's: not supported for this"
    if "hydra" in text:
        return "MPICH's hydra"
    return "an unknown MPI's"


def _wait_for_everyone(store, rank, world_size, timeout):
    """Register this rank and wait until all `world_size` have; a timeout, or the store going away,
    is an error naming the ranks that did not come."""
    from tensorplug.distributed.store import DistStoreError
    keys = [f"joined/{r}" for r in range(world_size)]
    missing, seen, checked = keys, -1, 0.0
    deadline = time.monotonic() + timeout
    pause = 0.001
    try:
        store.set(keys[rank], str(os.getpid()))
        store.add("joined", 1)
        while True:
            count = store.add("joined", 0)
            if count >= world_size:
                return
            now = time.monotonic()
            if count != seen and now - checked > 1.0:    # who is missing, in case the store goes away
                missing, seen, checked = store.missing(keys), count, now
            if now > deadline:
                missing = store.missing(keys)
                why = f"timed out after {timeout:g} s"
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
    except DistStoreError as e:
        why = f"lost the store ({e}; rank 0, which serves an env:// or tcp:// store, has gone?)"
    absent = [int(k.split("/")[1]) for k in missing]
    arrived = [r for r in range(world_size) if r not in absent]
    raise RuntimeError(f"init_process_group: {why} waiting for rank(s) {absent} of a world of {world_size} "
                       f"to join (ranks {arrived} did)") from None


def connect_world(MPI, store, rank, world_size, timeout):
    """An intracommunicator of `world_size` processes in which this one has rank `rank`; collective
    over every process that calls it with the same store. `timeout`: seconds."""
    _wait_for_everyone(store, rank, world_size, timeout)
    wait = timedelta(seconds=timeout)
    if rank == 0:
        port = MPI.Open_port()
        store.set("port", port)
        comm = MPI.COMM_SELF
    else:
        store.wait([f"turn/{rank}"], wait)
        port = store.get("port").decode()
        inter = MPI.COMM_SELF.Connect(port, root=0)
        comm = inter.Merge(high=True)
        inter.Free()
    for joiner in range(max(rank, 0) + 1, world_size):    # accept the later ranks, one at a time
        if rank == 0:
            store.set(f"turn/{joiner}", "1")
        inter = comm.Accept(port, root=0)
        merged = inter.Merge(high=False)
        inter.Free()
        if comm != MPI.COMM_SELF:
            comm.Free()
        comm = merged
    if rank == 0:
        MPI.Close_port(port)
    if comm == MPI.COMM_SELF:           # a world of one
        comm = MPI.COMM_SELF.Dup()
    if comm.Get_rank() != rank or comm.Get_size() != world_size:
        raise RuntimeError(f"connecting the processes gave rank {comm.Get_rank()} of {comm.Get_size()}, "
                           f"expected {rank} of {world_size}")
    return comm
