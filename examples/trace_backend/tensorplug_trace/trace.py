"""The recorder: per-kernel call counts, time, and the shapes and dtypes each kernel saw."""
from __future__ import annotations

import collections
import contextlib
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Call:
    """One kernel call: its arguments and result described ("float32[2, 3]"), duration and nesting depth
    (a decomposed optional kernel's primitive calls are one level deeper)."""
    kernel: str
    inputs: str
    output: str
    seconds: float
    depth: int


@dataclass
class KernelStats:
    kind: str                                  # "primitive" (native) or "decomposed" (optional, fallback)
    calls: int = 0
    seconds: float = 0.0
    signatures: collections.Counter = field(default_factory=collections.Counter)


def _sig(x):
    """A short description of a kernel argument: "float32[64, 32]" for an array, containers
    recursively, small Python values by repr, anything else by type name."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{getattr(x.dtype, 'name', x.dtype)}{list(x.shape)}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_sig(e) for e in x[:8]) + (", ..." if len(x) > 8 else "")
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    if x is None or isinstance(x, (bool, int, float, str)) or x is Ellipsis:
        r = repr(x)
        return r if len(r) <= 24 else type(x).__name__
    if isinstance(x, slice):
        return f"{'' if x.start is None else x.start}:{'' if x.stop is None else x.stop}" + \
            ("" if x.step is None else f":{x.step}")
    return type(x).__name__


class Trace:
    """Records kernel calls while enabled. `keep` bounds the list of individual calls kept."""

    def __init__(self, keep: int = 10000):
        self.enabled = True
        self.stats: dict[str, KernelStats] = {}
        self.calls: collections.deque = collections.deque(maxlen=keep)
        self._local = threading.local()

    # -- recording ------------------------------------------------------------------------------
    def wrap(self, name, fn, kind="primitive"):
        """A kernel that calls fn and records the call."""
        def kernel(*args, **kwargs):
            if not self.enabled:
                return fn(*args, **kwargs)
            depth = getattr(self._local, "depth", 0)
            self._local.depth = depth + 1
            t0 = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                self._local.depth = depth
            st = self.stats.get(name)
            if st is None:
                st = self.stats[name] = KernelStats(kind)
            st.calls += 1
            st.seconds += dt
            ins = ", ".join(_sig(a) for a in args)
            st.signatures[ins] += 1
            self.calls.append(Call(name, ins, _sig(out), dt, depth))
            return out
        kernel.__name__ = f"traced_{name}"
        kernel.__wrapped__ = fn
        return kernel

    # -- reading --------------------------------------------------------------------------------
    def reset(self) -> None:
        self.stats.clear()
        self.calls.clear()

    def counts(self) -> dict:
        """{kernel name: number of calls}, most called first."""
        return dict(sorted(((k, s.calls) for k, s in self.stats.items()), key=lambda kv: (-kv[1], kv[0])))

    def total_calls(self) -> int:
        return sum(s.calls for s in self.stats.values())

    def summary(self) -> list[dict]:
        """One dict per kernel: name, kind, calls, total and mean seconds, most frequent signature."""
        rows = []
        for name, s in self.stats.items():
            sig, n = s.signatures.most_common(1)[0] if s.signatures else ("", 0)
            rows.append({"kernel": name, "kind": s.kind, "calls": s.calls, "seconds": s.seconds,
                         "mean_seconds": s.seconds / s.calls if s.calls else 0.0,
                         "top_inputs": sig, "top_inputs_calls": n,
                         "distinct_inputs": len(s.signatures)})
        return sorted(rows, key=lambda r: (-r["seconds"], r["kernel"]))

    def format(self, limit: int | None = 30) -> str:
        """A table sorted by total time (decomposed kernels include the primitives they call)."""
        rows = self.summary()[:limit]
        header = ["KERNEL", "KIND", "CALLS", "TOTAL ms", "MEAN us", "MOST FREQUENT INPUTS"]
        body = [[r["kernel"], r["kind"], str(r["calls"]), f"{r['seconds'] * 1e3:.3f}",
                 f"{r['mean_seconds'] * 1e6:.1f}", f"{r['top_inputs']} x{r['top_inputs_calls']}"] for r in rows]
        widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in [header, *body]]
        lines.append(f"{self.total_calls()} kernel calls, {len(self.stats)} kernels")
        return "\n".join(lines)

    def print(self, limit: int | None = 30) -> None:
        print(self.format(limit))

    @contextlib.contextmanager
    def recording(self):
        """Reset, record for the duration of the block, and leave the records for reading."""
        self.reset()
        before = self.enabled
        self.enabled = True
        try:
            yield self
        finally:
            self.enabled = before
