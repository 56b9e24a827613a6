"""The shape of a Llama-style decoder and its parameter count: torch-free, shared by flops and llama."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """Shape of a Llama-style decoder (clusterlab.torchtools.llama builds it); torch-free so flops stays importable."""

    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    seq_len: int
    rope_theta: float = 500_000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden // self.heads

    @classmethod
    def llama3_8b(cls, seq_len: int = 8192) -> LlamaConfig:
        """Meta Llama 3 / 3.1 8B (published config.json shape)."""
        return cls(vocab=128256, hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, seq_len=seq_len)

    @classmethod
    def llama3_70b(cls, seq_len: int = 8192) -> LlamaConfig:
        """Meta Llama 3 / 3.1 70B."""
        return cls(vocab=128256, hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672, seq_len=seq_len)

    @classmethod
    def tiny(cls, seq_len: int = 256) -> LlamaConfig:
        """About 1.5M parameters, byte vocabulary: trains on a laptop CPU in tenths of a second a step."""
        return cls(vocab=256, hidden=128, layers=6, heads=4, kv_heads=2, ffn=512, seq_len=seq_len,
                   rope_theta=10_000.0)


PRESETS: dict[str, LlamaConfig] = {
    "llama3_8b": LlamaConfig.llama3_8b(),
    "llama3_70b": LlamaConfig.llama3_70b(),
    "tiny": LlamaConfig.tiny(),
}


def param_count(config: LlamaConfig) -> int:
    """All parameters of the clusterlab.torchtools.llama model: embedding, blocks, final norm, untied LM head."""
    kv_dim = config.kv_heads * config.head_dim
    attn = 2 * config.hidden * config.hidden + 2 * config.hidden * kv_dim  # wq, wo + wk, wv
    mlp = 3 * config.hidden * config.ffn  # SwiGLU: gate, up, down
    block = attn + mlp + 2 * config.hidden  # two RMSNorm weights
    return 2 * config.vocab * config.hidden + config.layers * block + config.hidden
