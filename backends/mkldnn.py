"""tensorplug.backends.mkldnn: PyTorch's oneDNN (MKL-DNN) switches (torch.backends.mkldnn).

tensorplug's CPU backend is NumPy, which does not use oneDNN: is_available() is False. The switches
are kept and checked as PyTorch keeps them and change no kernel.
"""
from __future__ import annotations

from ._flags import flags_context, install

__all__ = ["is_available", "flags", "enabled", "deterministic"]


def is_available() -> bool:
    """Whether oneDNN is used here: not by tensorplug's backends."""
    return False


def flags(enabled=False, deterministic=False):
    """`with flags(enabled=..., deterministic=...)`: these switches inside the block, the old after."""
    import sys
    return flags_context(sys.modules[__name__], enabled=enabled, deterministic=deterministic)


install(__name__, {"enabled": "set_enabled_mkldnn", "deterministic": "set_deterministic_mkldnn"})
enabled = True
deterministic = False
