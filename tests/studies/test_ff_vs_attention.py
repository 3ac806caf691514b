"""ff-vs-attention: the quick run, judges that fail on wrong results, the pipelines at tiny sizes.

The kit pieces (tests/data/test_markov.py, test_trigger_text.py, tests/nn/test_token_losses.py,
tests/probes/test_trigger_recall.py, test_lowrank.py, tests/train/test_trigger_recall.py) are tested there."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from result_edits import edit_table as _edit
from theorylab.core.context import RunContext
from theorylab.data.trigger_text import trigger_noise_task
from theorylab.studies import ff_vs_attention as ffa


def test_quick_claims(ffa_quick):
    v = {x.id.split("/")[1]: x for x in ffa_quick.verdicts}
    for name in ("bayes-noise-rate", "ablate-ff2", "ff2-stores-noise", "ff-first", "induction-head"):
        assert v[name].passed is True, v[name].detail
    # Off at quick (CPU budget): the reason names the preset that runs it.
    assert v["no-ff-variant"].passed is None and "--preset cpu" in v["no-ff-variant"].detail
    for name, where in (("p-sweep", "decided by the cpu preset"), ("truncation-helps", "decided by the lm preset")):
        # Not run at quick; the reason names the preset that decides it, how to measure the reduced version, and where
        # its finding is written.
        d = v[name].detail
        assert (
            v[name].passed is None
            and d.startswith(f"not decided: {where}")
            and "docs/studies/ff-vs-attention.md" in d
            and "paper size" in d
            and "--" in d
        )
    assert {"training_dynamics", "ablation_bars"} <= {p.stem for p in ffa_quick.figures}


def _last(f: pd.DataFrame) -> pd.Series:
    return f["step"] == f["step"].max()


def test_bayes_claim_fails_when_noise_is_ignored(ffa_quick):
    bad = _edit(ffa_quick, "curves", lambda f: f.assign(P_noise_full=np.where(_last(f), 0.05, f["P_noise_full"])))
    assert ffa.judges.judge_bayes(bad).passed is False


def test_ablation_claim_fails_when_ff2_is_not_the_store(ffa_quick):
    # Dropping FF2 leaves the noise prediction in place: the association is elsewhere.
    bad = _edit(ffa_quick, "curves", lambda f: f.assign(P_noise_noFF2=np.where(_last(f), 0.45, f["P_noise_noFF2"])))
    assert ffa.judges.judge_ablate(bad).passed is False
    weak = _edit(
        ffa_quick, "curves", lambda f: f.assign(acc_noFF2=np.where(_last(f), f["acc_full"] + 0.1, f["acc_noFF2"]))
    )
    assert ffa.judges.judge_ablate(weak).passed is False


def test_ff2_claim_fails_on_negative_margins(ffa_quick):
    bad = _edit(
        ffa_quick, "curves", lambda f: f.assign(ff2_margin_positive=np.where(_last(f), 0.6, f["ff2_margin_positive"]))
    )
    assert ffa.judges.judge_ff2(bad).passed is False


def test_ff_first_fails_when_icl_comes_first(ffa_quick):
    # In-context accuracy above 0.5 from the first evaluation on: t_ICL = t_FF, not twice it.
    early = _edit(ffa_quick, "curves", lambda f: f.assign(acc_noFF2=np.where(f["step"] > 0, 0.9, f["acc_noFF2"])))
    assert ffa.judges.judge_first(early).passed is False
    never = _edit(ffa_quick, "curves", lambda f: f.assign(acc_noFF2=0.1))
    assert ffa.judges.judge_first(never).passed is False


def test_induction_claim_fails_on_uniform_attention(ffa_quick):
    bad = _edit(ffa_quick, "curves", lambda f: f.assign(induction_mass=np.where(_last(f), 0.04, f["induction_mass"])))
    assert ffa.judges.judge_induction(bad).passed is False


def _synthetic_result(ffa_quick, rows: list[dict]):
    curves = pd.DataFrame(rows)
    return _edit(ffa_quick, "curves", lambda f: pd.concat([f, curves], ignore_index=True))


def test_paper_judges_on_synthetic_tables(ffa_quick):
    base = dict(
        seed=0,
        step=800,
        acc_full=0.5,
        acc_noFF2=0.95,
        ff2_margin=1.0,
        ff2_margin_positive=1.0,
        induction_mass=0.5,
        P_noise_noFF2=0.02,
    )
    sweep_ok = [dict(base, variant=f"p={p}", p_noise=p, ff=True, P_noise_full=p + 0.05) for p in (0.1, 0.3, 0.5, 0.7)]
    only = lambda rows: _edit(ffa_quick, "curves", lambda f: pd.DataFrame(rows))  # noqa: E731
    assert ffa.judges.judge_sweep(only(sweep_ok)).passed is True
    assert ffa.judges.judge_sweep(only([dict(r, P_noise_full=0.5) for r in sweep_ok])).passed is False
    assert (
        ffa.judges.judge_sweep(only([dict(r, acc_noFF2=0.8) if r["p_noise"] == 0.7 else r for r in sweep_ok])).passed
        is False
    )


def _claim(slug: str):
    return next(c for c in ffa.judges.claims if c.id == f"ff-vs-attention/{slug}")


def _truncation(rows: dict[int, tuple[float, float]]) -> pd.DataFrame:
    """A value_truncation table: rank -> (P_noise, acc), the same on both halves."""
    return pd.DataFrame(
        [
            dict(
                variant="no-ff",
                p_noise=0.5,
                seed=0,
                split=split,
                rank=r,
                positions=100,
                P_noise=pn,
                P_answer=1 - pn,
                acc=acc,
            )
            for split in ("validation", "test")
            for r, (pn, acc) in rows.items()
        ]
    )


def test_no_ff_judge_reads_the_layer2_value_path(ffa_quick):
    noff = dict(
        variant="no-ff",
        p_noise=0.5,
        ff=False,
        seed=0,
        step=800,
        P_noise_full=0.5,
        P_noise_noAttn1=0.04,
        P_noise_noAttn2=0.05,
    )
    with_noff = _synthetic_result(ffa_quick, [noff])

    def judged(curve_row, trunc):
        res = _edit(
            with_noff,
            "curves",
            lambda f: pd.concat([f[f["variant"] != "no-ff"], pd.DataFrame([curve_row])], ignore_index=True),
        )
        res.tables["value_truncation"] = trunc
        return ffa.judges.judge_no_ff(res)

    # Rank 8 removes the noise and lifts accuracy: the association sat in W_V's lower directions.
    good = {-1: (0.5, 0.12), 0: (0.05, 0.02), 1: (0.05, 0.02), 4: (0.04, 0.23), 8: (0.03, 0.41), 32: (0.5, 0.11)}
    v = judged(noff, _truncation(good))
    assert v.passed is True and "rank 8" in v.detail
    # The noise survives every truncation: the association is not in the layer-2 value path.
    assert judged(noff, _truncation({r: (max(pn, 0.3), a) for r, (pn, a) in good.items()})).passed is False
    # Only zeroing the value matrix (the whole layer) removes the noise, and it takes the in-context answer with it.
    assert (
        judged(
            noff, _truncation({-1: (0.5, 0.12), 0: (0.05, 0.02), 1: (0.05, 0.02), 8: (0.4, 0.2), 32: (0.5, 0.11)})
        ).passed
        is False
    )
    # No in-context path at all (accuracy 0 before and after): "keeps the in-context answer" would be vacuous.
    dead = {r: (pn, 0.0) for r, (pn, _) in good.items()}
    v = judged(noff, _truncation(dead))
    assert v.passed is False and "5/V" in v.detail
    # Without FF layers the model no longer predicts the noise at its rate.
    assert judged(dict(noff, P_noise_full=0.1), _truncation(good)).passed is False
    # A config without the no-FF model is undecided, not an error.
    plain = _edit(ffa_quick, "curves", lambda f: f[f["variant"] != "no-ff"])
    plain.tables.pop("value_truncation", None)
    verdict = _claim("no-ff-variant").evaluate(plain)
    assert verdict.passed is None and verdict.detail.startswith("not decided:") and not verdict.error


def test_skipped_parts_are_undecided_not_errors(ffa_quick):
    no_sweep = _edit(ffa_quick, "curves", lambda f: f[f["variant"].isin(["full", "no-ff"])])
    no_sweep.tables.pop("lm", None)
    for slug in ("p-sweep", "truncation-helps"):
        verdict = _claim(slug).evaluate(no_sweep)
        assert verdict.passed is None and not verdict.error and verdict.detail.startswith("not decided:"), (
            verdict.detail
        )


def test_laser_judge(ffa_quick):
    def with_lm(val_rows, test_rows):
        res = _edit(ffa_quick, "curves", lambda f: f)
        rows = [dict(r, split="validation") for r in val_rows] + [dict(r, split="test") for r in test_rows]
        res.tables["lm"] = pd.DataFrame(rows).assign(n_layers=4, generic="the")
        return res

    full = dict(layer=-1, rank=-1, truncated=False, icl_acc=0.30, perplexity=50.0)
    grid = [
        dict(layer=3, rank=1, truncated=True, icl_acc=0.45, perplexity=53.0),
        dict(layer=3, rank=16, truncated=True, icl_acc=0.33, perplexity=50.5),
        dict(layer=0, rank=1, truncated=True, icl_acc=0.9, perplexity=50.0),
    ]  # an early layer never counts
    assert ffa.judges.judge_laser(with_lm([full, *grid], [full, *grid])).passed is True
    # Chosen on validation, judged on test: a gain that does not carry over fails.
    flat_test = [dict(r, icl_acc=0.31) for r in grid]
    assert ffa.judges.judge_laser(with_lm([full, *grid], [full, *flat_test])).passed is False
    costly = [dict(r, perplexity=70.0) if r["layer"] == 3 else r for r in grid]
    assert ffa.judges.judge_laser(with_lm([full, *costly], [full, *costly])).passed is False


def test_language_model_part_runs_on_a_local_text(tmp_path):
    """The real-text pipeline end to end on a small local file (a smoke run: sizes far too small for the claim)."""
    text = " ".join(
        f"the son of {name} went unto the house of the LORD ."
        for name in ["Moses", "Aaron", "David", "Saul", "Jacob"] * 60
    )
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(text)
    cfg = ffa.config.FFvsAttentionConfig(
        lm_corpus=str(corpus),
        lm_vocab_size=30,
        lm_length=16,
        lm_d_model=16,
        lm_n_layers=2,
        lm_n_heads=2,
        lm_batch=4,
        lm_steps=3,
        lm_ranks=(1, 4),
        lm_probes=16,
    )
    ctx = RunContext(seed=0)
    table = ffa.run_lm(cfg, ctx)
    assert len(table) == 2 * (1 + 2 * 2) and set(table["split"]) == {"validation", "test"}
    assert set(table.loc[table["truncated"], "rank"]) == {1, 4} and set(table.loc[table["truncated"], "layer"]) == {
        0,
        1,
    }
    assert (table["generic"] == "the").all() and table["perplexity"].gt(1).all()
    assert "lm_loss" in ctx.tables


def test_paper_path_runs_at_tiny_sizes(tmp_path):
    """The paper preset's code path (SGD + momentum, constant rate, fresh data, 2 seeds, no-FF variant,
    p sweep) on CPU at tiny sizes: every variant trains and every paper judge reads its tables."""
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    tiny = dict(
        vocab_size=16,
        length=32,
        d_model=16,
        seeds=2,
        steps=12,
        batch=8,
        evaluate_every=6,
        test_sequences=64,
        trigger_boost=0.2,
        p_sweep=(0.3,),
        lm=False,
    )
    res = execute("ff-vs-attention", "paper", 0, tiny, store=Store(tmp_path), device="cpu")
    curves = res.table("curves")
    assert set(curves["variant"]) == {"full", "no-ff", "p=0.3"}
    assert set(curves["seed"]) == {0, 1} and sorted(curves["step"].unique()) == [0, 6, 12]
    v = {x.id.split("/")[1]: x for x in res.verdicts}
    assert v["no-ff-variant"].passed is not None and v["p-sweep"].passed is not None  # judged (tiny sizes: may fail)
    assert v["truncation-helps"].detail.startswith("not decided:")
    trunc = res.table("value_truncation")
    assert (
        set(trunc["split"]) == {"validation", "test"}
        and set(trunc["seed"]) == {0, 1}
        and {-1, 0, 2} <= set(trunc["rank"])
    )


def test_bad_values_fail_before_work():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="train_bank"):
        ffa.config.FFvsAttentionConfig(train_bank=10, batch=64)
    with pytest.raises(ValidationError, match="lm_n_heads"):
        ffa.config.FFvsAttentionConfig(lm_d_model=30, lm_n_heads=4)
    with pytest.raises(ValidationError, match="optimizer"):
        ffa.config.FFvsAttentionConfig(optimizer="rmsprop")
    with pytest.raises(ValidationError, match="lm_corpus"):
        ffa.config.FFvsAttentionConfig(lm=True, lm_corpus="/no/such/file.txt")
    ffa.config.FFvsAttentionConfig(lm=False, lm_corpus="/no/such/file.txt")  # not used: fine


def test_missing_corpus_fails_before_training(tmp_path, monkeypatch):
    import pytest

    from theorylab.core.errors import MissingResource
    from theorylab.data import text

    monkeypatch.setenv("THEORYLAB_CORPORA", str(tmp_path))
    monkeypatch.setattr(text.shutil, "which", lambda name: None)
    trained = []
    monkeypatch.setattr(ffa, "train_variant", lambda *a, **k: trained.append(1))
    with pytest.raises(MissingResource, match="apt-get install bible-kjv"):
        ffa.run.run(ffa.config.FFvsAttentionConfig(lm=True, lm_corpus="kjv"), RunContext(seed=0))
    assert not trained


def test_local_pretrained_model_path(tmp_path):
    """The Pythia path on a random-init GPT-NeoX saved locally with a word-level tokenizer (no download)."""
    import pytest

    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    from theorylab.nn.hf import load_local_causal_lm, mlp_input_weights

    names = ["Moses", "Aaron", "David", "Saul", "Jacob"]
    text = " ".join(f"the son of {n} went unto the house of the LORD ." for n in names * 60)
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(text)
    words = sorted(set(text.split())) + ["<eos>"]
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<eos>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<eos>")
    config = transformers.GPTNeoXConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model_dir = tmp_path / "neox"
    transformers.GPTNeoXForCausalLM(config).save_pretrained(model_dir)
    fast.save_pretrained(model_dir)
    cfg = ffa.config.FFvsAttentionConfig(
        lm_corpus=str(corpus), lm_vocab_size=30, lm_length=16, lm_ranks=(1, 4), lm_probes=16, lm_local=str(model_dir)
    )
    table = ffa.run_lm(cfg, RunContext(seed=0))
    assert len(table) == 2 * (1 + 2 * 2) and set(table.loc[table["truncated"], "layer"]) == {0, 1}
    assert table["P_answer"].between(0, 1).all() and table["perplexity"].gt(1).all() and table["positions"].gt(0).all()
    model, _ = load_local_causal_lm(model_dir)
    assert mlp_input_weights(model) == [f"gpt_neox.layers.{i}.mlp.dense_h_to_4h.weight" for i in range(2)]


def test_text_background_uses_character_bigrams(tmp_path):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store
    from theorylab.data.text import CharVocab

    text = "the quick brown fox jumps over the lazy dog; the end. " * 40
    corpus = tmp_path / "bg.txt"
    corpus.write_text(text)
    cfg = ffa.config.FFvsAttentionConfig(background=str(corpus), lm=False)
    task = trigger_noise_task(cfg.background, cfg.vocab_size, cfg.dirichlet_alpha, cfg.trigger_boost, cfg.data_seed)
    chars = CharVocab.from_text(text)
    assert task.vocab == len(chars) + 1 and task.noise == len(chars)
    assert task.trigger == chars.index[" "]  # the most frequent character
    t_idx, h_idx = chars.index["t"], chars.index["h"]
    # "t" is always followed by "h" in this text: the background row is that bigram (before the trigger jump).
    assert abs(task.transition[t_idx, h_idx] - (1 - cfg.trigger_boost)) < 1e-12
    res = execute(
        "ff-vs-attention",
        "quick",
        0,
        dict(background=str(corpus), lm=False, steps=4, evaluate_every=2, d_model=16, test_sequences=32),
        store=Store(tmp_path / "store"),
        device="cpu",
    )
    assert res.status == "done", res.message
    curves = res.table("curves")
    assert set(curves["variant"]) == {"full"}  # the quick preset trains only the main model
    assert len(curves[curves["variant"] == "full"]) == 3  # evaluations at steps 0, 2, 4


def _claim(name):
    return next(c for c in ffa.judges.claims if c.id == f"ff-vs-attention/{name}")


def test_nan_evaluations_fail_naming_them_and_recipe_departures_follow_the_config(ffa_quick):
    r, nan = ffa_quick, float("nan")
    last = r.table("curves")["step"].max()
    bad = _edit(r, "curves", lambda f: f.assign(P_noise_full=f["P_noise_full"].where(f["step"] != last, nan)))
    v = _claim("bayes-noise-rate").evaluate(bad)
    assert v.passed is False and "P_noise_full" in v.detail and f"step = {last}" in v.detail, v.detail
    bad = _edit(r, "curves", lambda f: f.assign(acc_noFF2=f["acc_noFF2"].where(f["step"] != 100, nan)))
    v = _claim("ff-first").evaluate(bad)
    assert v.passed is False and "step = 100" in v.detail, v.detail
    said = _claim("bayes-noise-rate").evaluate(r).departures
    # precision auto: bf16 training (and its departure) where the CPU has bf16 units, fp32 elsewhere
    bf16 = ["bf16 autocast"] if r.config["precision"] == "bf16" else []
    assert [d.split(" (")[0] for d in said] == ["schedule cosine", "weight_decay 0", *bf16], said
    card = {**r.config, "schedule": "constant", "weight_decay": 1e-4, "precision": "fp32"}
    assert _claim("bayes-noise-rate").declare(_claim("bayes-noise-rate").judge(r), card, "quick").departures == ()


class _SweepRes:
    """A stand-in result for the p-sweep judge: the curves' last evaluations and a quick-size config."""

    config = dict(
        d_model=64,
        length=64,
        steps=800,
        optimizer="adam",
        lr=1e-3,
        schedule="cosine",
        weight_decay=0.0,
        momentum=0.0,
        seeds=1,
        batch=64,
        vocab_size=64,
    )

    def __init__(self, acc: dict[float, float], p_noise: dict[float, float]):
        self.frame = pd.DataFrame(
            [
                dict(variant=f"p={p:g}", p_noise=p, ff=True, seed=0, step=800, acc_noFF2=a, P_noise_full=p_noise[p])
                for p, a in acc.items()
            ]
        )

    def table(self, name, unless=None):
        return self.frame


