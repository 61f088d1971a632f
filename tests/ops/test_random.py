"""Random numbers: manual_seed reproducibility, Generator objects, sampling distributions (checked
statistically with bounds far outside sampling noise), and in-place samplers."""
import math

import numpy as np
import pytest

import tensorplug as torch

N = 20000


def _np(t):
    return np.asarray(t.tolist(), dtype=np.float64)


def test_manual_seed_reproduces_every_sampler():
    """The same seed gives the same numbers from every sampler."""
    def draw():
        return [torch.rand(5).tolist(), torch.randn(3).tolist(), torch.randint(0, 100, (4,)).tolist(),
                torch.randperm(6).tolist(), torch.normal(0.0, 1.0, (2,)).tolist(),
                torch.bernoulli(torch.full((5,), 0.5)).tolist(),
                torch.multinomial(torch.tensor([0.2, 0.3, 0.5]), 2).tolist()]
    torch.manual_seed(1234)
    first = draw()
    torch.manual_seed(1234)
    assert draw() == first
    torch.manual_seed(4321)
    assert draw() != first


def test_manual_seed_returns_a_generator_and_sets_initial_seed():
    """manual_seed returns the default generator; initial_seed reports the seed."""
    g = torch.manual_seed(7)
    assert isinstance(g, torch.Generator) and g.initial_seed() == 7
    assert torch.initial_seed() == 7
    assert torch.manual_seed(-1).initial_seed() == 2**64 - 1     # negative seeds wrap like PyTorch's
    with pytest.raises(ValueError):
        torch.manual_seed(2**64)


def test_generator_is_independent_of_the_global_seed():
    """torch.rand(1000, generator=gen) depends only on gen's seed."""
    gen = torch.Generator().manual_seed(42)
    a = torch.rand(1000, generator=gen)
    torch.manual_seed(0)
    torch.rand(10)
    gen.manual_seed(42)
    b = torch.rand(1000, generator=gen)
    assert a.tolist() == b.tolist()
    other = torch.Generator().manual_seed(43)
    assert torch.rand(1000, generator=other).tolist() != a.tolist()


def test_generator_does_not_advance_the_global_stream():
    """Drawing from a private generator leaves the default generator's sequence untouched."""
    torch.manual_seed(5)
    expected = torch.rand(4).tolist()
    torch.manual_seed(5)
    torch.randn(100, generator=torch.Generator().manual_seed(1))
    assert torch.rand(4).tolist() == expected


def test_generator_state_round_trip():
    """get_state/set_state and get_rng_state/set_rng_state restore a stream."""
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    a = torch.randn(5, generator=g).tolist()
    g.set_state(state)
    assert torch.randn(5, generator=g).tolist() == a
    s = torch.get_rng_state()
    x = torch.rand(3).tolist()
    torch.set_rng_state(s)
    assert torch.rand(3).tolist() == x


def test_rng_state_is_a_uint8_cpu_tensor():
    """Like PyTorch's ByteTensor: a 1-d uint8 tensor on cpu; reading it does not advance the stream."""
    torch.manual_seed(11)
    s = torch.get_rng_state()
    assert isinstance(s, torch.Tensor) and s.dtype == torch.uint8 and s.dim() == 1 and s.device.type == "cpu"
    assert torch.get_rng_state().tolist() == s.tolist()
    torch.rand(2)
    assert torch.get_rng_state().tolist() != s.tolist()


def test_rng_state_round_trip_after_draws():
    """get -> draw -> set -> draw again gives the same numbers, for every sampler."""
    torch.manual_seed(5)
    torch.rand(7)

    def draw():
        return [torch.rand(5).tolist(), torch.randn(3).tolist(), torch.randint(0, 100, (4,)).tolist(),
                torch.randperm(6).tolist()]
    s = torch.get_rng_state()
    a = draw()
    torch.set_rng_state(s)
    assert draw() == a
    torch.set_rng_state(s)                     # the same state can be restored again
    assert draw() == a


def test_generator_state_carries_the_seed():
    g = torch.Generator().manual_seed(123)
    torch.rand(3, generator=g)
    s = g.get_state()
    a = torch.rand(4, generator=g).tolist()
    h = torch.Generator().manual_seed(9)
    h.set_state(s)
    assert h.initial_seed() == 123 and torch.rand(4, generator=h).tolist() == a
    assert h.set_state(s) is h


def test_rng_state_save_and_load(tmp_path):
    """torch.save(torch.get_rng_state(), p); torch.set_rng_state(torch.load(p)) restores the stream."""
    p = tmp_path / "rng.pt"
    torch.manual_seed(2)
    torch.save(torch.get_rng_state(), p)
    a = torch.rand(6).tolist()
    torch.set_rng_state(torch.load(p))
    assert torch.rand(6).tolist() == a
    g = torch.Generator().manual_seed(4)
    torch.save({"gen": g.get_state()}, tmp_path / "g.pt")
    b = torch.randn(3, generator=g).tolist()
    g.set_state(torch.load(tmp_path / "g.pt")["gen"])
    assert torch.randn(3, generator=g).tolist() == b


