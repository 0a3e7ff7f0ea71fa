"""Diagrams the lectures draw: the architecture, its parts and the data flowing through them.

Each lecture's diagram is one call to a function here (grouped below by lecture), so the notebook shows the idea
and not the drawing code. Every function draws with matplotlib, gives the figure a title, and returns the Figure
or Axes it drew on (its docstring says which); the notebook ends the cell with `plt.show()`.
"""

from __future__ import annotations

import collections
import math

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

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
        ("merges, in learned order", ["|".join(t.replace(" ", "␣") for t in tokens) for tokens in chunk_tokens]),
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


# --- Lecture 2 (embeddings and positions) ----------------------------------------------------------------------


def _cells(ax, x, y, values, highlight_row=None, colour="tab:orange"):
    """A grid of unit squares with values written in, top-left row at height y; one row may be highlighted."""
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            face = colour if r == highlight_row else "white"
            ax.add_patch(plt.Rectangle((x + c, y - r), 1, 1, facecolor=face, edgecolor="black", alpha=0.8))
            ax.text(x + c + 0.5, y - r + 0.5, value, ha="center", va="center", fontsize=9)


def embedding_lookup(V: int = 8, d: int = 4, t: int = 5, ax=None):
    """An embedding lookup as a product: the one-hot row e_t (1 x V) times E (V x d) is row t of E.

    The single 1 of e_t and row t of E are highlighted; the result is drawn to the right. Returns the Axes.
    """
    if not all(isinstance(v, int) for v in (V, d, t)) or V < 2 or d < 1 or not 0 <= t < V:
        raise ValueError(f"need ints V >= 2, d >= 1 and 0 <= t < V, got V={V!r}, d={d!r}, t={t!r}")
    table = [[f"E{r}{c}" for c in range(d)] for r in range(V)]
    if ax is None:
        ax = plt.subplots(figsize=(11, 4))[1]
    _cells(ax, 0, 3, [["1" if v == t else "0" for v in range(V)]])
    ax.add_patch(plt.Rectangle((t, 3), 1, 1, facecolor="tab:orange", alpha=0.8))  # the single 1
    table_x = V + 3.5
    _cells(ax, table_x, 7, table, highlight_row=t)
    _cells(ax, table_x + d + 2, 3, [table[t]], highlight_row=0)
    ax.text(V + 1.2, 3.5, "×", fontsize=20, ha="center", va="center")
    ax.text(table_x + d + 1, 3.5, "=", fontsize=20, ha="center", va="center")
    ax.text(V / 2, 2.3, f"one-hot $e_t$ of token t = {t} (1 × V)", ha="center")
    ax.text(table_x + d / 2, 7 - V + 0.3, "embedding matrix E (V × $d_{model}$)", ha="center")
    ax.text(table_x + 1.5 * d + 2, 2.3, "$E[t]$, row t (1 × $d_{model}$)", ha="center")
    for v in range(V):
        ax.text(table_x - 0.2, 7 - v + 0.5, f"row {v}", ha="right", va="center", fontsize=8)
    ax.set_xlim(-0.5, table_x + 2 * d + 2.5)
    ax.set_ylim(7 - V - 0.2, 8.4)
    ax.set_aspect("equal")
    ax.axis("off")
    sizes = f"V = {V}, $d_{{model}}$ = {d}"
    ax.set_title(f"an embedding lookup is a product: the one 1 in $e_t$ picks row t of E ({sizes})")
    return ax


