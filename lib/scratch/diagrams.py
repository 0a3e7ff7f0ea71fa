"""Diagrams the lectures draw: the architecture, its parts and the data flowing through them.

Each lecture's diagram is one call to a function here (grouped below by lecture), so the notebook shows the idea
and not the drawing code. Every function draws with matplotlib, gives the figure a title, and returns the Figure
or Axes it drew on (its docstring says which); the notebook ends the cell with `plt.show()`.
"""

from __future__ import annotations

import collections

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

# --- Lecture 0 (introduction) and lecture 6 (the full transformer) ---------------------------------------------


def _path_steps(edges, start):
    """Breadth-first search over the arrows: {node: (steps from start, the arrow that reached it)}."""
    reached, frontier = {start: (0, None)}, collections.deque([start])
    while frontier:
        node = frontier.popleft()
        for a, b in edges:
            if a == node and b not in reached:
                reached[b] = (reached[node][0] + 1, (a, b))
                frontier.append(b)
    return reached


def dependency_paths(n: int = 6):
    """A recurrent network's and self-attention's dependency graphs over n positions, side by side.

    Left, x_t -> h_t and h_t -> h_{t+1}; right, every input x_s -> every output y_t. The shortest chain of
    arrows from the first input to the last output is found by breadth-first search, drawn in red, and its
    length is written in each panel's title. Returns the Figure.
    """
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an int >= 2 (positions in the sequence), got {n!r}")
    positions = range(1, n + 1)
    inputs = {f"x{t}": (t, 0) for t in positions}
    graphs = [
        (
            "recurrent network",
            {**inputs, **{f"h{t}": (t, 1) for t in positions}},
            [(f"x{t}", f"h{t}") for t in positions] + [(f"h{t}", f"h{t + 1}") for t in range(1, n)],
            f"h{n}",
        ),
        (
            "self-attention",
            {**inputs, **{f"y{t}": (t, 1) for t in positions}},
            [(f"x{s}", f"y{t}") for t in positions for s in positions],  # every input to every output
            f"y{n}",
        ),
    ]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for ax, (name, nodes, edges, end) in zip(axes, graphs):
        reached = _path_steps(edges, "x1")
        path, node = [], end
        while reached[node][1] is not None:  # walk back along the arrows that reached each node first
            path.append(reached[node][1])
            node = reached[node][1][0]
        for a, b in edges:
            on_path = (a, b) in path
            style = dict(arrowstyle="-|>", shrinkA=11, shrinkB=11, lw=2.2 if on_path else 0.8)
            style["color"] = "crimson" if on_path else "0.65"
            ax.annotate("", xy=nodes[b], xytext=nodes[a], arrowprops=style)
        for label, (x, y) in nodes.items():
            bbox = dict(boxstyle="circle,pad=0.3", fc="white", ec="0.3")
            ax.text(x, y, f"${label[0]}_{{{label[1:]}}}$", ha="center", va="center", fontsize=12, bbox=bbox)
        steps = reached[end][0]
        ax.set_title(f"{name}: $x_1$ reaches ${end[0]}_{{{end[1:]}}}$ in {steps} step{'s' if steps > 1 else ''}")
        ax.set_xlim(0.4, n + 0.6)
        ax.set_ylim(-0.45, 1.45)
        ax.set_xticks(list(positions))
        ax.set_yticks([0, 1], ["inputs", "states / outputs"])
        ax.set_xlabel("position in the sequence")
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle("Dependency paths (red: the shortest path from the first input to the last output)")
    fig.tight_layout()
    return fig


_ARCH_ATTENTION, _ARCH_CROSS, _ARCH_NORM, _ARCH_FFN, _ARCH_EMBED, _ARCH_TEXT, _ARCH_MEMORY = (
    "#ddebf7",
    "#e4dfec",
    "#f2f2f2",
    "#e2efda",
    "#fce4d6",
    "#eeeeee",
    "#fff2cc",
)


