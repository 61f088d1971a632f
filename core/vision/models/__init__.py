"""tensorplug.vision.models: torchvision's classification models, with its module structure and
parameter names (a torchvision state dict loads with strict=True), and its weights API."""
from ._api import Weights, WeightsEnum, get_model, get_model_builder, get_model_weights, get_weight, list_models
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
