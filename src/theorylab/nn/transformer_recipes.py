"""Ready-made :class:`~theorylab.nn.ToyTransformer` configurations of the transformer papers.

:func:`recall_transformer` is the two-layer model of Bietti et al., "Birth of a Transformer: A Memory
Viewpoint" (arXiv 2306.00802), as used by Chen, Bruna, Bietti, "Distributional Associations vs
In-Context Reasoning" (arXiv 2406.03068, Sec. 3). :func:`small_gpt` is a small GPT-style language
model (pre-LayerNorm, GELU MLP of width 4d, learned positions, causal).
"""

from __future__ import annotations

from theorylab.nn.toy_transformer import ToyTransformer


def recall_transformer(d_model: int, vocab: int, seq_len: int, ff_width: int, seed: int) -> ToyTransformer:
    """The paper's two-layer model (arXiv 2406.03068, Sec. 3; Bietti et al. 2023): one head per layer,
    learned absolute positions (``seq_len`` of them), no norm, a ReLU FF of width ``ff_width`` after
    each attention (``0``: no FF layer at all), token embedding and unembedding frozen at N(0, 1/d),
    no biases."""
    return ToyTransformer(
        d_model=d_model,
        n_layers=2,
        n_heads=1,
        mlp_width=ff_width,
        activation="relu",
        norm="none",
        causal=True,
        positional="learned",
        max_len=seq_len,
        vocab_size=vocab,
        freeze_embedding=True,
        freeze_readout=True,
        embedding_std=d_model**-0.5,
        bias=False,
        seed=seed,
    )


def small_gpt(d_model: int, n_layers: int, n_heads: int, vocab: int, max_len: int, seed: int) -> ToyTransformer:
    """A small GPT-style model: pre-LayerNorm, GELU MLP of width 4d, learned positions, causal."""
    return ToyTransformer(
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        mlp_width=4 * d_model,
        activation="gelu",
        norm="layer",
        final_norm=True,
        causal=True,
        positional="learned",
        max_len=max_len,
        vocab_size=vocab,
        seed=seed,
    )
