"""A model of what CuPy does when a `cupy.ElementwiseKernel` or `cupy.ReductionKernel` is called, for
checking the CUDA side of `fused.py` without a GPU.

CuPy decides the kernel's types from the call's arguments, refuses some calls with a TypeError or
ValueError, and generates CUDA C from the kernel's parameters and body, which NVRTC compiles on first
use. This module reproduces those three steps over `fake_cupy` arrays (rules and code layout as
documented in CuPy's `_kernel.pyx` and `_reduction.pyx`):

- typing: output arrays bind type placeholders first, then input arrays; a fixed-type parameter
  (`int32 j`) must get exactly that dtype; one placeholder must get one dtype everywhere ("Type is
  mismatched"); scalars take the parameter's type, and a Python int that does not fit raises;
- shapes: non-raw arrays broadcast together; given outputs must have the broadcast shape exactly;
- code: typedefs of the placeholders, the preamble, and a kernel whose array parameters are bound to
  per-element references before the body, as CuPy lays it out.

Calls return outputs of the right shape and dtype, filled with zeros: the model checks that calls are
well-typed and that the generated code compiles (`compile_sources`, which needs real CuPy and NVRTC),
never the numbers. `GENERATED` collects (kernel name, source) of every call.
"""
from __future__ import annotations

import types

import numpy as np

import fake_cupy

# numpy dtype -> the C type CuPy names it in generated code (CuPy's _scalar.pyx table)
C_TYPES = {
    "float64": "double", "float32": "float", "float16": "float16",
    "int64": "long long", "int32": "int", "int16": "short", "int8": "signed char",
    "uint64": "unsigned long long", "uint32": "unsigned int", "uint16": "unsigned short",
    "uint8": "unsigned char", "bool": "bool",
}
FLOAT16_HEADER = '#include "cupy/float16.cuh"'

GENERATED: list[tuple[str, str]] = []


class Param:
    def __init__(self, text, is_const):
        words = text.split()
        if len(words) < 2:
            raise ValueError(f"Syntax error: {text!r}")
        t, self.name = words[-2:]
        self.raw = "raw" in words[:-2]
        self.is_const = is_const
        if len(t) == 1:                       # a type placeholder (T, S, C, ...)
            self.dtype, self.ctype = None, t
        else:
            dt = np.dtype(t)
            if dt.name != t:
                raise ValueError(f"Wrong type {t}")
            self.dtype, self.ctype = dt, C_TYPES[dt.name]


def parse(params, is_const):
    return [Param(p, is_const) for p in params.split(",")] if params.strip() else []


def decide_types(in_params, out_params, in_dtypes, out_dtypes):
    """CuPy's _decide_params_type: (input dtypes, output dtypes, {placeholder: dtype})."""
    bound = {}

    def bind(p, dt, what):
        if dt is None:
            if what == "output":
                raise TypeError("Output arguments must be cupy.ndarray")
            return
        dt = np.dtype(dt)
        if p.dtype is not None:
            if dt != p.dtype:
                raise TypeError(f"Type is mismatched. {p.name} {dt} {p.dtype}")
        elif p.ctype in bound:
            if bound[p.ctype] != dt:
                raise TypeError(f"Type is mismatched. {p.name} {dt} {bound[p.ctype]} {p.ctype}")
        else:
            bound[p.ctype] = dt

    for p, dt in zip(out_params, out_dtypes):
        bind(p, dt, "output")
    for p, dt in zip(in_params, in_dtypes):
        bind(p, dt, "input")

    def resolve(p):
        if p.dtype is not None:
            return p.dtype
        if p.ctype not in bound:
            raise TypeError(f"Cannot determine the type of {p.name} ({p.ctype}): no array argument binds it")
        return bound[p.ctype]
    return [resolve(p) for p in in_params], [resolve(p) for p in out_params], bound


