"""Peak GPU FLOP/s, training FLOPs per token and MFU: the denominators of every lost-MFU figure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clusterlab.torchtools.model_shape import PRESETS, LlamaConfig, param_count

__all__ = ["PRESETS", "LlamaConfig", "param_count"]  # re-exported: they were defined here first

# Peak dense (no 2:4 sparsity) BF16 tensor-core FLOP/s per GPU, as the vendor publishes it.
# NVIDIA datasheets print the sparse figure with an asterisk ("* With sparsity"); the dense one is
# half of it. Where NVIDIA's architecture whitepaper gives the dense figure itself, that is used.
PEAK_BF16_DENSE: dict[str, float] = {
    # NVIDIA H100 Tensor Core GPU Architecture whitepaper (dense table), datasheet 1,979 TFLOPS*.
    "H100-SXM": 989.4e12,
    # Same whitepaper, H100 PCIe column; datasheet 1,513 TFLOPS*.
    "H100-PCIe": 756.0e12,
    # H100 NVL (94 GB) datasheet: 1,671 TFLOPS* per GPU.
    "H100-NVL": 835.5e12,
    # NVIDIA H800 datasheet: same GH100 compute as H100 (only NVLink/FP64 cut): 1,979* SXM, 1,513* PCIe.
    "H800": 989.4e12,
    "H800-PCIe": 756.0e12,
    # NVIDIA H200 datasheet: H200 SXM 1,979 TFLOPS*, H200 NVL 1,671 TFLOPS*.
    "H200": 989.4e12,
    "H200-NVL": 835.5e12,
    # NVIDIA GH200 Grace Hopper Superchip datasheet: Hopper GPU, 1,979 TFLOPS* FP16/BF16.
    "GH200": 989.4e12,
    # NVIDIA A100 Tensor Core GPU datasheet: BFLOAT16 312 TFLOPS | 624 TFLOPS*, all four variants.
    "A100-SXM-40GB": 312.0e12,
    "A100-SXM-80GB": 312.0e12,
    "A100-PCIe-40GB": 312.0e12,
    "A100-PCIe-80GB": 312.0e12,
    # NVIDIA A800 datasheet: A100 compute (NVLink cut to 400 GB/s): 312 | 624* TFLOPS.
    "A800": 312.0e12,
    # NVIDIA L40S datasheet: BFLOAT16 Tensor Core 362.05 | 733* TFLOPS.
    "L40S": 362.05e12,
    # NVIDIA HGX B100/B200 specifications: FP16/BF16 3.5 / 4.5 PFLOPS* per GPU (sparse).
    "B100": 1.75e15,
    "B200": 2.25e15,
    # NVIDIA GB200 NVL72 datasheet: FP16/BF16 360 PFLOPS* per 72 GPUs, i.e. 5 PFLOPS* per GPU.
    "GB200": 2.5e15,
    # AMD Instinct MI250X data sheet: 383 TFLOPS peak BF16 (no sparsity on CDNA 2) per OAM module.
    # ROCm shows each of its two GCDs as a GPU; use MI250X-GCD when tokens/s are per GCD.
    "MI250X": 383.0e12,
    "MI250X-GCD": 191.5e12,
    # AMD Instinct MI300X / MI325X data sheets: 1307.4 TFLOPS peak BF16 dense (2614.9 with sparsity).
    "MI300X": 1307.4e12,
    "MI325X": 1307.4e12,
}

# Model tokens in the order they must be tried: a longer name that contains a shorter one first.
_FAMILIES = ("GH200", "GB200", "H100", "H200", "H800", "A100", "A800", "L40S", "B100", "B200",
             "MI250X", "MI300X", "MI325X")


def _normalise(name: str) -> str:
    """Upper-case with every run of separators turned into one space."""
    return " " + re.sub(r"[^A-Z0-9]+", " ", name.upper()).strip() + " "


def _has(word: str, text: str) -> bool:
    """Whether `word` occurs in `text` not glued to other letters (NVL yes, NVLINK no)."""
    return re.search(rf"(?<![A-Z]){word}(?![A-Z])", text) is not None


def _canonical(name: str) -> str | None:
    """The table key a free-form GPU name (nvidia-smi, inventory, marketing) refers to."""
    text = _normalise(name)
    squashed = text.replace(" ", "")
    for key in PEAK_BF16_DENSE:
        if squashed == key.upper().replace("-", ""):
            return key
    for family in _FAMILIES:
        # not preceded by a letter/digit (GH200 is not H200) nor followed by a digit (A1000 is not A100)
        if re.search(rf"(?<![A-Z0-9]){family}(?![0-9])", text):
            break
    else:
        return None
    pcie, nvl = _has("PCIE", text), _has("NVL", text)
    if family == "H100":
        return "H100-PCIe" if pcie else "H100-NVL" if nvl else "H100-SXM"
    if family == "H200":
        return "H200-NVL" if nvl else "H200"
    if family == "H800":
        return "H800-PCIe" if pcie else "H800"
    if family == "A100":
        return f"A100-{'PCIe' if pcie else 'SXM'}-{'40GB' if '40GB' in squashed else '80GB'}"
    if family == "MI250X" and _has("GCD", text):
        return "MI250X-GCD"
    return family


def peak_flops(gpu: str) -> float:
    """Peak dense BF16 FLOP/s of one GPU, from a tolerant reading of its name."""
    key = _canonical(gpu)
    if key is None:
        raise ValueError(f"unknown GPU model {gpu!r}; known models: {', '.join(PEAK_BF16_DENSE)}")
    return PEAK_BF16_DENSE[key]


def mfu(tokens_per_s_per_gpu: float, flops_per_token: float, gpu: str | float) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s over the GPU's peak (a name or FLOP/s)."""
    peak = float(gpu) if isinstance(gpu, int | float) else peak_flops(gpu)
    return tokens_per_s_per_gpu * flops_per_token / peak


