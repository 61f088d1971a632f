"""Multi-process tests start `mpiexec` subprocesses (see _launch.py); they skip, saying why, where
mpi4py or an MPI library is missing (install the `mpi` extra)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

collect_ignore = ["workers"]
