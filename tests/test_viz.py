import matplotlib

matplotlib.use("Agg")  # tests draw off-screen

import matplotlib.pyplot as plt
import pytest
import torch

from scratch import viz


def test_attention_heatmap_labels_and_title():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    ax = viz.plot_attention(weights, list("abc"), list("wxyz"), title="t", annotate=True)
    assert ax.get_title() == "t" and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == list("wxyz")
    plt.close("all")


def test_heads_grid_has_one_panel_per_head():
    fig = viz.plot_attention_heads(torch.softmax(torch.randn(5, 3, 3), dim=-1), list("abc"), ncols=4)
    assert sum(ax.get_title().startswith("head") for ax in fig.axes) == 5
    plt.close("all")


@pytest.mark.parametrize("call, shape", [(viz.plot_attention, (2, 3, 3)), (viz.plot_attention_heads, (3, 3)),
                                         (viz.plot_positional_encoding, (4,))])
def test_wrong_dimensions_are_refused(call, shape):
    with pytest.raises(ValueError, match="must be"):
        call(torch.zeros(shape))
