"""tensorplug-trace: a tensorplug backend that counts, times and traces every kernel call.

    import tensorplug as torch
    import tensorplug_trace

    x = torch.randn(64, 32).to("trace")
    with tensorplug_trace.recording() as trace:
        y = torch.softmax(x @ x.t(), 1).sum()
    trace.print()                     # kernels by total time, with call counts and input shapes
    trace.counts()["matmul"]          # 1

Tensors on device "trace" behave like cpu tensors (the kernels are NumPy's); `.to("cpu")` and
`.to("trace")` move them. The trace is global: `tensorplug_trace.trace`.
"""
__version__ = "0.1.0"

from .trace import Call, Trace  # noqa: E402
from .backend import TRACE as trace, TraceBackend  # noqa: E402

__all__ = ["trace", "Trace", "Call", "TraceBackend", "reset", "recording", "counts", "summary", "print_trace"]


def reset() -> None:
    """Forget every recorded call."""
    trace.reset()


def recording():
    """`with recording() as t:` resets the trace, records the block, and gives the trace."""
    return trace.recording()


def counts() -> dict:
    """{kernel: calls} since the last reset."""
    return trace.counts()


def summary() -> list:
    """Per-kernel rows: kind, calls, total and mean seconds, most frequent input shapes."""
    return trace.summary()


def print_trace(limit: int | None = 30) -> None:
    trace.print(limit)
