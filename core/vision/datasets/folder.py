"""DatasetFolder and ImageFolder: one sub-folder per class, root/<class>/**/<file>."""
from __future__ import annotations

import os

from .vision import VisionDataset, pil_image

__all__ = ["IMG_EXTENSIONS", "has_file_allowed_extension", "is_image_file", "find_classes", "make_dataset",
           "pil_loader", "default_loader", "DatasetFolder", "ImageFolder"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions) -> bool:
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename: str) -> bool:
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory) -> tuple[list[str], dict[str, int]]:
    """The sub-folders of `directory`, sorted, and their indices."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Couldn't find the dataset folder {directory} (no such directory).")
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None, allow_empty: bool = False):
    """[(path, class index)] of the files under directory/<class>/ (any depth, links followed), sorted;
    a file counts when its name ends with one of `extensions` (case-insensitive) or, instead,
    `is_valid_file(path)` is true. A class folder without a file is an error unless allow_empty."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(path):
            return has_file_allowed_extension(path, extensions)

    instances, found = [], set()
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for folder, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(folder, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    found.add(target_class)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg + f" (in {directory})")
    return instances


def pil_loader(path):
    """The image at `path` as an RGB PIL image; an error naming the file when Pillow cannot read it."""
    Image = pil_image()
    try:
        with open(path, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")
    except FileNotFoundError:
        raise
    except Image.UnidentifiedImageError as e:
        raise Image.UnidentifiedImageError(f"{path}: not an image file Pillow can identify") from e
    except (OSError, SyntaxError, ValueError) as e:     # truncated or damaged data
        raise OSError(f"{path}: cannot read the image ({type(e).__name__}: {e})") from e


def default_loader(path):
    return pil_loader(path)


class DatasetFolder(VisionDataset):
    """Samples in root/<class>/**/<file>: `loader(path)` reads one; `classes`, `class_to_idx`,
    `samples` [(path, class index)] and `targets` as torchvision has them."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None,
                 allow_empty: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx=class_to_idx, extensions=extensions,
                                    is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.loader, self.extensions = loader, extensions
        self.classes, self.class_to_idx = classes, class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None, allow_empty: bool = False):
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions=extensions, is_valid_file=is_valid_file,
                            allow_empty=allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """Images in root/<class>/**/<image> (IMG_EXTENSIONS unless is_valid_file is given), read as RGB
    PIL images by default_loader; `imgs` is `samples`."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None,
                 allow_empty: bool = False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
