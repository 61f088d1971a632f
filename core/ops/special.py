"""(scaffold: filled by the special family's author)"""
from __future__ import annotations

PUBLIC: list[str] = []


def _attach():
    pass


_attach()
