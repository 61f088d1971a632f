"""Fetching and checking dataset files: download_url, check_integrity, extract_archive, ...

Downloads use urllib only; a file counts as good when its MD5 matches the one the dataset's
publisher lists (torchvision's table). Archives are unpacked with tarfile's "data" filter, so an
archive cannot write outside the target folder.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import pathlib
import shutil
import tarfile
import urllib.request
import zipfile

__all__ = ["calculate_md5", "check_md5", "check_integrity", "download_url", "extract_archive",
           "download_and_extract_archive", "list_dir", "list_files", "verify_str_arg", "iterable_to_str",
           "missing_files_error"]

USER_AGENT = "tensorplug-vision"
_COMPRESSIONS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_ARCHIVES = {".tar": "r:", ".tar.gz": "r:gz", ".tgz": "r:gz", ".tar.bz2": "r:bz2", ".tbz": "r:bz2",
             ".tbz2": "r:bz2", ".tar.xz": "r:xz", ".txz": "r:xz"}


def calculate_md5(fpath, chunk_size: int = 1024 * 1024) -> str:
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath, md5: str, **kwargs) -> bool:
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath, md5: str | None = None) -> bool:
    """True when `fpath` is a file and, if `md5` is given, its MD5 is `md5`."""
    if not os.path.isfile(fpath):
        return False
    return True if md5 is None else check_md5(fpath, md5)


def _urlretrieve(url: str, fpath: str, chunk_size: int = 1 << 15) -> None:
    # urllib follows HTTP redirects itself
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    part = fpath + ".part"                   # a broken transfer never leaves a file under the final name
    try:
        with urllib.request.urlopen(request, timeout=60) as response, open(part, "wb") as out:
            for chunk in iter(lambda: response.read(chunk_size), b""):
                out.write(chunk)
        os.replace(part, fpath)
    finally:
        if os.path.exists(part):
            os.remove(part)


def download_url(url: str, root, filename=None, md5: str | None = None, max_redirect_hops: int = 3) -> None:
    """Download `url` to root/filename (default: the URL's last part) unless a good copy is there.

    Raises urllib.error.URLError when the server cannot be reached, RuntimeError("File not found or
    corrupted.") when the downloaded file's MD5 is not `md5` (the bad file is removed)."""
    root = os.path.expanduser(os.fspath(root))
    filename = os.path.basename(url.split("?")[0]) if not filename else os.fspath(filename)
    fpath = os.path.join(root, filename)
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5):
        return
    _urlretrieve(url, fpath)
    if not check_integrity(fpath, md5):
        os.remove(fpath)
        raise RuntimeError("File not found or corrupted.")


def list_dir(root, prefix: bool = False) -> list[str]:
    root = os.path.expanduser(root)
    names = [p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p))]
    return [os.path.join(root, d) for d in names] if prefix else names


def list_files(root, suffix, prefix: bool = False) -> list[str]:
    root = os.path.expanduser(root)
    names = [p for p in os.listdir(root) if os.path.isfile(os.path.join(root, p)) and p.endswith(suffix)]
    return [os.path.join(root, d) for d in names] if prefix else names


def _suffix(path: str) -> tuple[str, str | None, str | None]:
    """(suffix, archive suffix or None, compression suffix or None) of a file name."""
    name = os.path.basename(path).lower()
    for suf in sorted(_ARCHIVES, key=len, reverse=True):
        if name.endswith(suf):
            return suf, suf, None
    if name.endswith(".zip"):
        return ".zip", ".zip", None
    for suf in _COMPRESSIONS:
        if name.endswith(suf):
            return suf, None, suf
    known = sorted([*_ARCHIVES, ".zip", *_COMPRESSIONS])
    raise RuntimeError(f"Unknown compression or archive type: '{pathlib.Path(path).suffix}'.\n"
                       f"Known suffixes are: '{known}'.")


def extract_archive(from_path, to_path=None, remove_finished: bool = False):
    """Unpack a .tar[.gz/.bz2/.xz], .tgz or .zip archive into `to_path` (default: its folder), or
    decompress a single .gz/.bz2/.xz file there (the name without the suffix). Returns `to_path`,
    or for a single compressed file the decompressed file's path."""
    from_path = os.fspath(from_path)
    to_path = os.path.dirname(from_path) if to_path is None else os.fspath(to_path)
    suffix, archive, compression = _suffix(from_path)
    try:
        if compression is not None:
            out = os.path.join(to_path, os.path.basename(from_path)[: -len(suffix)])
            with _COMPRESSIONS[compression](from_path, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            result = out
        elif archive == ".zip":
            with zipfile.ZipFile(from_path) as z:
                for member in z.namelist():
                    target = os.path.realpath(os.path.join(to_path, member))
                    if not target.startswith(os.path.realpath(to_path) + os.sep):
                        raise RuntimeError(f"{from_path}: member {member!r} would be written outside {to_path}")
                z.extractall(to_path)
            result = to_path
        else:
            with tarfile.open(from_path, _ARCHIVES[archive]) as t:
                t.extractall(to_path, filter="data")
            result = to_path
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as e:
        raise RuntimeError(f"{from_path}: cannot extract the archive ({type(e).__name__}: {e})") from e
    if remove_finished:
        os.remove(from_path)
    return result


def download_and_extract_archive(url: str, download_root, extract_root=None, filename=None,
                                 md5: str | None = None, remove_finished: bool = False) -> None:
    download_root = os.path.expanduser(os.fspath(download_root))
    extract_root = download_root if extract_root is None else extract_root
    filename = os.path.basename(url.split("?")[0]) if not filename else filename
    download_url(url, download_root, filename, md5)
    extract_archive(os.path.join(download_root, filename), extract_root, remove_finished)


def iterable_to_str(iterable) -> str:
    return "'" + "', '".join(str(item) for item in iterable) + "'"


def verify_str_arg(value, arg: str | None = None, valid_values=None, custom_msg: str | None = None) -> str:
    """`value` when it is a str among `valid_values` (None: any str); ValueError otherwise."""
    if not isinstance(value, str):
        msg = ("Expected type str, but got type {type}." if arg is None
               else "Expected type str for argument {arg}, but got type {type}.")
        raise ValueError(msg.format(type=type(value), arg=arg))
    if valid_values is None or value in valid_values:
        return value
    raise ValueError(custom_msg or f"Unknown value '{value}' for argument {arg}. "
                                   f"Valid values are {{{iterable_to_str(valid_values)}}}.")


def missing_files_error(dataset: str, folder, files, urls=(), errors=()) -> RuntimeError:
    """The one error a dataset raises when its files are absent: what to place where, and from where."""
    lines = [f"Dataset not found: {dataset} needs these files in {folder}:"]
    lines += [f"    {name}" for name in files]
    if urls:
        lines.append("from " + ", ".join(urls))
    if errors:
        lines.append("Downloading them failed: " + "; ".join(str(e) for e in errors))
    else:
        lines.append("You can use download=True to download it.")
    return RuntimeError("\n".join(lines))
