"""One config vocabulary (core/fields.py): a cheap AST lint over every built-in study's config."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from theorylab.core import fields

STUDIES = sorted((Path(__file__).resolve().parents[2] / "src" / "theorylab" / "studies").glob("*/config.py"))
SHARED = set(fields.__all__)
# Concepts one study alone uses keep one local alias, defined once, in that study.
LOCAL = {"Skew", "Multiplier", "Sparsity", "GraphSize", "NoiseVariance"}
# Spellings this vocabulary retired (issue 19): use the word on the right instead.
RETIRED = {
    "eta": "lr / sparsity / leak / skew",
    "etas": "lrs / sparsities / skews",
    "hidden": "width or d_model",
    "seq_len": "length",
    "n_seeds": "seeds",
    "n_draws": "draws",
    "ff_width": "mlp_width",
    "ff_mult": "mlp_mult",
    "hidden_mult": "mlp_mult",
    "eval_every": "evaluate_every",
    "vocab": "vocab_size",
    "depth": "n_layers",
    "depths": "n_layers",
    "heads": "n_heads",
    "block": "chunk",
    "data_path": "image_path",
}
RETIRED_PREFIXES = {"dn", "kf", "id", "sm", "m3", "p3", "sc", "seq"}  # now deepnorm_, kolmogorov_, identity_, ...
COUNT_WORDS = {"layers", "heads", "depth", "depths", "context", "vocab"}  # now n_layers, n_heads, length, vocab_size


def retired(name: str) -> bool:
    """A retired prefix, or a count word without its ``n_`` (``lm_layers``, not ``lm_n_layers``)."""
    tokens = name.split("_")
    return tokens[0] in RETIRED_PREFIXES or (len(tokens) > 1 and tokens[-1] in COUNT_WORDS and "n" not in tokens[:-1])


def _config_class(tree: ast.Module) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Config"))


def _fields(path: Path):
    tree = ast.parse(path.read_text())
    for st in _config_class(tree).body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            yield st


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.parent.name)
def test_no_private_numeric_alias(path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Subscript)
            and ast.unparse(node.value).startswith(("Annotated[int", "Annotated[float"))
        ):
            name = node.targets[0].id
            assert name in LOCAL, f"{path.parent.name}: {name} = {ast.unparse(node.value)}: use core/fields.py"


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.parent.name)
def test_no_bound_in_field_call_on_a_shared_type(path):
    # ``x: Steps = Field(5, ge=2)``: pydantic applies the type's ge=1 last, so the narrowing is lost.
    for st in _fields(path):
        names = {n.id for n in ast.walk(st.annotation) if isinstance(n, ast.Name)}
        call = st.value
        if names & (SHARED | LOCAL) and isinstance(call, ast.Call):
            bounds = [k.arg for k in call.keywords if k.arg in ("ge", "gt", "le", "lt")]
            assert not bounds, f"{path.parent.name}.{st.target.id}: write Annotated[T, Field({bounds[0]}=...)]"


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.parent.name)
def test_no_retired_field_name(path):
    for st in _fields(path):
        name = st.target.id
        assert name not in RETIRED, f"{path.parent.name}.{name}: retired spelling, use {RETIRED[name]}"
        assert not retired(name), f"{path.parent.name}.{name}: see docs/adding-a-study.md, config vocabulary"


def test_the_lint_fires():
    bad = "class XConfig:\n    dn_width: Width = Field(3, ge=2)\n"
    st = next(_fields_from(bad))
    assert retired(st.target.id) and not retired("lm_n_layers") and retired("lm_context")
    assert [k.arg for k in st.value.keywords if k.arg == "ge"]


def _fields_from(src: str):
    for st in _config_class(ast.parse(src)).body:
        if isinstance(st, ast.AnnAssign):
            yield st
