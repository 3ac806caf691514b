"""train.fact_recall: chunked margins vs full logits, CoT vs a loop, training to 100%, and transfer's freeze."""

from __future__ import annotations

import numpy as np
import torch

from theorylab.data.facts import random_bijections
from theorylab.theory.geometric_memory import code_length, margins
from theorylab.train.fact_recall import construction_model, cot_margins, fact_margins, fact_model, train_facts, transfer


def test_construction_model_recalls_every_fact_with_margin_two():
    facts = random_bijections(100, 3, torch.Generator().manual_seed(0))
    model = construction_model(facts, code_length(100))
    seq, tgt = facts.queries()
    m, pred = fact_margins(model, seq, tgt, chunk=37)
    full = model(seq)[:, -1]
    torch.testing.assert_close(m, margins(full, tgt))  # chunked last-position path == full forward
    assert torch.equal(pred, tgt) and m.min() == 2 and m.max() >= 2
    f32 = construction_model(facts, code_length(100), dtype=torch.float32)
    assert torch.equal(fact_margins(f32, seq, tgt)[0].double(), m)  # small integers: exact in float32


def test_cot_margins_match_a_loop():
    facts = random_bijections(20, 3, torch.Generator().manual_seed(1))
    model = construction_model(facts, code_length(20))
    m = cot_margins(model, facts, chunk=50)
    assert len(m) == 20 * 9 and m.min() == 2
    wrong = construction_model(random_bijections(20, 3, torch.Generator().manual_seed(2)), code_length(20))
    bad = cot_margins(wrong, facts)
    seq, ans, _ = facts.chains(2)
    for i in range(0, 180, 17):  # the loop: argmax twice by hand
        s, r1, r2 = seq[i].tolist()
        mid = int(wrong(torch.tensor([[s, r1]]))[0, -1].argmax())
        out = wrong(torch.tensor([[mid, r2]]))[0, -1]
        assert (bad[i] > 0) == (int(out.argmax()) == int(ans[i]) and mid == int(facts.chains(2)[2][i, 0]))
    assert (bad > 0).double().mean() < 0.2


def test_training_reaches_full_recall_and_transfer_freezes_the_rest():
    facts = random_bijections(32, 2, torch.Generator().manual_seed(3))
    seq, tgt = facts.queries()
    model = fact_model(32, 2, 10, 40, seed=0)
    train_facts(model, seq, tgt, steps=300, lr=1e-2)
    assert (fact_margins(model, seq, tgt)[0] > 0).all()
    frozen = {n: p.detach().clone() for n, p in model.named_parameters()}
    new = random_bijections(32, 2, torch.Generator().manual_seed(4))
    curve = transfer(model, new, steps=40, lr=1e-2, generator=torch.Generator().manual_seed(5), evaluate_every=20)
    assert [s for s, _ in curve] == [0, 20, 40]
    for n, p in model.named_parameters():
        if n == "embed.weight":
            assert torch.equal(p[32:], frozen[n][32:])  # relation rows untouched
            assert not torch.equal(p[:32], frozen[n][:32])
        else:
            assert torch.equal(p, frozen[n]), n
    assert curve[-1][1] > curve[0][1]
    assert np.isfinite(curve[-1][1])
