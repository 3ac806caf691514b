"""Study pages (``docs/studies/<slug>.md``) generated from stored runs: ``theorylab pages``.

A page mixes hand-written prose with generated blocks, each between ``<!-- generated: NAME -->`` and
``<!-- end generated -->``. Regeneration rewrites the blocks only, so the prose survives:

- ``header``: the study's title, the paper and its arXiv link (from the registry);
- ``run``: how to run it (the quick preset, and the cpu preset where there is one);
- ``claims``: every registered claim with its verdict in the newest stored run of each CPU preset (quick, cpu) at
  one seed, the measured and expected values and the verdict's departures; a claim that no stored run judged reads
  "not run";
- ``figures``: the main figures of those runs, downsized into ``img/<slug>/``;
- ``sizes``: every preset's description and the config fields it sets, with their reasons;
- ``differs``: the declared departures and known failures of each claim (at the preset that decides it) and the
  card's claims that are not built.

A run is taken from the first store that holds a finished run of the preset's current config (the preset's config
hash); failing that, the newest finished run of the preset under an older config, which the page then names (run
id, config hash, date) rather than passing it off as the current preset's. Current runs are judged again with
today's declarations, as ``theorylab check`` does on reuse; older ones read as stored.

The figures shown are those a page names in a comment ``<!-- figures PRESET: name name -->``, else those its prose
names (in backticks), else the run's first ones; at most :data:`MAX_FIGURES` per preset.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from theorylab.core.inventory import ClaimEntry, inventory, preset_hashes
from theorylab.core.result import Result
from theorylab.core.store import Store
from theorylab.core.study import Study, Verdict

BLOCKS = ("header", "run", "claims", "figures", "sizes", "differs")
END = "<!-- end generated -->"
PAGE_PRESETS = ("quick", "cpu")
MAX_FIGURES = 4
MAX_WIDTH = 900
MAX_BYTES = 150_000  # a figure larger than this once quantised (a dense heatmap) is shrunk until it fits
_BLOCK_RE = re.compile(r"<!-- generated: ([a-z]+) -->\n.*?" + re.escape(END), re.S)
_ARXIV_RE = re.compile(r"arXiv[: ]*(\d{4}\.\d{4,5})")
_DESIGN_CARDS = "../design.md#cards"


def start(name: str) -> str:
    return f"<!-- generated: {name} -->"


@dataclass
class PickedRun:
    """The stored run a page shows for one preset."""

    preset: str
    row: dict[str, Any]
    result: Result
    current: bool  # the run's config hash is the preset's current one
    current_hash: str | None
    verdicts: dict[str, Verdict] = field(default_factory=dict)


def pick_run(
    study: Study, stores: Sequence[Store], preset: str, seed: int, hashes: Mapping[str, str] | None = None
) -> PickedRun | None:
    """The run of ``preset`` at ``seed`` a page shows: the newest finished run of the preset's current config in
    the first store that has one, else the newest finished run of the preset (an older config) in the first store
    that has one; None when no store has a finished run of it."""
    from theorylab.core.runner import judge

    hashes = preset_hashes(study) if hashes is None else hashes
    want = hashes.get(preset)
    found: tuple[Store, dict[str, Any]] | None = None
    stale: tuple[Store, dict[str, Any]] | None = None
    for store in stores:
        for row in store.rows(study.slug):  # newest first
            if row.get("status") != "done" or row["preset"] != preset or row["seed"] != seed:
                continue
            if not store.has(row["run_id"]):
                continue
            if row["config_hash"] == want:
                found = found or (store, row)
            else:
                stale = stale or (store, row)
        if found:
            break
    chosen = found or stale
    if chosen is None:
        return None
    store, row = chosen
    result = store.load(row["run_id"])
    if found:
        try:
            result = judge(study, result)
        except Exception:  # noqa: BLE001 - keep the stored verdicts when today's judges cannot read the run
            pass
    picked = PickedRun(preset, row, result, current=bool(found), current_hash=want)
    picked.verdicts = {v.id: v for v in result.verdicts}
    return picked


def verdict_presets(study: Study) -> list[str]:
    """The presets whose verdicts a page shows: quick, cpu where the study has one, and any other CPU preset that
    decides a claim (``cpu-depth``, ``lm``, ...), so every claim decided on a CPU shows its deciding verdict."""
    return ["quick", *study.cpu_presets]


def pick_runs(study: Study, stores: Sequence[Store], seed: int = 0) -> dict[str, PickedRun]:
    """``{preset: PickedRun}`` for the page's presets (:func:`verdict_presets`)."""
    hashes = preset_hashes(study)
    runs = {}
    for preset in verdict_presets(study):  # presets the study declares, by construction
        picked = pick_run(study, stores, preset, seed, hashes)
        if picked is not None:
            runs[preset] = picked
    return runs


