"""theorylab.nn.rnn.RNN against torch's own modules with the same weights."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from theorylab.nn.rnn import RNN


@pytest.mark.parametrize("kind,cls", [("gru", nn.GRU), ("lstm", nn.LSTM), ("elman", nn.RNN)])
def test_matches_torch_module(kind, cls):
    model = RNN(kind, vocab_size=7, hidden=5, embedding=3, d_output=2, seed=0)
    ref = cls(3, 5, batch_first=True)
    ref.load_state_dict(model.rnn.state_dict())
    tok = torch.randint(0, 7, (4, 9), generator=torch.Generator().manual_seed(1))
    x = model.embed.weight[tok]  # (B, T, e): the embedding by hand
    h = torch.zeros(1, 4, 5)
    states = []
    state = (h, torch.zeros_like(h)) if kind == "lstm" else h
    for t in range(9):  # one step at a time through torch's module
        out, state = ref(x[:, t : t + 1], state)
        states.append(out[:, 0])
    want = states[-1] @ model.head.weight.T + model.head.bias
    assert torch.allclose(model(tok), want, atol=1e-6)
    assert torch.allclose(model.states(tok), torch.stack(states, 1), atol=1e-6)


def test_lengths_read_the_last_real_token():
    model = RNN("gru", vocab_size=5, hidden=4, seed=1)
    tok = torch.randint(1, 5, (3, 6), generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([6, 4, 2])
    out = model(tok, lengths)
    for i, n in enumerate(lengths.tolist()):
        assert torch.allclose(out[i], model(tok[i : i + 1, :n])[0], atol=1e-6)


def test_seeded_init_and_bad_input():
    a = RNN("gru", vocab_size=5, hidden=4, seed=3)
    b = RNN("gru", vocab_size=5, hidden=4, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with pytest.raises(ValueError, match="kind"):
        RNN("transformer", vocab_size=5, hidden=4)
    with pytest.raises(ValueError, match="hidden"):
        RNN("gru", vocab_size=5, hidden=0)


def test_stacked_gru_equals_its_models():
    from theorylab.nn.rnn import StackedGRU

    models = [RNN("gru", vocab_size=5, hidden=h, embedding=3, seed=h) for h in (2, 5, 4)]
    stack = StackedGRU(models)
    tok = torch.randint(0, 5, (3, 4, 7), generator=torch.Generator().manual_seed(0))
    out = stack(tok)  # (M, B, 2)
    for i, m in enumerate(models):
        assert torch.allclose(out[i], m(tok[i]), atol=1e-6)
    out.sum().backward()  # the models' own parameters receive the gradients
    assert all(p.grad is not None for m in models for p in m.parameters())
    with pytest.raises(ValueError, match="one-layer GRU"):
        StackedGRU([RNN("lstm", vocab_size=5, hidden=4)])
