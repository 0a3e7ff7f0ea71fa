"""Low-rank adapters (LoRA, Hu et al. 2021): adapting a pretrained model cheaply (lecture 7).

    LoRALinear        a frozen nn.Linear plus a trainable low-rank update: y = x Wᵀ + b + (α/r) x Aᵀ Bᵀ
    add_lora          wrap every nn.Linear inside a module (e.g. all of BERT's encoder blocks) in a LoRALinear
    merge_lora        the reverse: every LoRALinear inside a module back to one plain nn.Linear, W + (α/r) B A
    trainable_state   the tensors that training changed (adapters, unfrozen biases/LayerNorms, heads): a small
                      checkpoint that is loaded on top of the unchanged pretrained weights

A pretrained weight W (d_out × d_in) stays frozen; training learns B (d_out × r) and A (r × d_in) with r ≪ d, and the
layer computes W x + (α/r) B A x. B starts at zero, so training starts from the pretrained model exactly; the update
B A has rank at most r, and costs r (d_in + d_out) numbers instead of d_in d_out.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scratch import validate


class LoRALinear(nn.Module):
    """`base` (frozen) + a rank-`rank` update scaled by alpha / rank. Same inputs and outputs as `base`."""

    def __init__(self, base: nn.Linear, rank: int = 8, alpha: float = 16.0):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"LoRALinear wraps an nn.Linear, got {type(base).__name__}")
        rank = validate.integer(rank, "rank")
        if rank > min(base.in_features, base.out_features):
            raise ValueError(f"rank {rank} exceeds min(d_in, d_out) = {min(base.in_features, base.out_features)}")
        self.base = base
        self.base.weight.requires_grad_(False)
        self.rank = rank
        self.alpha = alpha
        self.scale = alpha / rank
        # A random (as nn.Linear initialises a weight), B zero: the adapted layer starts equal to the base layer
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

    def merged_weight(self) -> torch.Tensor:
        """W + (α/r) B A: one plain weight that computes the same layer (no extra cost at inference)."""
        return self.base.weight + self.scale * self.lora_b @ self.lora_a


def add_lora(module: nn.Module, rank: int = 8, alpha: float = 16.0) -> list[str]:
    """Replace every nn.Linear inside `module` by a LoRALinear around it (in place); returns their names.

    For a transformers BertEncoder that is, per block, Q, K, V, the attention output and both FFN layers.
    """
    targets = [(name, child) for name, child in module.named_modules() if isinstance(child, nn.Linear)]
    if not targets:
        raise ValueError(f"{type(module).__name__} holds no nn.Linear to adapt")
    for name, linear in targets:
        parent_name, _, attribute = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, attribute, LoRALinear(linear, rank, alpha))
    return [name for name, _ in targets]


def merge_lora(module: nn.Module) -> nn.Module:
    """Replace every LoRALinear inside `module` (in place) by an nn.Linear holding W + (α/r) B A and the base's bias:
    the same layer without the adapters' extra cost. Returns the module."""
    targets = [(name, child) for name, child in module.named_modules() if isinstance(child, LoRALinear)]
    for name, lora in targets:
        merged = nn.Linear(lora.base.in_features, lora.base.out_features, bias=lora.base.bias is not None)
        with torch.no_grad():
            merged.weight.copy_(lora.merged_weight())
            if lora.base.bias is not None:
                merged.bias.copy_(lora.base.bias)
        parent_name, _, attribute = name.rpartition(".")
        setattr(module.get_submodule(parent_name) if parent_name else module, attribute, merged)
    return module


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """{name: tensor} of the parameters with requires_grad: what a fine-tune changed, cloned and contiguous."""
    return {name: p.detach().clone().contiguous() for name, p in model.named_parameters() if p.requires_grad}
