"""One config vocabulary (core/fields.py): a cheap AST lint over every built-in study's config."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from theorylab.core import fields

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "src" / "theorylab" / "studies").glob("*/config.py"))
EXAMPLE = ROOT / "examples" / "minimal_study.py"  # the template to copy follows the vocabulary too
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
    # one word each for n, levels, sample counts and dimensions (docs/adding-a-study.md)
    "moment_samples": "moment_n",
    "test_samples": "test_n",
    "init_mc_samples": "init_mc_n",
    "mc_samples": "mc_n",
    "edge_samples": "edge_n",
    "eval_samples": "eval_n",
    "oracle_samples": "oracle_n",
    "gauss_samples": "gauss_n",
    "bayes_samples": "bayes_n",
    "semigroup_points": "semigroup_n",
    "test_size": "test_n",
    "lm_test_size": "lm_test_n",
    "histogram_size": "histogram_n",
    "sample_sizes": "ns / <part>_ns",
    "train_sizes": "train_n (samples) or train_n_entities (entities)",
    "construction_sizes": "construction_n_entities",
    "cot_size": "cot_n_entities",
    "assoc_sizes": "assoc_n_entities",
    "twohop_sizes": "twohop_n_entities",
    "reduction_n": "reduction_particles (quantile particles, not samples)",
    "cycle_n": "cycle_nodes",
    "truth_n": "truth_grid",
    "qg_truth_n": "qg_truth_grid",
    "kolmogorov_truth_n": "kolmogorov_truth_grid",
    "kolmogorov_solve_n": "kolmogorov_solve_grid",
    "kolmogorov_store_n": "kolmogorov_store_grid",
    "qg_solve_n": "qg_solve_grid",
    "qg_store_n": "qg_store_grid",
    "ls_n2": "ls_grid_2d",
    "ls_n3": "ls_grid_3d",
    "sgd_grid": "sgd_cases (*_grid is grid points)",
    "isotropic_n": "isotropic_dim",
    "mamba_hidden": "mamba_d_model",
    "mamba_state": "mamba_state_dim",
    "levels": "noise_levels (diffusion), scales (multiscale grids), <part>_n_scales (K), tree_depths, n_downsamplings",
    "low_levels": "low_noise_levels",
    "refine_levels": "refine_noise_levels",
    "qg_levels": "qg_scales",
    "kolmogorov_levels": "kolmogorov_scales (closure grids) or kolmogorov_n_downsamplings (U-Net)",
    "hosvd_levels": "hosvd_n_scales",
    "unfold_levels": "unfold_n_scales",
    "tf_tree_levels": "tf_tree_depths",
}
RETIRED_PREFIXES = {"dn", "kf", "id", "sm", "m3", "p3", "sc", "seq"}  # now deepnorm_, kolmogorov_, identity_, ...
COUNT_WORDS = {"layers", "heads", "depth", "depths", "context", "vocab"}  # now n_layers, n_heads, length, vocab_size
# Types that count items: a field of one is never ``*_samples`` or ``*_size(s)``.
COUNT_TYPES = {"SampleSize", "Draws", "Entities", "GraphNodes", "GraphSize", "TreeLeaves"}
# ``n`` is a sample count: ``n``, ``<part>_n``, a grid ``ns`` / ``<part>_ns``, only on these types.
SAMPLE_TYPES = {"SampleSize", "Draws"}


def retired(name: str) -> bool:
    """A retired prefix, or a count word without its ``n_`` (``lm_layers``, not ``lm_n_layers``; a tree's depth,
    ``tree_depths``, is not a count of layers)."""
    tokens = name.split("_")
    if tokens[0] in RETIRED_PREFIXES:
        return True
    if len(tokens) < 2 or tokens[-1] not in COUNT_WORDS or "n" in tokens[:-1]:
        return False
    return not (tokens[-1] in ("depth", "depths") and tokens[-2] == "tree")


def spelling_errors(st: ast.AnnAssign) -> list[str]:
    """One spelling per concept (docs/adding-a-study.md, "The config vocabulary"): what is wrong with this field's
    name for its type, as hints; empty when it is fine."""
    name, tokens = st.target.id, st.target.id.split("_")
    types = {n.id for n in ast.walk(st.annotation) if isinstance(n, ast.Name)}
    errors = []
    if tokens[-1] == "samples":
        errors.append("a sample count is <part>_n (mc_n, not mc_samples)")
    if tokens[-1] in ("size", "sizes") and types & COUNT_TYPES:
        errors.append("a count is <part>_n / <part>_ns (samples) or <part>_n_<items> (test_n, not test_size)")
    if tokens[-1] in ("n", "ns") and not types & SAMPLE_TYPES:
        errors.append(
            "n is a sample count (SampleSize or Draws): name anything else for what it counts (*_grid, *_nodes)"
        )
    if tokens[-1] in ("n", "ns") and (tokens[-1] == "ns") != ast.unparse(st.annotation).startswith("tuple"):
        errors.append("one sample count is n / <part>_n, a grid of them (a tuple) ns / <part>_ns")
    if tokens[-1] == "d" and name != "d":
        errors.append("the data dimension is d, any other dimension <part>_dim (mc_dim, not mc_d)")
    if "Dim" in types and name not in ("d", "dims") and tokens[-1] not in ("dim", "dims"):
        errors.append("a Dim field is d / dims or <part>_dim / <part>_dims")
    if "levels" in tokens and tokens[-2:] != ["noise", "levels"]:
        errors.append(
            "levels are diffusion noise levels (<part>_noise_levels); else scales, <part>_n_scales, tree_depths"
        )
    if "NScales" in types and tokens[-2:] != ["n", "scales"]:
        errors.append("an NScales field is <part>_n_scales")
    if tokens[-1] == "grid" and ast.unparse(st.annotation).startswith("tuple"):
        errors.append("<part>_grid is the points per axis of one grid: a tuple of grids is <part>_grids")
    return errors


def _config_class(tree: ast.Module) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Config"))


def _fields(path: Path):
    tree = ast.parse(path.read_text())
    for st in _config_class(tree).body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id != "RENAMED":
            yield st  # RENAMED (a ClassVar: retired spellings and their successors) is no field


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


@pytest.mark.parametrize("path", [*STUDIES, EXAMPLE], ids=lambda p: p.parent.name)
def test_no_retired_field_name(path):
    for st in _fields(path):
        name = st.target.id
        assert name not in RETIRED, f"{path.parent.name}.{name}: retired spelling, use {RETIRED[name]}"
        assert not retired(name), f"{path.parent.name}.{name}: see docs/adding-a-study.md, config vocabulary"


@pytest.mark.parametrize("path", [*STUDIES, EXAMPLE], ids=lambda p: p.parent.name)
def test_one_spelling_for_n_levels_samples_and_dimensions(path):
    for st in _fields(path):
        errors = spelling_errors(st)
        assert not errors, f"{path.parent.name}.{st.target.id}: {'; '.join(errors)} (docs/adding-a-study.md)"


def test_the_levels_type_says_what_it_bounds():
    assert not hasattr(fields, "Levels") and hasattr(fields, "NScales")


def test_the_lint_fires():
    bad = "class XConfig:\n    dn_width: Width = Field(3, ge=2)\n"
    st = next(_fields_from(bad))
    assert retired(st.target.id) and not retired("lm_n_layers") and retired("lm_context")
    assert retired("tf_depths") and not retired("tf_tree_depths")
    assert [k.arg for k in st.value.keywords if k.arg == "ge"]
    # each spelling rule fires on a second spelling of its concept, and passes the one spelling
    for name, (annotation, rule) in SECOND_SPELLINGS.items():
        errors = spelling_errors(_field(name, annotation))
        assert any(e.startswith(rule) for e in errors), (name, errors)
    for name, annotation in ONE_SPELLING.items():
        assert not spelling_errors(_field(name, annotation)) and name not in RETIRED and not retired(name), name


def _field(name: str, annotation: str) -> ast.AnnAssign:
    return next(_fields_from(f"class XConfig:\n    {name}: {annotation} = Field(1)\n"))


# A second spelling of each concept (field: annotation, the rule that catches it) and the one spelling.
SECOND_SPELLINGS = {
    "mc_samples": ("SampleSize", "a sample count is"),  # rule 1: samples are n
    "test_size": ("SampleSize", "a count is"),
    "train_sizes": ("tuple[Annotated[SampleSize, Field(ge=2)], ...]", "a count is"),
    "construction_sizes": ("tuple[Entities, ...]", "a count is"),
    "truth_n": ("Annotated[int, Field(ge=8)]", "n is a sample count"),  # rule 2: n counts samples only
    "cycle_n": ("int", "n is a sample count"),
    "isotropic_n": ("Dim", "n is a sample count"),
    "width_ns": ("tuple[Width, ...]", "n is a sample count"),
    "split_n": ("tuple[Annotated[SampleSize, Field(ge=2)], ...]", "one sample count is n"),
    "probe_ns": ("SampleSize", "one sample count is n"),
    "mc_d": ("Dim", "the data dimension is d"),  # rule 3: one dimension suffix
    "order2_d": ("Annotated[Dim, Field(ge=4)]", "the data dimension is d"),
    "m": ("Dim", "a Dim field is"),
    "mamba_state": ("Dim", "a Dim field is"),
    "levels": ("int", "levels are"),  # rule 4: levels are diffusion noise levels only
    "qg_levels": ("tuple[int, ...]", "levels are"),
    "tf_tree_levels": ("tuple[int, ...]", "levels are"),
    "hosvd_k": ("NScales", "an NScales field is"),
    "sgd_grid": ("tuple[tuple[int, tuple[int, ...]], ...]", "<part>_grid is"),
}
ONE_SPELLING = {
    "n": "SampleSize",
    "mc_n": "Annotated[SampleSize, Field(ge=1024)]",
    "ns": "tuple[Annotated[SampleSize, Field(ge=2)], ...]",
    "bestofn_ns": "tuple[Annotated[SampleSize, Field(ge=2, le=4096)], ...]",
    "floor_n": "Draws",
    "train_n_entities": "tuple[Entities, ...]",
    "vocab_size": "VocabSize",
    "shapes_size": "Annotated[int, Field(ge=8, le=256)]",
    "truth_grid": "Annotated[int, Field(ge=8)]",
    "pde_grids": "Grids",
    "cycle_nodes": "int",
    "d": "Dim",
    "dims": "tuple[Dim, ...]",
    "state_dim": "Dim",
    "gap_dims": "tuple[Annotated[Dim, Field(ge=3)], ...]",
    "d_model": "DModel",
    "mamba_d_model": "DModel",
    "noise_levels": "int",
    "refine_noise_levels": "tuple[int, ...]",
    "scales": "tuple[int, ...]",
    "hosvd_n_scales": "NScales",
    "tf_tree_depths": "tuple[int, ...]",
    "n_layers": "NLayers",
    "n_probe": "int",
}


def _fields_from(src: str):
    for st in _config_class(ast.parse(src)).body:
        if isinstance(st, ast.AnnAssign):
            yield st


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.parent.name)
def test_a_retired_spelling_names_its_successor(path):
    """Each study's RENAMED maps a name that is no longer a field to one that is."""
    import importlib

    module = importlib.import_module(f"theorylab.studies.{path.parent.name}.config")
    cls = getattr(module, _config_class(ast.parse(path.read_text())).name)
    for old, new in cls.RENAMED.items():
        assert old not in cls.model_fields and new in cls.model_fields, f"{path.parent.name}: {old} -> {new}"
