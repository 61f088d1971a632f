"""The out-of-tree example plugin in examples/trace_backend: device "trace" with only the required
primitives. Registered here at run time from the source folder (or found installed), it passes the
conformance suite through the decompositions, moves tensors to and from cpu and trains a small MLP;
in a fresh interpreter it is discovered through its entry point alone."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tensorplug as torch
from tensorplug.dispatch import registry
from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
from tensorplug.testing import conformance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trace_backend"
KNOWN_FAILURES = EXAMPLE / "tests" / "known_failures.txt"      # bugs of the NumPy kernels it wraps


@pytest.fixture
def trace_backend():
    """The example's backend: installed (entry point) or registered at run time from the source folder."""
    if importlib.util.find_spec("tensorplug_trace") is None:
        sys.path.insert(0, str(EXAMPLE))
    import tensorplug_trace.plugin
    if "trace" not in registry.compute:
        registry.register_plugin(tensorplug_trace.plugin, name="tensorplug-trace (test)")
    yield registry.compute["trace"]


def test_only_required_primitives_are_native(trace_backend):
    status = trace_backend.kernel_status()
    assert {status[k] for k in REQUIRED} == {"native"}
    assert {status[k] for k in OPTIONAL} == {"decomposed"}


def test_trace_passes_the_conformance_suite(trace_backend):
    """The full suite (kernels, decompositions, gradients, devices) on the trace backend."""
    report = conformance.run("trace", xfail_files=[KNOWN_FAILURES])
    assert report.ok, report.format_failures()
    counts = report.counts()
    assert counts["passed"] > 1000 and counts["skipped"] == 0


def test_tensors_move_between_trace_and_cpu(trace_backend):
    x = torch.arange(6.0).reshape(2, 3)
    t = x.to("trace")
    assert t.device == torch.device("trace") and t.backend is trace_backend
    assert (t * 2).to("cpu").tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert torch.zeros(2, device="trace").device.type == "trace"
    with pytest.raises(RuntimeError, match="trace"):
        t + x


def test_mlp_training_step_on_trace(trace_backend):
    """linear layers (matmul), relu, mse and an SGD update, all on device "trace", traced."""
    import tensorplug_trace
    g = torch.Generator(device="trace").manual_seed(0)
    x = torch.randn(32, 4, device="trace", generator=g)
    y = x[:, :1] - 2 * x[:, 1:2]
    w1 = (torch.randn(4, 16, device="trace", generator=g) * 0.5).requires_grad_()
    w2 = (torch.randn(16, 1, device="trace", generator=g) * 0.5).requires_grad_()
    losses = []
    with tensorplug_trace.recording() as trace:
        for _ in range(40):
            loss = ((torch.relu(x @ w1) @ w2 - y) ** 2).mean()
            w1.grad = w2.grad = None
            loss.backward()
            with torch.no_grad():
                w1 -= 0.05 * w1.grad
                w2 -= 0.05 * w2.grad
            losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]
    assert w1.grad.device.type == "trace"
    assert trace.counts()["matmul"] >= 40 * 3
    if hasattr(torch.nn, "Linear"):
        model = torch.nn.Linear(4, 1).to("trace")
        assert model(x).device.type == "trace"


def test_discovered_through_the_entry_point_only(tmp_path):
    """With only dist-info metadata (as pip writes it) on the path, a fresh interpreter lists the
    trace backend with its distribution as origin and checks it from the command line."""
    site = tmp_path / "site"
    info = site / "tensorplug_trace-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorplug-trace\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[tensorplug]\ntrace = tensorplug_trace.plugin\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLUG_BACKEND_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(EXAMPLE), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "tensorplug", "backends", "list", "--json"], capture_output=True,
                       text=True, timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = {b["name"]: b for b in json.loads(r.stdout)["backends"]}
    assert rows["trace"]["device"] == "trace" and rows["trace"]["origin"] == "tensorplug-trace 0.1.0"
    r = subprocess.run([sys.executable, "-m", "tensorplug", "backends", "check", "trace", "-k", "pointwise.add.",
                        "-k", "device.", "--xfail-file", str(KNOWN_FAILURES)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trace: all" in r.stdout