def _arch_box(ax, x, y, text, color, w=3.2, h=0.4):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04", fc=color, ec="black"))
    ax.text(x, y, text, ha="center", va="center", fontsize=9)


def _arch_arrow(ax, points, color="black"):
    """A line through points with an arrowhead at the last one."""
    for (x0, y0), (x1, y1) in zip(points[:-2], points[1:-1]):
        ax.plot([x0, x1], [y0, y1], color=color, lw=1.2)
    ax.annotate("", xy=points[-1], xytext=points[-2], arrowprops=dict(arrowstyle="->", lw=1.2, color=color))


def _arch_block(ax, x, sublayers, label, label_x):
    """One encoder or decoder block, sub-layers bottom to top from y = 2, each "add" with its residual arrow."""
    top = 2 + 0.8 * (len(sublayers) - 1)
    ax.add_patch(
        FancyBboxPatch((x - 1.95, 1.65), 3.9, top - 1.25, boxstyle="round,pad=0.05", fc="none", ec="gray", ls="--")
    )
    ax.text(label_x, (2 + top) / 2, label, ha="center", va="center", fontsize=10)
    _arch_arrow(ax, [(x, 1.2), (x, 1.8)])
    for i, (text, color) in enumerate(sublayers):
        y, tall = 2 + 0.8 * i, "\n" in text
        _arch_box(ax, x, y, text, color, h=0.55 if tall else 0.4)
        if i:
            below = 0.28 if "\n" in sublayers[i - 1][0] else 0.2
            _arch_arrow(ax, [(x, y - 0.8 + below), (x, y - (0.28 if tall else 0.2))])
        if text.startswith("add"):
            _arch_arrow(ax, [(x, y - 1.25), (x - 1.8, y - 1.25), (x - 1.8, y), (x - 1.6, y)], color="gray")
    return top


