"""Layers that hold: light imports, explicit randomness, studies as plugins."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "theorylab"


def _python(code: str, **env: str) -> str:
    import os

    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_kits_import_without_pandas_studies_or_a_matplotlib_backend():
    out = _python("""
        import sys
        import theorylab.nn, theorylab.theory, theorylab.data, theorylab.probes
        heavy = [m for m in ("pandas", "matplotlib", "theorylab.core.context", "theorylab.core.store") if m in sys.modules]
        studies = [m for m in sys.modules if m.startswith("theorylab.studies.")]
        print(heavy, studies)
    """)
    assert out.strip() == "[] []"


def test_loading_every_study_leaves_the_matplotlib_backend_alone():
    out = _python("""
        import sys, matplotlib
        matplotlib.use("svg")  # a user's choice (a notebook sets its own)
        import theorylab
        theorylab.all_studies()
        print(matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules)
    """)
    assert out.split() == ["svg", "False"]


def test_no_global_rng_seeding_outside_core_rng():
    """Randomness is explicit: ``ctx.generator(name)`` / ``ctx.rng(name)`` / ``ctx.seed(name)``; module
    init that needs torch's global stream goes through ``core.rng.seeded`` (fork_rng: restored)."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "core" / "rng.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"torch\.(cuda\.)?manual_seed\(|np\.random\.seed\(|(?<![\w.])random\.seed\(", line):
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
            if re.search(r"\.integers\(2\s*\*\*\s*31\)", line) and path.name != "context.py":
                offenders.append(f"{path.relative_to(ROOT)}:{i}: use ctx.seed(name)")
    assert not offenders, "\n".join(offenders)


def test_every_builtin_study_module_is_an_entry_point():
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = pyproject[pyproject.index('[project.entry-points."theorylab.studies"]') :].split("\n\n")[0]
    declared = dict(re.findall(r'^([\w-]+) = "theorylab\.studies\.(\w+)"$', block, re.M))
    modules = {p.stem for p in (SRC / "studies").glob("*.py") if p.stem != "__init__"}
    assert set(declared.values()) == modules
    from theorylab.core.study import all_studies

    assert set(declared) == {slug for slug, s in all_studies().items() if s.module.startswith("theorylab.studies.")}


@pytest.fixture
def plugin_package(tmp_path):
    """A tiny installed package (what ``pip install`` leaves: the module and its dist-info with an
    entry point), on a path given to a fresh interpreter."""
    (tmp_path / "tiny_plugin.py").write_text(textwrap.dedent('''
        from pydantic import Field
        from theorylab.core import Claims, Preset, StudyConfig, study

        class TinyConfig(StudyConfig):
            x: float = Field(1.0, ge=0, le=10, description="a number")

        claims = Claims("tiny-plugin", "exact")

        @claims.add("x-is-x", "the recorded x equals the config's x")
        def judge(res, v):
            x = float(res.table("x")["x"].iloc[0])
            return v.judged(x == res.config["x"], x, res.config["x"])

        @study("tiny-plugin", title="A plugin study", paper="(tests)", config=TinyConfig,
               presets={"quick": Preset.of("quick"), "paper": Preset.of("paper")}, claims=claims)
        def run(cfg, ctx):
            ctx.table("x", {"x": [cfg.x]})
    '''))
    info = tmp_path / "tiny_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[theorylab.studies]\ntiny-plugin = tiny_plugin\n")
    return tmp_path


def test_a_plugin_package_registers_its_studies(plugin_package, tmp_path):
    env = {"PYTHONPATH": str(plugin_package)}
    listing = subprocess.run([sys.executable, "-m", "theorylab.cli", "list"], capture_output=True, text=True, env={**__import__("os").environ, **env}, timeout=300)
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert "tiny-plugin" in listing.stdout and "rmt-diffusion" in listing.stdout
    store = tmp_path / "store"
    checked = subprocess.run([sys.executable, "-m", "theorylab.cli", "check", "tiny-plugin", "--store", str(store)],
                             capture_output=True, text=True, env={**__import__("os").environ, **env}, timeout=300)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert "1 passed" in checked.stdout or "passed" in checked.stdout
