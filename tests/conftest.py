"""Fixtures the test files share, and the markers that let `make unit` skip the slow tests and those that need more
than requirements.lock.

Markers (registered in pyproject.toml): `assets` needs the fetched models or data (data/assets, data/cache),
`slow` takes more than a few seconds, `browser` drives Chromium, `grading` needs nbgrader, `hub` needs JupyterHub or
repo2docker. A test that uses one of the fixtures that load assets or a real model is marked automatically.
"""

import os
import shutil
from types import SimpleNamespace

import pytest
import torch

from course import pretrained
from scratch.l06_gpt import GPT, GPTConfig

ASSET_FIXTURES = {"smollm2", "minilm", "gpt2_files", "moby_dick", "mlm", "lora_mlm"}
SLOW_FIXTURES = {"smollm2", "minilm", "mlm", "lora_mlm", "tiny_t5"}  # a real model: seconds to load, more to run


# Headless in a container: no sandbox, GPU or /dev/shm, and nothing fetched in the background.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium():
    """Chromium for the browser tests: its path ($CHROMIUM, else on PATH) and the flags to launch it with.
    Where it is missing a browser test skips, except on CI, where it fails: CI must run them."""
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = (
            "Chromium is not installed. Fix: `make setup` (installs it with apt-get), "
            "or `sudo apt-get install -y chromium` (Debian/Ubuntu), or set CHROMIUM=/path/to/chromium"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must run the browser tests, not skip them)")
        pytest.skip(message)
    return SimpleNamespace(path=path, flags=CHROMIUM_FLAGS)


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if ASSET_FIXTURES & fixtures:
            item.add_marker(pytest.mark.assets)
        if SLOW_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The tests' models are tiny: one thread beats two, which mostly wait for each other on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def sharpen_(model, scale, seed=0):
    """Scale the weight matrices and shift the norm gains and biases: a random model's distributions get peaks
    (ties become rare, as in a trained model) and its norms and biases are really tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.mul_(scale)
    return model.eval()


@pytest.fixture(scope="session")
def tiny_gpt2():
    """A tiny random transformers GPT-2 (2 layers, V = 100, EOS 99, eager attention) and ours with its weights."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2,
        n_head=4,
        n_embd=64,
        vocab_size=100,
        n_positions=64,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=99,
    )
    config._attn_implementation = "eager"  # so that it returns attention weights
    hf = sharpen_(GPT2LMHeadModel(config), 8.0)
    return hf, from_hf_gpt2(hf)


@pytest.fixture(scope="session")
def tiny_llama():
    """A tiny random transformers Llama (grouped-query attention, tied embeddings, eager attention) and ours."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from course.pretrained import from_hf_llama

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        vocab_size=100,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        attn_implementation="eager",
    )
    hf = sharpen_(LlamaForCausalLM(config), 3.0)
    return hf, from_hf_llama(hf)


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2-135M-Instruct, loaded once for every test file that needs it:
    transformers' model with its reference (eager) attention, ours built from it, and the tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from course import assets
    from course.pretrained import from_hf_llama

    path = assets.smollm2_dir()
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    return hf, from_hf_llama(hf), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 (transformers' BertModel, eager attention) and its tokenizer."""
    from transformers import AutoModel, AutoTokenizer

    from course import assets

    folder = assets.minilm_dir()
    return AutoModel.from_pretrained(folder, attn_implementation="eager").eval(), AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="session")
def tiny_t5():
    """The course's tiny T5 checkpoint (committed in data/checkpoints): (model, tokenizer)."""
    from course.checkpoints import load_tiny_t5

    return load_tiny_t5()


# GPT-2's weights in our GPT: no lecture loads GPT-2 (no registry ships it), so only the parity tests need it
def from_hf_gpt2(hf_model):
    """A GPT with the weights of a Hugging Face GPT2LMHeadModel (or GPT2Model), same logits.

    GPT-2 stores its linear layers as Conv1D, weight (in, out) with y = x W + b: the transpose of
    nn.Linear's (out, in). Its attention packs W^Q, W^K, W^V side by side in one c_attn (d, 3d).
    """
    pretrained._model_type(hf_model, "gpt2")
    c = hf_model.config
    if c.activation_function not in pretrained.ACTIVATIONS:
        raise ValueError(f"unsupported GPT-2 activation {c.activation_function!r}")
    if not c.scale_attn_weights or c.scale_attn_by_inverse_layer_idx:
        raise ValueError("only GPT-2's standard 1/sqrt(d_k) attention scaling is supported")
    sizes = dict(vocab_size=c.vocab_size, max_len=c.n_positions, d_model=c.n_embd, h=c.n_head, N=c.n_layer)
    options = dict(eps=c.layer_norm_epsilon, dropout=c.resid_pdrop, tie_embeddings=pretrained._tied(hf_model))
    model = GPT(
        GPTConfig.gpt2(
            **sizes, d_ff=c.n_inner or 4 * c.n_embd, activation=pretrained.ACTIVATIONS[c.activation_function], **options
        )
    )
    gpt2 = getattr(hf_model, "transformer", hf_model)  # GPT2LMHeadModel wraps a GPT2Model
    model.to(gpt2.wte.weight.dtype)
    pairs = [
        (model.tok_embed, gpt2.wte, "wte"),
        (model.pos_embed.embedding, gpt2.wpe, "wpe"),
        (model.norm, gpt2.ln_f, "ln_f"),
    ]
    for i, (block, layer) in enumerate(zip(model.blocks, gpt2.h)):
        w_q, w_k, w_v = layer.attn.c_attn.weight.t().split(c.n_embd, dim=0)  # (3d, d) -> 3 × (d, d)
        b_q, b_k, b_v = layer.attn.c_attn.bias.split(c.n_embd)
        attn, ffn = block.self_attn, block.ffn
        pairs += [
            (attn.w_q, {"weight": w_q, "bias": b_q}, f"h.{i}.attn.c_attn"),
            (attn.w_k, {"weight": w_k, "bias": b_k}, f"h.{i}.attn.c_attn"),
            (attn.w_v, {"weight": w_v, "bias": b_v}, f"h.{i}.attn.c_attn"),
        ]
        for ours, theirs, name in (
            (attn.w_o, layer.attn.c_proj, "attn.c_proj"),
            (ffn.linear1, layer.mlp.c_fc, "mlp.c_fc"),
            (ffn.linear2, layer.mlp.c_proj, "mlp.c_proj"),
        ):
            pairs.append((ours, {"weight": theirs.weight.t(), "bias": theirs.bias}, f"h.{i}.{name}"))
        pairs += [(block.norm1, layer.ln_1, f"h.{i}.ln_1"), (block.norm2, layer.ln_2, f"h.{i}.ln_2")]
    if not model.config.tie_embeddings:
        pairs.append((model.lm_head, hf_model.lm_head, "lm_head"))
    pretrained._copy(pairs)
    return model.eval()