def skipgram_window(words: list[str], centre: int, window: int = 2, negatives: list[str] = (), ax=None):
    """Skip-gram's training pairs for one centre word: arrows to the words within `window` positions (positive
    pairs, blue), and the randomly drawn negative words below (red). Returns the Axes.
    """
    if not 0 <= centre < len(words) or window < 1:
        raise ValueError(f"need 0 <= centre < len(words) = {len(words)} and window >= 1, got {centre}, {window}")
    step = 1.5
    if ax is None:
        ax = plt.subplots(figsize=(11, 3.6))[1]
    for position, word in enumerate(words):
        colour = "tab:orange" if position == centre else "tab:blue" if abs(position - centre) <= window else "white"
        ax.add_patch(plt.Rectangle((position * step, 0), 1.3, 0.6, facecolor=colour, edgecolor="black", alpha=0.6))
        ax.text(position * step + 0.65, 0.3, word, ha="center", va="center")
        if 0 < abs(position - centre) <= window:
            bend = -0.5 if position > centre else 0.5  # arcs above the row, to either side
            arrow = dict(arrowstyle="->", connectionstyle=f"arc3,rad={bend}", color="tab:blue")
            ax.annotate("", xy=(position * step + 0.65, 0.62), xytext=(centre * step + 0.65, 0.62), arrowprops=arrow)
    for n, word in enumerate(negatives):
        ax.add_patch(plt.Rectangle((1.5 + n * step, -1.5), 1.3, 0.6, facecolor="tab:red", edgecolor="black", alpha=0.4))
        ax.text(1.5 + n * step + 0.65, -1.2, word, ha="center", va="center")
    ax.text(centre * step + 0.65, 2.0, "positive pairs (c, o): make σ(v_c · u_o) large", ha="center", color="tab:blue")
    if negatives:
        note = f"K = {len(negatives)} negatives $n_k$, drawn from frequency$^{{0.75}}$: make σ(v_c · u_n) small"
        ax.text(1.5 + len(negatives) * step / 2, -1.95, note, ha="center", color="tab:red")
    ax.set_xlim(-0.2, len(words) * step)
    ax.set_ylim(-2.2, 2.3)
    ax.axis("off")
    ax.set_title(f"skip-gram with negative sampling: centre word '{words[centre]}' (orange), window {window} (blue)")
    return ax


def rotation_2d(q, k, theta: float, positions: list[tuple[int, int]]):
    """RoPE in two dimensions: for each (m, n) in positions, one panel with the 2-vectors q and k (pale), and q
    turned by the angle m·theta and k by n·theta (dark); each panel's title gives the angle between the two turned
    vectors. Returns the Figure.
    """
    q, k = [float(v) for v in q], [float(v) for v in k]
    if len(q) != 2 or len(k) != 2 or not positions:
        raise ValueError(f"q and k must be 2-vectors and positions non-empty, got {q}, {k}, {positions}")

    def turn(x, angle):
        c, s = math.cos(angle), math.sin(angle)
        return [c * x[0] - s * x[1], s * x[0] + c * x[1]]

    fig, axes = plt.subplots(1, len(positions), figsize=(5 * len(positions), 4.6), squeeze=False)
    limit = 1.3 * max(math.hypot(*q), math.hypot(*k))
    for ax, (m, n) in zip(axes[0], positions):
        q_turned, k_turned = turn(q, m * theta), turn(k, n * theta)
        for vector, name, colour in [
            (q, "q", "lightsteelblue"),
            (k, "k", "navajowhite"),
            (q_turned, f"R({m}θ) q", "tab:blue"),
            (k_turned, f"R({n}θ) k", "tab:orange"),
        ]:
            ax.annotate("", xy=vector, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour, lw=2))
            ax.text(1.12 * vector[0], 1.12 * vector[1], name, color=colour, ha="center", va="center")
        between = math.degrees(math.atan2(q_turned[1], q_turned[0]) - math.atan2(k_turned[1], k_turned[0])) % 360
        ax.set_title(f"query at m = {m}, key at n = {n}: angle between {between:.0f}°")
        ax.set_xlim(-limit, limit)
        ax.set_ylim(-limit, limit)
        ax.set_aspect("equal")
        ax.axhline(0, color="gray", linewidth=0.5)
        ax.axvline(0, color="gray", linewidth=0.5)
        ax.set_xlabel("dimension 0")
        ax.set_ylabel("dimension 1")
    fig.suptitle(f"RoPE in two dimensions (θ = {theta}): pale = before rotation, dark = rotated by position")
    fig.tight_layout()
    return fig


# --- Lectures 3 and 4 (attention, multi-head attention) --------------------------------------------------------


def _flow_box(ax, x, y, text, colour, w=1.9, h=0.9):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05", fc=colour, ec="black"))
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _flow_arrow(ax, start, end, label="", above=False):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", lw=1.3))
    x, y = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
    ax.text(x if above else x - 0.1, y + 0.08, label, ha="center" if above else "right", va="bottom", fontsize=10)


