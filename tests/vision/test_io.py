"""tensorplug.vision.io: reading, decoding, encoding and writing images as uint8 (C, H, W) tensors."""
import numpy as np
import pytest

import tensorplug
from tensorplug.vision import io

Image = pytest.importorskip("PIL.Image")
RNG = np.random.RandomState(0)
RGB = RNG.randint(0, 256, (5, 7, 3)).astype(np.uint8)
RGBA = RNG.randint(0, 256, (4, 6, 4)).astype(np.uint8)


def _png(tmp_path, arr, name="x.png", **kw):
    path = tmp_path / name
    Image.fromarray(arr).save(path, **kw)
    return path


def _chw(a):
    return a[None] if a.ndim == 2 else np.moveaxis(a, -1, 0)


def test_read_file_and_write_file_round_trip(tmp_path):
    data = bytes(range(256)) * 3
    (tmp_path / "a.bin").write_bytes(data)
    t = io.read_file(tmp_path / "a.bin")
    assert t.dtype == tensorplug.uint8 and tuple(t.shape) == (768,)
    assert t.numpy().tobytes() == data
    io.write_file(str(tmp_path / "b.bin"), t)
    assert (tmp_path / "b.bin").read_bytes() == data
    with pytest.raises(RuntimeError, match="No such file"):
        io.read_file(tmp_path / "missing.png")


def test_read_image_png_unchanged_and_modes(tmp_path):
    """UNCHANGED keeps the file's channels; GRAY is the ITU-R 601 8-bit conversion, RGB_ALPHA adds 255."""
    path = _png(tmp_path, RGB)
    x = io.read_image(str(path))
    assert x.dtype == tensorplug.uint8 and tuple(x.shape) == (3, 5, 7)
    np.testing.assert_array_equal(x.numpy(), _chw(RGB))
    r, g, b = (RGB[..., i].astype(np.int64) for i in range(3))
    gray = (r * 19595 + g * 38470 + b * 7471 + 32768) >> 16
    np.testing.assert_array_equal(io.read_image(path, io.ImageReadMode.GRAY).numpy(), gray[None])
    rgba = io.read_image(path, mode=io.ImageReadMode.RGB_ALPHA).numpy()
    np.testing.assert_array_equal(rgba[:3], _chw(RGB))
    assert (rgba[3] == 255).all() and io.ImageReadMode.RGBA is io.ImageReadMode.RGB_ALPHA
    np.testing.assert_array_equal(io.read_image(path, mode="RGB").numpy(), _chw(RGB))


def test_decode_png_rgba_gray_alpha_and_palette(tmp_path):
    t = io.read_file(_png(tmp_path, RGBA, "a.png"))
    np.testing.assert_array_equal(io.decode_png(t).numpy(), _chw(RGBA))
    ga = io.decode_image(t, io.ImageReadMode.GRAY_ALPHA).numpy()
    assert ga.shape == (2, 4, 6)
    np.testing.assert_array_equal(ga[1], RGBA[..., 3])
    palette = Image.fromarray(RGB).quantize(8)          # a 'P' image expands to RGB, as libpng does
    palette.save(tmp_path / "p.png")
    expected = np.asarray(palette.convert("RGB"))
    np.testing.assert_array_equal(io.read_image(tmp_path / "p.png").numpy(), _chw(expected))


def test_gray_png_and_16_bit_png(tmp_path):
    gray = RGB[..., 0]
    np.testing.assert_array_equal(io.read_image(_png(tmp_path, gray, "g.png")).numpy(), gray[None])
    np.testing.assert_array_equal(io.read_image(tmp_path / "g.png", io.ImageReadMode.RGB).numpy(),
                                  np.stack([gray] * 3))
    deep = (RNG.randint(0, 65536, (3, 4))).astype(np.uint16)
    Image.fromarray(deep).save(tmp_path / "d.png")
    x = io.read_image(tmp_path / "d.png")
    assert x.dtype == tensorplug.int32          # torchvision: uint16, a dtype tensorplug lacks
    np.testing.assert_array_equal(x.numpy(), deep[None])


