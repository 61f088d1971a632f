"""tensorplug.optim: optimizers and learning-rate schedulers (PyTorch's torch.optim).

    opt = tensorplug.optim.Adam(model.parameters(), lr=1e-3)
    sched = tensorplug.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    sched.step()
"""
from __future__ import annotations

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "Rprop", "LBFGS",
           "lr_scheduler", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]
