"""Images for the summaries: any `dataformats` layout to (H, W, C), batches tiled into one grid, PNG
encoding (Pillow) and matplotlib figures rendered to pixels."""
from __future__ import annotations

import io

import numpy as np

from . import _HINT


def make_grid(batch: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tile an (N, C, H, W) batch (C 1 or 3) into one (3, rows*H, cols*W) image, row by row,
    at most `ncols` per row; the cells after the last image stay 0."""
    if batch.ndim != 4 or batch.shape[1] not in (1, 3):
        raise AssertionError(f"a batch of images must be (N, C, H, W) with 1 or 3 channels, "
                             f"got shape {batch.shape}")
    if batch.shape[1] == 1:
        batch = np.repeat(batch, 3, axis=1)
    n, _, h, w = batch.shape
    cols = min(n, ncols)
    rows = -(-n // cols)
    canvas = np.zeros((3, rows * h, cols * w), dtype=batch.dtype)
    for i in range(n):
        r, c = divmod(i, cols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = batch[i]
    return canvas


def to_hwc(a: np.ndarray, dataformats: str) -> np.ndarray:
    """`a` laid out as `dataformats` (letters N, C, H, W) as an (H, W, C) image: a batch (4 letters)
    becomes a grid, one channel (or none) becomes three gray ones."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {dataformats}")
    if a.ndim != len(fmt):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {a.shape}, input_format: {dataformats}")
    wanted = {4: "NCHW", 3: "HWC", 2: "HW"}.get(len(fmt))
    if wanted is None or set(fmt) != set(wanted):
        raise AssertionError(f"dataformats must be a permutation of NCHW, HWC or HW, got {dataformats!r}")
    a = a.transpose([fmt.index(ch) for ch in wanted])
    if len(fmt) == 4:
        return make_grid(a).transpose(1, 2, 0)
    if len(fmt) == 2:
        a = a[:, :, None]
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    return a


def to_uint8(a: np.ndarray) -> np.ndarray:
    """Pixels as uint8: uint8 input as is, anything else read as [0, 1] and scaled by 255
    (in float32, clipped, truncated, as PyTorch)."""
    scale = 1 if a.dtype == np.uint8 else 255
    return (a.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"TensorBoard images are encoded with Pillow, which is not installed: {_HINT}") from e
    return Image


def encode_png(hwc: np.ndarray) -> bytes:
    """A uint8 (H, W, C) array (C 3 or 4) as PNG bytes."""
    buf = io.BytesIO()
    _pil().fromarray(hwc).save(buf, format="PNG")
    return buf.getvalue()


def figure_to_image(figures, close: bool = True) -> np.ndarray:
    """Render a matplotlib figure as a (3, H, W) uint8 array, or a list of them as (N, 3, H, W)."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError as e:
        raise ImportError("add_figure requires matplotlib to be installed: pip install matplotlib") from e

    def render(fig):
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        w, h = fig.canvas.get_width_height()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(h, w, 4)
        if close:
            plt.close(fig)
        return np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
