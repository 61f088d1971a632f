"""Rerun the unchanged-scripts acceptance: real PyTorch programs, unchanged, through `tensorplug exec`.

The programs are other people's public repositories; none of their code is in this project. Put their
snapshots in one folder (any of the spellings below per repository) and run:

    python examples/real_programs.py --programs DIR [--torch-python /path/to/torch-venv/bin/python]
                                     [--only nanogpt,makemore,regression] [--steps N] [--json FILE]

    DIR/nanoGPT   or DIR/karpathy+nanoGPT      (karpathy/nanoGPT)
    DIR/makemore  or DIR/karpathy+makemore     (karpathy/makemore; ships names.txt)
    DIR/examples  or DIR/pytorch+examples      (pytorch/examples; uses regression/, word_language_model/,
                                                time_sequence_prediction/)

Each program is copied to a scratch folder first, so the snapshots stay as they are. nanoGPT's
data/shakespeare_char/prepare.py downloads input.txt when it is missing; without a network a
character corpus is written in its place (Python's own documentation as plain text, ~1 MB), before
prepare.py runs. The programs' own command-line flags make them small: nanoGPT trains 2 layers x 64
for 100 iterations on the CPU and then samples from its checkpoint; makemore trains each --type for
--steps steps (default 500, where it evaluates) and then samples with --sample-only; regression
fits its polynomial. word_language_model trains LSTM, GRU and Transformer (emsize/nhid 32, 2 layers,
1 epoch, bptt 20; the Transformer at its README's --lr 5) on a small wikitext-2-style corpus written
from Python's documentation (its own data files are large and often missing from a snapshot), saves
each whole model with torch.save, exports the LSTM with --onnx-export when `onnx` is installed, and
runs generate.py on each checkpoint; time_sequence_prediction makes its sine waves and trains 2
LBFGS steps (PyTorch >= 2.6 refuses its torch.load of a NumPy array: its reference run flips
weights_only to False, the script unchanged).

With --torch-python (an interpreter where real PyTorch is installed) the same commands also run on
PyTorch, and the table shows both losses and the wall-time ratio tensorplug / PyTorch. Random
streams differ between the two frameworks, so losses agree closely, not bit for bit. It needs the
programs' own dependencies in both interpreters (nanoGPT: numpy, requests, tiktoken).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPOS = {"nanogpt": ("nanoGPT", "karpathy+nanoGPT"), "makemore": ("makemore", "karpathy+makemore"),
         "examples": ("examples", "pytorch+examples")}
MAKEMORE_TYPES = ("bigram", "mlp", "rnn", "gru", "bow", "transformer")
NANOGPT_FLAGS = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
                 "--log_interval=10", "--block_size=64", "--batch_size=12", "--n_layer=2", "--n_head=4",
                 "--n_embd=64", "--max_iters=100", "--lr_decay_iters=100", "--warmup_iters=10", "--dropout=0.0",
                 "--eval_interval=50"]


def find_repo(root: pathlib.Path, key: str) -> pathlib.Path | None:
    for name in REPOS[key]:
        if (root / name).is_dir():
            return root / name
    return None


def write_corpus(path: pathlib.Path) -> None:
    """A ~1 MB character corpus for nanoGPT's prepare.py when it cannot download its own."""
    import importlib
    import io
    import pydoc
    out = io.StringIO()
    for name in ("collections", "itertools", "functools", "os", "re", "json", "random", "string", "textwrap",
                 "typing", "dataclasses", "argparse", "pathlib", "subprocess", "threading", "unittest", "logging",
                 "email", "http.client", "urllib.request", "decimal", "fractions", "statistics", "heapq", "bisect"):
        out.write(pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext))
    text = "".join(c for c in out.getvalue() if c.isascii() and (c.isprintable() or c == "\n"))
    path.write_text(text[:1_000_000])


