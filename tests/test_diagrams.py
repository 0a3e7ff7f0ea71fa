"""Every diagram in course.diagrams draws without error, off-screen (Agg)."""

import matplotlib

matplotlib.use("Agg")  # tests draw off-screen

import matplotlib.pyplot as plt
import pytest

from course import diagrams

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


# --- Lecture 2 (embeddings and positions) ----------------------------------------------------------------------


def test_embedding_lookup_picks_row_t():
    ax = diagrams.embedding_lookup(V=6, d=3, t=2)
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("E20") == 2 and "row 5" in texts and ax.get_title()  # row 2 in E and again as the result
    with pytest.raises(ValueError, match="0 <= t < V"):
        diagrams.embedding_lookup(V=6, d=3, t=6)
    plt.close("all")


def test_skipgram_window_draws_the_window_and_the_negatives():
    words = "call me ishmael some years".split()
    ax = diagrams.skipgram_window(words, centre=2, window=1, negatives=["the", "sea"])
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert set(words) | {"the", "sea"} <= set(texts) and "'ishmael'" in ax.get_title()
    assert texts.count("") == 2  # one arrow to each word in the window
    with pytest.raises(ValueError, match="centre"):
        diagrams.skipgram_window(words, centre=5)
    plt.close("all")


def test_rotation_2d_keeps_the_angle_for_the_same_offset():
    fig = diagrams.rotation_2d([1.0, 0.5], [0.8, -0.6], 0.3, positions=[(1, 0), (6, 5), (4, 0)])
    fig.canvas.draw()
    angles = [ax.get_title().split("angle between ")[1] for ax in fig.axes]
    assert angles[0] == angles[1] != angles[2] and fig.get_suptitle()
    with pytest.raises(ValueError, match="2-vectors"):
        diagrams.rotation_2d([1.0, 0.5, 0.0], [0.8, -0.6], 0.3, positions=[(1, 0)])
    plt.close("all")


# --- Lectures 3 and 4 (attention, multi-head attention) --------------------------------------------------------


def test_attention_flow_names_every_shape():
    fig = diagrams.attention_flow()
    fig.canvas.draw()
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for shape in ["n \\times d_k", "m \\times d_k", "m \\times d_v", "$n \\times m$ scores", "$n \\times d_v$ output"]:
        assert shape in texts
    assert fig.axes[0].get_title()
    plt.close("all")


def test_head_split_draws_one_labelled_head_per_block():
    for h in (1, 4, 6):
        fig = diagrams.head_split(h)
        fig.canvas.draw()
        heads = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("head ")]
        assert heads == [f"head {j} = Attention$(Q_{j}, K_{j}, V_{j})$" for j in range(h)]
        assert f"h = {h}" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="h must be an int from 1 to 6"):
        diagrams.head_split(7)
    plt.close("all")


# --- Lecture 5 (the transformer block) -------------------------------------------------------------------------


def test_transformer_blocks_draw_both_blocks_and_dropout_only_when_asked():
    ax = diagrams.transformer_blocks()
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("LayerNorm") == 5 and texts.count("+") == 5 and "cross-attention" in texts and ax.get_title()
    assert not any("dropout" in t for t in texts)
    ax = diagrams.transformer_blocks(dropout=True)
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("dropout") == 5  # one on every sub-layer's output, before its +
    assert sum("dropout on its weights" in t for t in texts) == 3  # the three attentions
    assert sum("dropout after the activation" in t for t in texts) == 2  # the two FFNs
    plt.close("all")


def _column(ax, x):
    """The labels drawn at horizontal position x, bottom to top (first lines only)."""
    parts = {"LayerNorm", "+", "dropout", "self-attention", "feed-forward network"}
    found = [(t.get_position()[1], t.get_text().split("\n")[0]) for t in ax.texts if t.get_position()[0] == x]
    return [text for _, text in sorted(found) if text in parts]


def test_norm_placement_puts_the_norm_after_the_add_in_post_ln_and_before_the_sublayer_in_pre_ln():
    ax = diagrams.norm_placement()
    ax.figure.canvas.draw()
    assert _column(ax, 0) == ["self-attention", "+", "LayerNorm", "feed-forward network", "+", "LayerNorm"]
    assert _column(ax, 6) == ["LayerNorm", "self-attention", "+", "LayerNorm", "feed-forward network", "+"]
    ax = diagrams.norm_placement(dropout=True)
    ax.figure.canvas.draw()
    assert _column(ax, 6) == [
        *["LayerNorm", "self-attention", "dropout", "+"],
        *["LayerNorm", "feed-forward network", "dropout", "+"],
    ]
    assert "dropout" in ax.get_title()
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
    fig = diagrams.attention_maps(weights, "a b c", tokens=list("abcde"))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list("abcde")
    with pytest.raises(ValueError, match="tokens must name the 5 tokens"):
        diagrams.attention_maps(weights, "x", tokens=["a"])
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


def test_beam_tree_colours_kept_candidates_by_whether_their_path_survives():
    import torch

    history = [  # 2 beams; at step 2 both kept candidates extend beam 0, so beam 1 (token 1) dies
        (torch.tensor([[-1.0, -1.5, -2.0, -5.0]]), torch.tensor([0, 0]), torch.tensor([0, 1])),
        (
            torch.tensor([[-2.0, -2.5, -6.0, -7.0], [-3.5, -4.0, -8.0, -9.0]]),
            torch.tensor([0, 0]),
            torch.tensor([0, 1]),
        ),
    ]
    ax = diagrams.beam_tree(history, label=lambda token: f"t{token}", children=3)
    ax.figure.canvas.draw()
    texts = [t.get_text() for t in ax.texts]
    assert "t0  -1.000" in texts and "t1  -4.000" in texts and "2 beams" in ax.get_title()
    assert "each beam's 3 best next tokens" in ax.get_title()
    dots = {tuple(c.get_offsets()[0]): c.get_facecolor()[0][:3] for c in ax.collections}
    orange, green = matplotlib.colors.to_rgb("tab:orange"), matplotlib.colors.to_rgb("tab:green")
    assert [tuple(dots[xy]) for xy in sorted(dots) if xy[0] == 1 and tuple(dots[xy]) in (orange, green)] == [
        orange,  # step 1, token 1 (lower on the plot): kept, then its beam died
        green,  # step 1, token 0: on the surviving path
    ]
    with pytest.raises(ValueError, match="at least one step"):
        diagrams.beam_tree([])
    with pytest.raises(ValueError, match="raise children"):
        diagrams.beam_tree(history, children=1)
