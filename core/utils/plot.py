"""Loss / accuracy curves as a PNG, with NumPy and the standard library only (no matplotlib).

    from tensorplug.utils.plot import save_training_curves
    save_training_curves("curves.png", {"train_loss": [...], "val_loss": [...],
                                        "train_acc": [...], "val_acc": [...]})

`line_chart(panels)` draws panels side by side into an RGB array: each panel has a title, one line
per series (with a marker per point), axes, grid lines, and tick labels in a built-in 3x5 pixel
font; `write_png(path, rgb)` encodes an (H, W, 3) uint8 array as a PNG (zlib + struct).
"""
from __future__ import annotations

import math
import os
import struct
import zlib

import numpy as np

__all__ = ["write_png", "line_chart", "save_line_chart", "save_training_curves", "nice_ticks"]

WHITE, BLACK, GRID = (255, 255, 255), (40, 40, 40), (225, 225, 225)
COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75)]

# 3x5 glyphs: five rows, each an octal digit whose bits (4, 2, 1) are the left, middle, right pixel
_FONT = {
    "0": "75557", "1": "26227", "2": "71747", "3": "71717", "4": "55711", "5": "74717", "6": "74757",
    "7": "71111", "8": "75757", "9": "75717", ".": "00002", "-": "00700", "%": "51245", " ": "00000",
    "/": "11244", "(": "24442", ")": "21112", ":": "02020", "=": "07070",
    "A": "25755", "B": "65656", "C": "34443", "D": "65556", "E": "74647", "F": "74644", "G": "34553",
    "H": "55755", "I": "72227", "J": "11152", "K": "55655", "L": "44447", "M": "57755", "N": "65555",
    "O": "25552", "P": "65644", "Q": "25563", "R": "65655", "S": "34216", "T": "72222", "U": "55557",
    "V": "55552", "W": "55775", "X": "55255", "Y": "55222", "Z": "71247",
}


# -- PNG ------------------------------------------------------------------------------------------------
def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rgb) -> None:
    """Write an (H, W, 3) uint8 array (or an (H, W) gray one) as an 8-bit RGB PNG file."""
    a = np.asarray(rgb)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim != 3 or a.shape[2] != 3 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"write_png expects an (H, W, 3) array, got shape {a.shape}")
    a = np.ascontiguousarray(np.clip(a, 0, 255).astype(np.uint8))
    h, w, _ = a.shape
    # every scanline starts with filter type 0 (none)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), a.reshape(h, w * 3)], axis=1).tobytes()
    data = (b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b""))
    with open(os.fspath(path), "wb") as f:
        f.write(data)