def write_wikitext(folder: pathlib.Path, max_tokens: int = 45_000) -> None:
    """A small word-level corpus in wikitext-2's layout (train.txt / valid.txt / test.txt: ` = Heading = `
    lines, paragraphs of space-separated tokens, rare words as <unk>) for word_language_model, whose
    data files a snapshot may lack. Made from Python's own documentation (pydoc), deterministic."""
    import collections
    import importlib
    import pydoc
    paragraphs = []
    for name in ("collections", "itertools", "functools", "os", "re", "json", "random", "string", "textwrap",
                 "typing", "argparse", "pathlib", "subprocess", "threading", "logging", "decimal", "heapq"):
        text = pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext)
        text = re.sub(r"0x[0-9a-fA-F]+", "", text)         # object addresses differ between runs
        paragraphs.append(f"= {name} =")
        for para in re.split(r"\n\s*\n", text):
            words = re.findall(r"[A-Za-z]+|[0-9]+|[.,;:()=]", para)
            if len(words) >= 4:
                paragraphs.append(" ".join(w.lower() for w in words))
        if sum(len(p.split()) for p in paragraphs) > max_tokens:
            break
    counts = collections.Counter(w for p in paragraphs for w in p.split())
    keep = {w for w, n in counts.items() if n >= 3}
    lines = []
    for p in paragraphs:
        toks = [w if w in keep else "<unk>" for w in p.split()]
        if p.startswith("= "):
            lines += ["", " " + " ".join(toks) + " ", ""]
        else:
            lines += [" " + " ".join(toks[i:i + 60]) + " " for i in range(0, len(toks), 60)]
    n = len(lines)
    folder.mkdir(parents=True, exist_ok=True)
    cut_train, cut_valid = int(n * 0.8), int(n * 0.9)
    for name, part in (("train", lines[:cut_train]), ("valid", lines[cut_train:cut_valid]),
                       ("test", lines[cut_valid:])):
        (folder / f"{name}.txt").write_text("\n".join(part) + "\n")


class Runner:
    def __init__(self, torch_python: str | None, timeout: float):
        self.torch_python, self.timeout = torch_python, timeout

    def run(self, side: str, cwd: pathlib.Path, script: str, args: list[str]) -> dict:
        """Run `script args` in cwd on one side ("tensorplug" or "torch"): output, exit code, seconds."""
        if side == "tensorplug":
            cmd = [sys.executable, "-m", "tensorplug", "exec", script, *args]
        else:
            cmd = [self.torch_python, script, *args]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=self.timeout)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = f"{e.stdout or ''}{e.stderr or ''}\n(timed out after {self.timeout:.0f} s)", -1
        return {"cmd": " ".join(cmd[-len(args) - 1:]), "rc": rc, "seconds": time.perf_counter() - t0, "out": out}

    def sides(self):
        return ("tensorplug", "torch") if self.torch_python else ("tensorplug",)


def last_float(pattern: str, text: str) -> float | None:
    found = re.findall(pattern, text)
    return float(found[-1]) if found else None


def nanogpt(repo: pathlib.Path, runner: Runner, work: pathlib.Path, steps: int) -> list[dict]:
    rows = []
    for side in runner.sides():
        d = work / f"nanoGPT-{side}"
        shutil.copytree(repo, d, ignore=shutil.ignore_patterns(".git", "out*"))
        data = d / "data" / "shakespeare_char"
        if not (data / "input.txt").exists():
            write_corpus(data / "input.txt")
        prep = runner.run(side, d, "data/shakespeare_char/prepare.py", [])
        train = runner.run(side, d, "train.py", NANOGPT_FLAGS)
        sample = runner.run(side, d, "sample.py", ["--out_dir=out-shakespeare-char", "--device=cpu",
                                                   "--num_samples=2", "--max_new_tokens=100"])
        rows.append({"program": "nanoGPT shakespeare_char prepare.py", "side": side, **_brief(prep),
                     "loss": None})
        rows.append({"program": "nanoGPT train.py (val loss, iter 100)", "side": side, **_brief(train),
                     "loss": last_float(r"val loss (\d+\.\d+)", train["out"]),
                     "per_iter_ms": _median(re.findall(r"iter \d+: loss [\d.]+, time ([\d.]+)ms", train["out"])[1:])})
        rows.append({"program": "nanoGPT sample.py", "side": side, **_brief(sample),
                     "loss": None, "ok": sample["rc"] == 0 and sample["out"].count("---------------") >= 2})
    return rows