def _check_scalar(value, dtype, name):
    """A scalar argument stored as `dtype` (CuPy packs it with NumPy's assignment rules)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise OverflowError(f"Python integer {int(value)} out of bounds for {dtype} (argument {name})")


def _is_array(a):
    return isinstance(a, fake_cupy.ndarray)


def _typedefs(bound, all_dtypes):
    decls = FLOAT16_HEADER + "\n" if any(np.dtype(d) == np.float16 for d in all_dtypes) else ""
    return decls + "".join(f"typedef {C_TYPES[dt.name]} {ph};\n" for ph, dt in sorted(bound.items()))


def _arg_decl(p, arg, ndim):
    """A kernel parameter as CuPy declares it: CArray for arrays, the C type for scalars."""
    const = "const " if p.is_const else ""
    if _is_array(arg):
        name = p.name if p.raw else "_raw_" + p.name
        contiguous = int(arg.flags.c_contiguous)
        return f"{const}CArray<{C_TYPES[arg.dtype.name]}, {ndim if not p.raw else arg.ndim}, {contiguous}, 1> {name}"
    return f"{const}{p.ctype if p.dtype is None else C_TYPES[p.dtype.name]} {p.name}"


class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, **kwargs):
        if not name.isidentifier():
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params, self.out_params = parse(in_params, True), parse(out_params, False)
        if "i" in [p.name for p in self.in_params + self.out_params]:
            raise ValueError("Can not use 'i' as a parameter name")
        self.operation, self.name, self.preamble = operation, name, preamble

    def __call__(self, *args, size=-1, stream=None, block_size=128):
        nin, nall = len(self.in_params), len(self.in_params) + len(self.out_params)
        if len(args) not in (nin, nall):
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {nin} or {nall} "
                            f"(with outputs), but given {len(args)}.")
        ins, outs = list(args[:nin]), list(args[nin:])
        params = self.in_params + self.out_params[:len(outs)]
        arrays = [a.shape for p, a in zip(params, ins + outs) if _is_array(a) and not p.raw]
        if not arrays and size == -1:
            raise ValueError("Loop size is undecided.")
        shape = np.broadcast_shapes(*arrays) if arrays else (size,)
        for o in outs:
            if not _is_array(o):
                raise TypeError("Output arguments type must be cupy.ndarray")
            if o.shape != shape:
                raise ValueError("Out shape is mismatched")
        in_types, out_types, bound = decide_types(
            self.in_params, self.out_params, [a.dtype if _is_array(a) else None for a in ins],
            [o.dtype for o in outs])
        for p, a, t in zip(self.in_params, ins, in_types):
            if not _is_array(a):
                _check_scalar(a, t, p.name)
        if not outs:
            outs = [fake_cupy.zeros(shape, dtype=t) for t in out_types]
        ndim = len(shape)
        decls = [_arg_decl(p, a, ndim) for p, a in zip(self.in_params + self.out_params, ins + outs)]
        decls.append(f"CIndexer<{ndim}> _ind")
        binds = [f"{'const ' if p.is_const else ''}{p.ctype} &{p.name} = _raw_{p.name}[_ind.get()];"
                 for p, a in zip(self.in_params + self.out_params, ins + outs) if _is_array(a) and not p.raw]
        body = "\n".join(binds + [self.operation])
        source = (f"{_typedefs(bound, in_types + out_types)}{self.preamble}\n"
                  f'extern "C" __global__ void {self.name}({", ".join(decls)}) {{\n'
                  f"  CUPY_FOR(i, _ind.size()) {{\n    _ind.set(i);\n{body};\n  }}\n}}\n")
        GENERATED.append((self.name, source))
        return outs[0] if len(outs) == 1 else tuple(outs)


class ReductionKernel:
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="", options=()):
        if not name.isidentifier():
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params, self.out_params = parse(in_params, True), parse(out_params, False)
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity = "" if identity is None else str(identity)
        self.name, self.preamble = name, preamble
        self.reduce_type = reduce_type or self.out_params[0].ctype

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        nin = len(self.in_params)
        if len(args) not in (nin, nin + len(self.out_params)):
            raise TypeError(f"Wrong number of arguments for {self.name}")
        ins, outs = list(args[:nin]), list(args[nin:])
        if out is not None:
            outs = [out]
        arrays = [a.shape for p, a in zip(self.in_params, ins) if _is_array(a) and not p.raw]
        if not arrays:
            raise ValueError("Loop size is undecided.")
        shape = np.broadcast_shapes(*arrays)
        axes = tuple(range(len(shape))) if axis is None else tuple(
            a % len(shape) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        out_shape = tuple(1 if i in axes else n for i, n in enumerate(shape)) if keepdims else tuple(
            n for i, n in enumerate(shape) if i not in axes)
        in_types, out_types, bound = decide_types(
            self.in_params, self.out_params, [a.dtype if _is_array(a) else None for a in ins],
            [o.dtype for o in outs] if outs else [None] * 0)
        for p, a, t in zip(self.in_params, ins, in_types):
            if not _is_array(a):
                _check_scalar(a, t, p.name)
        if outs:
            if outs[0].shape != out_shape:
                raise ValueError("Out shape is mismatched")
        else:
            outs = [fake_cupy.zeros(out_shape, dtype=t) for t in out_types]
        decls = ([_arg_decl(p, a, len(shape)) for p, a in zip(self.in_params, ins)]
                 + [_arg_decl(p, o, len(out_shape)) for p, o in zip(self.out_params, outs)]
                 + [f"CIndexer<{len(shape)}> _in_ind", f"CIndexer<{len(out_shape)}> _out_ind",
                    "const int _block_stride"])
        load = "\n".join(f"const {p.ctype} {p.name} = _raw_{p.name}[_in_ind.get()];"
                         for p, a in zip(self.in_params, ins) if _is_array(a) and not p.raw)
        store = "\n".join(f"{p.ctype} &{p.name} = _raw_{p.name}[_out_ind.get()];" for p in self.out_params)
        source = f"""{_typedefs(bound, in_types + out_types)}{self.preamble}
