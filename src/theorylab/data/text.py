"""Plain-text corpora and vocabularies for small language models.

- :func:`stdlib_text` (``"stdlib"``, the quick presets' default) gives real English prose that
  every Python install has: the prose paragraphs of the standard library's docstrings (about
  1.1 MB, 9,400 paragraphs, 240k words on Python 3.11), read with :mod:`ast`, in sorted file
  order; deterministic for a given Python minor version. Nothing to install, nothing downloaded.
- :func:`kjv_text` (``"kjv"``, the paper presets' default) gives a larger public-domain English
  corpus, the King James Bible (4.4 MB, 31,102 verses), exported from Debian's ``bible-kjv``
  package where it is installed (``apt-get install bible-kjv``); elsewhere asking for it is one
  line naming that command (:class:`CorpusUnavailable`).
- :func:`load_text` reads any local plain-text file (a user's WikiText or TinyStories dump).

Exports are cached under :func:`corpus_dir`.
- :class:`CharVocab` and :class:`WordVocab` map text to token ids and back.

A corpus is a name (``"kjv"``) or a path, resolved by :func:`resolve_corpus`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from theorylab.core.errors import MissingResource
from theorylab.data.markov import TriggerBatch

KJV_INSTALL = (
    "apt-get install bible-kjv  (Debian's King James Bible), or --set <corpus field>=stdlib or a local text file"
)


class CorpusUnavailable(MissingResource):
    """A named corpus is not installed here; the message says how to install it."""

    def __init__(self, name: str, fix: str = f"run `{KJV_INSTALL}`"):
        super().__init__(f"corpus '{name}'", fix)


def corpus_dir() -> Path:
    """Where exported corpora are cached: ``$THEORYLAB_CORPORA`` or ``~/.cache/theorylab/corpora``."""
    env = os.environ.get("THEORYLAB_CORPORA")
    return Path(env) if env else Path.home() / ".cache" / "theorylab" / "corpora"


def load_text(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """A local plain-text file, whole. Fails with one clear line when it is missing or empty."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"text corpus {str(p)!r} does not exist or is not a file")
    text = p.read_text(encoding=encoding, errors="replace")
    if not text.strip():
        raise ValueError(f"text corpus {str(p)!r} is empty")
    return text


_VERSE_REF = re.compile(r"^\S+?\d+:\d+\s+")


def kjv_text(cache: Path | None = None) -> str:
    """The King James Bible as plain text, one verse per line, without verse references.

    Exported once from Debian's ``bible-kjv`` (its ``bible`` program reads the compressed text of
    ``bible-kjv-text``) and cached; raises :class:`CorpusUnavailable` when neither the cache nor
    the program exists.
    """
    cache = cache or corpus_dir()
    target = cache / "kjv.txt"
    if target.is_file():
        return target.read_text(encoding="utf-8")
    program = shutil.which("bible")
    if program is None:
        raise CorpusUnavailable("kjv")
    out = subprocess.run(
        [program, "-f", "-l1000000", "gen1:1-rev22:21"],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "1000000"},
    ).stdout
    verses = [_VERSE_REF.sub("", line).strip() for line in out.splitlines() if line.strip()]
    if len(verses) < 30_000:
        raise CorpusUnavailable(
            "kjv",
            f"the 'bible' program returned {len(verses)} verses (expected 31,102); reinstall with `{KJV_INSTALL}`",
        )
    text = "\n".join(verses) + "\n"
    _write_atomic(cache, target, text)
    return text


def _write_atomic(cache: Path, target: Path, text: str) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=cache, delete=False, suffix=".part") as tmp:
        tmp.write(text)
    os.replace(tmp.name, target)  # atomic: a killed export leaves no half file


# Folders of the standard library that hold tests, demos, vendored packages or tools, not docs.
_STDLIB_SKIP = frozenset(
    {
        "site-packages",
        "dist-packages",
        "test",
        "tests",
        "idlelib",
        "lib2to3",
        "turtledemo",
        "__pycache__",
        "ensurepip",
        "venv",
    }
)
_PROSE_CHARS = re.compile(r"[A-Za-z ,.;:'()-]")