def attention_flow():
    """Scaled dot-product attention as a flow chart, each box with its shape: X (n tokens) gives Q; X again (self-
    attention) or m other tokens give K and V; Q K^T / sqrt(d_k) makes the n x m scores, a softmax per row (after
    an optional mask) the n x m weights, and weights times V the n x d_v output. Returns the Figure."""
    fig, ax = plt.subplots(figsize=(13, 4.2))
    _flow_box(ax, 0, 1.5, "$X$: $n$ tokens\n$n \\times d_{model}$", "#dddddd")
    _flow_box(ax, 0, -0.3, "$X$ again (self-attn.)\nor $m$ other tokens\n$m \\times d_{model}$", "#dddddd", h=1.1)
    for y, name, shape, colour in [
        (2.6, "Q", "n \\times d_k", "#f4b183"),
        (1.2, "K", "m \\times d_k", "#9dc3e6"),
        (-0.2, "V", "m \\times d_v", "#a9d18e"),
    ]:
        _flow_box(ax, 3, y, f"${name}$\n${shape}$", colour)
        _flow_arrow(ax, (0.95, 1.5 if name == "Q" else -0.3), (2.05, y), f"$\\cdot W^{name}$", above=name == "V")
    _flow_box(ax, 6, 1.9, "$Q K^\\top / \\sqrt{d_k}$\n$n \\times m$ scores", "#fff2cc", w=2.2)
    _flow_arrow(ax, (3.95, 2.6), (4.9, 2.0))
    _flow_arrow(ax, (3.95, 1.2), (4.9, 1.8))
    _flow_box(
        ax, 9, 1.9, "softmax per row\n(a mask sets $-\\infty$ first)\n$n \\times m$ weights", "#fff2cc", w=2.4, h=1.1
    )
    _flow_arrow(ax, (7.1, 1.9), (7.8, 1.9))
    _flow_box(ax, 12, 0.9, "weights $\\cdot V$\n$n \\times d_v$ output", "#e2cfea", w=2.2)
    _flow_arrow(ax, (10.2, 1.9), (11.2, 1.15))
    _flow_arrow(ax, (3.95, -0.2), (10.9, 0.75))
    ax.set_xlim(-1.2, 13.3)
    ax.set_ylim(-1.0, 3.3)
    ax.axis("off")
    ax.set_title("Scaled dot-product attention: what flows where, with shapes")
    return fig


_HEAD_COLOURS = ["#f4b183", "#9dc3e6", "#a9d18e", "#c9a0dc", "#ffd966", "#f8cbad"]


def _blocks(ax, x, y, width, height, colours, label):
    """A matrix as a rectangle split into len(colours) equal blocks of columns, with a label underneath."""
    step = width / len(colours)
    for j, colour in enumerate(colours):
        ax.add_patch(Rectangle((x + j * step, y), step, height, fc=colour, ec="black"))
    ax.text(x + width / 2, y - 0.15, label, ha="center", va="top", fontsize=10)


def _split_arrow(ax, start, end, label=""):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", lw=1.2))
    ax.text((start[0] + end[0]) / 2, max(start[1], end[1]) + 0.1, label, ha="center", va="bottom", fontsize=10)


