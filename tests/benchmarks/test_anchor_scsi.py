"""benchmarks/anchors/scsi_two_moons.py refuses a path that is not a checkout of the SCSI code (no checkout needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location(
        "scsi_two_moons", ROOT / "benchmarks" / "anchors" / "scsi_two_moons.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_an_empty_folder_is_refused_with_the_clone_hint(tmp_path):
    with pytest.raises(SystemExit, match=r"--official .*: no scsi_synthetic.py .*github.com/modichirag/SCSI"):
        _module()._import_official(tmp_path)


def test_a_folder_missing_their_src_modules_is_refused(tmp_path):
    (tmp_path / "scsi_synthetic.py").write_text("")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mlps.py").write_text("")
    with pytest.raises(SystemExit, match="modichirag/SCSI"):
        _module()._import_official(tmp_path)
    assert str(tmp_path / "src") not in sys.path  # refused before touching the import path


def test_main_refuses_before_any_work(tmp_path, monkeypatch):
    out = tmp_path / "result.json"
    monkeypatch.setattr(sys, "argv", ["scsi_two_moons.py", "--official", str(tmp_path / "nowhere"), "--json", str(out)])
    with pytest.raises(SystemExit, match="nowhere"):
        _module().main()
    assert not out.exists()
