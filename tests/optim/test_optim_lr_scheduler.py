"""Learning-rate schedulers: the lr over epochs against the documented formulas, get_last_lr,
state dicts, ReduceLROnPlateau's behaviour, composition (SequentialLR, ChainedScheduler), warnings."""
import copy
import math
import warnings
from bisect import bisect_right

import pytest

import tensorplug as torch
import tensorplug.optim as optim
from tensorplug.optim import lr_scheduler as S

BASE = (0.1, 0.4)


def _opt(kind="sgd", base=BASE):
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    if kind == "sgd":
        return optim.SGD([{"params": [a]}, {"params": [b], "lr": base[1]}], lr=base[0], momentum=0.9)
    return optim.Adam([{"params": [a]}, {"params": [b], "lr": base[1]}], lr=base[0])


def _lrs(opt, sched, epochs):
    """[lrs at epoch 0, 1, ..., epochs] with the usual loop: optimizer.step() then scheduler.step()."""
    out = [list(sched.get_last_lr())]
    assert out[0] == [g["lr"] for g in opt.param_groups]
    for _ in range(epochs):
        opt.step()
        sched.step()
        lrs = list(sched.get_last_lr())
        assert lrs == [g["lr"] for g in opt.param_groups]
        out.append(lrs)
    return out


def _check(got, formula, epochs, base=BASE, rel=1e-12):
    for e in range(epochs + 1):
        for i, b in enumerate(base):
            want = formula(b, e, i)
            assert got[e][i] == pytest.approx(want, rel=rel, abs=1e-15), f"epoch {e}, group {i}"


CASES = {
    "StepLR": (lambda o: S.StepLR(o, step_size=3, gamma=0.5), lambda b, e, i: b * 0.5 ** (e // 3), 12),
    "MultiStepLR": (lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
                    lambda b, e, i: b * 0.3 ** bisect_right([2, 5, 5, 9], e), 12),
    "ExponentialLR": (lambda o: S.ExponentialLR(o, gamma=0.9), lambda b, e, i: b * 0.9 ** e, 10),
    "CosineAnnealingLR": (lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
                          lambda b, e, i: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 5)) / 2, 23),
    "LambdaLR": (lambda o: S.LambdaLR(o, lr_lambda=[lambda e: 0.95 ** e, lambda e: 1 / (e + 1)]),
                 lambda b, e, i: b * (0.95 ** e if i == 0 else 1 / (e + 1)), 10),
    "MultiplicativeLR": (lambda o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.9 if e % 2 else 0.5),
                         lambda b, e, i: b * math.prod(0.9 if k % 2 else 0.5 for k in range(1, e + 1)), 10),
    "ConstantLR": (lambda o: S.ConstantLR(o, factor=0.5, total_iters=4), lambda b, e, i: b * (0.5 if e < 4 else 1), 8),
    "LinearLR": (lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
                 lambda b, e, i: b * (0.2 + (0.9 - 0.2) * min(e, 6) / 6), 10),
    "PolynomialLR": (lambda o: S.PolynomialLR(o, total_iters=6, power=2.0),
                     lambda b, e, i: b * (1 - min(e, 6) / 6) ** 2, 10),
    "CosineAnnealingWarmRestarts": (
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
        # periods 3, 6, 12: restarts at epochs 3 and 9
        lambda b, e, i: 0.01 + (b - 0.01) * (1 + math.cos(math.pi * _sgdr(e, 3, 2)[0] / _sgdr(e, 3, 2)[1])) / 2, 20),
    "CosineAnnealingWarmRestarts-T_mult1": (
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4),
        lambda b, e, i: b * (1 + math.cos(math.pi * (e % 4) / 4)) / 2, 12),
}


def _sgdr(e, T_0, T_mult):
    """(T_cur, T_i) of SGDR at integer epoch e."""
    T_i = T_0
    while e >= T_i:
        e -= T_i
        T_i *= T_mult
    return e, T_i


@pytest.mark.parametrize("name", list(CASES))
def test_lr_follows_the_documented_formula(name):
    make, formula, epochs = CASES[name]
    opt = _opt()
    sched = make(opt)
    assert sched.last_epoch == 0
    assert [g["initial_lr"] for g in opt.param_groups] == list(BASE)
    assert sched.base_lrs == list(BASE)
    _check(_lrs(opt, sched, epochs), formula, epochs)


def test_first_lr_after_construction_is_the_base_lr():
    for name, (make, _, _) in CASES.items():
        opt = _opt()
        sched = make(opt)
        expected = list(BASE)
        if name == "ConstantLR":
            expected = [b * 0.5 for b in BASE]
        elif name == "LinearLR":
            expected = [b * 0.2 for b in BASE]
        assert sched.get_last_lr() == pytest.approx(expected), name


