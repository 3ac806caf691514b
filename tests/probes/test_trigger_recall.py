"""Trigger-recall probes against hand-built edits of the model and brute-force sums."""

from __future__ import annotations

import math

import pandas as pd
import torch
import torch.nn.functional as F

from theorylab.data.markov import TriggerNoiseTask, split_halves
from theorylab.data.trigger_text import probe_windows, repeated_names, word_trigger_corpus
from theorylab.nn.transformer_recipes import recall_transformer, small_gpt
from theorylab.probes.trigger_recall import measure_trigger_recall, measure_word_recall, value_truncation


def _task_and_test(seed: int, n: int):
    task = TriggerNoiseTask.dirichlet(12, 0.2, trigger_boost=0.2, seed=0)
    return task, task.sample(n, 32, 0.0, torch.Generator().manual_seed(seed))


def test_measure_reads_a_hand_built_model():
    """FF2 dropped must equal a model whose FF2 down-projection is zero; P(noise) must be a probability."""
    task, test = _task_and_test(0, 32)
    model = recall_transformer(d_model=16, vocab=12, seq_len=32, ff_width=64, seed=0).double()
    m = measure_trigger_recall(model, test, task.noise)
    with torch.no_grad():
        model.blocks[1].mlp.down.weight.zero_()
    m0 = measure_trigger_recall(model, test, task.noise)
    assert abs(m["P_noise_noFF2"] - m0["P_noise_full"]) < 1e-12 and abs(m["acc_noFF2"] - m0["acc_full"]) < 1e-12
    assert 0 <= m["P_noise_full"] <= 1 and 0 <= m["induction_mass"] <= 1
    assert m0["ff2_margin"] == 0.0 and m0["ff2_margin_positive"] == 0.0  # a zero FF2 writes no logit
    with torch.no_grad():
        model.blocks[1].attn.W_O.zero_()
    m2 = measure_trigger_recall(model, test, task.noise)
    assert abs(m2["P_noise_full"] - m0["P_noise_noAttn2"]) < 1e-12  # dropping attention 2 = zero output matrix


def test_value_truncation_against_ablation_and_full_rank():
    """Rank 0 zeroes the layer-2 value matrix: the same as dropping the layer-2 attention output;
    a rank at or above d leaves the model untouched; the halves are disjoint and cover the test set."""
    task, test = _task_and_test(1, 40)
    model = recall_transformer(d_model=16, vocab=12, seq_len=32, ff_width=0, seed=0).double()
    rows = pd.DataFrame(value_truncation(model, test, task.noise, (16, 2)))
    halves = split_halves(test)
    assert len(halves["validation"].tokens) + len(halves["test"].tokens) == 40
    for split, half in halves.items():
        r = rows[rows["split"] == split].set_index("rank")
        m = measure_trigger_recall(model, half, task.noise)
        assert (
            abs(r.loc[-1, "P_noise"] - m["P_noise_full"]) < 1e-12
            and abs(r.loc[16, "P_noise"] - m["P_noise_full"]) < 1e-9
        )
        assert abs(r.loc[0, "P_noise"] - m["P_noise_noAttn2"]) < 1e-12
        assert abs(r.loc[2, "P_noise"] - m["P_noise_full"]) > 1e-6  # a real truncation changes the model


def test_word_recall_against_brute_force():
    text = " ".join(
        f"the son of {n} went unto the house of the LORD and {n} said ."
        for n in ["Moses", "Aaron", "David", "Saul"] * 40
    )
    corpus = word_trigger_corpus(text, 30, "of", window=16)
    probes, natural = probe_windows(corpus.held_out, corpus.task, 12, 16, torch.Generator().manual_seed(0))
    model = small_gpt(d_model=16, n_layers=2, n_heads=2, vocab=len(corpus.vocab), max_len=16, seed=0).double()
    is_name = torch.zeros(len(corpus.vocab), dtype=torch.bool)
    is_name[corpus.task.answers] = True
    successor = torch.arange(len(corpus.vocab)).roll(1)
    got = measure_word_recall(model, probes, natural, corpus.task.generic, is_name, successor, chunk=5)
    with torch.no_grad():
        logits = model(probes.tokens).softmax(-1)
        nat = model(natural)
    p_answer, p_generic, correct = [], [], 0
    for i, t in torch.nonzero(probes.seen).tolist():
        answer = int(probes.outputs[i])
        p_answer.append(float(logits[i, t, answer]))
        p_generic.append(float(logits[i, t, corpus.task.generic]))
        correct += int(logits[i, t].argmax()) == answer
    assert got["positions"] == len(p_answer) > 0
    assert math.isclose(got["P_answer"], sum(p_answer) / len(p_answer), rel_tol=1e-9)
    assert math.isclose(got["P_generic"], sum(p_generic) / len(p_generic), rel_tol=1e-9)
    assert math.isclose(got["icl_acc"], correct / len(p_answer))
    # chunks of 5 windows: the perplexity is exp of the mean of the per-chunk losses
    chunk_nll = [
        float(F.cross_entropy(nat[i : i + 5, :-1].reshape(-1, nat.shape[-1]), natural[i : i + 5, 1:].reshape(-1)))
        for i in range(0, 12, 5)
    ]
    assert math.isclose(got["perplexity"], math.exp(sum(chunk_nll) / len(chunk_nll)), rel_tol=1e-9)
    where = repeated_names(natural, is_name)
    assert got["natural_positions"] == int(where.sum())
    assert int(where.sum()) > 0
    probs = nat.softmax(-1)
    pairs = torch.nonzero(where).tolist()
    p_name = sum(float(probs[i, t, natural[i, t + 1]]) for i, t in pairs) / len(pairs)
    p_succ = sum(float(probs[i, t, successor[natural[i, t]]]) for i, t in pairs) / len(pairs)
    assert math.isclose(got["natural_P_name"], p_name, rel_tol=1e-9) and math.isclose(
        got["natural_P_generic"], p_succ, rel_tol=1e-9
    )
