"""Conformance checks in a child process, so that a hanging kernel is a failed check, not a hung run.

Why a process: a kernel stuck in C code that holds the GIL (a native loop, a deadlocked driver
call) never lets Python run again in its process: neither a signal handler nor a watchdog thread
gets control, so only killing the process ends it. The child is a fresh interpreter (not a fork):
a process that has initialised a GPU driver cannot hand it to a forked child. It finds the backend
by name, as `tensorplug backends check` does, so this serves backends that are discoverable
(entry points and the built-ins); the runner checks runtime-registered ones in-process instead.

Protocol: the parent writes {"backend", "ids", "xfails"} as JSON to the child's stdin; the child
writes one JSON line per event to the file descriptor named on its command line: {"start": i}
before check i, {"result": {...}} after it. A check that is still running `timeout` seconds after
its start is ended: the parent asks the child for its Python stack (faulthandler, which works while
the GIL is held), kills it, reports the check failed with the kernel's name and where it was, and
starts a new child for the remaining checks.

    python -m tensorplug.testing.conformance.worker FD DUMPFILE
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

STARTUP_S = 120.0          # importing tensorplug and building the checks, before the first check


def supervised(backend, checks, xfails, timeout, on_start=None, on_result=None):
    """Run `checks` of `backend` (registered under its name) in child processes; Results in order."""
    from .runner import Result
    results, todo = [], list(checks)
    while todo:
        done = _one_child(backend.name, todo, xfails, timeout, on_start, on_result, Result)
        results.extend(done)
        todo = todo[len(done):]
    return results


def _one_child(name, todo, xfails, timeout, on_start, on_result, Result):
    """Run `todo` in one child until it finishes, hangs or dies; the Results it got through."""
    read_fd, write_fd = os.pipe()
    dump = tempfile.NamedTemporaryFile(prefix="tensorplug-check-", suffix=".txt", delete=False)
    dump.close()
    env = dict(os.environ, PYTHONFAULTHANDLER="")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tensorplug.testing.conformance.worker", str(write_fd),
                                 dump.name], stdin=subprocess.PIPE, pass_fds=(write_fd,), env=env)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        os.unlink(dump.name)
        raise
    os.close(write_fd)
    out, buf = [], b""
    running, deadline = None, time.monotonic() + STARTUP_S + timeout
    try:
        proc.stdin.write(json.dumps({"backend": name, "ids": [c.id for c in todo], "xfails": xfails}).encode())
        proc.stdin.close()
        while len(out) < len(todo):
            wait = deadline - time.monotonic()
            ready = select.select([read_fd], [], [], max(wait, 0))[0] if wait > 0 else []
            if not ready:
                if running is None:
                    raise RuntimeError(f"the conformance worker for backend {name!r} did not start within "
                                       f"{STARTUP_S + timeout:g} s")
                c = todo[running]
                where = _stack_of(proc, dump.name)
                out.append(_failed(Result, c, f"{c.id}: timed out after {timeout:g} s: kernel {c.op!r} did not "
                                              f"return" + (f"; it was in {where}" if where else ""), xfails))
                if on_result:
                    on_result(c, out[-1])
                return out
            chunk = os.read(read_fd, 65536)
            if not chunk:                        # the child exited before finishing
                code = proc.wait()
                if running is None:
                    raise RuntimeError(f"the conformance worker for backend {name!r} exited with code {code} "
                                       f"before running a check")
                if running < len(out):           # between two checks: go on with the rest
                    return out
                c = todo[running]
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                out.append(_failed(Result, c, f"{c.id}: the check ended its process ({how}) while running "
                                              f"kernel {c.op!r}", xfails))
                if on_result:
                    on_result(c, out[-1])
                return out
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                event = json.loads(line)
                if "start" in event:
                    running = event["start"]
                    deadline = time.monotonic() + timeout
                    if on_start:
                        on_start(todo[running])
                elif "result" in event:
                    out.append(Result(**event["result"]))
                    if on_result:
                        on_result(todo[running], out[-1])
                elif "error" in event:
                    raise RuntimeError(f"the conformance worker for backend {name!r} failed: {event['error']}")
        return out
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(read_fd)
        os.unlink(dump.name)


def _failed(Result, c, message, xfails=None):
    from .runner import xfail_reason
    reason = xfail_reason(c.id, xfails or {})
    status, message = ("failed", message) if reason is None else ("xfailed", f"{reason} | {message}")
    return Result(c.id, c.family, c.op, c.kind, c.dtype, status, message, 0.0)


def _stack_of(proc, path):
    """The innermost Python frame of the hung child ("func (file:line)"), via faulthandler."""
    try:
        proc.send_signal(signal.SIGUSR1)
    except (OSError, ValueError, AttributeError):
        return ""
    end = time.monotonic() + 2.0
    text = ""
    while time.monotonic() < end:
        time.sleep(0.05)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if "File " in text:
            break
    for line in text.splitlines():            # most recent call first
        line = line.strip()
        if line.startswith("File "):
            try:
                file_part, func = line.rsplit(" in ", 1)
                file_name, lineno = file_part[len('File "'):].rsplit('", line ', 1)
                return f"{func} ({file_name}:{lineno})"
            except ValueError:
                return line
    return ""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    fd, dump_path = int(argv[0]), argv[1]
    out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")
    import faulthandler
    dump = open(dump_path, "w", encoding="utf-8")
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=False)
    from dataclasses import asdict

    from . import runner
    try:
        job = json.loads(sys.stdin.read())
        backend = runner.resolve(job["backend"])
        by_id = {c.id: c for c in runner.build_checks(backend)}
        checks = [by_id[i] for i in job["ids"]]
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises it
        out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        return 1
    with runner.selected(backend):
        for i, c in enumerate(checks):
            out.write(json.dumps({"start": i}) + "\n")
            r = runner.run_check(c, job["xfails"])
            out.write(json.dumps({"result": asdict(r)}) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)              # no interpreter teardown: a stuck backend thread must not hold the exit