def test_set_rng_state_rejects_bad_input():
    g = torch.Generator().manual_seed(1)
    with pytest.raises(TypeError, match="tuple form"):
        g.set_state((1, object()))
    with pytest.raises(TypeError, match="uint8 tensor"):
        torch.set_rng_state([1, 2, 3])
    with pytest.raises(RuntimeError, match="uint8"):
        torch.set_rng_state(torch.zeros(4))
    with pytest.raises(RuntimeError, match="1-d uint8"):
        torch.set_rng_state(torch.zeros(2, 3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="not a generator state"):
        torch.set_rng_state(torch.tensor(list(b"garbage"), dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="not a generator state"):
        torch.set_rng_state(torch.get_rng_state()[:-3])
    before = g.get_state().tolist()
    with pytest.raises(RuntimeError):
        g.set_state(torch.tensor(list(b"{}"), dtype=torch.uint8))
    assert g.get_state().tolist() == before        # a rejected state leaves the generator unchanged


def test_set_rng_state_rejects_a_corrupt_backend_state():
    import base64
    import json
    doc = json.loads(bytes(torch.get_rng_state().tolist()).decode())
    doc["state"] = base64.b64encode(b'{"format": "something else"}').decode()
    bad = torch.tensor(list(json.dumps(doc).encode()), dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="cannot be restored"):
        torch.set_rng_state(bad)


def test_fresh_generators_share_the_default_seed():
    """Two unseeded Generators produce the same stream (PyTorch's default seed 67280421310721)."""
    g1, g2 = torch.Generator(), torch.Generator()
    assert g1.initial_seed() == 67280421310721
    assert torch.rand(3, generator=g1).tolist() == torch.rand(3, generator=g2).tolist()


def test_generator_keyword_on_every_sampler():
    """generator= is accepted by rand, randn, randint, randperm, normal, bernoulli, multinomial."""
    def draw(g):
        return [torch.rand(2, generator=g).tolist(), torch.randn(2, generator=g).tolist(),
                torch.randint(0, 9, (2,), generator=g).tolist(), torch.randperm(4, generator=g).tolist(),
                torch.normal(0.0, 1.0, (2,), generator=g).tolist(),
                torch.bernoulli(torch.full((4,), 0.5), generator=g).tolist(),
                torch.multinomial(torch.tensor([0.5, 0.5]), 2, generator=g).tolist()]
    assert draw(torch.Generator().manual_seed(9)) == draw(torch.Generator().manual_seed(9))


def test_rand_distribution():
    """rand: [0, 1), mean 1/2, variance 1/12, float32 by default, shape from sizes."""
    torch.manual_seed(0)
    x = torch.rand(N)
    assert x.dtype is torch.float32 and x.shape == (N,)
    v = _np(x)
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.01
    assert abs(v.var() - 1 / 12) < 0.005
    assert torch.rand(2, 3).shape == (2, 3) and torch.rand((2, 3)).shape == (2, 3)
    assert torch.rand(3, dtype=torch.float64).dtype is torch.float64
    assert torch.rand(0).shape == (0,)


def test_randn_distribution():
    """randn: mean 0, variance 1, about 68% within one standard deviation."""
    torch.manual_seed(1)
    v = _np(torch.randn(N))
    assert abs(v.mean()) < 0.04
    assert abs(v.var() - 1.0) < 0.05
    assert abs(np.mean(np.abs(v) < 1) - 0.6827) < 0.02


def test_normal_forms():
    """normal(mean, std, size), with tensor mean and/or std broadcast."""
    torch.manual_seed(2)
    v = _np(torch.normal(3.0, 2.0, (N,)))
    assert abs(v.mean() - 3.0) < 0.08 and abs(v.std() - 2.0) < 0.08
    means = torch.arange(4.0) * 10
    s = torch.normal(means, 0.01)
    assert s.shape == (4,) and np.allclose(_np(s), [0, 10, 20, 30], atol=0.1)
    s = torch.normal(means, torch.full((4,), 0.01))
    assert np.allclose(_np(s), [0, 10, 20, 30], atol=0.1)
    s = torch.normal(5.0, torch.full((3,), 0.01))
    assert np.allclose(_np(s), 5.0, atol=0.1)
    with pytest.raises(RuntimeError, match="std"):
        torch.normal(0.0, -1.0, (2,))


def test_randint_distribution():
    """randint(low, high, size) and randint(high, size): integers in [low, high), int64, uniform."""
    torch.manual_seed(3)
    x = torch.randint(-2, 3, (N,))
    assert x.dtype is torch.int64
    v = _np(x)
    assert set(np.unique(v)) == {-2, -1, 0, 1, 2}
    counts = np.bincount((v + 2).astype(int))
    assert np.all(np.abs(counts / N - 0.2) < 0.02)
    y = torch.randint(10, (3, 4))
    assert y.shape == (3, 4) and 0 <= _np(y).min() and _np(y).max() < 10
    assert torch.randint(0, 5, (2,), dtype=torch.int32).dtype is torch.int32
    with pytest.raises(RuntimeError):
        torch.randint(5, 5, (2,))


def test_randperm():
    """randperm(n) is a permutation of range(n), int64; positions are uniform."""
    torch.manual_seed(4)
    p = torch.randperm(50)
    assert p.dtype is torch.int64 and sorted(p.tolist()) == list(range(50))
    assert torch.randperm(0).shape == (0,)
    firsts = [torch.randperm(4).tolist()[0] for _ in range(4000)]
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 4000 - 0.25) < 0.04)


