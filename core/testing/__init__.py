"""Testing utilities shipped with tensorplug: `tensorplug.testing.conformance`, the suite every
backend must pass."""
