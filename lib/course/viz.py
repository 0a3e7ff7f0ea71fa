"""Plots the lectures reuse: attention weights as heatmaps, positional encodings as images, bertviz's views offline.

plot_attention and plot_positional_encoding draw on a matplotlib Axes (a new figure if none is given), label the
axes, set a title and return the Axes; plot_attention_grid makes a Figure of its own (a panel per map, one colour
bar) and returns the Figure. The notebook ends the cell with `plt.show()`.
"""

from __future__ import annotations

import html
import math
import re
import warnings

import matplotlib.pyplot as plt
import torch

from course import assets


def _as_2d(weights, what: str):
    array = torch.as_tensor(weights).detach().float().cpu()
    if array.dim() != 2:
        raise ValueError(f"{what} must be 2-D (queries × keys), got shape {tuple(array.shape)}")
    return array.numpy()


def plot_attention(
    weights,
    query_labels=None,
    key_labels=None,
    ax=None,
    title="attention weights",
    annotate: bool = False,
    colorbar: bool = True,
    vmax: float | None = None,
) -> plt.Axes:
    """One attention matrix as a heatmap: row i shows how query i spreads its attention over the keys.

    weights: (N queries, M keys), each row summing to 1. annotate=True prints each weight (2 decimals).
    vmax: the weight drawn brightest (default: this matrix's largest); give several panels the same vmax to
    compare them on one colour scale (plot_attention_grid does).
    """
    array = _as_2d(weights, "weights")
    if ax is None:
        size = max(3.0, 0.45 * max(array.shape) + 1.5)
        _, ax = plt.subplots(figsize=(size + (1 if colorbar else 0), size))
    vmax = max(float(array.max()), 1e-9) if vmax is None else float(vmax)
    image = ax.imshow(array, cmap="viridis", vmin=0.0, vmax=vmax)
    if query_labels is not None:
        ax.set_yticks(range(array.shape[0]), list(query_labels))
    if key_labels is not None:
        ax.set_xticks(range(array.shape[1]), list(key_labels), rotation=90)
    if annotate:
        for i in range(array.shape[0]):
            for j in range(array.shape[1]):
                ax.text(
                    j,
                    i,
                    f"{array[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="black" if array[i, j] > 0.6 * vmax else "white",
                )
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    if colorbar:
        plt.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def plot_attention_grid(
    weights,
    query_labels=None,
    key_labels=None,
    titles=None,
    ncols: int = 4,
    vmax: float = 1.0,
    annotate: bool = False,
    title: str = "attention weights",
    panel_size: float = 3.2,
) -> plt.Figure:
    """Several attention maps (panels, N, M) side by side on ONE colour scale, 0 to vmax, with one labelled colour
    bar, so the panels can be compared: a map stretched to its own range makes near-uniform noise look like
    structure. vmax = 1 (the default) is the largest weight a softmax can give. Returns the Figure."""
    stacked = torch.as_tensor(weights).detach().float().cpu()
    if stacked.dim() != 3:
        raise ValueError(f"weights must be 3-D (panels × queries × keys), got shape {tuple(stacked.shape)}")
    if titles is not None and len(titles) != stacked.shape[0]:
        raise ValueError(f"titles must have one entry per panel ({stacked.shape[0]}), got {len(titles)}")
    panels = stacked.shape[0]
    ncols = min(ncols, panels)
    nrows = math.ceil(panels / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel_size * ncols + 1.0, panel_size * nrows), squeeze=False, layout="constrained"
    )
    for index, ax in enumerate(axes.flat):
        if index >= panels:
            ax.axis("off")
            continue
        plot_attention(
            stacked[index],
            query_labels,
            key_labels,
            ax=ax,
            colorbar=False,
            vmax=vmax,
            annotate=annotate,
            title=titles[index] if titles is not None else f"panel {index}",
        )
    image = axes.flat[0].images[0]
    fig.colorbar(image, ax=axes, shrink=0.85, label="attention weight (one scale for all panels)")
    fig.suptitle(title)
    return fig


def plot_positional_encoding(encoding, ax=None, title: str = "positional encoding", limit: float = 1.0) -> plt.Axes:
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


# ---------------------------------------------------------------- bertviz, offline (lecture 7)

BERTVIZ_VIEWS = ("head", "model")