def stdlib_paragraphs(root: Path | None = None) -> list[str]:
    """The prose paragraphs of every docstring (module, class, function) of the standard library
    under ``root`` (default: this interpreter's), files in sorted order, nodes in :func:`ast.walk`
    order. A paragraph is kept when it is ASCII, has no indented or doctest line (code examples),
    at least 6 words and 40 characters, and at least 90% letters, spaces and plain punctuation;
    its lines are joined with spaces."""
    import ast
    import sysconfig

    root = Path(root or sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if not _STDLIB_SKIP.intersection(p.relative_to(root).parts))
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    out: list[str] = []
    for path in files:
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):  # a deliberately broken file (bad encodings are test data)
            continue
        for node in ast.walk(tree):
            doc = ast.get_docstring(node, clean=True) if isinstance(node, kinds) else None
            for para in re.split(r"\n\s*\n", doc or ""):
                lines = para.split("\n")
                if any(line[:1].isspace() or line.lstrip().startswith((">>>", "...")) for line in lines):
                    continue
                text = " ".join(line.strip() for line in lines)
                if (
                    text.isascii()
                    and len(text) >= 40
                    and len(text.split()) >= 6
                    and len(_PROSE_CHARS.findall(text)) >= 0.9 * len(text)
                ):
                    out.append(text)
    return out


def stdlib_text(cache: Path | None = None) -> str:
    """English prose from the standard library's docstrings (:func:`stdlib_paragraphs`), one
    paragraph per line; cached per Python minor version (the first call parses ~600 files, ~7 s)."""
    import sys

    cache = cache or corpus_dir()
    target = cache / f"stdlib-docs-py{sys.version_info.major}.{sys.version_info.minor}.txt"
    if target.is_file():
        return target.read_text(encoding="utf-8")
    paragraphs = stdlib_paragraphs()
    if len(paragraphs) < 1000:
        raise CorpusUnavailable(
            "stdlib",
            f"this Python's standard library gave {len(paragraphs)} prose paragraphs "
            f"(expected thousands: "
            "is it installed without its .py sources?); give a local text file instead",
        )
    text = "\n".join(paragraphs) + "\n"
    _write_atomic(cache, target, text)
    return text


CORPORA = {"stdlib": stdlib_text, "kjv": kjv_text}


def check_corpus(field: str, name_or_path: str) -> None:
    """Config validation: ``name_or_path`` must name a corpus in :data:`CORPORA` or an existing file
    (one clear line naming the field otherwise)."""
    if name_or_path not in CORPORA and not Path(name_or_path).expanduser().is_file():
        raise ValueError(
            f"'{field}' must be one of {sorted(CORPORA)} or an existing text file; {name_or_path!r} is neither"
        )


def resolve_corpus(name_or_path: str) -> str:
    """``"stdlib"``, ``"kjv"`` (a name in :data:`CORPORA`) or a path to a local plain-text file."""
    if name_or_path in CORPORA:
        return CORPORA[name_or_path]()
    return load_text(name_or_path)


# --------------------------------------------------------------------------------------------
# Vocabularies
# --------------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+|[^\sA-Za-z\d]")


def split_words(text: str) -> list[str]:
    """Words (with inner apostrophes), numbers and single punctuation marks; case is kept."""
    return _WORD.findall(text)