# -- drawing --------------------------------------------------------------------------------------------
class _Canvas:
    def __init__(self, width, height):
        self.img = np.empty((height, width, 3), np.uint8)
        self.img[:] = WHITE
        self.h, self.w = height, width

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = sorted((int(round(x0)), int(round(x1))))
        y0, y1 = sorted((int(round(y0)), int(round(y1))))
        x0, y0 = max(x0, 0), max(y0, 0)
        x1, y1 = min(x1, self.w - 1), min(y1, self.h - 1)
        if x0 <= x1 and y0 <= y1:
            self.img[y0:y1 + 1, x0:x1 + 1] = color

    def line(self, x0, y0, x1, y1, color, width=1):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        xs = np.rint(np.linspace(x0, x1, n)).astype(int)
        ys = np.rint(np.linspace(y0, y1, n)).astype(int)
        lo, hi = -((width - 1) // 2), width // 2
        for dy in range(lo, hi + 1):
            for dx in range(lo, hi + 1):
                x, y = xs + dx, ys + dy
                ok = (x >= 0) & (x < self.w) & (y >= 0) & (y < self.h)
                self.img[y[ok], x[ok]] = color

    def text(self, x, y, s, color=BLACK, scale=2, anchor="left"):
        """Draw `s` (upper-cased) with its top at y; anchor left / right / center at x."""
        s = str(s).upper()
        width = text_width(s, scale)
        if anchor == "right":
            x -= width
        elif anchor == "center":
            x -= width // 2
        for i, ch in enumerate(s):
            rows = _FONT.get(ch, "00000")
            for r, bits in enumerate(rows):
                b = int(bits, 8)
                for c in range(3):
                    if b & (4 >> c):
                        px, py = x + (i * 4 + c) * scale, y + r * scale
                        self.rect(px, py, px + scale - 1, py + scale - 1, color)


def text_width(s, scale=2):
    return max(len(s) * 4 - 1, 0) * scale


def nice_ticks(lo, hi, count=5):
    """About `count` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9) * step
    last = math.ceil(hi / step - 1e-9) * step
    n = int(round((last - first) / step))
    return [round(first + i * step, 12) for i in range(n + 1)]


def _fmt(v, step, percent):
    if percent:
        v, step = v * 100, step * 100
    decimals = max(0, -int(math.floor(math.log10(step) + 1e-9))) if step > 0 else 0
    return f"{v:.{decimals}f}" + ("%" if percent else "")


def _panel(cv, box, title, series, ylim=None, percent=False, xlabel="EPOCH"):
    x0, y0, x1, y1 = box
    left, right, top, bottom = x0 + 62, x1 - 18, y0 + 34, y1 - 42
    values = [float(v) for vs in series.values() for v in vs if v is not None and math.isfinite(float(v))]
    n = max((len(vs) for vs in series.values()), default=0)
    lo, hi = ylim if ylim is not None else ((min(values), max(values)) if values else (0.0, 1.0))
    yt = nice_ticks(lo, hi)
    ylo, yhi = (lo, hi) if ylim is not None else (yt[0], yt[-1])
    if yhi <= ylo:
        yhi = ylo + 1.0
    xmax = max(n, 2)
    xt = nice_ticks(1, xmax, count=min(xmax - 1, 8))
    xt = [t for t in xt if 1 <= t <= xmax and float(t).is_integer()] or [1]

    def px(i):          # epoch number (1-based) -> pixel column
        return left + (i - 1) / (xmax - 1) * (right - left)

    def py(v):
        return bottom - (v - ylo) / (yhi - ylo) * (bottom - top)

    step = yt[1] - yt[0] if len(yt) > 1 else 1.0
    for t in yt:
        if ylo - 1e-12 <= t <= yhi + 1e-12:
            cv.line(left, py(t), right, py(t), GRID)
            cv.line(left - 5, py(t), left, py(t), BLACK)
            cv.text(left - 9, int(py(t)) - 5, _fmt(t, step, percent), anchor="right")
    for t in xt:
        cv.line(px(t), top, px(t), bottom, GRID)
        cv.line(px(t), bottom, px(t), bottom + 5, BLACK)
        cv.text(int(px(t)), bottom + 10, str(int(t)), anchor="center")
    cv.line(left, top, left, bottom, BLACK)
    cv.line(left, bottom, right, bottom, BLACK)
    cv.text((left + right) // 2, bottom + 26, xlabel, anchor="center")
    # title and legend on one line above the plot
    cv.text(left, y0 + 8, title)
    lx = right
    for k, name in reversed(list(enumerate(series))):
        color = COLORS[k % len(COLORS)]
        lx -= text_width(name)
        cv.text(lx, y0 + 8, name, color=color)
        cv.line(lx - 24, y0 + 12, lx - 6, y0 + 12, color, width=3)
        lx -= 40
    for k, vs in enumerate(series.values()):
        color = COLORS[k % len(COLORS)]
        pts = [(px(i + 1), py(min(max(float(v), ylo), yhi))) for i, v in enumerate(vs)
               if v is not None and math.isfinite(float(v))]
        for (ax, ay), (bx, by) in zip(pts, pts[1:]):
            cv.line(ax, ay, bx, by, color, width=2)
        for ax, ay in pts:
            cv.rect(ax - 2, ay - 2, ax + 2, ay + 2, color)


def line_chart(panels, width=None, height=360):
    """Panels side by side as an (height, width, 3) uint8 array. Each panel is a dict:
    title (str), series ({name: [value per epoch]}), optional ylim ((lo, hi)), percent (tick
    labels as percentages of fractions), xlabel (default "EPOCH")."""
    panels = list(panels)
    if not panels:
        raise ValueError("line_chart needs at least one panel")
    width = width or 480 * len(panels)
    cv = _Canvas(width, height)
    pw = width // len(panels)
    for i, p in enumerate(panels):
        _panel(cv, (i * pw, 0, (i + 1) * pw, height), p.get("title", ""), dict(p["series"]),
               ylim=p.get("ylim"), percent=p.get("percent", False), xlabel=p.get("xlabel", "EPOCH"))
    return cv.img


def save_line_chart(path, panels, **kwargs):
    """line_chart(panels, **kwargs) written as a PNG to `path`."""
    write_png(path, line_chart(panels, **kwargs))


def save_training_curves(path, history):
    """Two panels, loss and accuracy per epoch, of a history dict with lists under train_loss,
    val_loss, train_acc, val_acc (accuracies as fractions; missing keys are left out)."""
    loss = {k.split("_")[0]: history[k] for k in ("train_loss", "val_loss") if history.get(k)}
    acc = {k.split("_")[0]: history[k] for k in ("train_acc", "val_acc") if history.get(k)}
    panels = [{"title": "LOSS", "series": loss}]
    if acc:
        vals = [v for vs in acc.values() for v in vs]
        lo = min(0.9, math.floor(min(vals) * 10) / 10) if vals else 0.0
        panels.append({"title": "ACCURACY", "series": acc, "ylim": (lo, 1.0), "percent": True})
    save_line_chart(path, panels)
