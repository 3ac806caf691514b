"""The trigger task on text: character-bigram background, word corpus, held-out probes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.markov import TriggerNoiseTask
from theorylab.data.text import CharVocab, WordVocab, proper_names, random_windows
from theorylab.data.trigger_text import (
    CorpusTooShort,
    held_out_probes,
    name_mask,
    probe_windows,
    repeated_names,
    trigger_noise_task,
    trigger_prompts,
    word_trigger_corpus,
)

TEXT = " ".join(
    f"the son of {name} went unto the house of the LORD ." for name in ["Moses", "Aaron", "David", "Saul", "Jacob"] * 60
)


def test_dirichlet_background_is_the_markov_task():
    task = trigger_noise_task("dirichlet", 16, 0.3, 0.1, seed=4)
    ref = TriggerNoiseTask.dirichlet(16, 0.3, 0.1, seed=4)
    assert np.array_equal(task.transition, ref.transition) and (task.trigger, task.noise) == (ref.trigger, ref.noise)


def test_text_background_uses_character_bigrams(tmp_path):
    text = "the quick brown fox jumps over the lazy dog; the end. " * 40
    corpus = tmp_path / "bg.txt"
    corpus.write_text(text)
    task = trigger_noise_task(str(corpus), vocab=64, alpha=0.2, trigger_boost=0.1, seed=0)
    chars = CharVocab.from_text(text)
    assert task.vocab == len(chars) + 1 and task.noise == len(chars)
    assert task.trigger == chars.index[" "]  # the most frequent character
    # "t" is always followed by "h" in this text: the background row is that bigram (before the trigger jump).
    assert abs(task.transition[chars.index["t"], chars.index["h"]] - 0.9) < 1e-12


def test_word_corpus_split_and_task():
    corpus = word_trigger_corpus(TEXT, 30, "of", window=16)
    n = len(corpus.vocab.encode(TEXT))
    assert len(corpus.train) == int(0.9 * n) and len(corpus.train) + len(corpus.held_out) == n
    assert corpus.vocab.words[corpus.task.trigger] == "of" and corpus.vocab.words[corpus.task.generic] == "the"
    with pytest.raises(CorpusTooShort, match="too short") as err:
        word_trigger_corpus(TEXT, 30, "of", window=len(corpus.held_out))
    assert err.value.words == n


def test_probe_windows_draw_probes_then_natural_text():
    corpus = word_trigger_corpus(TEXT, 30, "of", window=16)
    probes, natural = probe_windows(corpus.held_out, corpus.task, 8, 16, torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    stream = torch.from_numpy(corpus.held_out)
    expect = corpus.task.write(random_windows(stream, 8, 16, g), 0.0, g)
    assert torch.equal(probes.tokens, expect.tokens) and torch.equal(natural, random_windows(stream, 8, 16, g))
    # p = 0: every trigger with an earlier one is followed by the window's own answer
    nxt = probes.tokens[:, 1:][probes.after_trigger[:, :-1]]
    assert torch.equal(nxt, probes.outputs[:, None].expand_as(probes.tokens)[:, :-1][probes.after_trigger[:, :-1]])


def test_held_out_probes_use_disjoint_halves():
    corpus = word_trigger_corpus(TEXT, 30, "of", window=16)
    splits = held_out_probes(
        corpus.held_out, corpus.task, 4, 16, {k: torch.Generator().manual_seed(i) for i, k in enumerate(("a", "b"))}
    )
    half = len(corpus.held_out) // 2
    for i, (name, part) in enumerate((("a", corpus.held_out[:half]), ("b", corpus.held_out[half:]))):
        ref = probe_windows(part, corpus.task, 4, 16, torch.Generator().manual_seed(i))
        assert torch.equal(splits[name][0].tokens, ref[0].tokens) and torch.equal(splits[name][1], ref[1])


def test_name_mask_and_repeated_names_against_loops():
    vocab = WordVocab.from_text(TEXT, 30)
    mask = name_mask(vocab)
    assert sorted(torch.nonzero(mask).flatten().tolist()) == sorted(proper_names(vocab))
    g = torch.Generator().manual_seed(0)
    w = torch.randint(6, (8, 12), generator=g)
    is_name = torch.tensor([False, True, False, True, True, False])
    marked = repeated_names(w, is_name)
    for i in range(8):
        for t in range(12):
            expect = t < 11 and bool(is_name[w[i, t + 1]]) and bool((w[i, : t + 1] == w[i, t + 1]).any())
            assert bool(marked[i, t]) == expect


def test_trigger_prompts_end_at_the_last_seen_trigger():
    corpus = word_trigger_corpus(TEXT, 30, "of", window=16)
    probes, _ = probe_windows(corpus.held_out, corpus.task, 16, 24, torch.Generator().manual_seed(1))
    prompts, answers = trigger_prompts(probes, corpus.vocab)
    assert len(prompts) == int(probes.seen.any(1).sum()) > 0
    names = {corpus.vocab.words[i] for i in corpus.task.answers.tolist()}
    assert names == {"Moses", "Aaron", "David", "Saul", "Jacob", "LORD"}
    for prompt, answer in zip(prompts, answers):
        assert prompt.split()[-1] == "of" and answer in names
