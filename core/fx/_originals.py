"""The functions the Recorders of `_dispatch.py` call, one module global each.

A Recorder looks its function up here on every call rather than holding it, so code that swaps
tensorplug's functions where modules hold them (the ONNX exporter's tracer does, while exporting)
reaches calls made through Recorders too.
"""
