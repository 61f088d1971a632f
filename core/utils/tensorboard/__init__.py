"""TensorBoard logging (torch.utils.tensorboard): `SummaryWriter` writes scalars, histograms, images,
text, hyperparameters, figures and embeddings as TensorBoard event files.

    from tensorplug.utils.tensorboard import SummaryWriter
    with SummaryWriter("runs/exp1") as w:
        for step in range(100):
            w.add_scalar("loss", 1.0 / (step + 1), step)

The protos and the record writer come from the `tensorboard` package, an optional extra
(`pip install "tensorplug[tensorboard]"`, which also brings Pillow for images). Nothing here is
imported by `import tensorplug`.
"""
from ..collect_env import pip_install_command as _pip_install

_HINT = _pip_install("tensorboard")      # names a command that works for this install (clone or package)

try:
    import tensorboard as _tb
except ImportError as e:
    raise ImportError(f"TensorBoard logging requires TensorBoard to be installed: {_HINT}") from e


def _version(text):
    parts = []
    for piece in str(text).split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


# the oldest release whose protos and EventFileWriter match what this package writes (as PyTorch)
if _version(getattr(_tb, "__version__", "0")) < (1, 15):
    raise ImportError(f"TensorBoard logging requires TensorBoard version 1.15 or above: {_HINT}")
del _tb, _version

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
