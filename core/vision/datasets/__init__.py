"""tensorplug.vision.datasets (torchvision.datasets): image datasets in their official file formats."""
from .cifar import CIFAR10, CIFAR100
from .digits import Digits
from .fakedata import FakeData
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, find_classes, make_dataset
from .mnist import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST
from .svhn import SVHN
from .vision import VisionDataset

__all__ = ["VisionDataset", "MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST", "CIFAR10", "CIFAR100", "SVHN",
           "ImageFolder", "DatasetFolder", "FakeData", "Digits", "IMG_EXTENSIONS", "default_loader", "find_classes",
           "make_dataset"]
