"""Launching a job's processes: torchrun's per-node launch (api.py) and the supervision both launch
paths share (supervisor.py). `python -m tensorplug.distributed.run` and `tensorplug run` are the
command lines on top."""
from .api import LaunchConfig, launch, worker_command  # noqa: F401

__all__ = ["LaunchConfig", "launch", "worker_command"]