def makemore(repo: pathlib.Path, runner: Runner, work: pathlib.Path, steps: int) -> list[dict]:
    rows = []
    for side in runner.sides():
        d = work / f"makemore-{side}"
        shutil.copytree(repo, d, ignore=shutil.ignore_patterns(".git"))
        for kind in MAKEMORE_TYPES:
            common = ["-i", "names.txt", "-o", f"out-{kind}", "--type", kind, "--device", "cpu"]
            train = runner.run(side, d, "makemore.py", [*common, "--max-steps", str(steps)])
            sample = runner.run(side, d, "makemore.py", [*common, "--sample-only"])
            rows.append({"program": f"makemore --type {kind} (test loss, step {steps})", "side": side,
                         **_brief(train),
                         "loss": last_float(r"test loss: (\d+\.\d+)", train["out"]),
                         "per_iter_ms": _median(re.findall(r"step time ([\d.]+)ms", train["out"])[1:])})
            rows.append({"program": f"makemore --type {kind} --sample-only", "side": side, **_brief(sample),
                         "loss": None, "ok": sample["rc"] == 0 and "samples that are" in sample["out"]})
    return rows


def regression(repo: pathlib.Path, runner: Runner, work: pathlib.Path, steps: int) -> list[dict]:
    rows = []
    for side in runner.sides():
        d = work / f"regression-{side}"
        shutil.copytree(repo / "regression", d)
        r = runner.run(side, d, "main.py", [])
        rows.append({"program": "pytorch/examples regression (final loss)", "side": side, **_brief(r),
                     "loss": last_float(r"Loss: (\d+\.\d+)", r["out"]),
                     "batches": last_float(r"after (\d+) batches", r["out"])})
    return rows


WLM_FLAGS = ["--emsize", "32", "--nhid", "32", "--nlayers", "2", "--epochs", "1", "--bptt", "20", "--batch_size", "10",
             "--log-interval", "100", "--data", "./data/small"]


def _has_onnx(python: str) -> bool:
    return subprocess.run([python, "-c", "import onnx"], capture_output=True).returncode == 0


def word_language_model(repo: pathlib.Path, runner: Runner, work: pathlib.Path, steps: int) -> list[dict]:
    """main.py for LSTM, GRU and Transformer (small sizes, --save; --onnx-export for LSTM when the onnx
    package is there), then generate.py on each saved model, on a small wikitext-2-style corpus."""
    rows = []
    corpus = work / "wikitext-small"
    write_wikitext(corpus)                                      # one corpus for both sides
    for side in runner.sides():
        d = work / f"word_language_model-{side}"
        shutil.copytree(repo / "word_language_model", d, ignore=shutil.ignore_patterns("data"))
        shutil.copytree(corpus, d / "data" / "small")
        python = sys.executable if side == "tensorplug" else runner.torch_python
        for kind in ("LSTM", "GRU", "Transformer"):
            args = [*WLM_FLAGS, "--model", kind, "--save", f"model-{kind}.pt"]
            if kind == "Transformer":       # its README's rate: the default 20 diverges on both frameworks
                args += ["--lr", "5"]
            if kind == "LSTM" and _has_onnx(python):
                args += ["--onnx-export", f"model-{kind}.onnx"]
            train = runner.run(side, d, "main.py", args)
            end = r"End of training \| test loss\s+([\d.]+) \| test ppl\s+([\d.]+)"
            found = re.findall(end, train["out"])
            exported = "--onnx-export" not in args or (d / f"model-{kind}.onnx").exists()
            rows.append({"program": f"word_language_model --model {kind} (test loss / ppl)", "side": side,
                         **_brief(train), "loss": float(found[-1][0]) if found else None,
                         "ppl": float(found[-1][1]) if found else None, "ok": train["rc"] == 0 and exported})
            gen = runner.run(side, d, "generate.py", ["--data", "./data/small", "--checkpoint", f"model-{kind}.pt",
                                                      "--words", "50", "--outf", f"generated-{kind}.txt"])
            out = d / f"generated-{kind}.txt"
            rows.append({"program": f"word_language_model generate.py ({kind} checkpoint)", "side": side,
                         **_brief(gen), "loss": None,
                         "ok": gen["rc"] == 0 and out.exists() and len(out.read_text().split()) == 50})
    return rows


