#!/usr/bin/env bash
# The GPU verification of the cuda backend, in one run: bench/gpu_check.sh OUTPUT_DIR
#
# On a machine with an NVIDIA GPU and no network (it may have CuPy, pluggy, typer and numpy and
# nothing else):
#   1. installs this checkout without network access (pip install --no-deps --no-build-isolation -e .);
#      where that is impossible (no pip / setuptools), it runs the source tree through a
#      symlinked package folder on PYTHONPATH instead;
#   2. runs `tensorplug backends check cuda` (the whole conformance suite; TF32 off);
#   3. runs bench/gpu.py (matmul, elementwise, MLP and ResNet-18 steps with the device's ceilings);
#   4. runs tests/cuda/test_cuda_gpu.py (without its conformance part) and the GPU comparisons of
#      tests/cuda/test_cuda_vision.py (RawKernels against their lowerings), where pytest is installed.
# Everything goes to OUTPUT_DIR, in 8 files (the most a lent device machine sends back): environment.txt,
# install.txt, check.txt (backends list, then the check) + check.json, bench.txt + bench.json,
# pytest_gpu.txt, and summary.txt (one line per step with its exit code).
# Time limits (seconds) per step: CHECK_TIMEOUT (default 420), BENCH_TIMEOUT (240), PYTEST_TIMEOUT (150).
# GPU_CHECK_SKIP_INSTALL=1 skips step 1 (an environment where tensorplug is installed already).
set -u
OUT=${1:?usage: bench/gpu_check.sh OUTPUT_DIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${PYTHON:-$(command -v python3 || command -v python)}
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
step() {  # step NAME EXIT_CODE
  echo "$1: exit $2" | tee -a "$SUMMARY"
}
run_limited() {  # run_limited SECONDS CMD...: `timeout` when the machine has it
  local t=$1; shift
  if command -v timeout >/dev/null 2>&1; then timeout -k 10 "$t" "$@"; else "$@"; fi
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo '?') $(git -C "$ROOT" status --short 2>/dev/null | wc -l) changed files"
  echo "python: $PY $("$PY" --version 2>&1)"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi
  "$PY" - <<'PYEOF'
import importlib
for name in ("numpy", "pluggy", "typer", "cupy", "pytest", "setuptools", "mpi4py"):
    try:
        m = importlib.import_module(name)
        print(f"{name} {getattr(m, '__version__', '?')}")
    except Exception as e:
        print(f"{name}: not importable ({type(e).__name__}: {e})")
try:
    import cupy
    print("cuda devices:", cupy.cuda.runtime.getDeviceCount(), "runtime", cupy.cuda.runtime.runtimeGetVersion(),
          "driver", cupy.cuda.runtime.driverGetVersion())
except Exception as e:
    print("cupy runtime:", type(e).__name__, e)
PYEOF
} > "$OUT/environment.txt" 2>&1

# 1. install without network
unset CUPY_TF32 TENSORPLUG_CUDA_TF32 TENSORPLUG_BACKEND_CUDA
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
if [ -n "${GPU_CHECK_SKIP_INSTALL:-}" ]; then
  echo "GPU_CHECK_SKIP_INSTALL set: not installing" > "$OUT/install.txt"
else
  "$PY" -m pip install --no-deps --no-build-isolation -e . > "$OUT/install.txt" 2>&1
  step install $?
fi
if ! (cd / && "$PY" -c "import tensorplug.backends.cuda_backend, tensorplug.cli") >> "$OUT/install.txt" 2>&1; then
  SRC=$(mktemp -d)/src
  mkdir -p "$SRC/tensorplug"
  for f in "$ROOT"/core/*; do ln -s "$f" "$SRC/tensorplug/$(basename "$f")"; done
  ln -s "$ROOT/backends" "$SRC/tensorplug/backends"
  ln -s "$ROOT/cli" "$SRC/tensorplug/cli"
  export PYTHONPATH="$SRC${PYTHONPATH:+:$PYTHONPATH}"
  echo "running the source tree through $SRC (PYTHONPATH)" | tee -a "$OUT/install.txt" "$SUMMARY"
fi

# 2. the conformance suite on the real backend
"$PY" -m tensorplug backends list > "$OUT/check.txt" 2>&1
run_limited "${CHECK_TIMEOUT:-420}" "$PY" -m tensorplug backends check cuda --json "$OUT/check.json" \
  >> "$OUT/check.txt" 2>&1
step "tensorplug backends check cuda" $?
tail -n 25 "$OUT/check.txt" >> "$SUMMARY"

# 3. the benchmarks
run_limited "${BENCH_TIMEOUT:-240}" "$PY" bench/gpu.py --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
step "bench/gpu.py" $?
cat "$OUT/bench.txt" >> "$SUMMARY"

# 4. the GPU tests (fused kernels against their reference lowering, RNG streams, TF32, devices, NCCL)
if "$PY" -c "import pytest" 2>/dev/null; then
  run_limited "${PYTEST_TIMEOUT:-150}" "$PY" -m pytest -q -p no:cacheprovider -rs tests/cuda/test_cuda_gpu.py \
    tests/cuda/test_cuda_vision.py -k "not conformance" > "$OUT/pytest_gpu.txt" 2>&1
  step "pytest tests/cuda/test_cuda_gpu.py tests/cuda/test_cuda_vision.py" $?
  tail -n 5 "$OUT/pytest_gpu.txt" >> "$SUMMARY"
else
  echo "pytest is not installed: tests/cuda/test_cuda_gpu.py not run" | tee -a "$SUMMARY"
fi
echo "outputs in $OUT"