def flops_per_token(
    params: float,
    layers: int | None = None,
    hidden: int | None = None,
    seq_len: int | None = None,
    vocab: int | None = None,
    tied_embeddings: bool = False,
) -> float:
    """Training FLOPs per token: 6·N for the weight matmuls plus 12·L·H·S for attention.

    N is `params` less the input embedding (vocab·hidden) when vocab and hidden are given and the
    embedding is not tied: a lookup is no matmul, while the LM head is one and stays in N. Norm and
    bias weights stay in N too (a negligible overcount). 6 = 2 FLOPs per multiply-add, times 3 for
    forward + backward (input and weight gradients). Attention (QK^T and scores·V, 4·S·H per layer
    forward, times 3) is counted over the full S×S score matrix, not causal-halved: that is the
    PaLM/Megatron MFU convention and exactly what FlopCounterMode counts for clusterlab.torchtools.llama's
    explicit masked attention. It is added only when layers, hidden and seq_len are all known.
    """
    n = float(params)
    if vocab is not None and hidden is not None and not tied_embeddings:
        n -= float(vocab) * float(hidden)
    attention = 0.0
    if layers is not None and hidden is not None and seq_len is not None:
        attention = 12.0 * layers * hidden * seq_len
    return 6.0 * n + attention


def analytic_flops_per_token(config: LlamaConfig) -> float:
    """flops_per_token for a LlamaConfig (what counted_flops_per_token should agree with)."""
    return flops_per_token(param_count(config), config.layers, config.hidden, config.seq_len, config.vocab)


_SUFFIX = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def _number(value: Any) -> float:
    """A count as logs and TOML give it: 8030261248, 8.03e9, "8.03B", "1,234"."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().replace(",", "").replace("_", "").upper()
    if text and text[-1] in _SUFFIX:
        return float(text[:-1]) * _SUFFIX[text[-1]]
    return float(text)


def _shape_flops(primary: Mapping[str, Any], other: Mapping[str, Any]) -> float:
    """flops_per_token from `primary`'s params; shape keys it lacks come from `other`."""
    def get(key: str) -> int | None:
        value = primary.get(key, other.get(key))
        return None if value is None else int(_number(value))

    return flops_per_token(_number(primary["params"]), get("layers"), get("hidden"), get("seq_len"),
                           get("vocab"), bool(primary.get("tied_embeddings", other.get("tied_embeddings"))))


def run_flops_per_token(run: Mapping[str, Any], facts: Mapping[str, Any] | None = None) -> tuple[float, str]:
    """FLOPs per token and where it came from: "run.toml", "model shape", "log facts" or "flop counter".

    Precedence: run.toml's own flops_per_token, then the model shape in run.toml (params, with
    layers/hidden/seq_len/vocab for the attention and embedding terms), then the same keys from the
    training log's facts, then a named preset (`model = "llama3_8b"`) counted on the meta device.
    """
    facts = facts or {}
    if run.get("flops_per_token") is not None:
        return _number(run["flops_per_token"]), "run.toml"
    if run.get("params") is not None:
        return _shape_flops(run, facts), "model shape"
    if facts.get("params") is not None:
        # the log gives the parameter count; run.toml may still know seq_len and friends
        return _shape_flops(facts, run), "log facts"
    preset = run.get("model", facts.get("model"))
    if preset in PRESETS:
        from clusterlab.torchtools.flop_count import counted_flops_per_token  # needs torch: only this case imports it

        return counted_flops_per_token(PRESETS[preset]), "flop counter"
    raise ValueError(
        "FLOPs per token unknown: run.toml has neither flops_per_token nor params "
        "(with layers, hidden, seq_len), and the training log gave no parameter count"
    )
