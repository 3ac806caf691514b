"""Package-level names that load their module on first use (PEP 562), so importing a package stays light."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``name`` is read from module ``where[name]`` when first asked for,
    then kept as a plain attribute of the package."""

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(where[name]), name)
            setattr(sys.modules[package], name, value)  # once loaded, a plain attribute
            return value
        raise AttributeError(f"module '{package}' has no attribute '{name}'")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
