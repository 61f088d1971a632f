"""2-layer LSTM (hidden 200, 35 steps, batch 20) forward + backward (from the former bench/nn_steps.py).

One step = zero the gradients, forward, mean of the squared output, backward.
Floor: the GEMM floor (the NumPy float32 time of the step's matrix products of the same shapes:
the input projection and the recurrence of every layer and time step, with their two backward
GEMMs; see bench/_floors.py). No goal is set for this row. Also printed: the FLOP floor.

    python bench/lstm_step.py [--quick] [--repeat N] [--no-torch]
"""
from __future__ import annotations

import numpy as np

import _floors
import _harness as H


def step_fn(model, x):
    def step():
        for p in model.parameters():
            p.grad = None
        out, _ = model(x)
        loss = out.pow(2).mean()
        loss.backward()
        return loss.detach()
    return step


def main(argv=None):
    p = H.parser(__doc__)
    args = p.parse_args(argv)
    steps, batch, hidden, layers = (5, 4, 16, 2) if args.quick else (35, 20, 200, 2)
    H.header("LSTM forward + backward", args, shape=f"{layers} layers x {hidden}, {steps} steps, batch {batch}")
    import tensorplug as tp
    torch = H.get_torch(args)
    tp.manual_seed(0)
    model = tp.nn.LSTM(hidden, hidden, num_layers=layers)
    xn = np.random.default_rng(0).standard_normal((steps, batch, hidden), dtype=np.float32)
    fns = {"tensorplug": step_fn(model, tp.from_numpy(xn))}
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    loss0 = float(fns["tensorplug"]())

    def torch_build():
        tmodel = torch.nn.LSTM(hidden, hidden, num_layers=layers)
        tmodel.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        step = step_fn(tmodel, torch.from_numpy(xn))
        H.check_close("LSTM loss (tensorplug vs torch)", loss0, float(step()))
        return step
    gemm, flops = _floors.gemm_floor_fn(_floors.lstm_gemm_shapes(steps, batch, hidden, hidden, layers))
    fns["floor"] = gemm
    reps = H.repeats(args, 11)
    t = H.measure(fns, reps, target_s=H.step_target(args), torch_build=torch_build if torch is not None else None)
    peak = _floors.peak_gemm_rate(reps)
    H.result(f"LSTM {layers}x{hidden}, {steps} steps, batch {batch}, forward+backward", t["tensorplug"], t["floor"],
             floor_name="GEMM floor (the step's matmuls in NumPy)", torch=t.get("torch"), args=args,
             flop_floor=f"{H.fmt(flops / peak)} ({flops / 1e9:.3f} GFLOP at {peak / 1e9:.1f} GFLOP/s; "
                        f"step / FLOP floor {t['tensorplug'] * peak / flops:.1f})")


if __name__ == "__main__":
    main()
