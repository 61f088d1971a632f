"""Unique, legal Python names for the values of a Graph (`add`, `add_1`, `max_1`, `float_1`, ...).

A candidate is cleaned (illegal characters become `_`), split into base and numeric suffix, and
counted up per base until it is neither taken, a keyword, nor a builtin / generated-code global it
would shadow; the same rules give the generated code its global names (`__main___my_fn`).
"""
from __future__ import annotations

import builtins
import keyword
import re

_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")
_SUFFIX = re.compile(r"(.*)_(\d+)$")
_CAMEL = re.compile(r"(?<=[a-z])([A-Z])")
# names the generated code's globals hold (besides builtins)
RESERVED = frozenset(("inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree"))


def snake_case(s: str) -> str:
    """`ReLU` -> `re_lu` style conversion of a camel-case name (lower case, `_` before inner capitals)."""
    return _CAMEL.sub(r"_\1", s).lower()


class Namespace:
    """The names taken in one graph (or one generated function)."""

    def __init__(self):
        self._used: set = set()
        self._base_count: dict = {}
        self._obj_to_name: dict = {}

    def create_name(self, candidate: str, obj=None) -> str:
        """A fresh legal name from candidate; the same obj (when given) always gets the same name."""
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)][1]
        candidate = _ILLEGAL.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = _SUFFIX.match(candidate)
        if m is None:
            base, num = candidate, None
        else:
            base, num = m.group(1), int(m.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count.get(base, 0)
        while candidate in self._used or self._is_illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = (obj, candidate)
        return candidate

    def associate_name_with_obj(self, name, obj):
        self._obj_to_name[id(obj)] = (obj, name)

    def _is_illegal(self, name, obj) -> bool:
        if name in keyword.kwlist:
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        return name in RESERVED
