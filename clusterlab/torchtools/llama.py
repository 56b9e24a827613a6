"""A small, plain Llama-style decoder: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU.

Attention is written as explicit matmuls and a softmax (no fused SDPA kernel) so that
torch.utils.flop_counter sees every FLOP, on the meta device as on CPU. The same model, at the
`LlamaConfig.tiny()` size, is the CPU training model of the demo and the tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from clusterlab.torchtools.model_shape import LlamaConfig

__all__ = ["Llama", "LlamaConfig"]


class RMSNorm(nn.Module):
    """Root-mean-square layer norm with a learned gain and no bias."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise the last dimension in float32 (bf16 loses too much in the mean of squares)."""
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rotary(seq_len: int, head_dim: int, theta: float, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables, (seq_len, head_dim), for rotating the two halves of each head."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate (batch, heads, seq, head_dim) by position: x·cos + rotate_half(x)·sin."""
    first, second = x.chunk(2, dim=-1)
    return (x * cos + torch.cat([-second, first], dim=-1) * sin).type_as(x)


class Attention(nn.Module):
    """Causal grouped-query self-attention: `kv_heads` key/value heads shared by `heads` query heads."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = config.heads, config.kv_heads, config.head_dim
        self.wq = nn.Linear(config.hidden, config.heads * self.head_dim, bias=False)
        self.wk = nn.Linear(config.hidden, config.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(config.hidden, config.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(config.heads * self.head_dim, config.hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Attend over the sequence of x (batch, seq, hidden)."""
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        # each key/value head serves heads // kv_heads query heads
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        future = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        out = F.softmax(scores.float(), dim=-1).type_as(q) @ v
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    """SwiGLU MLP: down(silu(gate(x)) * up(x))."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.gate = nn.Linear(config.hidden, config.ffn, bias=False)
        self.up = nn.Linear(config.hidden, config.ffn, bias=False)
        self.down = nn.Linear(config.ffn, config.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the gated MLP position-wise."""
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    """One pre-norm transformer layer: x + attn(norm(x)), then + mlp(norm(x))."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.hidden, config.norm_eps)
        self.attn = Attention(config)
        self.mlp_norm = RMSNorm(config.hidden, config.norm_eps)
        self.mlp = FeedForward(config)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Run the layer on x (batch, seq, hidden)."""
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    """Token embedding, `layers` blocks, final RMSNorm and an untied LM head."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        if config.hidden % config.heads or config.heads % config.kv_heads:
            raise ValueError("hidden must divide by heads, and heads by kv_heads")
        self.config = config
        # a bare table, not nn.Embedding: its own init calls normal_, which on the meta device runs a
        # Python reference that imports torch._dynamo (seconds); _init_weights initialises it instead
        self.embed = nn.Parameter(torch.empty(config.vocab, config.hidden))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = RMSNorm(config.hidden, config.norm_eps)
        self.head = nn.Linear(config.hidden, config.vocab, bias=False)
        self._init_weights()

    def _init_weights(self) -> None:
        """GPT-2 style N(0, 0.02): PyTorch's default Linear init trains this small model slower."""
        if self.embed.is_meta:
            return  # shapes only: nothing to initialise, and normal_ on meta is slow (see above)
        for p in [self.embed, *(m.weight for m in self.modules() if isinstance(m, nn.Linear))]:
            nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(
        self, tokens: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (batch, seq, vocab) for token ids (batch, seq), and the cross-entropy loss if targets."""
        # tables are rebuilt each call: cheap, and nothing to lose when the model moves off meta
        cos, sin = rotary(tokens.shape[1], self.config.head_dim, self.config.rope_theta, tokens.device)
        x = F.embedding(tokens, self.embed)
        for block in self.blocks:
            x = block(x, cos, sin)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss
