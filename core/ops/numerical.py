"""(scaffold: filled by the numerical family's author)"""
from __future__ import annotations

PUBLIC: list[str] = []


def _attach():
    pass


_attach()