def transformer(
    source: str = "source tokens",
    target: str = "target tokens so far (shifted right)",
    memory: str = "memory",
    logits: str = "linear: a score per token",
    prediction: str = "softmax: next-token probabilities",
    tied_embeddings: bool = False,
    ax=None,
    title: str = "The encoder-decoder transformer (post-LN, as in the paper)",
):
    """The encoder-decoder of "Attention Is All You Need", bottom to top, as in the paper's figure 1.

    Left, the encoder: embedding + positions, then a block of self-attention and feed-forward network (each
    followed by add & LayerNorm, the grey residual arrows) repeated N times, giving the memory. Right, the decoder:
    embedding + positions, then a block of masked self-attention, cross-attention to the memory and feed-forward
    network repeated N times, a linear layer and a softmax. The text arguments label the boxes at the bottom and
    top; tied_embeddings=True names the target embedding E and draws its reuse as the output layer.
    Returns the Axes.
    """
    if ax is None:
        ax = plt.subplots(figsize=(10, 8.5))[1]
    enc, dec = 0.0, 5.2  # x of the two columns
    _arch_box(ax, enc, 0, source, _ARCH_TEXT)
    _arch_box(ax, dec, 0, target, _ARCH_TEXT, w=4.5)
    _arch_box(ax, enc, 1.0, "embed $\\cdot\\sqrt{d_{model}}$ + positions", _ARCH_EMBED, w=3.5)
    target_embedding = "embed ($E$)" if tied_embeddings else "embed"
    _arch_box(ax, dec, 1.0, f"{target_embedding} $\\cdot\\sqrt{{d_{{model}}}}$ + positions", _ARCH_EMBED, w=3.5)
    _arch_arrow(ax, [(enc, 0.2), (enc, 0.8)])
    _arch_arrow(ax, [(dec, 0.2), (dec, 0.8)])
    encoder_layers = [
        ("self-attention\n(padding mask)", _ARCH_ATTENTION),
        ("add & LayerNorm", _ARCH_NORM),
        ("feed-forward network", _ARCH_FFN),
        ("add & LayerNorm", _ARCH_NORM),
    ]
    decoder_layers = [
        ("masked self-attention\n(causal mask)", _ARCH_ATTENTION),
        ("add & LayerNorm", _ARCH_NORM),
        ("cross-attention\n(keys, values: memory)", _ARCH_CROSS),
        ("add & LayerNorm", _ARCH_NORM),
        ("feed-forward network", _ARCH_FFN),
        ("add & LayerNorm", _ARCH_NORM),
    ]
    enc_top = _arch_block(ax, enc, encoder_layers, "encoder\nblock\n$\\times N$", -2.6)
    dec_top = _arch_block(ax, dec, decoder_layers, "decoder\nblock\n$\\times N$", 7.8)
    _arch_box(ax, enc, enc_top + 1.2, memory, _ARCH_MEMORY)
    _arch_arrow(ax, [(enc, enc_top + 0.2), (enc, enc_top + 1.0)])
    to_cross_attention = [(enc + 1.6, enc_top + 1.2), (dec - 2.3, enc_top + 1.2), (dec - 2.3, 3.6), (dec - 1.6, 3.6)]
    _arch_arrow(ax, to_cross_attention, color="tab:purple")
    ax.text(2.2, enc_top + 1.05, "to every\ndecoder block", color="tab:purple", fontsize=8, ha="center", va="top")
    _arch_box(ax, dec, dec_top + 1.1, logits, _ARCH_EMBED)
    _arch_box(ax, dec, dec_top + 2.0, prediction, _ARCH_TEXT, w=3.5)
    _arch_arrow(ax, [(dec, dec_top + 0.2), (dec, dec_top + 0.9)])
    _arch_arrow(ax, [(dec, dec_top + 1.3), (dec, dec_top + 1.8)])
    if tied_embeddings:
        tie = ([dec + 1.75, 8.9, 8.9, dec + 1.6], [1.0, 1.0, dec_top + 1.1, dec_top + 1.1])
        ax.plot(*tie, color="tab:red", ls=":", lw=1.5)
        note = "one matrix $E$,\n$V \\times d_{model}$:\nweight tying"
        ax.text(9.0, dec_top + 0.6, note, color="tab:red", fontsize=9, va="top")
    ax.set_xlim(-3.3, 10.3)
    ax.set_ylim(-0.4, dec_top + 2.4)
    ax.axis("off")
    ax.set_title(title)
    return ax


# --- Lecture 1 (tokenization) ----------------------------------------------------------------------------------


