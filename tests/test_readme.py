"""The README stays true and short: its test command is what CI runs, its studies table matches the registry."""

from __future__ import annotations

import re
from pathlib import Path

from theorylab.core.study import all_studies

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    start = README.index("## Quick start")
    end = README.index("## Commands")
    return re.findall(r"```bash\n(.+?)\n```", README[start:end])


def test_two_setup_commands_and_ci_runs_the_test_one():
    main_job, tests = _commands()
    assert "theorylab check --preset quick" in main_job
    assert "pytest" in tests
    assert tests in (ROOT / ".ci" / "run").read_text()


def test_studies_table_matches_registry():
    table = README[README.index("<!-- studies-table:start -->") : README.index("<!-- studies-table:end -->")]
    rows = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| `([^`]+)` \| [^|]+ \| (\d+) \|", table, re.M)}
    builtin = {slug: len(s.claims) for slug, s in all_studies().items() if s.module.startswith("theorylab.studies")}
    assert rows == builtin


def test_readme_is_short_and_its_links_exist():
    assert len(README.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
