"""ImageFolder / DatasetFolder (root/<class>/<file>), find_classes, make_dataset, FakeData, Digits."""
import os

import numpy as np
import pytest

import tensorplug
from tensorplug.vision import datasets

Image = pytest.importorskip("PIL.Image")


def _tree(root):
    """root/cat/{a.png, b.JPG(png data), sub/c.bmp, notes.txt}, root/dog/d.png; returns {relpath: RGB array}."""
    rng = np.random.RandomState(0)
    made = {}
    for rel in ("cat/a.png", "cat/b.PNG", "cat/sub/c.bmp", "dog/d.png"):
        arr = rng.randint(0, 256, (3 + len(made), 4, 3)).astype(np.uint8)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(arr).save(path, format="PNG" if rel.lower().endswith("png") else "BMP")
        made[rel] = arr
    (root / "cat" / "notes.txt").write_text("not an image")
    (root / "stray.png").write_bytes(b"")           # files directly under root belong to no class
    return made


def test_image_folder_samples_classes_and_items(tmp_path):
    made = _tree(tmp_path)
    ds = datasets.ImageFolder(str(tmp_path))
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    rels = ["cat/a.png", "cat/b.PNG", "cat/sub/c.bmp", "dog/d.png"]
    assert ds.samples == [(os.path.join(str(tmp_path), r), 0 if r.startswith("cat") else 1) for r in rels]
    assert ds.imgs == ds.samples and ds.targets == [0, 0, 0, 1] and len(ds) == 4
    for i, rel in enumerate(rels):
        img, target = ds[i]
        assert img.mode == "RGB" and target == ds.targets[i]
        np.testing.assert_array_equal(np.asarray(img), made[rel])
    gray = tmp_path / "dog" / "e.png"
    Image.fromarray(np.full((2, 2), 7, np.uint8)).save(gray)       # a grey file is loaded as RGB
    assert np.asarray(datasets.ImageFolder(tmp_path)[4][0]).tolist() == [[[7, 7, 7]] * 2] * 2


def test_dataset_folder_with_loader_and_is_valid_file(tmp_path):
    _tree(tmp_path)
    ds = datasets.DatasetFolder(tmp_path, loader=lambda p: os.path.getsize(p), extensions=(".txt",),
                                allow_empty=True)
    assert ds.samples == [(os.path.join(str(tmp_path), "cat", "notes.txt"), 0)]
    assert ds[0] == (len("not an image"), 0)
    only_bmp = datasets.ImageFolder(tmp_path, is_valid_file=lambda p: p.endswith(".bmp"), allow_empty=True,
                                    target_transform=lambda t: -t)
    assert [os.path.basename(p) for p, _ in only_bmp.samples] == ["c.bmp"] and only_bmp[0][1] == 0
    with pytest.raises(ValueError, match="Both extensions and is_valid_file cannot be None"):
        datasets.make_dataset(tmp_path, {"cat": 0})
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        datasets.make_dataset(tmp_path, {"cat": 0}, extensions=".png", is_valid_file=bool)
    assert datasets.find_classes(tmp_path) == (["cat", "dog"], {"cat": 0, "dog": 1})
    assert datasets.default_loader(tmp_path / "dog" / "d.png").mode == "RGB"
    assert ".webp" in datasets.IMG_EXTENSIONS and ".jpeg" in datasets.IMG_EXTENSIONS


def test_wrong_layouts_are_clear_errors(tmp_path):
    (tmp_path / "flat").mkdir()
    Image.fromarray(np.zeros((2, 2), np.uint8)).save(tmp_path / "flat" / "a.png")
    with pytest.raises(FileNotFoundError, match=r"Couldn't find any class folder in .*flat"):
        datasets.ImageFolder(tmp_path / "flat")
    with pytest.raises(FileNotFoundError, match="no such directory"):
        datasets.ImageFolder(tmp_path / "absent")
    _tree(tmp_path / "t")
    (tmp_path / "t" / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"Found no valid file for the classes empty\. Supported extensions "
                                                r"are: \.jpg, \.jpeg"):
        datasets.ImageFolder(tmp_path / "t")
    ds = datasets.ImageFolder(tmp_path / "t", allow_empty=True)
    assert ds.classes == ["cat", "dog", "empty"] and len(ds) == 4


def test_corrupt_image_names_the_file(tmp_path):
    _tree(tmp_path)
    (tmp_path / "dog" / "bad.png").write_bytes(b"this is no PNG")
    good = (tmp_path / "cat" / "a.png").read_bytes()
    (tmp_path / "dog" / "cut.png").write_bytes(good[: len(good) // 2])
    ds = datasets.ImageFolder(tmp_path)
    names = [os.path.basename(p) for p, _ in ds.samples]
    with pytest.raises(OSError, match=r"bad\.png: not an image file Pillow can identify"):
        ds[names.index("bad.png")]
    with pytest.raises(OSError, match=r"cut\.png: cannot read the image"):
        ds[names.index("cut.png")]


def test_fakedata_is_repeatable_per_index():
    ds = datasets.FakeData(size=4, image_size=(3, 5, 6), num_classes=3, random_offset=2)
    a, ta = ds[1]
    b, tb = ds[1]
    assert a.mode == "RGB" and a.size == (6, 5) and 0 <= ta < 3 and ta == tb
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the pixels are (randn * 255) truncated to uint8 modulo 256, from a generator seeded with index + offset
    g = tensorplug.Generator().manual_seed(3)
    x = tensorplug.randn(3, 5, 6, generator=g).numpy().astype(np.float64)
    expected = np.mod(np.trunc(x * 255), 256).astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(np.asarray(a), expected)
    assert int(tensorplug.randint(0, 3, (1,), generator=g)[0]) == ta
    assert datasets.FakeData(2, (1, 4, 4))[0][0].mode == "L" and len(ds) == 4
    with pytest.raises(IndexError, match="FakeData index out of range"):
        ds[4]


def test_digits_split_and_items():
    """The shipped digits: a fixed split (every 5th image of each digit is a test image), PIL items."""
    from tensorplug.data import load_digits
    raw, raw_y = load_digits(raw=True)
    raw, raw_y = raw.numpy(), raw_y.numpy()
    train, test, every = datasets.Digits(), datasets.Digits(train=False), datasets.Digits(train=None)
    assert (len(train), len(test), len(every)) == (1433, 364, 1797)
    assert sorted(np.concatenate([train.indices, test.indices]).tolist()) == list(range(1797))
    for digit in range(10):                      # the 1st, 6th, 11th, ... image of each digit is a test image
        where = np.flatnonzero(raw_y == digit)
        assert test.indices[test.targets.numpy() == digit].tolist() == where[::5].tolist()
    np.testing.assert_array_equal(test.data.numpy(), raw[test.indices])
    np.testing.assert_array_equal(every.targets.numpy(), raw_y.astype(np.int64))
    img, target = test[3]
    assert img.mode == "L" and img.size == (8, 8) and target == raw_y[test.indices[3]]
    np.testing.assert_array_equal(np.asarray(img), np.floor(raw[test.indices[3]].astype(np.float64) * 255 / 16 + 0.5))
    assert repr(every).splitlines() == ["Dataset Digits", "    Number of datapoints: 1797", "    Split: All"]
    with pytest.raises(ValueError, match="train must be True, False or None"):
        datasets.Digits(train="yes")
