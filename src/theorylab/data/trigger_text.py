"""The noisy in-context recall task on text: a character-bigram background, and a word-level corpus
with the task written in.

Chen, Bruna, Bietti, "Distributional Associations vs In-Context Reasoning" (arXiv 2406.03068):
after a trigger token the next token is the sequence's own answer (in context) or a generic token
(a global association). :func:`trigger_noise_task` builds the synthetic task on a Dirichlet chain or
on a text's character bigrams (the authors use tiny Shakespeare); :func:`word_trigger_corpus`
prepares a word-level corpus for a language model into which :class:`~theorylab.data.text.TriggerWordTask`
writes the task with real words (the paper's Pythia probes, Sec. 5); :func:`probe_windows`,
:func:`repeated_names` and :func:`trigger_prompts` are the held-out probes read by
:mod:`theorylab.probes.trigger_recall`.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np
import torch
from torch import Tensor

from theorylab.data.markov import TriggerBatch, TriggerNoiseTask, bigram_counts
from theorylab.data.text import CharVocab, TriggerWordTask, WordVocab, proper_names, random_windows, resolve_corpus


def trigger_noise_task(background: str, vocab: int, alpha: float, trigger_boost: float, seed: int) -> TriggerNoiseTask:
    """``background="dirichlet"``: Dirichlet(``alpha``) bigram rows on ``vocab`` tokens drawn with
    ``seed``; otherwise a corpus name or text file (:func:`~theorylab.data.text.resolve_corpus`) whose
    character-bigram chain is the background, with one extra token (the last id) as the noise token
    (``vocab``, ``alpha`` and ``seed`` are then unused)."""
    if background == "dirichlet":
        return TriggerNoiseTask.dirichlet(vocab, alpha, trigger_boost, seed=seed)
    text = resolve_corpus(background)
    chars = CharVocab.from_text(text)
    size = len(chars) + 1  # the last id is the noise token, never emitted by the text
    transition = bigram_counts(chars.encode(text), size)
    return TriggerNoiseTask.from_transition(transition, noise=size - 1, trigger_boost=trigger_boost)


class CorpusTooShort(ValueError):
    """The corpus holds too few words for one window in its training or held-out part."""

    def __init__(self, words: int, window: int):
        self.words, self.window = words, window
        super().__init__(f"{words} words is too short for windows of {window} tokens")


class TriggerCorpus(NamedTuple):
    """A word vocabulary, the training and held-out token streams, and the trigger task on them."""

    vocab: WordVocab
    train: np.ndarray
    held_out: np.ndarray
    task: TriggerWordTask


def word_trigger_corpus(
    text: str, vocab_size: int, trigger_word: str, window: int, train_frac: float = 0.9
) -> TriggerCorpus:
    """The ``vocab_size`` most frequent words (with ``<unk>``), the first ``train_frac`` of the text as
    the training stream and the rest held out, and the task whose trigger is ``trigger_word`` and
    whose generic word is the trigger's most frequent successor in the training stream.
    Raises :class:`CorpusTooShort` when either stream is not longer than ``window``."""
    vocab = WordVocab.from_text(text, vocab_size)
    stream = vocab.encode(text)
    cut = int(train_frac * len(stream))
    if cut <= window or len(stream) - cut <= window:
        raise CorpusTooShort(len(stream), window)
    task = TriggerWordTask.from_corpus(vocab, stream[:cut], trigger_word)
    return TriggerCorpus(vocab, stream[:cut], stream[cut:], task)


def probe_windows(
    stream: np.ndarray, task: TriggerWordTask, n: int, length: int, generator: torch.Generator
) -> tuple[TriggerBatch, Tensor]:
    """From one held-out stream: ``n`` windows with the task written in at p = 0 (in-context probes),
    then ``n`` untouched windows (natural text), both of ``length`` tokens, drawn in that order."""
    t = torch.from_numpy(stream)
    return task.write(random_windows(t, n, length, generator), 0.0, generator), random_windows(t, n, length, generator)


def held_out_probes(
    stream: np.ndarray, task: TriggerWordTask, n: int, length: int, generators: Mapping[str, torch.Generator]
) -> dict[str, tuple[TriggerBatch, Tensor]]:
    """``stream`` cut into as many consecutive disjoint parts as ``generators`` (two: halves), each
    part named by its generator's key and given its :func:`probe_windows` (e.g. 'validation' picks
    an edit, 'test' judges it)."""
    k = len(generators)
    bounds = [i * len(stream) // k for i in range(k + 1)]
    return {
        name: probe_windows(stream[bounds[i] : bounds[i + 1]], task, n, length, g)
        for i, (name, g) in enumerate(generators.items())
    }


def name_mask(vocab: WordVocab) -> Tensor:
    """(V,) bool: the vocabulary's proper names (:func:`~theorylab.data.text.proper_names`)."""
    is_name = torch.zeros(len(vocab), dtype=torch.bool)
    is_name[proper_names(vocab)] = True
    return is_name


def repeated_names(windows: Tensor, is_name: Tensor) -> Tensor:
    """Natural repeated-name completions: position t of a window where the next token is a proper
    name that already occurred at or before t. (n, T) bool (the last position is never marked)."""
    nxt = windows[:, 1:]  # (n, T-1)
    causal = torch.ones(nxt.shape[1], windows.shape[1], dtype=torch.bool).tril()  # key j <= t
    earlier = (windows[:, None, :] == nxt[:, :, None]) & causal
    mask = torch.zeros_like(windows, dtype=torch.bool)
    mask[:, :-1] = is_name[nxt] & earlier.any(-1)
    return mask


def trigger_prompts(probes: TriggerBatch, vocab: WordVocab) -> tuple[list[str], list[str]]:
    """Text prompts that end at the last trigger with an earlier occurrence, and their answers
    (windows without such a trigger are skipped): the probes in a form any tokenizer reads."""
    prompts, answers = [], []
    for i in range(len(probes.tokens)):
        seen = torch.nonzero(probes.seen[i]).flatten()
        if len(seen):
            prompts.append(vocab.decode(probes.tokens[i, : int(seen[-1]) + 1]))
            answers.append(vocab.words[int(probes.outputs[i])])
    return prompts, answers
