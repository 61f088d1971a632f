"""(scaffold: filled by the attention family's author)"""
from __future__ import annotations

FUNCTIONAL: list[str] = []
