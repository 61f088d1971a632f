"""Testing utilities shipped with tensorplug: `tensorplug.testing.conformance`, the suite every
backend must pass."""
from ._comparison import assert_close

__all__ = ["assert_close"]