def test_p_sweep_verdict_measures_the_part_that_fails():
    """The cpu run of seed 0: P(noise) tracks p (max error 0.029) but accuracy without FF2 is 0.347 at p = 0.7. The
    verdict's measured value is that accuracy against >= 0.85 (it read 0.029 against 0 ± 0.12, which looks like a
    pass)."""
    p_noise = {0.1: 0.109, 0.3: 0.312, 0.5: 0.529, 0.7: 0.720}
    v = ffa.judges.judge_sweep(_SweepRes({0.1: 0.879, 0.3: 0.942, 0.5: 0.824, 0.7: 0.347}, p_noise))
    assert v.passed is False and v.measured == 0.347 and v.tolerance == 0.85 and "0.85" in str(v.expected)
    v = ffa.judges.judge_sweep(_SweepRes({0.1: 0.9, 0.3: 0.9, 0.5: 0.9, 0.7: 0.9}, p_noise))
    assert v.passed is True and abs(v.measured - 0.029) < 1e-9
    v = ffa.judges.judge_sweep(_SweepRes({0.1: 0.9, 0.3: 0.9, 0.5: 0.9, 0.7: 0.9}, {**p_noise, 0.7: 0.5}))
    assert v.passed is False and abs(v.measured - 0.2) < 1e-9
