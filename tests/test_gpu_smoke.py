"""benchmarks/gpu_smoke.py keeps one slice per registered study, each a valid paper config (no GPU needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("gpu_smoke", ROOT / "benchmarks" / "gpu_smoke.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_study_has_a_valid_slice():
    assert _module().check() == []


def test_a_bad_slice_is_reported(monkeypatch):
    mod = _module()
    monkeypatch.setitem(mod.SLICES, "attention-rank", {"steps": 0})
    monkeypatch.setitem(mod.SLICES, "no-such-study", {})
    errors = mod.check()
    assert any(e.startswith("attention-rank: invalid value for 'steps'") for e in errors)
    assert "no-such-study: slice for a study that is not registered" in errors