# PyTorch >= 2.6 refuses train.py's torch.load of a NumPy array (weights_only=True by default; tensorplug
# admits numeric arrays): the PyTorch reference then runs the unchanged script with that default flipped
_WEIGHTS_ONLY_FALSE = """import functools, runpy, sys, torch
torch.load = functools.partial(torch.load, weights_only=False)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def time_sequence_prediction(repo: pathlib.Path, runner: Runner, work: pathlib.Path, steps: int) -> list[dict]:
    """generate_sine_wave.py (torch.save of a NumPy array), then train.py --steps 2 (LBFGS on two
    LSTMCells, float64; it torch.loads the array). Needs matplotlib on both sides."""
    rows = []
    for side in runner.sides():
        d = work / f"time_sequence_prediction-{side}"
        shutil.copytree(repo / "time_sequence_prediction", d)
        gen = runner.run(side, d, "generate_sine_wave.py", [])
        train = runner.run(side, d, "train.py", ["--steps", "2"])
        program = "time_sequence_prediction train.py --steps 2 (test loss)"
        if side == "torch" and train["rc"] != 0 and "Weights only load failed" in train["out"]:
            print("PyTorch refuses train.py's torch.load of a NumPy array (weights_only=True); its reference run "
                  "uses torch.load(..., weights_only=False)", flush=True)
            (d / "_weights_only_false.py").write_text(_WEIGHTS_ONLY_FALSE)
            train = runner.run(side, d, "_weights_only_false.py", ["train.py", "--steps", "2"])
        rows.append({"program": "time_sequence_prediction generate_sine_wave.py", "side": side, **_brief(gen),
                     "loss": None, "ok": gen["rc"] == 0 and (d / "traindata.pt").exists()})
        rows.append({"program": program, "side": side, **_brief(train),
                     "loss": last_float(r"test loss: ([\d.e+-]+)", train["out"])})
    return rows


def _brief(r: dict) -> dict:
    return {"rc": r["rc"], "seconds": round(r["seconds"], 2), "cmd": r["cmd"], "tail": r["out"][-1500:]}


def _median(values):
    v = sorted(float(x) for x in values)
    return v[len(v) // 2] if v else None


PROGRAMS = {"nanogpt": ("nanogpt", nanogpt), "makemore": ("makemore", makemore), "regression": ("examples", regression),
            "word_language_model": ("examples", word_language_model),
            "time_sequence_prediction": ("examples", time_sequence_prediction)}


def table(rows: list[dict]) -> str:
    by = {}
    for r in rows:
        by.setdefault(r["program"], {})[r["side"]] = r
    lines = ["| program | exit (tp / torch) | PyTorch loss | tensorplug loss | time ratio (wall) | per-step ratio |",
             "|---|---|---|---|---|---|"]
    for prog, s in by.items():
        tp, pt = s.get("tensorplug"), s.get("torch")

        def fmt(r, k):
            v = r.get(k) if r else None
            if isinstance(v, float):
                return f"{v:.4f}" if v == 0 or abs(v) >= 0.01 else f"{v:.3e}"
            return "—" if v is None else str(v)
        ratio = f"{tp['seconds'] / pt['seconds']:.2f}×" if tp and pt and pt["seconds"] else "—"
        step = (f"{tp['per_iter_ms'] / pt['per_iter_ms']:.2f}×"
                if tp and pt and tp.get("per_iter_ms") and pt.get("per_iter_ms") else "—")
        lines.append(f"| {prog} | {fmt(tp, 'rc')} / {fmt(pt, 'rc')} | {fmt(pt, 'loss')} | {fmt(tp, 'loss')} | "
                     f"{ratio} | {step} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", required=True, type=pathlib.Path, help="folder holding the repositories")
    ap.add_argument("--torch-python", help="an interpreter with real PyTorch, to compare against")
    ap.add_argument("--only", default=",".join(PROGRAMS), help="comma-separated: " + ",".join(PROGRAMS))
    ap.add_argument("--steps", type=int, default=501, help="makemore training steps (it evaluates and saves at step 500)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    ap.add_argument("--json", type=pathlib.Path, help="write every run (commands, exit codes, output tails) here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder and print its path")
    a = ap.parse_args(argv)
    runner = Runner(a.torch_python, a.timeout)
    work = pathlib.Path(tempfile.mkdtemp(prefix="tensorplug-real-programs-"))
    rows, missing = [], []
    for key in a.only.split(","):
        repo_key, fn = PROGRAMS[key.strip()]
        repo = find_repo(a.programs, repo_key)
        if repo is None:
            missing.append(f"{key}: none of {', '.join(REPOS[repo_key])} under {a.programs}")
            continue
        print(f"== {key} ({repo})", flush=True)
        rows += fn(repo, runner, work, a.steps)
    for m in missing:
        print(f"skipped {m}")
    print(table(rows))
    failed = [r for r in rows if r["rc"] != 0 or r.get("ok") is False]
    for r in failed:
        print(f"\nFAILED ({r['side']}): {r['program']}: exit {r['rc']}\n{r['tail']}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    if a.keep:
        print(f"scratch folder: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