def test_encode_png_round_trips_exactly(tmp_path):
    x = tensorplug.from_numpy(_chw(RGB).copy())
    data = io.encode_png(x, compression_level=9)
    assert data.dtype == tensorplug.uint8 and data.numpy()[:8].tobytes() == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(io.decode_png(data).numpy(), _chw(RGB))
    io.write_png(x[:1], str(tmp_path / "w.png"))
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "w.png")), RGB[..., 0])


def test_jpeg_encode_decode(tmp_path):
    """A smooth image survives JPEG at quality 95 to within a few levels; a list encodes each image."""
    yy, xx = np.mgrid[0:16, 0:24]
    smooth = np.stack([xx * 10, yy * 15, (xx + yy) * 6]).astype(np.uint8)
    x = tensorplug.from_numpy(smooth)
    data = io.encode_jpeg(x, quality=95)
    assert data.numpy()[:2].tobytes() == b"\xff\xd8"
    back = io.decode_jpeg(data).numpy().astype(int)
    err = np.abs(back - smooth)             # 4:2:0 chroma subsampling costs a few levels at the edges
    assert back.shape == (3, 16, 24) and err.mean() < 3 and err.max() <= 16
    gray = io.decode_jpeg(data, mode=io.ImageReadMode.GRAY)
    assert tuple(gray.shape) == (1, 16, 24)
    both = io.encode_jpeg([x, x[:1]])
    assert [tuple(io.decode_image(b).shape) for b in both] == [(3, 16, 24), (1, 16, 24)]
    assert [tuple(d.shape) for d in io.decode_jpeg(both)] == [(3, 16, 24), (1, 16, 24)]
    io.write_jpeg(x, tmp_path / "w.jpg", quality=90)
    assert Image.open(tmp_path / "w.jpg").format == "JPEG"
    np.testing.assert_array_equal(io.read_image(tmp_path / "w.jpg").numpy(), np.moveaxis(
        np.asarray(Image.open(tmp_path / "w.jpg")), -1, 0))


def test_encode_rejects_bad_tensors():
    x = tensorplug.zeros(3, 4, 4, dtype=tensorplug.uint8)
    for f in (io.encode_png, io.encode_jpeg):
        with pytest.raises(RuntimeError, match="dtype should be uint8"):
            f(x.float())
        with pytest.raises(RuntimeError, match="3-dimensional"):
            f(x[0])
        with pytest.raises(RuntimeError, match="channels should be 1 or 3, got: 4"):
            f(tensorplug.zeros(4, 4, 4, dtype=tensorplug.uint8))
    with pytest.raises(ValueError, match="between 1 and 100"):
        io.encode_jpeg(x, quality=0)
    with pytest.raises(RuntimeError, match="between 0 and 9"):
        io.encode_png(x, compression_level=10)


def test_decode_rejects_bad_bytes(tmp_path):
    junk = tensorplug.tensor([1, 2, 3], dtype=tensorplug.uint8)
    with pytest.raises(RuntimeError, match="Unsupported image file"):
        io.decode_image(junk)
    with pytest.raises(RuntimeError, match="Expected a torch.uint8 tensor"):
        io.decode_image(tensorplug.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="too small for png"):
        io.decode_png(junk)
    png = io.encode_png(tensorplug.zeros(3, 4, 4, dtype=tensorplug.uint8))
    with pytest.raises(RuntimeError, match="Not a JPEG file: starts with 0x89 0x50"):
        io.decode_jpeg(png)
    bad = tmp_path / "cut.png"
    bad.write_bytes(_png(tmp_path, RGB).read_bytes()[:60])      # a truncated file is named in the error
    with pytest.raises(RuntimeError, match="cut.png"):
        io.read_image(bad)
    (tmp_path / "text.png").write_text("not an image at all, but long enough to look at")
    with pytest.raises(RuntimeError, match=r"text\.png: Unsupported image file"):
        io.read_image(tmp_path / "text.png")
