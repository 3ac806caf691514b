"""The README stays true: its test command is what CI runs, and its studies table matches the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def test_toy_transformer_kit_example_runs():
    section = README[README.index("## Toy-transformer kit") :]
    code = re.search(r"```python\n(.+?)\n```", section, re.S).group(1)
    namespace: dict = {}
    exec(code.replace("steps=300", "steps=5"), namespace)  # noqa: S102 - the README's own example
    assert (namespace["log"].diverged_at == -1).all()
    assert namespace["cache"]["blocks.0.attn.hook_pattern"].shape == (4, 16, 10, 10)


def test_index_model_kit_example_runs():
    section = README[README.index("## Gaussian index-model kit") :]
    code = re.search(r"```python\n(.+?)\n```", section, re.S).group(1)
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the README's own example
    assert namespace["X"].shape == (5000, 100)


def test_mean_field_kit_example_runs():
    section = README[README.index("## Mean-field kit") :]
    code = re.search(r"```python\n(.+?)\n```", section, re.S).group(1)
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the README's own example
    assert namespace["sweep"].history.ref_loss[-1] < namespace["sweep"].history.ref_loss[0]


def _run_example(heading: str, **replace: str) -> dict:
    section = README[README.index(heading) :]
    code = re.search(r"```python\n(.+?)\n```", section, re.S).group(1)
    for old, new in replace.items():
        code = code.replace(old, new)
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the README's own example
    return namespace


def test_ablation_kit_example_runs():
    ns = _run_example("### Ablations, truncation and token data")
    assert ns["logits"].shape == (256, 64, 64)


def test_corrupted_data_kit_example_runs():
    ns = _run_example("## Corrupted-data kit", **{"steps=300": "steps=3", "4000": "400"})
    assert ns["cleaned"].shape == (400, 2)


def test_weight_patch_kit_example_runs():
    pytest.importorskip("transformers")
    ns = _run_example("## Weight-patch kit")
    assert max(ns["res"].errors) < 1e-12 and ns["hf"].logit_error < 1e-12 and ns["trace"].identical


def test_graph_kit_example_runs():
    pytest.importorskip("torch_geometric")
    ns = _run_example("## Graph kit", **{"steps=300": "steps=5", "erdos_renyi_weighted(1000": "erdos_renyi_weighted(50"})
    assert ns["out"].shape == (ns["test"].num_nodes, 2) and ns["rounds"] >= 1


def test_attention_geometry_kit_example_runs():
    ns = _run_example("## Attention-geometry kit")
    assert abs(ns["entropy_production"](ns["P"])) < 1e-10 and ns["coords"].shape == (300, 2)


def test_pde_kit_example_runs():
    import torch

    threads = torch.get_num_threads()
    try:
        ns = _run_example("## PDE kit")  # it pins one thread, as the kit advises
    finally:
        torch.set_num_threads(threads)
    assert ns["u"].shape == (64, 1, 64) and ns["coarse"].shape == (4, 1, 32, 32)
    assert 0.02 < ns["lam"] < 0.08 and bool(ns["drifting"].isfinite().all())
