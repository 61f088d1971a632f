"""bench/gpu.py and bench/gpu_check.sh without a GPU: the benchmark script runs end to end on the CUDA
backend's code over the NumPy-based CuPy stand-in (tiny sizes; its numbers mean nothing), refuses
cleanly where no CUDA backend is usable, and the check script is valid bash."""
import importlib.util
import json
import pathlib
import shutil
import subprocess

import pytest

_BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def _gpu_module():
    spec = importlib.util.spec_from_file_location("tensorplug_bench_gpu", _BENCH / "gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_runs_on_the_standin(fakecuda, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert _gpu_module().main(["--device", "fakecuda", "--quick", "--repeat", "1", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["device"] == "fakecuda:0" and res["tf32_default"] is False
    assert set(res["matmul"]) == {"fp32", "tf32"} and set(res["train_steps"]) == {"mlp", "resnet18"}
    for row in (res["elementwise"]["add_ratio"], res["matmul"]["fp32"]["ratio"],
                res["train_steps"]["mlp"]["ratio_to_floor"]):
        assert row > 0
    text = capsys.readouterr().out
    assert "ratio to copy ceiling" in text and "CuPy ceiling" in text and "step / floor" in text


def test_bench_without_cuda_backend_exits_with_the_reason(capsys):
    import tensorplug.cuda
    if tensorplug.cuda.is_available():
        pytest.skip("a usable CUDA backend is present")
    assert _gpu_module().main(["--quick"]) == 2
    assert "no available backend for device type 'cuda'" in capsys.readouterr().err


def test_gpu_check_script_is_valid_bash():
    script = _BENCH / "gpu_check.sh"
    assert script.stat().st_mode & 0o111, "gpu_check.sh must be executable"
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    subprocess.run([bash, "-n", str(script)], check=True, timeout=30)
    text = script.read_text()
    assert "pip install --no-deps --no-build-isolation -e ." in text
    assert "backends check cuda --json" in text and "bench/gpu.py --json" in text