def _onecycle_ref(step, total, max_lr, pct=0.3, div=25.0, final_div=1e4, anneal="cos", three=False):
    """OneCycleLR from its definition: warm up from max_lr/div to max_lr, anneal to initial/final_div."""
    initial = max_lr / div
    min_lr = initial / final_div

    def ann(a, b, p):
        return b + (a - b) / 2 * (math.cos(math.pi * p) + 1) if anneal == "cos" else a + (b - a) * p
    up_end = pct * total - 1
    if not three:
        if step <= up_end:
            return ann(initial, max_lr, step / up_end)
        return ann(max_lr, min_lr, (step - up_end) / (total - 1 - up_end))
    down_end = 2 * pct * total - 2
    if step <= up_end:
        return ann(initial, max_lr, step / up_end)
    if step <= down_end:
        return ann(max_lr, initial, (step - up_end) / (down_end - up_end))
    return ann(initial, min_lr, (step - down_end) / (total - 1 - down_end))


@pytest.mark.parametrize("kw", [dict(), dict(anneal_strategy="linear"), dict(three_phase=True, pct_start=0.25),
                                dict(div_factor=10.0, final_div_factor=100.0, pct_start=0.5)])
def test_one_cycle_lr(kw):
    opt = _opt()
    sched = S.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=20, **kw)
    got = _lrs(opt, sched, 19)
    ref_kw = dict(pct=kw.get("pct_start", 0.3), div=kw.get("div_factor", 25.0),
                  final_div=kw.get("final_div_factor", 1e4), anneal=kw.get("anneal_strategy", "cos"),
                  three=kw.get("three_phase", False))
    for e in range(20):
        for i, m in enumerate((1.0, 0.5)):
            assert got[e][i] == pytest.approx(_onecycle_ref(e, 20, m, **ref_kw), rel=1e-12), (e, i)
    opt.step()
    sched.step()                        # step 20 is still allowed (PyTorch's off-by-one)
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        sched.step()


def test_one_cycle_cycles_momentum_inversely():
    opt = _opt()
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=10, base_momentum=0.8, max_momentum=0.9)
    moms = [opt.param_groups[0]["momentum"]]
    for _ in range(9):
        opt.step()
        sched.step()
        moms.append(opt.param_groups[0]["momentum"])
    assert moms[0] == pytest.approx(0.9)
    assert min(moms) == pytest.approx(0.8)          # at the lr peak (step pct*total - 1 = 2)
    assert moms[2] == pytest.approx(0.8) and moms[-1] == pytest.approx(0.9)
    adam = _opt("adam")
    S.OneCycleLR(adam, max_lr=1.0, total_steps=10)
    assert adam.param_groups[0]["betas"] == (pytest.approx(0.95), 0.999)
    with pytest.raises(ValueError, match="total_steps"):
        S.OneCycleLR(_opt(), max_lr=1.0)


def _cyclic_ref(e, base, top, step_up, step_down, mode="triangular", gamma=1.0):
    total = step_up + step_down
    cycle = math.floor(1 + e / total)
    x = 1 + e / total - cycle                         # position within the cycle, in [0, 1)
    ratio = step_up / total
    height = x / ratio if x <= ratio else (1 - x) / (1 - ratio)
    scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1), "exp_range": gamma ** e}[mode]
    return base + (top - base) * height * scale


@pytest.mark.parametrize("kw", [dict(step_size_up=3), dict(step_size_up=3, step_size_down=5),
                                dict(step_size_up=2, mode="triangular2"),
                                dict(step_size_up=3, mode="exp_range", gamma=0.9)])
def test_cyclic_lr(kw):
    opt = _opt()
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, **kw)
    got = _lrs(opt, sched, 25)
    up = kw["step_size_up"]
    down = kw.get("step_size_down", up)
    for e in range(26):
        want = _cyclic_ref(e, 0.01, 0.1, up, down, kw.get("mode", "triangular"), kw.get("gamma", 1.0))
        assert got[e] == [pytest.approx(want, rel=1e-12, abs=1e-15)] * 2, e
    # momentum goes the other way: max at the lr minimum, base at the peak
    assert opt.param_groups[0]["max_momentum"] == 0.9 and opt.param_groups[0]["base_momentum"] == 0.8