def _check_bertviz_input(view, attention, tokens, sentence_b_start):
    if view not in BERTVIZ_VIEWS:
        raise ValueError(f"unknown view {view!r}; choose one of {BERTVIZ_VIEWS}")
    if not isinstance(attention, (tuple, list)) or not attention:
        raise ValueError(
            "attention must be a non-empty tuple/list with one (batch, h, n, n) tensor per layer "
            f"(as a transformers model returns with output_attentions=True), got {type(attention).__name__}"
        )
    first = attention[0]
    for layer, weights in enumerate(attention):
        if not isinstance(weights, torch.Tensor) or weights.dim() != 4:
            found = tuple(weights.shape) if isinstance(weights, torch.Tensor) else type(weights).__name__
            raise ValueError(f"attention[{layer}] must be a (batch, h, n, n) tensor, got {found}")
        if weights.shape[0] != 1:
            raise ValueError(
                f"attention[{layer}] has batch size {weights.shape[0]}; bertviz draws one sequence, "
                "so pass batch size 1"
            )
        if weights.shape[-1] != weights.shape[-2] or weights.shape != first.shape:
            raise ValueError(
                f"attention[{layer}] has shape {tuple(weights.shape)}; every layer must be "
                f"(1, h, n, n) like attention[0] {tuple(first.shape)}"
            )
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of strings, one per position")
    if len(tokens) != first.shape[-1]:
        raise ValueError(
            f"tokens has {len(tokens)} entries but the attention maps are {first.shape[-1]} x {first.shape[-1]}"
        )
    if sentence_b_start is not None and not 0 < sentence_b_start < len(tokens):
        raise ValueError(f"sentence_b_start must be in (0, {len(tokens)}), got {sentence_b_start}")


def bertviz_html(view: str, attention, tokens, sentence_b_start: int | None = None, **view_kwargs) -> str:
    """bertviz's head view or model view as one self-contained HTML document that draws with no network.

    attention: one (1, h, n, n) tensor per layer; tokens: the n token strings. bertviz itself loads
    require.js, d3 and jQuery from a CDN; here the three come from the npm assets (`assets.bertviz_js()`)
    and are inlined, the CDN <script> tag and require.config paths are removed, and d3/jQuery are
    registered as named modules, so require.js never fetches anything. Finally every '://' inside the
    inlined JavaScript is written ':\\/\\/' (the same string to JavaScript): what is left are XML namespace
    names and links in comments, never fetched, and a plain scan of the page now finds no URL at all.
    """
    _check_bertviz_input(view, attention, tokens, sentence_b_start)
    from bertviz import head_view, model_view  # imported here: only the bertviz views need it (and IPython)

    draw = head_view if view == "head" else model_view
    attention = tuple(a.detach().float().cpu() for a in attention)
    body = draw(attention, list(tokens), sentence_b_start=sentence_b_start, html_action="return", **view_kwargs).data
    body, n_tags = re.subn(r'<script src="https?://[^"]*require[^"]*"></script>', "", body)
    body, n_configs = re.subn(r"require\.config\(\{.*?\}\s*\}\);", "", body, count=1, flags=re.S)
    if n_tags != 1 or n_configs != 1:
        raise RuntimeError(
            "bertviz's HTML no longer has the CDN script tag / require.config this function removes; "
            "check the installed bertviz version (the course pins 1.4.1)"
        )
    js = {name: path.read_text(encoding="utf-8") for name, path in assets.bertviz_js().items()}
    # d3 and jQuery run with `define` hidden, so they set window.d3 / window.jQuery instead of registering
    # an anonymous AMD module (which require.js rejects); then they are registered under the names bertviz asks for.
    hide_amd = "(function (define, exports, module) {{\n{}\n}}).call(window);"
    prelude = "\n".join(
        [
            f"<script>{hide_amd.format(js['d3.min.js'])}</script>",
            f"<script>{hide_amd.format(js['jquery.min.js'])}</script>",
            f"<script>if (typeof window.requirejs === 'undefined') {{\n{js['require.js']}\n}}</script>",
            "<script>define('d3', [], function () { return window.d3; });"
            "define('jquery', [], function () { return window.jQuery; });</script>",
        ]
    )
    page = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>bertviz ' + view + " view</title></head>\n"
        "<body>\n" + prelude + "\n" + body + "\n</body></html>\n"
    )
    return page.replace("://", ":\\/\\/")


def show_bertviz(
    view: str, attention, tokens, sentence_b_start: int | None = None, height: int | None = None, **view_kwargs
):
    """Display bertviz_html(...) in a notebook: an <iframe srcdoc> (its own page, so the notebook's own
    require.js, if any, does not interfere). Returns an IPython HTML object; works offline in JupyterLab
    and in nbconvert's HTML export. height in pixels (default: a guess from the view and sequence length)."""
    from IPython.display import HTML  # imported here: a notebook's display, which viz's plots do without

    page = bertviz_html(view, attention, tokens, sentence_b_start, **view_kwargs)
    if height is None:
        n, layers = len(tokens), len(attention)
        height = 110 + 22 * n if view == "head" else 80 + 100 * layers  # the model view needs ~664 px for 6 layers
    frame = (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:{int(height)}px;border:0"></iframe>'
    )
    with warnings.catch_warnings():  # IPython suggests IFrame for <iframe>; srcdoc is what keeps it offline
        warnings.simplefilter("ignore")
        return HTML(frame)