def bpe_pipeline(text: str, chunks: list[str], chunk_tokens: list[list[str]], chunk_ids: list[list[int]], ax=None):
    """Byte-level BPE's four steps on one text, one column per pre-tokenizer chunk.

    Rows, top to bottom: the chunks (spaces shown as ␣), their UTF-8 bytes, the tokens the merges leave in each
    chunk (separated by |), and those tokens' ids. chunks, chunk_tokens and chunk_ids come from the tokenizer
    (one entry per chunk); this function only draws them. Returns the Axes.
    """
    if not (len(chunks) == len(chunk_tokens) == len(chunk_ids)) or not chunks:
        raise ValueError(
            f"chunks, chunk_tokens and chunk_ids need one entry per chunk, got {len(chunks)}, {len(chunk_tokens)} and "
            f"{len(chunk_ids)}"
        )
    if "".join(chunks) != text:
        raise ValueError(f"the chunks must join to the text {text!r}, got {''.join(chunks)!r}")
    stages = [
        ("pre-tokenize (regex)", [repr(c)[1:-1].replace(" ", "␣") for c in chunks]),
        ("UTF-8 bytes", [" ".join(map(str, c.encode("utf-8"))) for c in chunks]),
        ("merges, in rank order", ["|".join(t.replace(" ", "␣") for t in tokens) for tokens in chunk_tokens]),
        ("token ids", [" ".join(map(str, ids)) for ids in chunk_ids]),
    ]
    colors = ["#f4b183", "#dddddd", "#9dc3e6", "#a9d18e"]
    widths = [max(len(row[k]) for _, row in stages) * 0.11 + 0.3 for k in range(len(chunks))]
    lefts = [sum(widths[:k]) + 0.25 * k for k in range(len(chunks))]
    if ax is None:
        ax = plt.subplots(figsize=(12, 3.6))[1]
    for r, (label, row) in enumerate(stages):
        y = -r * 1.0
        ax.text(-0.3, y, f"{r + 1}. {label}", ha="right", va="center", fontsize=10)
        for k, item in enumerate(row):
            middle = lefts[k] + widths[k] / 2
            box = FancyBboxPatch((lefts[k], y - 0.25), widths[k], 0.5, boxstyle="round,pad=0.02", fc=colors[r], ec="k")
            ax.add_patch(box)
            ax.text(middle, y, item, ha="center", va="center", fontsize=9, family="monospace")
            if r:
                arrow = dict(arrowstyle="-|>", mutation_scale=10, color="gray")
                ax.add_patch(FancyArrowPatch((middle, y + 0.73), (middle, y + 0.27), **arrow))
    ax.text(sum(widths) / 2, 0.7, repr(text), ha="center", va="center", fontsize=11, family="monospace")
    ax.set_xlim(-3.2, lefts[-1] + widths[-1] + 0.1)
    ax.set_ylim(-len(stages) + 0.4, 1.0)
    ax.axis("off")
    ax.set_title("Byte-level BPE, step by step: GPT-2's tokenizer on one text (␣ = space)")
    return ax


# --- Lecture 7 (BERT) --------------------------------------------------------------------------------------------