def test_sequential_lr_warmup_then_decay():
    opt = _opt()
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    decay = S.ExponentialLR(opt, gamma=0.9)
    sched = S.SequentialLR(opt, schedulers=[warm, decay], milestones=[3])
    got = _lrs(opt, sched, 10)
    _check(got, lambda b, e, i: b * (0.1 + 0.9 * e / 3) if e < 3 else b * 0.9 ** (e - 3), 10)


def test_sequential_lr_three_phases():
    opt = _opt()
    sched = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=10), S.CosineAnnealingLR(opt, T_max=4),
                                 S.StepLR(opt, step_size=2, gamma=0.1)], milestones=[2, 6])

    def want(b, e, i):
        if e < 2:
            return b * 0.5
        if e < 6:
            return b * (1 + math.cos(math.pi * (e - 2) / 4)) / 2
        return b * 0.1 ** ((e - 6) // 2)
    _check(_lrs(opt, sched, 11), want, 11)


def test_chained_scheduler_multiplies_effects():
    opt = _opt()
    sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=2), S.ExponentialLR(opt, gamma=0.9)])
    got = _lrs(opt, sched, 8)
    _check(got, lambda b, e, i: b * 0.9 ** e * (0.1 if e < 2 else 1.0), 8)


def test_composite_schedulers_validate_arguments():
    opt, other = _opt(), _opt()
    with pytest.raises(ValueError, match="same optimizer"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(other, 2)], milestones=[2])
    with pytest.raises(ValueError, match="number of milestone"):
        S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 2)], milestones=[2, 3])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        S.ChainedScheduler([S.ReduceLROnPlateau(opt)])


# -- ReduceLROnPlateau ---------------------------------------------------------------------------------------
def test_plateau_reduces_after_patience():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    history = []
    for metric in [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5]:
        sched.step(metric)
        history.append(sched.get_last_lr()[0])
    # best 0.9 at epoch 2; bad epochs 3, 4, 5 -> third bad epoch (> patience) reduces; again after 3 more
    assert history == pytest.approx([0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])
    assert sched.get_last_lr()[1] == pytest.approx(0.1)
    assert sched.best == 0.5 and sched.num_bad_epochs == 0


def test_plateau_threshold_modes_and_max_mode():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, mode="min", threshold=0.1, threshold_mode="rel", patience=0)
    sched.step(1.0)
    sched.step(0.95)            # not better than 1.0 * (1 - 0.1): reduced (patience 0)
    assert sched.get_last_lr()[0] == pytest.approx(0.01)
    sched.step(0.85)            # better than 0.9
    assert sched.get_last_lr()[0] == pytest.approx(0.01) and sched.best == 0.85

    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, mode="max", threshold=0.5, threshold_mode="abs", patience=1, factor=0.5)
    for m in [1.0, 1.4, 1.45]:  # neither beats 1.0 + 0.5
        sched.step(m)
    assert sched.get_last_lr()[0] == pytest.approx(0.05)
    sched.step(torch.tensor(3.0))     # a 1-element tensor metric
    assert sched.best == 3.0


def test_plateau_cooldown_min_lr_and_eps():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, factor=0.1, patience=0, cooldown=2, min_lr=[0.005, 0.0], eps=1e-3)
    lrs = []
    for _ in range(7):
        sched.step(1.0)
        lrs.append(sched.get_last_lr())
    # epoch 1 sets best; epoch 2 reduces and starts a cooldown of 2 epochs; epoch 5 reduces again
    assert [round(x[0], 12) for x in lrs] == [0.1, 0.01, 0.01, 0.01, 0.005, 0.005, 0.005]
    # group 1: 0.4 -> 0.04 -> 0.004 -> 0.0004 would change by less than eps=1e-3 at the third cut: kept
    assert [round(x[1], 12) for x in lrs] == [0.4, 0.04, 0.04, 0.04, 0.004, 0.004, 0.004]


def test_plateau_validation():
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode"):
        S.ReduceLROnPlateau(_opt(), mode="up")
    with pytest.raises(ValueError, match="threshold mode"):
        S.ReduceLROnPlateau(_opt(), threshold_mode="pct")
    with pytest.raises(ValueError, match="min_lrs"):
        S.ReduceLROnPlateau(_opt(), min_lr=[0.1])


def test_plateau_state_dict_round_trip():
    opt = _opt()
    sched = S.ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=1)
    for m in [1.0, 2.0]:
        sched.step(m)
    sd = copy.deepcopy(sched.state_dict())
    assert "optimizer" not in sd and sd["num_bad_epochs"] == 1
    opt2 = _opt()
    sched2 = S.ReduceLROnPlateau(opt2)
    sched2.load_state_dict(sd)
    for m in [2.0, 2.0, 2.0]:
        sched.step(m)
        sched2.step(m)
    assert sched2.get_last_lr() == sched.get_last_lr() and opt2.param_groups[0]["lr"] == pytest.approx(0.05)


