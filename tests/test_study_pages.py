"""The study pages (docs/studies/<slug>.md): their claims tables match the registry, and the generator
(`theorylab pages`) writes blocks, figures and "not run" rows from a store while keeping hand-written prose."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest
from pydantic import Field
from typer.testing import CliRunner

from theorylab.cli import app
from theorylab.core import Claims, Preset, RunContext, StudyConfig, study
from theorylab.core.declared import Departure
from theorylab.core.runner import execute
from theorylab.core.store import Store
from theorylab.core.study import REGISTRY, all_studies
from theorylab.pages import BLOCKS, generated_blocks, page_claim_ids, strip_generated, write_page

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAGES = Path(__file__).resolve().parents[1] / "docs" / "studies"
PACKAGE = sorted(slug for slug, s in all_studies().items() if s.module.startswith("theorylab.studies."))


@pytest.mark.parametrize("slug", PACKAGE)
def test_page_claims_table_lists_exactly_the_registered_claims(slug):
    path = PAGES / f"{slug}.md"
    assert path.is_file(), f"no page {path}: run `theorylab pages --store ... {slug}`"
    text = path.read_text()
    registered = [c.id.split("/", 1)[1] for c in all_studies()[slug].claims]
    in_page = page_claim_ids(text)
    assert in_page == registered, (
        f"{slug}: the page's claims table ({in_page}) is not the registry's "
        f"({registered}); regenerate it with `theorylab pages`"
    )
    assert set(generated_blocks(text)) == set(BLOCKS)


def test_page_images_exist_and_are_small():
    assert len(PACKAGE) >= 33
    for slug in PACKAGE:
        text = (PAGES / f"{slug}.md").read_text()
        images = sorted(set(re.findall(r"\]\((img/[^)]+\.png)\)", text)))
        for rel in images:
            assert (PAGES / rel).is_file(), f"{slug}: missing image {rel}"
        assert sum((PAGES / rel).stat().st_size for rel in images) < 600_000, f"{slug}: images over 600 KB"


class PageConfig(StudyConfig):
    n: int = Field(10, ge=1, le=10**6, description="size of the toy problem")


claims = Claims("toy-pages", "exact")


@claims.add("small", "decided at any size", departures=[Departure.of("a toy departure: declared at every preset")])
def _small(res, v):
    return v.at_most(res.scalar("n") * 0.0, 1.0, name="zero")


@claims.add("mid", "decided once n >= 100", decided_by="cpu")
def _mid(res, v):
    if res.config["n"] < 100:
        return v.undecided(f"n = {res.config['n']} < 100")
    return v.at_least(res.scalar("n"), 100, name="n")


@claims.add("big", "decided on a GPU", decided_by="paper")
def _big(res, v):
    return v.undecided(f"n = {res.config['n']} < 10000")


@pytest.fixture(scope="module")
def toy_pages():
    @study(
        "toy-pages",
        title="A toy for the page generator",
        paper="Someone, arXiv 2401.00001 (2024)",
        config=PageConfig,
        claims=claims,
        presets={
            "quick": Preset.of("quick", "seconds"),
            "cpu": Preset.of("cpu", "a minute", n=(100, "decides mid")),
            "paper": Preset.of("paper", "the paper's", gpu_minutes=3, n=(10_000, "decides big")),
        },
    )
    def run(cfg: PageConfig, ctx: RunContext) -> None:
        ctx.scalar("n", cfg.n)
        for name in ("curve", "extra"):
            fig, ax = plt.subplots(figsize=(12, 4))
            ax.plot(range(cfg.n))
            ax.set_title(name)
            ctx.figure(name, fig)

    yield run
    REGISTRY._studies.pop("toy-pages", None)


def test_generator_writes_blocks_figures_and_keeps_prose(toy_pages, tmp_path):
    store = Store(tmp_path / "store")
    execute("toy-pages", "quick", 0, store=store)
    out = tmp_path / "pages"
    report = write_page(toy_pages, [store], out, seed=0)
    text = report.path.read_text()
    assert set(generated_blocks(text)) == set(BLOCKS)
    assert page_claim_ids(text) == ["small", "mid", "big"]
    block = generated_blocks(text)["claims"]
    assert "| `small`<br>quick | quick: passed with departures | 0 | &lt;= 1 | a toy departure |" in block
    assert "| `mid`<br>cpu | quick: not decided<br>cpu: not run |" in block
    assert "**cpu**, seed 0: not run." in block
    assert "[arXiv 2401.00001](https://arxiv.org/abs/2401.00001)" in generated_blocks(text)["header"]
    assert "| `n` | size of the toy problem | 10 | 100 | 10000 |" in generated_blocks(text)["sizes"]
    assert "a toy departure: declared at every preset" in generated_blocks(text)["differs"]
    # Figures: both are shown (few), downsized to 900 px and quantised.
    from PIL import Image

    assert sorted(report.images) == ["quick-curve.png", "quick-extra.png"]
    with Image.open(out / "img" / "toy-pages" / "quick-curve.png") as img:
        assert img.width == 900 and img.mode == "P"
    # Hand-written prose survives; the prose picks the figures it names; a cpu run fills its column.
    text = text.replace("## What is built\n", "## What is built\n\nHand-written: the toy, with its `curve`.\n")
    report.path.write_text(text)
    execute("toy-pages", "cpu", 0, store=store)
    report = write_page(toy_pages, [store], out, seed=0)
    again = report.path.read_text()
    assert "Hand-written: the toy, with its `curve`." in again
    assert strip_generated(again) == strip_generated(text)
    assert "| `mid`<br>cpu | quick: not decided<br>cpu: passed | 100 |" in again
    assert sorted(report.images) == ["cpu-curve.png", "quick-curve.png"]
    assert not (out / "img" / "toy-pages" / "quick-extra.png").exists()  # no longer shown: removed


def test_generator_names_an_older_config_and_reads_not_run(toy_pages, tmp_path):
    old = Store(tmp_path / "old")
    execute("toy-pages", "cpu", 0, overrides={"n": 50}, store=old)  # stored as "cpu", not today's cpu config
    runner = CliRunner()
    res = runner.invoke(app, ["pages", "toy-pages", "--store", str(old.root), "--out", str(tmp_path / "pages")])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "pages" / "toy-pages.md").read_text()
    assert "This run's config is not today's cpu preset" in text
    assert "**quick**, seed 0: not run." in text
    assert "| `small`<br>quick | quick: not run<br>cpu: passed with departures |" in text
    assert "| `mid`<br>cpu | cpu: not decided: n = 50 &lt; 100 |" in text