# --- formatting ---------------------------------------------------------------------------------------------------
def cell(text: Any) -> str:
    """Text safe inside a Markdown table cell (one line, no pipes, no raw HTML, no stray emphasis)."""
    out = " ".join(str(text).split())
    return out.replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def prose(text: Any) -> str:
    """Declared text safe in a Markdown paragraph or list item: no raw HTML (``<w, w*>``), no emphasis from a
    starred symbol (``w*``); code spans are left alone."""
    parts = str(text).split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"(?<=[\w)'\]])\*(?!\*)", r"\\*", parts[i].replace("<", "&lt;"))
    return "`".join(parts)


def fmt(value: Any, limit: int = 60) -> str:
    """A measured or expected value, short."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        items = [fmt(v, 20) for v in value[:6]]
        return "[" + ", ".join(items) + (", …" if len(value) > 6 else "") + "]"
    if isinstance(value, dict):
        return fmt(json.dumps(value, default=str), limit)
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_departure(text: str, limit: int = 60) -> str:
    """A departure's head (``"steps 1500 (card 100000)"``), for a table cell."""
    head = text.split(": ", 1)[0]
    if head.count("(") > head.count(")"):  # cut inside a parenthesis: keep what comes before it
        head = head[: head.rfind("(")].rstrip() or head
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _date(row: Mapping[str, Any]) -> str:
    stamp = row.get("finished") or row.get("started")
    if not stamp:
        return "date not recorded"
    return _dt.datetime.fromtimestamp(float(stamp), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def arxiv_id(paper: str) -> str | None:
    match = _ARXIV_RE.search(paper)
    return match.group(1) if match else None


# --- blocks -------------------------------------------------------------------------------------------------------
def header_block(study: Study) -> str:
    lines = [f"**{study.title}**", ""]
    ident = arxiv_id(study.paper)
    paper = study.paper
    if ident:
        link = f"https://arxiv.org/abs/{ident}"
        paper = _ARXIV_RE.sub(lambda m: f"[{m.group(0)}]({link})", paper, count=1)
    lines.append(f"Paper: {paper}" + (f" · family: {study.family}" if study.family else ""))
    return "\n".join(lines)


def run_block(study: Study) -> str:
    lines = [
        "## How to run",
        "",
        "```bash",
        f"theorylab run {study.slug}          # quick preset: <= 60 s on 2 CPU cores",
    ]
    if "cpu" in study.presets:
        lines.append(f"theorylab run {study.slug} -p cpu   # cpu preset: <= 10 min on 2 CPU cores")
    lines.append("```")
    gpu = [p for p in _ordered(study) if p.on_gpu]
    others = [p for p in study.presets.values() if p.name not in PAGE_PRESETS and not p.on_gpu]
    notes = [f"`-p {p.name}` (GPU, est. {p.gpu_minutes:g} min on one H100)" for p in gpu]
    notes += [f"`-p {p.name}` (CPU)" for p in others]
    if notes:
        lines += ["", "Other presets: " + ", ".join(notes) + ". [Sizes](#sizes) lists what each one sets."]
    return "\n".join(lines)


def _run_line(picked: PickedRun) -> str:
    row, res = picked.row, picked.result
    where = [f"run `{row['run_id']}`", f"config hash `{row['config_hash']}`", _date(row)]
    meta = _meta(res)
    if meta.get("commit"):
        where.append(f"commit `{str(meta['commit'])[:12]}`")
    if res.version:
        where.append(f"version {res.version}")
    if res.wall_s:
        where.append(f"{res.wall_s:.0f} s")
    text = f"**{picked.preset}**, seed {res.seed}: " + ", ".join(where)
    if not picked.current:
        flag = "" if picked.preset == "quick" else f" -p {picked.preset}"
        text += (
            f". This run's config is not today's {picked.preset} preset (hash `{picked.current_hash}`): its "
            f"verdicts read as stored; `theorylab run {res.study}{flag}` gives today's"
        )
    return text + "."


def _meta(res: Result) -> dict[str, Any]:
    if res.path is None or not (res.path / "meta.json").is_file():
        return {}
    try:
        return json.loads((res.path / "meta.json").read_text())
    except (OSError, ValueError):
        return {}


def _verdict_words(v: Verdict | None, reason: bool = True) -> str:
    """A verdict's label; an undecided one with its reason (``reason``: the run is of the deciding preset)."""
    if v is None:
        return "not run"
    label = v.label
    if v.outcome == "undecided" and v.detail and reason:
        parts = v.detail.removeprefix("not decided: ").split("; ")
        if len(parts) > 1 and parts[0].startswith(("GPU (", "decided by ")):  # the "decided by" column says it
            parts = parts[1:]
        label += f": {fmt('; '.join(parts), 70)}"
    return label


def claims_block(study: Study, entries: Sequence[ClaimEntry], runs: Mapping[str, PickedRun], seed: int) -> str:
    presets = verdict_presets(study)
    lines = ["## Claims", ""]
    if runs:
        lines.append(
            f"Verdicts of the stored runs at seed {seed} (`theorylab claims {study.slug}` lists the same declarations):"
        )
        lines.append("")
        lines += [f"- {_run_line(runs[p])}" for p in presets if p in runs]
        lines += [f"- **{p}**, seed {seed}: not run." for p in presets if p not in runs]
    else:
        lines.append(f'No stored run of this study at seed {seed}: every verdict reads "not run".')
    lines.append("")
    lines += ["| claim (decided by) | verdict | measured | expected | departures |", "|---|---|---|---|---|"]
    for e in entries:
        short = e.id.split("/", 1)[-1]
        verdicts = {p: runs[p].verdicts.get(e.id) if p in runs else None for p in presets}
        main = verdicts.get(e.decided_by) or next((verdicts[p] for p in reversed(presets) if verdicts[p]), None)
        decided = e.decided_by + (f" (GPU, est. {e.gpu_minutes:g} min)" if e.device == "GPU" else "")
        shown = [p for p in presets if p in runs or p == e.decided_by]  # a preset not run: only where it decides
        if len(presets) == 1:
            verdict = cell(_verdict_words(verdicts[presets[0]], presets[0] == e.decided_by))
        else:
            verdict = (
                "<br>".join(cell(f"{p}: {_verdict_words(verdicts[p], p == e.decided_by)}") for p in shown) or "not run"
            )
        deps = [short_departure(d) for d in (main.departures if main else ())]
        if main is not None and main.outcome == "known":
            deps.append("known failure")
        row = [
            f"{cell(f'`{short}`')}<br>{cell(decided)}",
            verdict,
            cell(fmt(main.measured) if main else ""),
            cell(fmt(main.expected) if main else ""),
            cell("; ".join(deps)),
        ]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Statements:", ""]
    lines += [f"- `{e.id.split('/', 1)[-1]}`: {prose(e.statement)}" for e in entries]
    return "\n".join(lines)


def figures_block(study: Study, runs: Mapping[str, PickedRun], chosen: Mapping[str, list[str]]) -> str:
    """The chosen figures two to a row (a figure beside its cpu-preset counterpart where both are shown)."""
    lines = ["## Figures", ""]
    order = list(dict.fromkeys(name for names in chosen.values() for name in names))
    shown = [(preset, name) for name in order for preset in chosen if name in chosen[preset]]
    if not shown:
        return "\n".join([*lines, "No stored run with figures."])
    where = "; ".join(f"{p}: run `{runs[p].result.run_id}`, seed {runs[p].result.seed}" for p in chosen if chosen[p])
    lines += [f"From the stored runs ({where}); click a figure for full size.", ""]
    for i in range(0, len(shown), 2):
        pair = shown[i : i + 2]
        heads = [f"{p}: `{n}`" for p, n in pair] + [""] * (2 - len(pair))
        images = [f"[![{p}: {n}](img/{study.slug}/{p}-{n}.png)](img/{study.slug}/{p}-{n}.png)" for p, n in pair]
        images += [""] * (2 - len(pair))
        lines += ["| " + " | ".join(heads) + " |", "|---|---|", "| " + " | ".join(images) + " |", ""]
    return "\n".join(lines).rstrip()


def _value(value: Any) -> str:
    return fmt(value, 40)


def _ordered(study: Study) -> list[Any]:
    """The study's presets, quick and cpu first."""
    first = [study.presets[n] for n in PAGE_PRESETS if n in study.presets]
    return first + [p for n, p in study.presets.items() if n not in PAGE_PRESETS]


def sizes_block(study: Study) -> str:
    configs: dict[str, dict[str, Any]] = {}
    for name in study.presets:
        try:
            configs[name] = study.make_config(name).model_dump(mode="json")
        except Exception:  # noqa: BLE001 - a preset that does not validate is listed without values
            configs[name] = {}
    fields = list(dict.fromkeys(f for p in study.presets.values() for f in p.values))
    meaning = {name: (info.description or "") for name, info in study.config.model_fields.items()}
    lines = ["## Sizes", ""]
    for p in _ordered(study):
        where = "CPU" if p.gpu_minutes is None else f"GPU, est. {p.gpu_minutes:g} min on one H100"
        desc = p.description.strip() or "(no description)"
        lines.append(f"- **{p.name}** ({where}): {prose(desc)}")
    if fields:
        names = [p.name for p in _ordered(study)]
        lines += [
            "",
            "The fields the presets set (quick: the config's defaults unless it sets them):",
            "",
            "| field | meaning | " + " | ".join(names) + " |",
            "|" + "---|" * (len(names) + 2),
        ]
        for f in fields:
            row = [f"`{f}`", meaning.get(f, ""), *[_value(configs[n].get(f, "")) for n in names]]
            lines.append("| " + " | ".join(cell(c) for c in row) + " |")
        reasons = [(p.name, f, r) for p in _ordered(study) for f, r in p.reasons.items() if r]
        if reasons:
            lines += ["", "Why each preset sets them:", ""]
            for pname in names:
                mine = [(f, r) for n, f, r in reasons if n == pname]
                if mine:
                    lines.append(f"- **{pname}**:")
                    lines += [f"    - `{f}`: {prose(r)}" for f, r in mine]
    else:
        lines += ["", "No preset sets a field: every preset runs the config's defaults."]
    return "\n".join(lines)


def differs_block(study: Study, entries: Sequence[ClaimEntry]) -> str:
    lines = ["## What differs from the paper", ""]
    lines.append(
        "Declared on the claims, at the preset that decides each one (a run's own departures are in its "
        "verdicts above):"
    )
    lines.append("")
    groups: dict[tuple[Any, ...], list[str]] = {}  # claims that declare the same departures are listed together
    for e in entries:
        if e.departures or e.known:
            groups.setdefault((e.decided_by, tuple(e.departures), e.known), []).append(e.id.split("/", 1)[-1])
    for (decided_by, departures, known), ids in groups.items():
        lines.append("- " + ", ".join(f"`{i}`" for i in ids) + f" ({decided_by}):")
        lines += [f"    - {prose(d)}" for d in departures]
        if known:
            lines.append(f"    - **{prose(known)}**")
    if not groups:
        lines.append("- No claim declares a departure or a known failure at its deciding preset.")
    if study.not_built:
        lines += ["", "Claims of the card that are not built:", ""]
        lines += [f"- `{cid}`: {prose(why)}" for cid, why in study.not_built.items()]
    return "\n".join(lines)


# --- figures ------------------------------------------------------------------------------------------------------
def choose_figures(runs: Mapping[str, PickedRun], page_text: str) -> dict[str, list[str]]:
    """``{preset: [figure name, ...]}``: the page's ``<!-- figures PRESET: ... -->`` choice, else the figures its
    hand-written prose names, else the run's first ones."""
    hand = strip_generated(page_text)
    chosen: dict[str, list[str]] = {}
    seen: set[bytes] = set()
    for preset, picked in runs.items():
        available = [Path(p).stem for p in picked.result.figures if Path(p).suffix == ".png" and Path(p).is_file()]
        said = re.search(rf"<!-- figures {preset}: ([^>]*?) -->", hand)
        if said:
            names = [n for n in said.group(1).replace(",", " ").split() if n in available]
        else:
            names = [n for n in available if f"`{n}`" in hand] or available
        fresh = []
        for name in names[:MAX_FIGURES]:  # a figure the smaller preset's run drew identically is shown once
            data = (picked.result.path / "figures" / f"{name}.png").read_bytes()  # type: ignore[operator]
            if data not in seen:
                seen.add(data)
                fresh.append(name)
        chosen[preset] = fresh
    return chosen


def write_image(source: Path, target: Path, max_width: int = MAX_WIDTH, max_bytes: int = MAX_BYTES) -> int:
    """Copy a PNG downsized to ``max_width`` pixels and quantised to 256 colours (narrower still while it is over
    ``max_bytes``, down to 400 pixels); returns the bytes written."""
    from PIL import Image

    target.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as img:
        img = img.convert("RGB")
        width = min(img.width, max_width)
        while True:
            sized = (
                img if width == img.width else img.resize((width, round(img.height * width / img.width)), Image.LANCZOS)
            )
            small = sized.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
            small.save(target, optimize=True)
            if target.stat().st_size <= max_bytes or width <= 400:
                return target.stat().st_size
            width = max(400, int(width * 0.8))


def write_images(
    study: Study, runs: Mapping[str, PickedRun], chosen: Mapping[str, list[str]], out_dir: Path
) -> dict[str, int]:
    """Write the chosen figures into ``out_dir/img/<slug>/`` (removing our older ones there); ``{file: bytes}``."""
    folder = out_dir / "img" / study.slug
    wanted = {
        f"{preset}-{name}.png": runs[preset].result.path / "figures" / f"{name}.png"  # type: ignore[operator]
        for preset, names in chosen.items()
        for name in names
    }
    if folder.is_dir():
        for old in folder.glob("*.png"):
            if old.name not in wanted:
                old.unlink()
    return {name: write_image(src, folder / name) for name, src in wanted.items()}


# --- pages --------------------------------------------------------------------------------------------------------
def strip_generated(text: str) -> str:
    """The hand-written part of a page: its text without the generated blocks."""
    return _BLOCK_RE.sub("", text)


def generated_blocks(text: str) -> dict[str, str]:
    """``{name: content}`` of a page's generated blocks."""
    return {
        m.group(1): m.group(0)[len(start(m.group(1))) + 1 : -len(END)].strip("\n") for m in _BLOCK_RE.finditer(text)
    }


def wrap(name: str, content: str) -> str:
    return f"{start(name)}\n{content.rstrip()}\n{END}"


def skeleton(slug: str, old: str = "") -> str:
    """A new page: the blocks in order, empty hand-written sections, and an older page's text (no blocks) kept
    under Measurements."""
    body = old.strip()
    if body.startswith("# "):
        body = body.split("\n", 1)[1].strip() if "\n" in body else ""
    parts = [
        f"# {slug}",
        wrap("header", ""),
        wrap("run", ""),
        wrap("claims", ""),
        wrap("figures", ""),
        "## What the card asks",
        f"The study's [card]({_DESIGN_CARDS}) (its specification) is summarised here.",
        "## What is built",
        wrap("sizes", ""),
        wrap("differs", ""),
        "## Measurements",
        body,
    ]
    return "\n\n".join(p for p in parts if p is not None).rstrip() + "\n"


def update_page(text: str, blocks: Mapping[str, str]) -> str:
    """``text`` with each generated block's content replaced by ``blocks``; a block the page lacks is appended."""
    present = set(generated_blocks(text))

    def swap(match: re.Match[str]) -> str:
        name = match.group(1)
        return wrap(name, blocks[name]) if name in blocks else match.group(0)

    text = _BLOCK_RE.sub(swap, text)
    for name in blocks:
        if name not in present:
            text = text.rstrip() + "\n\n" + wrap(name, blocks[name]) + "\n"
    return text


def page_claim_ids(text: str) -> list[str]:
    """The claim ids (short) in a page's claims table."""
    block = generated_blocks(text).get("claims", "")
    return re.findall(r"^\| `([^`]+)`", block, re.M)


@dataclass
class PageReport:
    slug: str
    path: Path
    runs: dict[str, str]  # preset -> run id (with " (older config)" when not current)
    images: dict[str, int]  # file -> bytes


def write_page(study: Study, stores: Sequence[Store], out_dir: Path, seed: int = 0) -> PageReport:
    """Generate (or regenerate) ``out_dir/<slug>.md`` and its images."""
    path = out_dir / f"{study.slug}.md"
    text = path.read_text() if path.is_file() else ""
    if not generated_blocks(text):
        text = skeleton(study.slug, text)
    entries = inventory([study], store=[])  # declarations only: decided_by, departures, known
    runs = pick_runs(study, stores, seed)
    chosen = choose_figures(runs, text)
    images = write_images(study, runs, chosen, out_dir)
    blocks = {
        "header": header_block(study),
        "run": run_block(study),
        "claims": claims_block(study, entries, runs, seed),
        "figures": figures_block(study, runs, chosen),
        "sizes": sizes_block(study),
        "differs": differs_block(study, entries),
    }
    path.write_text(update_page(text, blocks))
    return PageReport(
        study.slug,
        path,
        {p: r.row["run_id"] + ("" if r.current else " (older config)") for p, r in runs.items()},
        images,
    )


def write_pages(studies: Iterable[Study], stores: Sequence[Store], out_dir: Path, seed: int = 0) -> list[PageReport]:
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_page(study, stores, out_dir, seed) for study in studies]