#define REDUCE(a, b) ({self.reduce_expr})
#define POST_MAP(a) ({self.post_map_expr})
typedef {self.reduce_type} _type_reduce;
extern "C" __global__ void {self.name}({", ".join(decls)}) {{
  __shared__ char _sdata_raw[512 * sizeof(_type_reduce)];
  _type_reduce *_sdata = reinterpret_cast<_type_reduce*>(_sdata_raw);
  unsigned int _tid = threadIdx.x;
  for (ptrdiff_t _i = (ptrdiff_t)blockIdx.x * _block_stride + _tid; _i < _out_ind.size(); _i += gridDim.x) {{
    _type_reduce _s = _type_reduce({self.identity});
    for (ptrdiff_t _j = _i; _j < _in_ind.size(); _j += _out_ind.size()) {{
      _in_ind.set(_j);
      {load}
      _type_reduce _a = static_cast<_type_reduce>({self.map_expr});
      _s = REDUCE(_s, _a);
    }}
    _sdata[_tid] = _s;
    __syncthreads();
    _s = _sdata[_tid];
    _out_ind.set(_i);
    {store}
    POST_MAP(_s);
  }}
}}
"""
        GENERATED.append((self.name, source))
        return outs[0] if len(outs) == 1 else tuple(outs)


def array_module():
    """fake_cupy with the two kernel classes above: `Fusion` over it takes its CUDA lowering."""
    xp = types.ModuleType(fake_cupy.__name__)
    xp.__dict__.update({k: v for k, v in vars(fake_cupy).items() if not k.startswith("__")})
    xp.__name__ = fake_cupy.__name__        # so fake_cupy._core._routines_linalg resolves
    xp.ElementwiseKernel, xp.ReductionKernel = ElementwiseKernel, ReductionKernel
    return xp


def compile_sources(sources):
    """Compile each generated source with NVRTC as CuPy does (its headers and options, for sm_90), no
    GPU needed. Returns {kernel name: error text} for the sources that fail. Needs real CuPy and the
    NVRTC library; raises ImportError / RuntimeError otherwise."""
    import cupy
    from cupy._core import core
    from cupy.cuda import compiler

    if not hasattr(cupy, "ElementwiseKernel") or "standin" in getattr(cupy, "__version__", ""):
        raise ImportError("cupy here is not CuPy")
    # CuPy asks the current device for its architecture; there is none, so name one (Hopper)
    compiler._get_arch_for_options_for_nvrtc = lambda arch=None: ("-arch=compute_90", "ptx")
    options = core.assemble_cupy_compiler_options(())
    header = "".join(f"#include <{h}>\n" for h in core._cupy_header_list)
    failures = {}
    for name, source in sources:
        try:
            compiler.compile_using_nvrtc(header + source, options=options, arch="90")
        except compiler.CompileException as e:
            failures[name] = str(e)
    return failures