def head_split(h: int = 4):
    """Multi-head attention in its batched form, for h heads (1 to 6): X times W^Q (and W^K, W^V) gives one
    n x d_model matrix made of h blocks of d_k columns, one per head (head 0 on the left, drawn on top); each head
    attends with its own block; the h outputs (n x d_v each) are concatenated side by side and multiplied by W^O.
    Returns the Figure."""
    if not isinstance(h, int) or not 1 <= h <= len(_HEAD_COLOURS):
        raise ValueError(f"h must be an int from 1 to {len(_HEAD_COLOURS)} (heads to draw), got {h!r}")
    colours = _HEAD_COLOURS[:h]
    rows = [3.3 - 3.0 * j / max(h - 1, 1) for j in range(h)] if h > 1 else [1.7]
    fig, ax = plt.subplots(figsize=(13, 4.4))
    _blocks(ax, 0, 1.4, 1.6, 1.2, ["#dddddd"], "$X$: $n \\times d_{model}$")
    _split_arrow(ax, (1.7, 2.0), (2.7, 2.0), "$\\cdot W^Q$ (and\n$W^K$, $W^V$)")
    q_label = "$Q$ (and $K$, $V$):\n$n \\times d_{model}$ =\n$h$ blocks of\n$d_k$ columns"  # narrow: the arrows pass by
    _blocks(ax, 2.8, 1.4, 1.6, 1.2, colours, q_label)
    for j, (colour, y) in enumerate(zip(colours, rows)):
        _split_arrow(ax, (4.45, 1.55 + 1.05 * (h - 1 - j) / max(h - 1, 1)), (4.75, y + 0.3))
        ax.text(
            6.2,
            y + 0.3,
            f"head {j} = Attention$(Q_{j}, K_{j}, V_{j})$",
            ha="center",
            va="center",
            fontsize=10,
            bbox=dict(fc=colour, ec="black"),
        )
        _split_arrow(ax, (7.7, y + 0.3), (8.25, y + 0.3))
        _blocks(ax, 8.3, y + 0.1, 0.4, 0.45, [colour], "")
        _split_arrow(ax, (8.75, y + 0.3), (9.55, 2.0))
    ax.text(8.5, min(rows) - 0.05, "$n \\times d_v$ each", ha="center", va="top", fontsize=10)
    _blocks(ax, 9.6, 1.4, 1.6, 1.2, colours, "Concat: $n \\times h d_v$")
    _split_arrow(ax, (11.25, 2.0), (11.95, 2.0), "$\\cdot W^O$")
    _blocks(ax, 12.0, 1.4, 1.6, 1.2, ["#dddddd"], "output: $n \\times d_{model}$")
    ax.set_xlim(-0.2, 13.8)
    ax.set_ylim(-0.4, 4.0)
    ax.axis("off")
    ax.set_title(
        f"Multi-head attention (h = {h}): split the projections into heads, attend per head, concatenate, then $W^O$"
    )
    return fig


# --- Lecture 5 (the transformer block) -------------------------------------------------------------------------

_BLOCK_COLOURS = {"attention": "#f4b183", "ffn": "#9dc3e6", "norm": "#ffe699", "dropout": "#e7e6e6"}
_DROPOUT_INSIDE = {"attention": "dropout on its weights", "ffn": "dropout after the activation"}


def _block_column(ax, cx, sublayers, norm_first=False, dropout=False, title="", input_label="x"):
    """One block drawn bottom to top at x = cx; sublayers: [(label, kind)] with kind "attention" or "ffn".

    Each sub-layer is wrapped post-LN (sub-layer, +, LayerNorm) or pre-LN (LayerNorm, sub-layer, +), with its
    residual path in green from where the stream branches to the +. With dropout, each sub-layer's box names the
    dropout inside it and a dropout box sits between the sub-layer and its +. Returns ({label: (left x, y)}, top y).
    """
    width, gap, radius = 3.4 if dropout else 3.0, 0.35, 0.15
    boxes, y = {}, 0.0
    ax.text(cx, y - 0.1, input_label, ha="center", va="top")
    for label, kind in sublayers:
        branch = y + gap / 2  # the residual path leaves the stream here ...
        core = [(label, kind)] + ([("dropout", "dropout")] if dropout else [])
        steps = [("LayerNorm", "norm"), *core, "+"] if norm_first else [*core, "+", ("LayerNorm", "norm")]
        for step in steps:
            ax.annotate("", (cx, y + gap), (cx, y), arrowprops=dict(arrowstyle="->"))
            y += gap
            if step == "+":  # ... and is added back here
                side = cx + width / 2 + 0.4
                ax.plot([cx, side, side], [branch, branch, y + radius], color="tab:green", lw=2)
                arrow = dict(arrowstyle="->", color="tab:green", lw=2)
                ax.annotate("", (cx + radius, y + radius), (side, y + radius), arrowprops=arrow)
                ax.add_patch(plt.Circle((cx, y + radius), radius, fc="white", ec="black"))
                ax.text(cx, y + radius, "+", ha="center", va="center")
                y += 2 * radius
                continue
            text, box_kind = step
            inside = dropout and box_kind in _DROPOUT_INSIDE
            height = 0.8 if inside else 0.45 if box_kind == "dropout" else 0.6
            box = FancyBboxPatch(
                (cx - width / 2, y),
                width,
                height,
                fc=_BLOCK_COLOURS[box_kind],
                ec="black",
                boxstyle="round,pad=0,rounding_size=0.12",
                ls="--" if box_kind == "dropout" else "-",
            )
            ax.add_patch(box)
            if inside:
                text = f"{text}\n({_DROPOUT_INSIDE[box_kind]})"
            ax.text(cx, y + height / 2, text, ha="center", va="center", fontsize=8.5 if inside else 9)
            boxes[step[0]] = (cx - width / 2, y + height / 2)
            y += height
    ax.annotate("", (cx, y + gap), (cx, y), arrowprops=dict(arrowstyle="->"))
    ax.text(cx, y + gap + 0.05, f"output\n{title}", ha="center", va="bottom", linespacing=1.6)
    return boxes, y + gap