# -- state dicts and resuming -------------------------------------------------------------------------------
class Decay:
    """A callable object: its attributes travel in LambdaLR's state dict."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate ** epoch


RESUMABLE = {
    "StepLR": lambda o: S.StepLR(o, step_size=2, gamma=0.5),
    "MultiStepLR": lambda o: S.MultiStepLR(o, milestones=[3, 6]),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.01),
    "ExponentialLR": lambda o: S.ExponentialLR(o, 0.8),
    "LinearLR": lambda o: S.LinearLR(o, start_factor=0.25, total_iters=5),
    "LambdaLR": lambda o: S.LambdaLR(o, Decay(0.7)),
    "OneCycleLR": lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=12),
    "CyclicLR": lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2),
    "CosineAnnealingWarmRestarts": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
    "SequentialLR": lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=2), S.StepLR(o, 2)], [3]),
    "ChainedScheduler": lambda o: S.ChainedScheduler([S.StepLR(o, 2), S.ExponentialLR(o, 0.9)]),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_scheduler_state_dict_round_trip_resumes_identically(name):
    make = RESUMABLE[name]
    opt = _opt()
    sched = make(opt)
    full = _lrs(opt, sched, 10)

    opt1 = _opt()
    sched1 = make(opt1)
    _lrs(opt1, sched1, 4)
    opt_sd, sched_sd = copy.deepcopy(opt1.state_dict()), copy.deepcopy(sched1.state_dict())
    assert "optimizer" not in sched_sd
    if name != "ChainedScheduler":
        assert sched_sd["last_epoch"] == 4

    opt2 = _opt(base=(0.7, 0.7))
    sched2 = make(opt2)                 # construct first, then load (as the docs recommend)
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sched_sd)
    assert sched2.get_last_lr() == full[4]
    rest = _lrs(opt2, sched2, 6)
    for e in range(7):
        assert rest[e] == pytest.approx(full[4 + e], rel=1e-12), e


def test_lambda_state_dict_keeps_callable_object_state_only():
    opt = _opt()
    sched = S.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    sd["lr_lambdas"][0] = {"rate": 0.25}
    sched.load_state_dict(sd)
    assert sched.lr_lambdas[0].rate == 0.25


def test_state_dict_contents():
    opt = _opt()
    sched = S.StepLR(opt, step_size=3, gamma=0.5)
    opt.step()
    sched.step()
    sd = sched.state_dict()
    for key in ("step_size", "gamma", "base_lrs", "last_epoch", "_step_count", "_last_lr"):
        assert key in sd
    assert sd["last_epoch"] == 1 and sd["_step_count"] == 2 and sd["base_lrs"] == list(BASE)


# -- protocol details --------------------------------------------------------------------------------------------
def test_scheduler_step_before_optimizer_step_warns():
    opt = _opt()
    sched = S.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = _opt()
    sched = S.StepLR(opt, step_size=1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
        sched.get_last_lr()


def test_get_lr_outside_step_warns():
    sched = S.StepLR(_opt(), step_size=1)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_step_with_epoch_uses_the_closed_form():
    opt = _opt()
    sched = S.StepLR(opt, step_size=3, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(7)
    assert sched.last_epoch == 7 and sched.get_last_lr() == pytest.approx([b * 0.25 for b in BASE])
    opt = _opt()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=4)
    sched.step(5.5)                     # fractional epochs (one step per batch) are allowed here
    assert sched.get_last_lr()[0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 1.5 / 4)) / 2)


def test_resuming_with_last_epoch_needs_initial_lr():
    opt = _opt()
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(opt, step_size=2, last_epoch=3)
    for g in opt.param_groups:
        g["initial_lr"] = g["lr"]
    sched = S.StepLR(opt, step_size=2, last_epoch=3)
    assert sched.last_epoch == 4


def test_scheduler_needs_an_optimizer():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=2)
    with pytest.raises(ValueError, match="lr_lambdas"):
        S.LambdaLR(_opt(), [lambda e: 1.0])


def test_scheduled_lr_drives_the_optimizer():
    """The lr a scheduler sets is the one the next optimizer step uses."""
    p = torch.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = S.StepLR(opt, step_size=1, gamma=0.5)
    total = 0.0
    for e in range(4):
        p.grad = torch.ones(1)
        opt.step()
        total += 0.5 ** e
        assert p.item() == pytest.approx(-total)
        sched.step()
