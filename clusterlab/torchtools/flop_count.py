"""FLOPs per token as PyTorch's FlopCounterMode counts them on a meta-device model (needs the torch extra)."""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from clusterlab.torchtools.llama import Llama
from clusterlab.torchtools.model_shape import LlamaConfig


def counted_flops_per_token(config: LlamaConfig, batch: int = 1) -> float:
    """FLOPs per token that FlopCounterMode counts for one forward + backward of the meta-device model."""
    # meta tensors carry shapes only: no memory, no arithmetic, so an 8B model counts in a second
    with torch.device("meta"):
        model = Llama(config)
        tokens = torch.zeros(batch, config.seq_len, dtype=torch.long)
    counter = FlopCounterMode(display=False)
    with counter:
        _, loss = model(tokens, targets=tokens)
        loss.backward()
    return counter.get_total_flops() / (batch * config.seq_len)
