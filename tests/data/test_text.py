"""Text corpora, vocabularies and the trigger task written into text."""

from __future__ import annotations

import shutil

import pytest
import torch

from theorylab.data.text import (
    CharVocab,
    TriggerWordTask,
    WordVocab,
    kjv_text,
    load_text,
    proper_names,
    random_span,
    random_windows,
    resolve_corpus,
    split_words,
    stdlib_paragraphs,
    stdlib_text,
    word_stream,
)

TEXT = (
    "And Moses said unto Aaron, Take the rod of Moses. And Aaron took the rod of the LORD; and the rod of Aaron "
    "budded.\n"
)


def test_local_text_and_errors(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text(TEXT)
    assert load_text(f) == TEXT == resolve_corpus(str(f))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_text(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(ValueError, match="empty"):
        load_text(tmp_path / "empty.txt")


def test_vocabularies_round_trip():
    chars = CharVocab.from_text(TEXT)
    assert chars.decode(chars.encode(TEXT)) == TEXT
    with pytest.raises(ValueError, match="not in the vocabulary"):
        chars.encode("Z")
    words = WordVocab.from_text(TEXT, 6)
    assert words.words[0] == "<unk>" and len(words) == 6
    assert words.words[1] == "the" and set(words.words[2:]) <= {"Aaron", "rod", "of", ",", ".", "And"}
    ids = words.encode(TEXT)
    assert len(ids) == len(split_words(TEXT)) and (ids == 0).sum() == words.counts[0]
    assert split_words("Lord's house, 12 men.") == ["Lord's", "house", ",", "12", "men", "."]


def test_proper_names_and_trigger_word_task():
    vocab = WordVocab.from_text(TEXT * 3, 40)
    names = {vocab.words[i] for i in proper_names(vocab)}
    assert (
        {"Moses", "Aaron", "LORD", "Take"} <= names and "And" not in names and "the" not in [n.lower() for n in names]
    )
    stream = vocab.encode(TEXT * 3)
    task = TriggerWordTask.from_corpus(vocab, stream, "of")
    assert vocab.words[task.generic] == "Moses" or vocab.words[task.generic] == "the"
    windows = random_windows(torch.from_numpy(stream), 50, 12, torch.Generator().manual_seed(0))
    batch = task.write(windows, 0.0, torch.Generator().manual_seed(1))
    for i in range(50):
        for t in range(11):
            if windows[i, t] == task.trigger:
                assert batch.tokens[i, t + 1] == batch.outputs[i]
            elif t == 0 or windows[i, t - 1] != task.trigger:
                assert batch.tokens[i, t] == windows[i, t]
    noisy = task.write(windows, 1.0, torch.Generator().manual_seed(1))
    assert (noisy.tokens[:, 1:][noisy.after_trigger[:, :-1]] == task.generic).all()


def test_random_windows_are_slices():
    stream = torch.arange(100)
    w = random_windows(stream, 20, 7, torch.Generator().manual_seed(0))
    assert w.shape == (20, 7) and ((w[:, 1:] - w[:, :-1]) == 1).all()
    with pytest.raises(ValueError, match="shorter"):
        random_windows(stream, 1, 100, torch.Generator())


def test_kjv_missing_is_one_line_naming_the_install(tmp_path, monkeypatch):
    from theorylab.core.errors import MissingResource
    from theorylab.data import text as text_mod

    monkeypatch.setattr(text_mod.shutil, "which", lambda name: None)
    with pytest.raises(MissingResource, match="apt-get install bible-kjv") as err:
        kjv_text(tmp_path)
    assert "\n" not in str(err.value) and "stdlib" in str(err.value)


@pytest.mark.skipif(
    shutil.which("bible") is None,
    reason="Debian's bible-kjv is not installed here (apt-get install bible-kjv); the 'stdlib' corpus needs nothing",
)
def test_kjv_corpus(tmp_path, monkeypatch):
    text = kjv_text(tmp_path)
    lines = text.splitlines()
    assert len(lines) == 31102
    assert lines[0] == "In the beginning God created the heaven and the earth."
    assert lines[-1] == "The grace of our Lord Jesus Christ be with you all. Amen."
    assert (tmp_path / "kjv.txt").is_file() and kjv_text(tmp_path) == text  # cached
    vocab = WordVocab.from_text(text, 1000)
    task = TriggerWordTask.from_corpus(vocab, vocab.encode(text), "of")
    assert vocab.words[task.generic] == "the"


@pytest.mark.slow  # > 5 s on 2 cores: outside the fast tier
def test_stdlib_corpus_is_prose_from_this_python(tmp_path):
    text = stdlib_text(tmp_path)
    paragraphs = text.splitlines()
    assert len(paragraphs) > 3000 and len(text) > 500_000 and text.isascii()
    assert not any(p.lstrip().startswith(">>>") for p in paragraphs)
    # cached per minor version
    assert stdlib_text(tmp_path) == text and len(list(tmp_path.glob("stdlib-docs-py*.txt"))) == 1
    assert resolve_corpus("stdlib") is not None
    words = WordVocab.from_text(text, 1000)
    # the word-level task finds its answers here too
    task = TriggerWordTask.from_corpus(words, words.encode(text), "of")
    assert words.words[task.generic] == "the" and len(task.answers) >= 2
    assert 60 <= len(CharVocab.from_text(text)) <= 100  # printable ASCII: a character vocabulary like the KJV's


def test_stdlib_paragraphs_are_deterministic_and_keep_only_prose(tmp_path):
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    (lib / "test").mkdir()
    (lib / "b.py").write_text('"""Second module with a docstring that is long enough to be prose here."""\n')
    (lib / "pkg" / "a.py").write_text(
        '"""First module docstring that holds a paragraph of plain English words.\n\n    indented code example '
        "line\n\n>>> 1 + 1\n\n"
        'Short.\n"""\n\ndef f():\n    """A function docstring, also a plain sentence in English words."""\n'
    )
    (lib / "test" / "t.py").write_text('"""A test module docstring that must be skipped entirely by the reader."""\n')
    (lib / "broken.py").write_text("def (:\n")
    got = stdlib_paragraphs(lib)
    assert got == [
        "Second module with a docstring that is long enough to be prose here.",
        "First module docstring that holds a paragraph of plain English words.",
        "A function docstring, also a plain sentence in English words.",
    ]


def test_word_stream_round_trips_the_corpus(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text(TEXT)
    vocab, stream = word_stream(str(f), 1000)
    assert stream.dtype == torch.long and vocab.decode(stream) == " ".join(split_words(TEXT))
    small, s2 = word_stream(str(f), 3)  # <unk> + the 2 most frequent words
    assert len(small) == 3 and set(s2.tolist()) == {0, 1, 2} and small.words[1:] == ["the", "Aaron"]  # ties: first seen


def test_random_span_is_a_slice_with_every_offset_but_the_last():
    stream = torch.arange(10)
    starts = set()
    for seed in range(300):
        span = random_span(stream, 4, torch.Generator().manual_seed(seed))
        assert torch.equal(span, torch.arange(int(span[0]), int(span[0]) + 4))
        starts.add(int(span[0]))
    assert starts == set(range(6))  # offsets 0..5: 6 = len - length is excluded
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert int(random_span(stream, 4, g1)[0]) == int(torch.randint(0, 6, (1,), generator=g2))
    with pytest.raises(ValueError, match="shorter"):
        random_span(stream, 10, torch.Generator())
