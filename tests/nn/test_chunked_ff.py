"""nn.chunked_ff: the cache-friendly FF block equals the plain one (values and gradients) to fp32 rounding."""

from __future__ import annotations

import pytest
import torch
from torch.func import grad, vmap

from theorylab.nn import ToyTransformer
from theorylab.nn.chunked_ff import chunked_ff


def _plain(x, w1, b1, w2, b2, activation):
    pre = x @ w1.mT + (0 if b1 is None else b1)
    h = torch.relu(pre) if activation == "relu" else torch.nn.functional.gelu(pre)
    return h @ w2.mT + (0 if b2 is None else b2)


def _params(d=8, m=48, d_out=5, bias=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    w1, w2 = torch.randn(m, d, generator=g) / d**0.5, torch.randn(d_out, m, generator=g) / m**0.5
    b1, b2 = (torch.randn(m, generator=g), torch.randn(d_out, generator=g)) if bias else (None, None)
    return w1, b1, w2, b2


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])  # 7 does not divide the 50 tokens; 1000 is one chunk
def test_values_and_gradients_match_the_plain_block(activation, bias, chunk):
    w1, b1, w2, b2 = _params(bias=bias)
    x = torch.randn(50, 8, dtype=torch.float64)
    params = [p.double().requires_grad_() if p is not None else None for p in (w1, b1, w2, b2)]
    xs = [x.clone().requires_grad_() for _ in range(2)]
    target = torch.randn(50, 5, dtype=torch.float64)
    outs = [_plain(xs[0], *params, activation), chunked_ff(xs[1], *params, activation=activation, chunk=chunk)]
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-12, atol=1e-12)
    grads = []
    for out, xi in zip(outs, xs):
        live = [xi] + [p for p in params if p is not None]
        grads.append(torch.autograd.grad((out * target).sum(), live))
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12)  # float64: equal up to summation order


def test_works_under_vmap_of_grad_as_the_stacked_trainer_calls_it():
    S, N = 3, 40
    w1, b1, w2, b2 = (torch.stack([_params(seed=s)[i] for s in range(S)]) for i in range(4))
    x = torch.randn(S, N, 8)

    def loss(fn, w1, b1, w2, b2, x):
        return fn(x, w1, b1, w2, b2).square().mean()

    plain = vmap(grad(lambda *a: loss(lambda *b: _plain(*b, "gelu"), *a), argnums=(0, 1, 2, 3)))(w1, b1, w2, b2, x)
    chunk = vmap(
        grad(lambda *a: loss(lambda *b: chunked_ff(*b, activation="gelu", chunk=16), *a), argnums=(0, 1, 2, 3))
    )(w1, b1, w2, b2, x)
    for a, b in zip(plain, chunk):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)  # float32: rounding of a different summation order


def test_toy_transformer_takes_the_chunked_path_unless_a_hook_reads_the_hidden():
    kw = dict(vocab_size=11, d_model=16, n_heads=2, n_layers=2, mlp_width=64, max_len=9)
    plain, chunked = ToyTransformer(**kw, seed=3), ToyTransformer(**kw, ff_chunk=5, seed=3)
    tokens = torch.randint(0, 11, (4, 9), generator=torch.Generator().manual_seed(0))
    out_p, out_c = plain(tokens), chunked(tokens)
    torch.testing.assert_close(out_c, out_p, rtol=1e-5, atol=1e-6)
    out_p.square().mean().backward()
    out_c.square().mean().backward()
    for (name, a), (_, b) in zip(plain.named_parameters(), chunked.named_parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6, msg=name)
    seen = []
    mlp = chunked.blocks[0].mlp
    handle = mlp.hook_post.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    chunked(tokens)
    handle.remove()
    assert seen == [torch.Size([4, 9, 64])]  # with a hook on the hidden, the plain path runs and the hook reads it


def test_bad_arguments_fail_in_one_line():
    w1, b1, w2, b2 = _params()
    with pytest.raises(ValueError, match="activation must be one of relu, gelu"):
        chunked_ff(torch.randn(4, 8), w1, b1, w2, b2, activation="tanh")
    with pytest.raises(ValueError, match="chunk must be >= 1"):
        chunked_ff(torch.randn(4, 8), w1, b1, w2, b2, chunk=0)
