"""The docs stay true: every Python block in ``docs/`` runs, every kit module has an API page.

Blocks run as written except for the size substitutions below (fewer steps, smaller graphs) that
keep the suite fast; each test then checks what the tutorial says the code produces."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LAYERS = ("core", "data", "nn", "probes", "theory", "train")


def _blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.+?)\n```", page.read_text(), re.S)


def _run(name: str, **replace: str) -> dict:
    code = "\n".join(_blocks(DOCS / "kits" / f"{name}.md"))  # a page's blocks build on each other
    for old, new in replace.items():
        assert old in code, f"substitution {old!r} no longer matches docs/kits/{name}.md"
        code = code.replace(old, new)
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the docs' own example
    return namespace


EXECUTED = {  # the pages whose Python blocks a test below runs
    "kits/toy-transformer.md",
    "kits/index-models.md",
    "kits/mean-field.md",
    "kits/corrupted-data.md",
    "kits/weight-patches.md",
    "kits/graphs.md",
    "kits/pde.md",
    "kits/attention-geometry.md",
    "kits/similarity.md",
    "verdicts.md",
}


def test_every_python_block_in_docs_is_executed_by_a_test():
    pages = {str(p.relative_to(DOCS)): len(_blocks(p)) for p in DOCS.rglob("*.md")}
    with_code = {page for page, n in pages.items() if n}
    assert with_code == EXECUTED, "a page gained or lost Python code: run it in a test here"


def test_api_pages_list_every_module():
    for layer in LAYERS:
        page = (DOCS / "api" / f"{layer}.md").read_text()
        listed = set(re.findall(rf"^::: theorylab\.{layer}\.(\w+)$", page, re.M))
        modules = {p.stem for p in (ROOT / "src" / "theorylab" / layer).glob("*.py") if p.stem != "__init__"}
        if layer == "core":
            modules -= {"report", "version"}  # the HTML report and version lookup are faces, not API
        missing, stale = sorted(modules - listed), sorted(listed - modules)
        assert listed == modules, f"docs/api/{layer}.md: missing {missing}, stale {stale}"


def test_toy_transformer_kit_example_runs():
    ns = _run("toy-transformer", **{"steps=300": "steps=5"})
    assert (ns["log"].diverged_at == -1).all()
    assert ns["cache"]["blocks.0.attn.hook_pattern"].shape == (4, 16, 10, 10)
    assert ns["logits"].shape == (256, 64, 64)  # the ablations part


def test_index_model_kit_example_runs():
    ns = _run("index-models")
    assert ns["X"].shape == (5000, 100)


def test_mean_field_kit_example_runs():
    ns = _run("mean-field")
    assert ns["sweep"].history.ref_loss[-1] < ns["sweep"].history.ref_loss[0]


def test_corrupted_data_kit_example_runs():
    ns = _run("corrupted-data", **{"steps=300": "steps=3", "4000": "400"})
    assert ns["cleaned"].shape == (400, 2)


def test_weight_patch_kit_example_runs():
    pytest.importorskip("transformers")
    ns = _run("weight-patches")
    assert max(ns["res"].errors) < 1e-12 and ns["hf"].logit_error < 1e-12 and ns["trace"].identical


def test_graph_kit_example_runs():
    pytest.importorskip("torch_geometric")
    ns = _run("graphs", **{"steps=300": "steps=5", "erdos_renyi_weighted(1000": "erdos_renyi_weighted(50"})
    assert ns["out"].shape == (ns["test"].num_nodes, 2) and ns["rounds"] >= 1


def test_attention_geometry_kit_example_runs():
    ns = _run("attention-geometry")
    assert abs(ns["entropy_production"](ns["P"])) < 1e-10 and ns["coords"].shape == (300, 2)


def test_pde_kit_example_runs():
    import torch

    threads = torch.get_num_threads()
    try:
        ns = _run("pde")  # it pins one thread, as the kit advises
    finally:
        torch.set_num_threads(threads)
    assert ns["u"].shape == (64, 1, 64) and ns["coarse"].shape == (4, 1, 32, 32)
    assert 0.02 < ns["lam"] < 0.08 and bool(ns["drifting"].isfinite().all())


def test_similarity_kit_example_runs():
    ns = _run("similarity")
    # the values the page's comments state: debiased CKA removes the small-n inflation of unrelated features
    assert abs(ns["cka_noise_debiased"]) < 0.02 < ns["cka_noise"]
    assert 0 < ns["angle"] < math.pi / 2 and 0 <= ns["drift"] < 0.01


def test_verdicts_page_example_declares_what_it_says():
    namespace: dict = {}
    exec("\n".join(_blocks(DOCS / "verdicts.md")), namespace)  # noqa: S102 - the docs' own example
    (claim,) = namespace["claims"]
    assert claim.id == "my-study/plateau" and len(claim.departures) == 2
    assert claim.departures[0].applies({"lr": 2e-3}, "quick") and not claim.departures[0].applies({"lr": 1e-3}, "quick")


def test_nothing_points_outside_the_repository():
    # The repository stands alone: the design is docs/design.md and each study's card is carried by its page.
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    pattern = re.compile("|".join([re.escape("../" + "shared"), "beside the " + "repository"]))  # split: no self-match
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".sh"} or not path.is_file():
            continue
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{name}:{i}: {line.strip()[:80]}")
    assert not hits, "references outside the repository:\n" + "\n".join(hits)