def _finish_columns(ax, top, title, extra_top=1.2):
    ax.set_xlim(-2, 8.2)
    ax.set_ylim(-0.7, top + extra_top)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title)


def transformer_blocks(dropout: bool = False, ax=None):
    """The paper's encoder block and decoder block (post-LN), side by side, bottom to top.

    Encoder: self-attention, then the feed-forward network, each followed by + (its residual path in green) and
    a LayerNorm. Decoder: masked self-attention, cross-attention, feed-forward network, wrapped the same way; a
    purple line carries the memory (the last encoder block's output) to its cross-attention. dropout=True draws
    dropout's three places: on the attention weights, after the FFN's activation, and on every sub-layer's output
    before the +. Returns the Axes.
    """
    if ax is None:
        ax = plt.subplots(figsize=(10, 9.5 if dropout else 7.5))[1]
    encoder = [("self-attention", "attention"), ("feed-forward network", "ffn")]
    decoder = [
        ("masked self-attention", "attention"),
        ("cross-attention", "attention"),
        ("feed-forward network", "ffn"),
    ]
    _, encoder_top = _block_column(
        ax, 0, encoder, dropout=dropout, title="ENCODER BLOCK (× N)", input_label="x: source positions"
    )
    boxes, top = _block_column(
        ax, 6, decoder, dropout=dropout, title="DECODER BLOCK (× N)", input_label="y: target positions"
    )
    left, cross_y = boxes["cross-attention"]  # the memory enters the decoder here
    ax.plot([0, 0, 3, 3], [encoder_top + 0.75, encoder_top + 1.0, encoder_top + 1.0, cross_y], color="tab:purple")
    ax.annotate("", (left, cross_y), (3, cross_y), arrowprops=dict(arrowstyle="->", color="tab:purple", lw=1.5))
    memory = "memory: the last encoder block's output,\nthe keys and values of cross-attention"
    ax.text(1.5, encoder_top + 1.1, memory, color="tab:purple", fontsize=8, ha="center", va="bottom")
    _finish_columns(ax, top, "the paper's blocks (post-LN); green: the residual paths")
    return ax


def norm_placement(dropout: bool = False, ax=None):
    """The same encoder block twice: post-LN, x ← LN(x + f(x)) (the paper, BERT), and pre-LN, x ← x + f(LN(x))
    (GPT-2 and later), residual paths in green. In pre-LN one path from x to the output touches no LayerNorm.
    dropout=True draws dropout's three places in both. Returns the Axes."""
    if ax is None:
        ax = plt.subplots(figsize=(10, 8 if dropout else 6.5))[1]
    sublayers = [("self-attention", "attention"), ("feed-forward network", "ffn")]
    _block_column(ax, 0, sublayers, False, dropout, title="post-LN: x ← LN(x + f(x))\n(the paper, BERT)")
    _, top = _block_column(ax, 6, sublayers, True, dropout, title="pre-LN: x ← x + f(LN(x))\n(GPT-2 and later)")
    title = "the same encoder block, two places for the LayerNorm"
    _finish_columns(ax, top, title + ("; grey: dropout" if dropout else ""), extra_top=1.6)
    return ax


# --- Lecture 7 (BERT) --------------------------------------------------------------------------------------------


def attention_maps(weights, sentence: str, vmax: float = 1.0, tokens: list[str] | None = None):
    """Every attention map of an encoder for one sentence, in a grid: one row per layer, one column per head.

    weights has shape (layers, heads, n, n) (a tensor or array; rows the attending token, columns the attended
    one). All maps share one colour scale from 0 to vmax (1, the largest weight a softmax can give), so a dark map
    is a spread-out one; one colour bar is labelled. sentence is named in the title. tokens, if given (n strings),
    label the rows of the first column and the columns of the bottom row. Returns the Figure.
    """
    shape = tuple(getattr(weights, "shape", ()))
    if len(shape) != 4 or shape[2] != shape[3]:
        raise ValueError(f"weights must have shape (layers, heads, n, n), got {shape}")
    layers, heads = shape[:2]
    if tokens is not None and len(tokens) != shape[2]:
        raise ValueError(f"tokens must name the {shape[2]} tokens of the maps, got {len(tokens)}")
    fig, axes = plt.subplots(layers, heads, figsize=(1.25 * heads, 1.4 * layers), layout="constrained", squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer, head]
            image = ax.imshow(weights[layer][head], cmap="viridis", vmin=0.0, vmax=vmax)
            ax.set_xticks([])
            ax.set_yticks([])
            if tokens is not None and head == 0:
                ax.set_yticks(range(len(tokens)), tokens, fontsize=5)
            if tokens is not None and layer == layers - 1:
                ax.set_xticks(range(len(tokens)), tokens, fontsize=5, rotation=90)
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