def attention_maps(weights, sentence: str, vmax: float = 1.0):
    """Every attention map of an encoder for one sentence, in a grid: one row per layer, one column per head.

    weights has shape (layers, heads, n, n) (a tensor or array; rows the attending token, columns the attended
    one). All maps share one colour scale from 0 to vmax (1, the largest weight a softmax can give), so a pale map
    is a spread-out one; one colour bar is labelled. sentence is named in the title. Returns the Figure.
    """
    shape = tuple(getattr(weights, "shape", ()))
    if len(shape) != 4 or shape[2] != shape[3]:
        raise ValueError(f"weights must have shape (layers, heads, n, n), got {shape}")
    layers, heads = shape[:2]
    fig, axes = plt.subplots(layers, heads, figsize=(1.25 * heads, 1.4 * layers), layout="constrained", squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer, head]
            image = ax.imshow(weights[layer][head], cmap="viridis", vmin=0.0, vmax=vmax)
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_title(f"head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.6, label=f"attention weight (one scale for all {layers * heads} maps)")
    fig.suptitle(f"All {layers} × {heads} = {layers * heads} attention maps for '{sentence}'")
    fig.supxlabel("key token, first to last, left to right (attended to)")
    fig.supylabel("query token, first to last, top to bottom (attending)")
    return fig


# --- Lecture 9 (T5) -------------------------------------------------------------------------------------------


def teacher_forcing(decoder_input: list[str], labels: list[str], ax=None):
    """Teacher forcing as two rows of boxes: each column is one decoder position, which reads the decoder-input piece
    above it and is trained to output the label below it; a dashed arrow from each label to the next column's input
    shows the input as the labels shifted right. decoder_input and labels are the pieces as strings, one per
    position (the same length). Returns the Axes.
    """
    if len(decoder_input) != len(labels) or not labels:
        raise ValueError(
            f"decoder_input and labels need one piece per position, the same number: got {len(decoder_input)} "
            f"and {len(labels)}"
        )
    if ax is None:
        ax = plt.subplots(figsize=(9, 2.6))[1]
    step = 1.3  # the distance between columns
    for t, (piece_in, piece_out) in enumerate(zip(decoder_input, labels)):
        x = t * step
        for y, text, colour in [(1.0, piece_in, "#dbe9f6"), (0.0, piece_out, "#fde3c8")]:
            ax.add_patch(FancyBboxPatch((x, y), 1.1, 0.5, boxstyle="square,pad=0", facecolor=colour, edgecolor="black"))
            ax.text(x + 0.55, y + 0.25, text, ha="center", va="center", fontsize=10)
        ax.add_patch(FancyArrowPatch((x + 0.55, 1.0), (x + 0.55, 0.5), arrowstyle="->", mutation_scale=12))
        if t + 1 < len(labels):  # label t becomes the input of position t + 1
            shifted = FancyArrowPatch((x + 0.9, 0.5), (x + 1.5, 1.0), arrowstyle="->", mutation_scale=10, color="grey")
            shifted.set_linestyle("--")
            ax.add_patch(shifted)
    ax.text(-0.2, 1.25, "decoder input", ha="right", va="center")
    ax.text(-0.2, 0.25, "labels (predicted)", ha="right", va="center")
    ax.set_xlim(-2.6, len(labels) * step)
    ax.set_ylim(-0.2, 1.7)
    ax.axis("off")
    ax.set_title("teacher forcing: the decoder input is the labels shifted right, <pad> in front")
    return ax


# --- Lecture 10 (decoding) -------------------------------------------------------------------------------------


def beam_tree(tree, label=str, steps: int = 3, ax=None):
    """The candidates beam search weighed at its first steps, as a tree from the prompt.

    tree holds one list per step of (parent, token, score, kept): parent is the index of the beam it extends
    among the previous step's kept beams (best first, as beam search ranks them), token its id, score the log P
    of the whole sequence, kept whether it is one of the step's num_beams best. label(token) gives the text
    drawn beside each node. Kept candidates are green, pruned ones gray. Returns the Axes.
    """
    if not tree or steps < 1:
        raise ValueError(f"beam_tree needs at least one step of candidates and steps >= 1, got {len(tree)} and {steps}")
    tree = tree[:steps]
    num_beams = sum(kept for *_, kept in tree[0])
    children = len(tree[0])  # the first step has a single parent: the prompt
    if ax is None:
        ax = plt.subplots(figsize=(12, 6))[1]
    text_style = dict(
        textcoords="offset points",
        xytext=(0, 8),
        ha="center",
        va="bottom",
        fontsize=9,
        zorder=4,
        bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85),
    )
    ax.scatter([0], [0], s=80, color="tab:green", zorder=3)
    ax.annotate("prompt\n0.000", (0, 0), **text_style)
    parent_y = [0.0]  # y of each kept beam of the previous step, best first
    for step, nodes in enumerate(tree, start=1):
        ys = [3 - 6 * i / max(len(nodes) - 1, 1) for i in range(len(nodes))]
        kept_nodes = []
        for (parent, token, score, kept), y in zip(nodes, ys):
            color = "tab:green" if kept else "lightgray"
            ax.plot([step - 1, step], [parent_y[parent], y], color=color, linewidth=2 if kept else 1, zorder=1 + kept)
            ax.scatter([step], [y], s=80 if kept else 30, color=color, zorder=3)
            ax.annotate(f"{label(token)}  {score:.3f}", (step, y), color="black" if kept else "gray", **text_style)
            if kept:
                kept_nodes.append((score, y))
        parent_y = [y for score, y in sorted(kept_nodes, key=lambda node: -node[0])]
    ax.plot([], [], color="tab:green", linewidth=2, label=f"kept: the {num_beams} best\ncandidates of the step")
    ax.plot([], [], color="lightgray", label="pruned")
    ax.set_xticks(range(len(tree) + 1), ["prompt"] + [f"step {s}" for s in range(1, len(tree) + 1)])
    ax.set_xlim(-0.3, len(tree) + 0.3)
    ax.set_ylim(-3.5, 3.8)
    ax.set_yticks([])
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"Beam search with {num_beams} beams: each beam's {children} best next tokens and log P(sequence)")
    ax.set_xlabel("decoding step")
    return ax
