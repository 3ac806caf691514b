"""The installed version, from the package metadata (one source of truth: ``pyproject.toml``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("theorylab")
    except PackageNotFoundError:  # a source tree on sys.path, never installed
        return "0+unknown"
