"""Does a false fact earlier in the context lower a causal LM's confidence in a later true fact?

The co-occurrence check of Ravfogel, Yehudai, Linzen, Bruna & Bietti (arXiv 2510.15804, Sec. 5.2: LLaMA3-8B on 128
CounterFact prompts), for a user's local Hugging Face checkpoint and a local CounterFact-format JSON file. Nothing is
downloaded (``local_files_only``).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch


def counterfact_context_check(
    model_path: Path, counterfact_path: Path, prompts: int, device: torch.device
) -> list[dict]:
    """The optional local-weights path (paper Sec. 5.2, LLaMA3-8B on 128 CounterFact prompts): for each prompt,
    log P(true target) after a context of other true CounterFact facts vs after the same context with its first
    fact replaced by the counterfactual target, and a probe of true vs false contexts on the mean last-layer state.
    Files are read locally only (``local_files_only``); nothing is downloaded."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "the pretrained-LM check needs the 'transformers' package (pip install transformers)"
        ) from err
    records = json.loads(Path(counterfact_path).expanduser().read_text())[: prompts + 4]
    facts = []
    for rec in records:
        rw = rec["requested_rewrite"]
        prompt = rw["prompt"].format(rw["subject"])
        facts.append((prompt, " " + rw["target_true"]["str"], " " + rw["target_new"]["str"]))
    tok = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    lm = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True).to(device).eval()
    rows = []
    for i in range(min(prompts, len(facts) - 3)):
        ctx_facts = facts[i + 1 : i + 4]
        query, true_target, _ = facts[i]
        for label, first in (("all_true", ctx_facts[0][1]), ("one_false", ctx_facts[0][2])):
            context = ". ".join([ctx_facts[0][0] + first] + [p + t for p, t, _ in ctx_facts[1:]]) + ". "
            ids = tok(context + query, return_tensors="pt").input_ids.to(device)
            tgt = tok(true_target, add_special_tokens=False, return_tensors="pt").input_ids.to(device)
            with torch.no_grad():
                out = lm(torch.cat([ids, tgt], 1), output_hidden_states=True)
            lp = out.logits[0, ids.shape[1] - 1 : -1].log_softmax(-1).gather(1, tgt[0][:, None]).sum()
            rows.append(
                dict(
                    prompt=i,
                    context=label,
                    logp=float(lp),
                    feature=out.hidden_states[-1][0, : ids.shape[1]].mean(0).double().cpu().numpy(),
                )
            )
    return rows
