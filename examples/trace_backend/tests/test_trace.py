"""tensorplug-trace's own tests (run after `pip install ./examples/trace_backend`): the tensorplug
conformance suite through its third-party helper, and the trace API."""
from pathlib import Path

import pytest

tensorplug_trace = pytest.importorskip("tensorplug_trace", reason="pip install ./examples/trace_backend first")

import tensorplug as torch  # noqa: E402
from tensorplug.testing.conformance import pytest_tests  # noqa: E402

# one pytest test per conformance check; known_failures.txt lists bugs of the NumPy kernels it wraps
test_conformance = pytest_tests("trace", xfail_files=[Path(__file__).with_name("known_failures.txt")])


def test_registered_through_the_entry_point_only():
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    assert registry.origin["trace"] == "tensorplug-trace 0.1.0"
    status = registry.compute["trace"].kernel_status()
    from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
    assert all(status[k] == "native" for k in REQUIRED)
    assert all(status[k] == "decomposed" for k in OPTIONAL)
    assert set(registry.compute["trace"].native_kernels()) == set(REQUIRED)      # nothing more


def test_decomposed_version_1_kernels_are_traced():
    """sub and tanh, required in API version 1, run as decompositions into the primitives."""
    x = torch.tensor([[0.5, -1.0], [2.0, 3.0]], device="trace")
    with tensorplug_trace.recording() as trace:
        y = torch.tanh(x - 1.0)
    assert [round(v, 6) for v in y.to("cpu").flatten().tolist()] == [-0.462117, -0.964028, 0.761594, 0.964028]
    rows = {r["kernel"]: r for r in trace.summary()}
    assert rows["sub"]["kind"] == rows["tanh"]["kind"] == "decomposed"
    assert rows["add"]["kind"] == rows["neg"]["kind"] == "primitive"


def test_trace_records_calls_shapes_and_time():
    x = torch.ones(3, 4, device="trace")
    with tensorplug_trace.recording() as trace:
        y = torch.softmax(x @ x.t(), 1)
    assert y.device.type == "trace"
    counts = trace.counts()
    assert counts["matmul"] == 1 and counts["softmax"] == 1 and counts["exp"] >= 1
    rows = {r["kernel"]: r for r in trace.summary()}
    assert rows["softmax"]["kind"] == "decomposed" and rows["matmul"]["kind"] == "primitive"
    assert "float32[3, 4]" in rows["matmul"]["top_inputs"]
    assert any(c.kernel == "exp" and c.depth == 1 for c in trace.calls)
    assert "softmax" in trace.format()
    tensorplug_trace.reset()
    assert tensorplug_trace.counts() == {}


def test_training_step_on_trace():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).to("trace")
    x = torch.randn(16, 3, device="trace")
    y = x.sum(1, keepdim=True)
    losses = []
    for _ in range(20):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 2
    assert model.weight.device.type == "trace" and model.weight.grad.device.type == "trace"
