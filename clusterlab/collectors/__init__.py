"""Source parsers, one module per evidence format (the contract is in `_base`)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def all_collectors() -> list[ModuleType]:
    """Every collector module in this package, exclusive (structured) formats first."""
    mods = [
        importlib.import_module(f"{__name__}.{m.name}")
        for m in pkgutil.iter_modules(__path__)
        if not m.name.startswith("_")
    ]
    return sorted(mods, key=lambda m: (not getattr(m, "EXCLUSIVE", False), m.NAME))