def test_bernoulli():
    """bernoulli(p) draws 0/1 with probability p elementwise, in p's dtype."""
    torch.manual_seed(5)
    p = torch.tensor([0.0, 0.2, 0.8, 1.0]).reshape(4, 1) * torch.ones(1, N // 4)
    s = torch.bernoulli(p)
    assert s.dtype is torch.float32 and s.shape == p.shape
    rates = _np(s).mean(axis=1)
    assert rates[0] == 0.0 and rates[3] == 1.0
    assert abs(rates[1] - 0.2) < 0.03 and abs(rates[2] - 0.8) < 0.03
    assert set(np.unique(_np(s))) <= {0.0, 1.0}
    assert abs(_np(torch.bernoulli(torch.zeros(N), 0.3)).mean() - 0.3) < 0.03
    assert torch.bernoulli(torch.full((3,), 0.5, dtype=torch.float64)).dtype is torch.float64


def test_multinomial_with_replacement():
    """multinomial with replacement samples categories with the given (unnormalised) weights."""
    torch.manual_seed(6)
    s = torch.multinomial(torch.tensor([1.0, 3.0, 6.0]), N, replacement=True)
    assert s.dtype is torch.int64 and s.shape == (N,)
    freq = np.bincount(_np(s).astype(int), minlength=3) / N
    assert np.all(np.abs(freq - [0.1, 0.3, 0.6]) < 0.02)


def test_multinomial_without_replacement():
    """Without replacement: distinct indices per row, never a zero-weight category; 2-d input."""
    torch.manual_seed(7)
    w = torch.tensor([[0.0, 1.0, 1.0, 2.0], [5.0, 0.0, 1.0, 1.0]])
    for _ in range(50):
        s = torch.multinomial(w, 3)
        assert s.shape == (2, 3)
        rows = s.tolist()
        assert sorted(rows[0]) == [1, 2, 3] and sorted(rows[1]) == [0, 2, 3]
    firsts = [torch.multinomial(torch.tensor([1.0, 3.0]), 1).item() for _ in range(2000)]
    assert abs(np.mean(firsts) - 0.75) < 0.05
    with pytest.raises(RuntimeError, match="n_sample"):
        torch.multinomial(torch.tensor([1.0, 1.0]), 3)
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor([1.0, -1.0]), 1)


def test_uniform_and_normal_in_place():
    """uniform_(a, b) and normal_(mean, std) fill in place, keep dtype and shape, bump the version."""
    torch.manual_seed(8)
    x = torch.zeros(N)
    v0 = x._version
    assert x.uniform_(2.0, 5.0) is x
    v = _np(x)
    assert v.min() >= 2.0 and v.max() < 5.0 and abs(v.mean() - 3.5) < 0.05
    assert x._version > v0
    y = torch.empty(N, dtype=torch.float64)
    y.normal_(-1.0, 0.5)
    w = _np(y)
    assert y.dtype is torch.float64
    assert abs(w.mean() + 1.0) < 0.02 and abs(w.std() - 0.5) < 0.02
    g = torch.Generator().manual_seed(1)
    a = torch.empty(5).uniform_(generator=g).tolist()
    g.manual_seed(1)
    assert torch.empty(5).uniform_(generator=g).tolist() == a


def test_in_place_sampling_refused_on_leaf_requiring_grad():
    """Filling a leaf that requires grad in place is refused, as PyTorch does outside no_grad."""
    x = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.uniform_()
    with torch.no_grad():
        x.normal_()
    assert x.requires_grad


def test_like_samplers():
    """rand_like, randn_like, randint_like keep shape and dtype."""
    base = torch.zeros(2, 3, dtype=torch.float64)
    assert torch.rand_like(base).shape == (2, 3) and torch.rand_like(base).dtype is torch.float64
    assert torch.randn_like(base).dtype is torch.float64
    r = torch.randint_like(torch.zeros(4, dtype=torch.int32), 0, 3)
    assert r.dtype is torch.int32 and set(r.tolist()) <= {0, 1, 2}


def test_samplers_validate_dtypes():
    """rand/randn need a floating dtype."""
    with pytest.raises(RuntimeError, match="floating"):
        torch.rand(2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="floating"):
        torch.bernoulli(torch.tensor([1, 0]))


def test_requires_grad_on_samples():
    """requires_grad=True gives a leaf that requires grad."""
    x = torch.randn(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert math.isfinite(x.sum().item())
