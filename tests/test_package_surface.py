"""The kits' curated package-level surface: every name resolves, none shadows a module, imports stay lazy."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

KITS = ["data", "nn", "probes", "theory", "train"]


@pytest.mark.parametrize("kit", KITS)
def test_every_exported_name_resolves_to_its_module(kit):
    package = importlib.import_module(f"theorylab.{kit}")
    modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert package.__all__, f"theorylab.{kit} exports nothing"
    for name in package.__all__:
        # a name equal to a submodule's would turn into that module once the submodule is imported
        assert name not in modules, f"theorylab.{kit}.{name} shadows the module of the same name"
        value = getattr(package, name)
        home = getattr(value, "__module__", "")
        assert home.startswith(f"theorylab.{kit}.") or home == "typing", (kit, name, value)  # typing: a type alias
        assert name in dir(package)
    with pytest.raises(AttributeError, match="has no attribute"):
        package.no_such_name  # noqa: B018


def test_importing_a_kit_loads_none_of_its_modules():
    code = (
        "import sys, theorylab.nn, theorylab.probes, theorylab.theory, theorylab.train, theorylab.data\n"
        "print(sorted(m for m in sys.modules if m.count('.') == 2 and m.split('.')[1] in "
        "('nn', 'probes', 'theory', 'train', 'data')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
