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


def test_claims_summary_counts_come_from_the_inventory():
    """The README's "N claims: a decided at quick, b by a cpu preset, c only on a GPU" is the registry's inventory
    (benchmarks/claims_inventory.py --write-docs writes it; a claim moved between tiers makes this fail)."""
    import importlib.util

    from theorylab.core.inventory import inventory, summary

    spec = importlib.util.spec_from_file_location("claims_inventory", ROOT / "benchmarks" / "claims_inventory.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    block = README[README.index("<!-- claims-summary:start -->") : README.index("<!-- claims-summary:end -->")]
    builtin = {slug: s for slug, s in all_studies().items() if s.module.startswith("theorylab.studies")}
    assert mod.tier_sentence(summary(inventory(builtin))) in block
