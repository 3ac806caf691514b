"""implicit-patches: its config and presets (the paper and the claims: see the package)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from theorylab.core import ConfigError, Preset, StudyConfig
from theorylab.core.fields import (
    Batch,
    Corpus,
    Dim,
    DModel,
    LearningRate,
    Length,
    MLPMult,
    NHeads,
    NLayers,
    SampleSize,
    Seeds,
    Steps,
    VocabSize,
    Width,
)
from theorylab.nn.blocks import FAMILIES

Family = Literal["vanilla", "llama", "gemma", "postnorm", "parallel", "moe"]


Arch = Literal["gemma3", "llama", "mistral", "qwen2", "mixtral"]


class ImplicitPatchesConfig(StudyConfig):
    # retired spellings of the config vocabulary: `--set old=...` names the new field
    RENAMED: ClassVar[dict[str, str]] = {"icl_d": "icl_dim"}
    families: tuple[Family, ...] = Field(FAMILIES, min_length=1, description="block families of the sweep")
    n_layers: tuple[Annotated[NLayers, Field(le=128)], ...] = Field(
        (1, 2, 4, 8),
        min_length=1,
        description="depths reported (one stack of the largest depth; layer k is the depth-k stack)",
    )
    d_models: tuple[DModel, ...] = Field(
        (16, 64), min_length=1, description="widths of the sweep (divisible by n_heads)"
    )
    contexts: tuple[Annotated[Length, Field(ge=1)], ...] = Field(
        (1, 5, 32), min_length=1, description="context lengths (tokens before the query)"
    )
    seeds: Seeds = Field(3, description="random stacks and prompts per (family, d, context)")
    dtypes: tuple[Literal["float64", "float32"], ...] = Field(
        ("float64", "float32"), min_length=1, description="precisions of the sweep"
    )
    modes: tuple[Literal["output", "full"], ...] = Field(
        ("output", "full"),
        min_length=1,
        description="'output': patch the outer map only; 'full': input patches too (Llama, Gemma, post-norm)",
    )
    vocab_size: VocabSize = Field(64, description="vocabulary of the random prompts (embeddings N(0, 1))")
    n_heads: NHeads = Field(2, description="attention heads of our blocks")
    mlp_mult: MLPMult = Field(4, description="MLP hidden width = mlp_mult · d")
    g_std: float = Field(0.1, ge=0.0, le=10.0, description="std of the norm-scale offsets g (scale 1 + g) and biases")
    n_experts: int = Field(4, ge=1, le=256, description="MoE experts")
    top_k: int = Field(2, ge=1, le=256, description="MoE experts routed per token")

    hf: bool = Field(True, description="run the Hugging Face part (needs the hf extra)")
    hf_archs: tuple[Arch, ...] = Field(
        ("gemma3", "llama", "mixtral"),
        description="random-init Hugging Face families patched through their own module code",
    )
    hf_d_model: Annotated[DModel, Field(ge=8)] = Field(64, description="HF hidden size (paper 1152)")
    hf_mlp_width: Annotated[Width, Field(ge=8)] = Field(256, description="HF MLP intermediate size (paper 6912)")
    hf_n_layers: NLayers = Field(4, description="HF decoder layers (paper 26)")
    hf_n_heads: NHeads = Field(4, description="HF query heads")
    hf_n_kv_heads: NHeads = Field(1, description="HF key/value heads (grouped-query attention)")
    hf_head_dim: int = Field(16, ge=2, le=1024, description="HF head dimension (paper 256)")
    hf_vocab_size: Annotated[VocabSize, Field(ge=16)] = Field(512, description="HF vocabulary (paper 262144)")
    hf_window: Annotated[Length, Field(ge=1)] = Field(
        8, description="Gemma 3 sliding-window length of local layers (paper 512)"
    )
    hf_global_every: int = Field(
        4, ge=1, le=256, description="every k-th Gemma 3 layer is global (Gemma 3: 6, i.e. local:global 5:1)"
    )
    hf_n_experts: int = Field(4, ge=2, le=256, description="Mixtral experts")
    hf_prompt_lengths: tuple[Length, ...] = Field(
        (16,), min_length=1, description="prompt lengths of the generation check (paper 128, 1024)"
    )
    hf_generate: Steps = Field(20, description="greedy tokens generated (paper 64)")
    hf_dtypes: tuple[Literal["float64", "float32", "bfloat16"], ...] = Field(
        ("float64",),
        min_length=1,
        description="precisions of the HF exactness runs (claims on float64; others reported)",
    )
    hf_train_steps: Annotated[Steps, Field(ge=0)] = Field(
        0,
        description="also train the Gemma 3 model on a text for this many steps and check it too (0: random init only)",
    )
    hf_corpus: Corpus = Field(
        "stdlib",
        min_length=1,
        description="text for hf_train_steps: 'stdlib' (prose of "
        "Python's docstrings), 'kjv' (Debian's bible-kjv) or a path",
    )
    hf_local: str = Field(
        "", description="directory of a local Hugging Face causal LM (e.g. Gemma-3-1B weights you own); '' for none"
    )

    icl_batch: Batch = Field(128, description="in-context regression: prompts per training step")
    icl_length: Annotated[Length, Field(ge=3)] = Field(50, description="tokens per prompt (examples + the query)")
    icl_dim: Dim = Field(2, description="dimension of x (token width d = icl_dim + 1)")
    icl_n_layers: NLayers = Field(1, description="blocks of the in-context regression transformer (Dherin: one)")
    icl_mlp_mult: MLPMult = Field(4, description="its MLP hidden width = mult · d")
    icl_steps: Annotated[Steps, Field(ge=0)] = Field(100, description="Adam steps")
    icl_lr: LearningRate = Field(1e-2, description="Adam learning rate")
    icl_test: SampleSize = Field(32, description="test prompts for the patch measurements")
    icl_ft_lr: LearningRate = Field(
        0.05, description="learning rate of the explicit online fine-tuning compared with the implicit patch"
    )

    @model_validator(mode="after")
    def _consistent(self) -> "ImplicitPatchesConfig":
        bad = [d for d in self.d_models if d % self.n_heads]
        if bad:
            raise ConfigError(f"invalid value for 'd_models': {bad} not divisible by n_heads={self.n_heads}")
        if self.top_k > self.n_experts:
            raise ConfigError(
                f"invalid value for 'top_k': {self.top_k}; allowed: 1 <= value <= n_experts ({self.n_experts})"
            )
        if self.hf_n_heads % self.hf_n_kv_heads:
            raise ConfigError(
                f"invalid value for 'hf_n_kv_heads': {self.hf_n_kv_heads}; allowed: a divisor of "
                f"hf_n_heads "
                f"({self.hf_n_heads})"
            )
        return self


PRESETS = {
    "quick": Preset.of(
        "quick",
        "2 CPU cores, < 20 s: 6 families x depth 1-8 x d {16, 64} x context {1, 5, 32} x 3 "
        "seeds x {float64, float32}; random-init HF Gemma 3 / Llama / Mixtral; in-context "
        "regression",
    ),
    "paper": Preset.of(
        "paper",
        "GPU (est. 15 min on one H100: rough; quick takes ~21 s on CPU; the paper adds three ~1B-parameter models "
        "(Gemma 3 and Llama random init, a self-trained Gemma 3): float64 forwards of 128 and 1024-token prompts with"
        " 64 greedy tokens (~2 TFLOP a 1024-token forward, < 1 min each at ~10-20 TFLOP/s in float64) and 300 "
        "training steps (~12 TFLOP a step at 2k tokens, ~3 min at 25 TFLOP/s), plus loading 8 GB float64 copies; the "
        "small stacks and in-context regression are seconds): "
        "a Gemma-3-1B-shaped random-init model (26 layers, width 1152) and a self-trained small Gemma 3; prompts "
        "128 and 1024 tokens, 64 generated; float32/bfloat16 error growth",
        gpu_minutes=15,
        hf_archs=(
            ("gemma3", "llama"),
            "the 1B shape in Gemma 3 and Llama layouts (a 26-layer Mixtral at this width is left to --set)",
        ),
        hf_corpus=(
            "kjv",
            "the larger real corpus where Debian's bible-kjv is installed (elsewhere: --set "
            "hf_corpus=stdlib or a local text file)",
        ),
        hf_d_model=(1152, "Gemma 3 1B"),
        hf_mlp_width=(6912, "Gemma 3 1B"),
        hf_n_layers=(26, "Gemma 3 1B"),
        hf_n_heads=(4, "Gemma 3 1B"),
        hf_n_kv_heads=(1, "Gemma 3 1B"),
        hf_head_dim=(256, "Gemma 3 1B"),
        hf_vocab_size=(262144, "Gemma 3 1B"),
        hf_window=(512, "Gemma 3 1B"),
        hf_global_every=(6, "Gemma 3: local:global 5:1"),
        hf_prompt_lengths=((128, 1024), "card: prompts of 128-1024 tokens"),
        hf_generate=(64, "card: 64 generated tokens"),
        hf_dtypes=(("float64", "float32", "bfloat16"), "card: error growth in float32 and bfloat16"),
        hf_train_steps=(300, "card: the small config trained for a few hundred steps on a local text"),
        seeds=(10, "more random stacks"),
        d_models=((16, 64, 256), "a wider block too"),
        icl_steps=(2000, "a trained regression model"),
        icl_test=(128, "more test prompts"),
    ),
}