def beam_tree(history, label=str, children: int = 3, steps: int = 3, ax=None):
    """The candidates beam search weighed at its first steps, as a tree from the prompt.

    history holds one (candidates, parents, tokens) per step: candidates, a (beams, V) tensor, is the log P of
    every beam of the previous step (best first) extended by every token; parents and tokens, (num_beams,) each,
    are the candidates the step kept, best first. Each beam's `children` best candidates are drawn, labelled
    label(token) and their log P. Green: kept, and on a path to a candidate kept at the last drawn step; orange:
    kept at its step, but none of its descendants is kept at the last drawn step; gray: pruned. Returns the Axes.
    """
    if not history or steps < 1 or children < 1:
        raise ValueError(
            f"beam_tree needs at least one step of candidates, steps >= 1 and children >= 1, "
            f"got {len(history)} steps, steps={steps}, children={children}"
        )
    history = history[:steps]
    kept = [list(zip(parents.tolist(), tokens.tolist())) for _, parents, tokens in history]  # per step, best first
    alive = [set(range(len(pairs))) for pairs in kept]  # per step: indices of its kept candidates still on a path
    for step in range(len(kept) - 1, 0, -1):
        alive[step - 1] = {kept[step][i][0] for i in alive[step]}
    colors = {"alive": "tab:green", "dropped": "tab:orange", "pruned": "lightgray"}
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
    parent_y = [0.0]  # y of each kept candidate of the previous step, best first
    for step, (candidates, _, _) in enumerate(history, start=1):
        top = candidates.topk(min(children, candidates.shape[-1]), dim=-1)
        nodes = [
            (beam, token, score)
            for beam, (scores, tokens) in enumerate(zip(top.values.tolist(), top.indices.tolist()))
            for score, token in zip(scores, tokens)
        ]
        index = {pair: i for i, pair in enumerate(kept[step - 1])}
        if not set(index) <= {(beam, token) for beam, token, _ in nodes}:
            raise ValueError(f"step {step} kept a candidate outside each beam's {children} best: raise children")
        ys = [3 - 6 * i / max(len(nodes) - 1, 1) for i in range(len(nodes))]
        next_y = [0.0] * len(kept[step - 1])
        for (beam, token, score), y in zip(nodes, ys):
            i = index.get((beam, token))
            status = "pruned" if i is None else "alive" if i in alive[step - 1] else "dropped"
            drawn = status != "pruned"
            ax.plot([step - 1, step], [parent_y[beam], y], color=colors[status], linewidth=1 + drawn, zorder=1 + drawn)
            ax.scatter([step], [y], s=80 if drawn else 30, color=colors[status], zorder=3)
            ax.annotate(f"{label(token)}  {score:.3f}", (step, y), color="black" if drawn else "gray", **text_style)
            if drawn:
                next_y[i] = y
        parent_y = next_y
    num_beams = len(kept[0])
    ax.plot(
        [],
        [],
        color="tab:green",
        linewidth=2,
        label=f"kept (one of the step's {num_beams} best),\non a path to the last step",
    )
    ax.plot([], [], color="tab:orange", linewidth=2, label="kept, but no descendant\nsurvives to the last step")
    ax.plot([], [], color="lightgray", label="pruned")
    ax.set_xticks(range(len(history) + 1), ["prompt"] + [f"step {s}" for s in range(1, len(history) + 1)])
    ax.set_xlim(-0.3, len(history) + 0.3)
    ax.set_ylim(-3.5, 3.8)
    ax.set_yticks([])
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"Beam search with {num_beams} beams: each beam's {children} best next tokens and log P(sequence)")
    ax.set_xlabel("decoding step")
    return ax
