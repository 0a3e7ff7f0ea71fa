"""Plots the lectures reuse: attention weights as heatmaps, positional encodings as images.

Every function draws on a matplotlib Axes (a new figure if none is given), labels the axes, sets a
title, and returns the Axes; the notebook ends the cell with `plt.show()`.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch


def _as_2d(weights, what: str):
    array = torch.as_tensor(weights).detach().float().cpu()
    if array.dim() != 2:
        raise ValueError(f"{what} must be 2-D (queries × keys), got shape {tuple(array.shape)}")
    return array.numpy()


def plot_attention(weights, query_labels=None, key_labels=None, ax=None, title="attention weights",
                   annotate: bool = False, colorbar: bool = True):
    """One attention matrix as a heatmap: row i shows how query i spreads its attention over the keys.

    weights: (N queries, M keys), each row summing to 1. annotate=True prints each weight (2 decimals).
    """
    array = _as_2d(weights, "weights")
    if ax is None:
        size = max(3.0, 0.45 * max(array.shape) + 1.5)
        _, ax = plt.subplots(figsize=(size + (1 if colorbar else 0), size))
    image = ax.imshow(array, cmap="viridis", vmin=0.0, vmax=max(float(array.max()), 1e-9))
    if query_labels is not None:
        ax.set_yticks(range(array.shape[0]), list(query_labels))
    if key_labels is not None:
        ax.set_xticks(range(array.shape[1]), list(key_labels), rotation=90)
    if annotate:
        for i in range(array.shape[0]):
            for j in range(array.shape[1]):
                ax.text(j, i, f"{array[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if array[i, j] > 0.6 * array.max() else "white")
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    if colorbar:
        plt.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def plot_attention_heads(weights, labels=None, ncols: int = 4, title: str = "attention weights per head",
                         head_names=None):
    """A grid of heatmaps, one per head. weights: (h, N, M). Returns the Figure."""
    stacked = torch.as_tensor(weights).detach().float().cpu()
    if stacked.dim() != 3:
        raise ValueError(f"weights must be 3-D (heads × queries × keys), got shape {tuple(stacked.shape)}")
    heads = stacked.shape[0]
    ncols = min(ncols, heads)
    nrows = math.ceil(heads / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.2 * nrows), squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= heads:
            ax.axis("off")
            continue
        name = head_names[index] if head_names is not None else f"head {index}"
        plot_attention(stacked[index], labels, labels, ax=ax, title=name, colorbar=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_positional_encoding(encoding, ax=None, title: str = "positional encoding", limit: float = 1.0):
    """A (positions × d_model) encoding as an image: one row per position, one column per dimension.

    Colours span [-limit, limit]: 1 suits the sinusoidal encoding; learned tables are much smaller.
    """
    array = torch.as_tensor(encoding).detach().float().cpu()
    if array.dim() != 2:
        raise ValueError(f"encoding must be 2-D (positions × d_model), got shape {tuple(array.shape)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    image = ax.imshow(array.numpy(), aspect="auto", cmap="RdBu", vmin=-limit, vmax=limit)
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    ax.set_title(title)
    plt.colorbar(image, ax=ax, label="value")
    return ax
