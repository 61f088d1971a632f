"""Random numbers: Generator objects, manual_seed (every device), and the sampling functions.

A Generator wraps a backend's opaque generator state (`rng_new(seed)`), so it belongs to the
backend that served its device when it first drew numbers. get_state() serialises it to a uint8
CPU tensor through the backend's optional rng_get_state / rng_set_state kernels. The default generator of each
device type is created on first use from the global seed (and again, with that seed, if the
device type is switched to another backend).
"""
from __future__ import annotations

import base64
import json
import math
import time

from .. import dtypes as _dt
from ..device import as_device
from ._core import Tensor, _make, check_inplace, commit_inplace
from ._limits import check_shape, out_of_memory
from .creation import NO_SIZE, _into_out, _size, check_dtype, resolve_device, size_arg

_DEFAULT_SEED = 67280421310721
_seed = [_DEFAULT_SEED]
_defaults: dict = {}


class Generator:
    """A random number generator for one device: `Generator(device="cpu").manual_seed(0)`."""

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._k = None
        self._state = None
        self._seed = _DEFAULT_SEED

    def _kernels(self):
        if self._k is None:
            self._k, dev = resolve_device(self.device)
            self.device = dev
        return self._k

    def _get(self):
        if self._state is None:
            self._state = self._kernels()["rng_new"](self._seed)
        return self._state

    def manual_seed(self, seed):
        self._seed = _check_seed(seed)
        self._state = None
        return self

    def seed(self) -> int:
        s = int(time.time_ns()) % (2**63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 CPU tensor (like PyTorch's ByteTensor): UTF-8 JSON holding
        the seed, the device, the backend and the backend's own serialisation of its generator state
        (kernel rng_get_state). It can be saved with tensorplug.save and given back to set_state."""
        k = self._kernels()
        data = k["rng_get_state"](self._get())
        if not isinstance(data, (bytes, bytearray)):
            raise RuntimeError(f"backend {k['__backend__'].name!r}: rng_get_state returned "
                               f"{type(data).__name__}, not bytes")
        doc = {"format": _STATE_FORMAT, "seed": self._seed, "device": str(self.device),
               "backend": k["__backend__"].name, "state": base64.b64encode(bytes(data)).decode("ascii")}
        import numpy as np
        from .creation import tensor
        raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")
        return tensor(np.frombuffer(raw, dtype=np.uint8).copy(), dtype=_dt.uint8, device="cpu")

    def set_state(self, new_state):
        """Restore a state returned by get_state (a uint8 tensor, e.g. after tensorplug.save/load)."""
        seed, data, origin = _parse_state(new_state)
        k = self._kernels()
        try:
            st = k["rng_set_state"](data)
        except ValueError as e:
            raise RuntimeError(f"set_state: the state (saved from backend {origin!r}) cannot be restored on "
                               f"backend {k['__backend__'].name!r} for device {self.device}: {e}") from None
        self._seed, self._state = seed, st
        return self


_STATE_FORMAT = "tensorplug.rng_state/1"


def _parse_state(new_state):
    """(seed, backend bytes, backend name) from a get_state tensor; clear errors for anything else."""
    if isinstance(new_state, tuple):
        raise TypeError("set_state expects the uint8 tensor returned by get_state(); the old "
                        "(seed, generator) tuple form of the state is no longer accepted")
    if not isinstance(new_state, Tensor):
        raise TypeError(f"set_state expects a uint8 tensor (from get_state()), got {type(new_state).__name__}")
    if new_state.dtype is not _dt.uint8 or new_state.dim() != 1:
        raise RuntimeError(f"set_state expects a 1-d uint8 tensor (from get_state()), got a "
                           f"{new_state.dim()}-d tensor of dtype {new_state.dtype}")
    import numpy as np
    raw = np.ascontiguousarray(np.asarray(new_state.detach()._host(), dtype=np.uint8)).tobytes()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != _STATE_FORMAT:
        raise RuntimeError("set_state: the tensor is not a generator state from get_state() "
                           f"(expected {_STATE_FORMAT!r} data)")
    seed, data = doc.get("seed"), doc.get("state")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64 or not isinstance(data, str):
        raise RuntimeError("set_state: the generator state is malformed (bad seed or state field)")
    try:
        data = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise RuntimeError("set_state: the generator state is malformed (state is not base64)") from None
    return seed, data, doc.get("backend", "?")


def _check_seed(seed) -> int:
    seed = int(seed)
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"Overflow when unpacking long: a seed must be in [-2**63, 2**64), got {seed}")
    return seed % 2**64          # negative seeds wrap like PyTorch's


def default_generator(device, k=None) -> Generator:
    """The default generator of `device` (one per device, like PyTorch's), drawing with kernel
    table `k` (default: the table of the backend now serving the device)."""
    if k is None:
        k, device = resolve_device(device)
    key = (device.type, device.index)
    g = _defaults.get(key)
    if g is None or g._k["__backend__"] is not k["__backend__"]:
        g = _defaults[key] = Generator(device)
        g._seed = _seed[0]
        g._k = k
    return g


def manual_seed(seed):
    """Seed the default generator of every device type (present and future)."""
    seed = _check_seed(seed)
    _seed[0] = seed
    for g in _defaults.values():
        g.manual_seed(seed)
    return default_generator(as_device("cpu"))


def seed() -> int:
    s = int(time.time_ns()) % (2**63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    return _seed[0]


def get_rng_state():
    return default_generator(as_device("cpu")).get_state()


def set_rng_state(state):
    default_generator(as_device("cpu")).set_state(state)


def _gen(generator, dev, k):
    """The generator that samples for device `dev` served by kernel table `k`."""
    if generator is None:
        return default_generator(dev, k)
    if generator.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    if generator._kernels()["__backend__"] is not k["__backend__"]:
        raise RuntimeError(f"this generator draws with backend {generator._k['__backend__'].name!r}, but "
                           f"device {dev} is now served by backend {k['__backend__'].name!r}; "
                           "create a new Generator")
    return generator


def _sample(kname, size, generator, dtype, device, requires_grad):
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if not dt.is_floating_point:
        if dt.is_complex:
            return _complex_sample(kname, size, generator, dt, device, requires_grad)
        raise RuntimeError(f"{kname}: expected a floating point dtype, got {dt!r}")
    k, dev = resolve_device(device)
    check_dtype(k, dt)
    g = _gen(generator, dev, k)
    shape = _size(size)
    check_shape(shape, dt.itemsize)
    try:
        t = _make(k[kname](g._get(), shape, dt.name), dt, k, dev)
    except MemoryError:
        raise out_of_memory(shape, dt.itemsize, dev) from None
    if requires_grad:
        t.requires_grad = True
    return t


def _complex_sample(kname, size, generator, dt, device, requires_grad):
    """Complex samples: real and imaginary parts drawn independently, as PyTorch; normal ones scaled
    by sqrt(1/2) so that E|z|^2 = 1 (each part has variance 1/2)."""
    k, dev = resolve_device(device)
    check_dtype(k, dt)
    g = _gen(generator, dev, k)
    both = k[kname](g._get(), (2,) + _size(size), dt.to_real().name)
    if kname == "normal":
        both = k["mul"](both, math.sqrt(0.5))
    t = _make(k["complex"](k["slice"](both, (0,)), k["slice"](both, (1,))), dt, k, dev)
    if requires_grad:
        t.requires_grad = True
    return t


def _combination(name, args, kwargs, signatures):
    """PyTorch's TypeError for arguments that fit none of the function's signatures."""
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    opts = "\n".join(f" * ({s}, *, Generator generator, Tensor out = None, dtype dtype = None, device device = "
                     "None, bool requires_grad = False)" for s in signatures)
    return f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\n{opts}"


def _sized(name, args, size):
    """The shape given by `size=` (rand / randn report it given twice as an invalid combination)."""
    both = _combination(name, args, {"size": size}, ["tuple of ints size"]) if args else None
    return size_arg(args, size, name, both)


def rand(*args, size=NO_SIZE, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform samples in [0, 1): rand(2, 3), rand((2, 3)) or rand(size=(2, 3))."""
    if dtype is None and isinstance(out, Tensor):
        dtype = out.dtype
    r = _sample("uniform", args if size is NO_SIZE else _sized("rand", args, size), generator, dtype, device,
                requires_grad)
    return r if out is None else _into_out(r, out)


def randn(*args, size=NO_SIZE, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal samples: randn(2, 3), randn((2, 3)) or randn(size=(2, 3))."""
    if dtype is None and isinstance(out, Tensor):
        dtype = out.dtype
    r = _sample("normal", args if size is NO_SIZE else _sized("randn", args, size), generator, dtype, device,
                requires_grad)
    return r if out is None else _into_out(r, out)


_RANDINT = ["int high, tuple of ints size", "int low, int high, tuple of ints size"]


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers uniform in [low, high): randint(high, size), randint(low, high, size), each argument
    positional or by keyword (size=...)."""
    if size is None:
        if isinstance(high, (tuple, list)):             # randint(high, size)
            low, high, size = 0, low, high
        elif high is None:
            raise TypeError(_combination("randint", [low], {}, _RANDINT))
        else:
            raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                            f"{type(high).__name__}")
    elif high is None:                                  # randint(high, size=...)
        low, high = 0, low
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    k, dev = resolve_device(device)
    check_dtype(k, dt)
    g = _gen(generator, dev, k)
    shape = _size((size,))
    check_shape(shape, 8)
    try:
        return _make(k["randint"](g._get(), int(low), int(high), shape, dt.name), dt, k, dev)
    except MemoryError:
        raise out_of_memory(shape, 8, dev) from None


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got {n}")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    k, dev = resolve_device(device)
    check_dtype(k, dt)
    g = _gen(generator, dev, k)
    check_shape((n,), 8)
    try:
        return _make(k["randperm"](g._get(), int(n), dt.name), dt, k, dev)
    except MemoryError:
        raise out_of_memory((n,), 8, dev) from None


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples, 1 with probability `input` (or the scalar p), in input's dtype."""
    if p is not None:
        _check_p(p)
        probs = _make(input._k["full"](input._data.shape, float(p), input._dtype.name), input._dtype,
                      input._k, input._dev)
    else:
        probs = input
    if not probs._dtype.is_floating_point:
        raise RuntimeError(f"bernoulli expects a floating point probability tensor, got {probs._dtype!r}")
    if p is None and probs.numel() and not bool(((probs >= 0) & (probs <= 1)).all()):     # (NaN fails too)
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    g = _gen(generator, probs._dev, probs._k)
    return _make(probs._k["bernoulli"](g._get(), probs._data), probs._dtype, probs._k, probs._dev)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal samples; mean and std may be tensors (broadcast) or numbers (then give size)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        from ._core import broadcast_shapes
        shape = broadcast_shapes(tuple(mean.shape) if isinstance(mean, Tensor) else (),
                                 tuple(std.shape) if isinstance(std, Tensor) else ())
        z = randn(*shape, generator=generator, dtype=ref.dtype, device=ref.device)
        return z * std + mean
    if size is None:
        raise TypeError("normal() with scalar mean and std needs a size")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    z = randn(*_size(size if isinstance(size, (tuple, list)) else (size,)), generator=generator,
              dtype=dtype, device=device)
    r = z * std + mean
    if requires_grad:
        r.requires_grad = True
    return r


def rand_like(input, *, dtype=None, device=None, requires_grad=False):
    return rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):
    return randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Sample category indices with probabilities proportional to the rows of input."""
    import numpy as np
    probs = np.asarray(input.detach()._host(), dtype=np.float64)
    squeeze = probs.ndim == 1
    probs = np.atleast_2d(probs)
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not replacement and num_samples > probs.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    g = _gen(generator, input._dev, input._k)
    k = g._kernels()
    out = np.empty((probs.shape[0], num_samples), dtype=np.int64)
    for r, row in enumerate(probs):
        if row.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        w = row / row.sum()
        u = np.asarray(k["to_numpy"](k["uniform"](g._get(), (num_samples,), "float64")))
        if replacement:
            out[r] = np.minimum(np.searchsorted(np.cumsum(w), u, side="right"), len(w) - 1)
        else:
            # Gumbel-top-k: argsort of log(w) - log(-log(u)) samples without replacement
            u2 = np.asarray(k["to_numpy"](k["uniform"](g._get(), (len(w),), "float64")))
            with np.errstate(divide="ignore"):
                keys = np.log(w) - np.log(-np.log(np.clip(u2, 1e-300, 1.0)))
            out[r] = np.argsort(-keys, kind="stable")[:num_samples]
    from .creation import tensor
    res = tensor(out[0] if squeeze else out, device=input.device)
    return res


# -- in-place samplers -----------------------------------------------------------------------------------
def _fill_from(self, sample):
    check_inplace(self)
    if sample._dtype is not self._dtype:
        sample = _make(self._k["astype"](sample._data, self._dtype.name), self._dtype, self._k, self._dev)
    return commit_inplace(self, sample)


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{self._dtype._legacy[:-6]}'")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    u = _sample("uniform", tuple(self.shape), generator, self._dtype, self._dev, False)
    return _fill_from(self, u * (b - a) + a)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"normal_kernel_{self._dev.type}\" not implemented for "
                                  f"'{self._dtype._legacy[:-6]}'")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    z = _sample("normal", tuple(self.shape), generator, self._dtype, self._dev, False)
    return _fill_from(self, z * std + mean)


def _check_p(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")


def bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        s = bernoulli(p.expand(*self.shape).to(_dt.float64), generator=generator)
    else:
        _check_p(p)
        s = bernoulli(_make(self._k["full"](self._data.shape, float(p), "float64"), _dt.float64, self._k,
                            self._dev), generator=generator)
    return _fill_from(self, s)


def random_(self, from_=0, to=None, *, generator=None):
    if to is None:
        from_, to = 0, from_ if from_ else (2**24 if self._dtype.is_floating_point else 2**31)
    return _fill_from(self, randint(from_, to, tuple(self.shape), generator=generator, device=self._dev))


def exponential_(self, lambd=1.0, *, generator=None):
    if not self._dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self._dtype._legacy[:-6]}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    u = _sample("uniform", tuple(self.shape), generator, self._dtype, self._dev, False)
    return _fill_from(self, -(1 - u).log() / lambd)


def _attach():
    T = Tensor
    T.uniform_, T.normal_, T.bernoulli_, T.random_, T.exponential_ = (uniform_, normal_, bernoulli_,
                                                                      random_, exponential_)
    T.bernoulli = lambda self, p=None, generator=None: bernoulli(self, p, generator=generator)
    T.multinomial = multinomial


_attach()

PUBLIC = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "rand", "randn",
          "randint", "randperm", "bernoulli", "normal", "rand_like", "randn_like", "randint_like", "multinomial"]
