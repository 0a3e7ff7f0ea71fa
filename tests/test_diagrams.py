"""Every diagram in scratch.diagrams draws without error, off-screen (Agg)."""

import matplotlib

matplotlib.use("Agg")  # tests draw off-screen

import matplotlib.pyplot as plt
import pytest

from scratch import diagrams

# --- Lecture 0 (introduction) and lecture 6 (the full transformer) ---------------------------------------------


def test_dependency_paths_count_the_steps_in_their_titles():
    fig = diagrams.dependency_paths(n=6)
    fig.canvas.draw()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].endswith("in 6 steps") and titles[1].endswith("in 1 step")
    with pytest.raises(ValueError, match="n must be an int >= 2"):
        diagrams.dependency_paths(n=1)
    plt.close("all")


def test_transformer_draws_both_stacks_with_the_labels_given():
    ax = diagrams.transformer()
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert any("encoder" in t for t in texts) and any("decoder" in t for t in texts) and ax.get_title()
    assert not any("weight tying" in t for t in texts)
    ax = diagrams.transformer(source="twenty - three", prediction="drei und zwanzig", tied_embeddings=True)
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert {"twenty - three", "drei und zwanzig"} <= set(texts) and any("weight tying" in t for t in texts)
    plt.close("all")


# --- Lecture 1 (tokenization) ----------------------------------------------------------------------------------


def test_bpe_pipeline_draws_one_column_per_chunk():
    ax = diagrams.bpe_pipeline("ab c", ["ab", " c"], [["ab"], [" c"]], [[5], [7]])
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert {"ab", "␣c", "97 98", "32 99", "5", "7"} <= set(texts) and ax.get_title()
    with pytest.raises(ValueError, match="one entry per chunk"):
        diagrams.bpe_pipeline("ab c", ["ab", " c"], [["ab"]], [[5], [7]])
    with pytest.raises(ValueError, match="must join to the text"):
        diagrams.bpe_pipeline("ab d", ["ab", " c"], [["ab"], [" c"]], [[5], [7]])
    plt.close("all")


# --- Lecture 7 (BERT) --------------------------------------------------------------------------------------------


def test_attention_maps_draw_one_panel_per_head_on_one_scale():
    import torch

    weights = torch.softmax(torch.randn(2, 3, 5, 5), dim=-1)
    fig = diagrams.attention_maps(weights, "a short sentence")
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 6 and all(ax.images[0].get_clim() == (0.0, 1.0) for ax in panels)
    assert "2 × 3 = 6" in fig.get_suptitle() and "a short sentence" in fig.get_suptitle()
    with pytest.raises(ValueError, match=r"shape \(layers, heads, n, n\)"):
        diagrams.attention_maps(weights[0], "x")
    plt.close("all")


# --- Lecture 9 (T5) -------------------------------------------------------------------------------------------


def test_teacher_forcing_draws_both_rows_and_refuses_unequal_lengths():
    ax = diagrams.teacher_forcing(["<pad>", "▁d", "▁c"], ["▁d", "▁c", "</s>"])
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert {"<pad>", "▁d", "▁c", "</s>", "decoder input"} <= set(texts) and ax.get_title()
    assert len(ax.patches) == 3 * 2 + 3 + 2  # 6 boxes, 3 arrows down, 2 dashed arrows to the next input
    with pytest.raises(ValueError, match="one piece per position"):
        diagrams.teacher_forcing(["<pad>"], ["▁d", "</s>"])
    plt.close("all")


# --- Lecture 10 (decoding) -------------------------------------------------------------------------------------


def test_beam_tree_draws_kept_and_pruned_candidates_with_their_labels():
    tree = [
        [(0, 7, -1.0, True), (0, 8, -1.5, True), (0, 9, -2.0, False)],
        [(0, 1, -2.0, True), (0, 2, -3.5, False), (1, 3, -2.5, True), (1, 4, -4.0, False)],
    ]
    ax = diagrams.beam_tree(tree, label=lambda token: f"t{token}")
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert "t7  -1.000" in texts and "t4  -4.000" in texts and "2 beams" in ax.get_title()
    with pytest.raises(ValueError, match="at least one step"):
        diagrams.beam_tree([])
    plt.close("all")
