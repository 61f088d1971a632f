"""ResNet-18 (examples/resnet.py) forward + backward on 8x3x64x64 float32, training mode.

One step = zero the gradients, forward, cross-entropy over 1000 classes, backward.
Floor: the GEMM floor (the NumPy float32 time of the step's matrix products of the same shapes:
the im2col GEMM of every convolution forward, the two GEMMs of its backward, the three of the
linear layer; see bench/_floors.py), measured in the same run. No goal is set for this row.
Also printed: the FLOP floor (the same FLOPs at a large square GEMM's rate). The PyTorch column
runs examples/resnet.py itself with `tensorplug` replaced by `torch` in its imports, from the
same weights (its layout and parameter names are torchvision's).

    python bench/resnet18.py [--quick] [--repeat N] [--batch 8] [--size 64] [--no-torch]
"""
from __future__ import annotations

import importlib.util
import pathlib
import types

import numpy as np

import _floors
import _harness as H

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "resnet.py"


def load_tp_resnet():
    spec = importlib.util.spec_from_file_location("tensorplug_example_resnet", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_torch_resnet():
    """examples/resnet.py with its tensorplug imports pointed at torch."""
    src = EXAMPLE.read_text()
    for a, b in (("import tensorplug.nn.functional as F", "import torch.nn.functional as F"),
                 ("import tensorplug.nn as nn", "import torch.nn as nn"),
                 ("import tensorplug as torch", "import torch")):
        src = src.replace(a, b)
    if "import tensorplug" in src:
        raise RuntimeError("examples/resnet.py imports tensorplug in a way this benchmark does not rewrite")
    mod = types.ModuleType("torch_example_resnet")
    mod.__file__ = str(EXAMPLE)
    exec(compile(src, str(EXAMPLE), "exec"), mod.__dict__)
    return mod


def step_fn(fw, model, x, y):
    F = fw.nn.functional

    def step():
        for p in model.parameters():
            p.grad = None
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()
    return step


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--size", type=int, default=None)
    args = p.parse_args(argv)
    batch = args.batch or (2 if args.quick else 8)
    size = args.size or (32 if args.quick else 64)
    H.header("ResNet-18 forward + backward", args, input=f"{batch}x3x{size}x{size}")
    import tensorplug as tp
    torch = H.get_torch(args)

    rng = np.random.default_rng(0)
    xn = rng.standard_normal((batch, 3, size, size), dtype=np.float32)
    yn = rng.integers(0, 1000, batch)
    tp.manual_seed(0)
    model = load_tp_resnet().resnet18(num_classes=1000)
    x, y = tp.from_numpy(xn), tp.from_numpy(yn)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    fns = {"tensorplug": step_fn(tp, model, x, y)}
    loss0 = float(fns["tensorplug"]())

    def torch_build():
        tmodel = load_torch_resnet().resnet18(num_classes=1000)
        tmodel.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        step = step_fn(torch, tmodel, torch.from_numpy(xn), torch.from_numpy(yn))
        H.check_close("ResNet-18 loss (tensorplug vs torch)", loss0, float(step()))
        return step
    reps = H.repeats(args, 7, quick=2)
    gemm, flops = _floors.gemm_floor_fn(_floors.gemm_shapes(model, lambda: model(x)))
    fns["floor"] = gemm
    t = H.measure(fns, reps, target_s=0.0, warmup=1, torch_build=torch_build if torch is not None else None)
    peak = _floors.peak_gemm_rate(reps)
    H.result(f"ResNet-18 forward+backward, {batch}x3x{size}x{size}", t["tensorplug"], t["floor"],
             floor_name="GEMM floor (the step's matmuls in NumPy)", torch=t.get("torch"), args=args,
             flop_floor=f"{H.fmt(flops / peak)} ({flops / 1e9:.3f} GFLOP at the square-GEMM rate "
                        f"{peak / 1e9:.1f} GFLOP/s; step / FLOP floor {t['tensorplug'] * peak / flops:.1f}; "
                        f"achieved {flops / t['tensorplug'] / 1e9:.2f} GFLOP/s)")


if __name__ == "__main__":
    main()