@dataclass
class CharVocab:
    """Every character of the text is a token, in sorted order."""

    chars: list[str]
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> "CharVocab":
        return cls(sorted(set(text)))

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        try:
            return np.fromiter((self.index[c] for c in text), dtype=np.int64, count=len(text))
        except KeyError as err:
            raise ValueError(f"character {err.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def char_stream(name_or_path: str) -> tuple[CharVocab, "torch.Tensor"]:
    """``(vocabulary, token stream)`` of a corpus at character level (a ``torch.long`` tensor)."""
    import torch

    text = resolve_corpus(name_or_path)
    vocab = CharVocab.from_text(text)
    return vocab, torch.as_tensor(vocab.encode(text))


def word_stream(name_or_path: str, size: int) -> tuple["WordVocab", Tensor]:
    """``(vocabulary, token stream)`` of a corpus at word level: the ``size - 1`` most frequent words
    and ``<unk>`` (:class:`WordVocab`), the stream a ``torch.long`` tensor."""
    text = resolve_corpus(name_or_path)
    vocab = WordVocab.from_text(text, size)
    return vocab, torch.as_tensor(vocab.encode(text))


@dataclass
class WordVocab:
    """The ``size - 1`` most frequent words of the text plus ``<unk>`` (id 0) for the rest."""

    words: list[str]
    counts: np.ndarray
    index: dict[str, int] = field(init=False)
    unk: int = 0

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def from_text(cls, text: str, size: int) -> "WordVocab":
        if size < 2:
            raise ValueError(f"a word vocabulary needs size >= 2, got {size}")
        counts = Counter(split_words(text))
        top = counts.most_common(size - 1)
        rest = sum(counts.values()) - sum(c for _, c in top)
        return cls(["<unk>"] + [w for w, _ in top], np.array([rest] + [c for _, c in top], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> np.ndarray:
        return np.array([self.index.get(w, self.unk) for w in split_words(text)], dtype=np.int64)

    def decode(self, ids) -> str:
        return " ".join(self.words[int(i)] for i in ids)


def random_windows(stream: np.ndarray | Tensor, n: int, length: int, generator: torch.Generator) -> Tensor:
    """``n`` windows of ``length`` consecutive tokens at uniform random offsets: (n, length)."""
    s = torch.as_tensor(stream)
    if len(s) <= length:
        raise ValueError(f"the token stream ({len(s)} tokens) is shorter than one window of {length}")
    start = torch.randint(len(s) - length + 1, (n,), generator=generator)
    return s[start[:, None] + torch.arange(length)]


def random_span(stream: np.ndarray | Tensor, length: int, generator: torch.Generator) -> Tensor:
    """One span of ``length`` consecutive tokens at a uniform offset in ``[0, len - length)`` (the last
    possible offset excluded): ``(length,)``; one draw of ``generator``."""
    s = torch.as_tensor(stream)
    if len(s) <= length:
        raise ValueError(f"the token stream ({len(s)} tokens) is shorter than one span of {length} + 1")
    start = int(torch.randint(0, len(s) - length, (1,), generator=generator))
    return s[start : start + length]


# --------------------------------------------------------------------------------------------
# The noisy in-context recall task written into real text
# --------------------------------------------------------------------------------------------


def proper_names(vocab: WordVocab, min_len: int = 3) -> list[int]:
    """Ids of capitalised words whose lower-case form is not in the vocabulary (``Moses``,
    ``Jerusalem``; not ``And``): the corpus's own names, the answers of name-recall probes."""
    return [
        i
        for i, w in enumerate(vocab.words)
        if i != vocab.unk and w[:1].isupper() and w.isalpha() and len(w) >= min_len and w.lower() not in vocab.index
    ]


@dataclass(frozen=True)
class TriggerWordTask:
    """Real text in which every occurrence of a *trigger word* is followed by the window's own
    answer (a name) with probability ``1 - p`` and by a *generic word* with probability ``p``.

    This is the noisy in-context recall task of Chen, Bruna, Bietti (arXiv 2406.03068, Sec. 3)
    with a real corpus as the background instead of a bigram chain: choosing the generic word as
    the trigger's most frequent successor in the corpus (``of`` -> ``the`` in the King James
    Bible) makes the distributional answer the one the text itself teaches.
    """

    trigger: int
    generic: int
    answers: torch.Tensor  # (A,) candidate answer ids

    @classmethod
    def from_corpus(cls, vocab: WordVocab, stream: np.ndarray, trigger_word: str) -> "TriggerWordTask":
        if trigger_word not in vocab.index:
            raise ValueError(f"trigger word {trigger_word!r} is not in the vocabulary")
        trig = vocab.index[trigger_word]
        s = np.asarray(stream)
        follow = np.bincount(s[1:][s[:-1] == trig], minlength=len(vocab))
        follow[vocab.unk] = 0
        generic = int(np.argmax(follow))
        answers = [i for i in proper_names(vocab) if i not in (trig, generic)]
        if len(answers) < 2:
            raise ValueError("the vocabulary holds fewer than 2 proper names to use as answers")
        return cls(trig, generic, torch.tensor(answers))

    def write(self, windows: Tensor, p_noise: float, generator: torch.Generator) -> "TriggerBatch":
        """Write the task into ``windows`` (n, T) (a copy): per window one answer; after each
        trigger (not in the last position) the answer w.p. ``1 - p_noise``, else the generic word."""
        tokens = windows.clone()
        n, t = tokens.shape
        outputs = self.answers[torch.randint(len(self.answers), (n,), generator=generator)]
        after = tokens == self.trigger
        after[:, -1] = False
        noisy = torch.rand(n, t, generator=generator) < p_noise
        fill = torch.where(noisy, torch.full_like(tokens, self.generic), outputs[:, None].expand(n, t))
        nxt = torch.zeros_like(after)
        nxt[:, 1:] = after[:, :-1]
        tokens = torch.where(nxt, fill, tokens)
        after = tokens == self.trigger  # a written answer is never the trigger, so this is unchanged
        after[:, -1] = False
        earlier = torch.cumsum(after.long(), dim=1) - after.long()
        return TriggerBatch(tokens=tokens, outputs=outputs, after_trigger=after, seen=after & (earlier > 0))
