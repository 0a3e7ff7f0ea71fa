import matplotlib

matplotlib.use("Agg")  # tests draw off-screen

import matplotlib.pyplot as plt
import pytest
import torch

from course import viz


def test_attention_heatmap_labels_and_title():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    ax = viz.plot_attention(weights, list("abc"), list("wxyz"), title="t", annotate=True)
    assert ax.get_title() == "t" and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == list("wxyz")
    plt.close("all")


def test_attention_grid_shares_one_labelled_colour_scale():
    weights = torch.stack([torch.full((3, 3), 1 / 3), torch.eye(3)])  # uniform vs one-hot
    fig = viz.plot_attention_grid(weights, list("abc"), list("abc"), titles=["uniform", "one-hot"], vmax=1.0)
    panels = [ax for ax in fig.axes if ax.get_title() in ("uniform", "one-hot")]
    assert len(panels) == 2 and all(ax.images[0].get_clim() == (0.0, 1.0) for ax in panels)
    colorbars = [ax for ax in fig.axes if ax not in panels]
    assert len(colorbars) == 1 and "attention weight" in colorbars[0].get_ylabel()
    with pytest.raises(ValueError, match="one entry per panel"):
        viz.plot_attention_grid(weights, titles=["only one"])
    plt.close("all")


def test_attention_heatmap_takes_a_fixed_colour_scale():
    ax = viz.plot_attention(torch.full((2, 2), 0.5), vmax=1.0, colorbar=False)
    assert ax.images[0].get_clim() == (0.0, 1.0)
    plt.close("all")


@pytest.mark.parametrize(
    "call, shape",
    [
        (viz.plot_attention, (2, 3, 3)),
        (viz.plot_attention_grid, (3, 3)),
        (viz.plot_positional_encoding, (4,)),
    ],
)
def test_wrong_dimensions_are_refused(call, shape):
    with pytest.raises(ValueError, match="must be"):
        call(torch.zeros(shape))


# ---------------------------------------------------------------- bertviz offline


def _bertviz_input(layers=2, heads=3, n=4):
    torch.manual_seed(0)
    attention = tuple(torch.softmax(torch.randn(1, heads, n, n), dim=-1) for _ in range(layers))
    return attention, ["[CLS]", "whale", "ahoy", "[SEP]"][:n]


@pytest.mark.assets  # bertviz_html inlines require.js, d3 and jQuery from the npm assets
@pytest.mark.parametrize("view", ["head", "model"])
def test_bertviz_html_is_self_contained(view):
    import re

    attention, tokens = _bertviz_input()
    page = viz.bertviz_html(view, attention, tokens)
    assert "://" not in page and "cdnjs" not in page and "require.config({" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page, flags=re.I)
    assert "whale" in page and "ahoy" in page
    assert "define('d3'" in page and "requirejs" in page  # the libraries are inlined, not fetched
    assert page.lstrip().startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


@pytest.mark.assets  # bertviz_html inlines require.js, d3 and jQuery from the npm assets
def test_show_bertviz_wraps_the_page_in_an_iframe():
    import html

    attention, tokens = _bertviz_input()
    shown = viz.show_bertviz("model", attention, tokens, height=321)
    assert shown.data.startswith("<iframe srcdoc=") and "height:321px" in shown.data
    assert "://" not in html.unescape(shown.data)


@pytest.mark.assets  # bertviz_html inlines require.js, d3 and jQuery from the npm assets
def test_bertviz_sentence_pair_is_accepted():
    attention, tokens = _bertviz_input()
    page = viz.bertviz_html("head", attention, tokens, sentence_b_start=2)
    assert "Sentence A -> Sentence B" in page and "://" not in page


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(view="neuron"), "unknown view 'neuron'"),
        (dict(attention=torch.zeros(1, 3, 4, 4)), "attention must be a non-empty tuple/list"),
        (dict(attention=()), "attention must be a non-empty tuple/list"),
        (dict(attention=(torch.zeros(3, 4, 4),)), r"attention\[0\] must be a \(batch, h, n, n\) tensor"),
        (dict(attention=(torch.zeros(2, 3, 4, 4),)), "batch size 2"),
        (dict(attention=(torch.zeros(1, 3, 4, 4), torch.zeros(1, 2, 4, 4))), r"attention\[1\] has shape"),
        (dict(tokens=["a", "b"]), "tokens has 2 entries but the attention maps are 4 x 4"),
        (dict(tokens="abcd"), "tokens must be a list of strings"),
        (dict(sentence_b_start=4), "sentence_b_start must be in"),
    ],
)
def test_bertviz_bad_input_is_refused(change, message):
    attention, tokens = _bertviz_input()
    arguments = dict(view="head", attention=attention, tokens=tokens, sentence_b_start=None) | change
    with pytest.raises(ValueError, match=message):
        viz.bertviz_html(**arguments)
