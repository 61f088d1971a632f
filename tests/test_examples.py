"""examples/train_digits.py: the five-part training script, its checkpoints and --resume."""
import os
import subprocess
import sys
from pathlib import Path

import tensorplug

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "train_digits.py"


def _train(*args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")      # tiny matrices: one BLAS thread is fastest
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_train_digits_resumes_to_the_same_weights(tmp_path):
    """Two epochs, then --resume to three, equals three epochs in one go: the checkpoint carries the
    model, optimizer and scheduler state and the epoch."""
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    out = _train("--epochs", "3", "--out", str(straight))
    assert "epoch   3/3" in out and "test accuracy" in out
    out = _train("--epochs", "2", "--out", str(resumed))
    assert "epoch   2/2" in out and "epoch   3" not in out
    out = _train("--epochs", "3", "--out", str(resumed), "--resume")
    assert "resumed from" in out and "epoch   1/" not in out and "epoch   3/3" in out

    a = tensorplug.load(straight / "checkpoint.tpl")
    b = tensorplug.load(resumed / "checkpoint.tpl")
    assert a["epoch"] == b["epoch"] == 3
    assert set(b) >= {"epoch", "model", "optimizer", "scheduler", "history", "best_val_acc"}
    assert a["model"].keys() == b["model"].keys()
    for k in a["model"]:
        assert tensorplug.equal(a["model"][k], b["model"][k]), k
    assert a["history"] == b["history"] and len(b["history"]["val_acc"]) == 3
    assert b["optimizer"]["state"][0]["step"] == a["optimizer"]["state"][0]["step"]
    assert b["history"]["val_acc"][-1] > 0.85
    for name in ("best.tpl", "curves.png"):
        assert (resumed / name).stat().st_size > 0
