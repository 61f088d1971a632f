"""Runs under `mpiexec -pmi-port -n 1` on behalf of a process that no MPI launcher started (see
connect.py): writes hydra's PMI address to a file, then stays alive (hydra's PMI server with it) until
the watched process has gone. Imports nothing heavy: it must start fast."""
import os
import sys
import time

envfile, pid = sys.argv[1], int(sys.argv[2])
tmp = envfile + ".tmp"
with open(tmp, "w") as f:
    for k in ("PMI_PORT", "PMI_ID", "PMI_HOSTNAME"):
        f.write(f"{k}={os.environ.get(k, '')}\n")
os.rename(tmp, envfile)             # atomic: the reader never sees half a file
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    except PermissionError:         # the pid was reused by someone else's process: ours is gone
        break
    time.sleep(0.2)
