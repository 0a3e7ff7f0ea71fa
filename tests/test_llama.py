"""The decoder as a Llama: RMSNorm, SwiGLU, grouped-query attention with RoPE against transformers' Llama
modules, a tiny random LlamaForCausalLM, the real SmolLM2-135M-Instruct (logits and greedy text), bad input."""

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP, LlamaRMSNorm, LlamaRotaryEmbedding

from course.pretrained import from_hf_llama
from scratch.l02_positions import RotaryEmbedding
from scratch.l03_attention import causal_mask
from scratch.l04_multi_head_attention import MultiHeadAttention
from scratch.l05_transformer_block import EncoderBlock, RMSNorm, SwiGLUFeedForward
from scratch.l06_gpt import GPT, GPTConfig
from scratch.l10_decoding import generate

# tiny_llama (a random transformers Llama and ours with its weights) and smollm2 are in conftest.py


def randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def randomise_(module, seed=0, scale=0.3):
    """Random values for every parameter (norm gains too, so they are really tested)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale + (1.0 if p.dim() == 1 else 0.0))
    return module


# ---------------------------------------------------------------- RMSNorm and SwiGLU


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rmsnorm_equals_llama_rmsnorm(dtype):
    theirs = randomise_(LlamaRMSNorm(48, eps=1e-5)).to(dtype)
    ours = RMSNorm(48, eps=1e-5).to(dtype)
    ours.load_state_dict(theirs.state_dict())  # same parameter name: weight
    x = randn(3, 7, 48, seed=1).to(dtype) * 4 + 1
    with torch.no_grad():
        assert torch.equal(ours(x), theirs(x))  # same float32 arithmetic: bit for bit


def test_rmsnorm_is_the_formula_in_float64():
    norm = randomise_(RMSNorm(16)).double()
    x = randn(5, 16, seed=2, dtype=torch.float64) * 3
    expected = x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6) * norm.weight
    torch.testing.assert_close(norm(x), expected, atol=1e-12, rtol=0)
    assert norm(x).dtype == torch.float64  # float64 is not squeezed through float32
    unit = RMSNorm(16).double()(x)  # gain 1: every position gets root mean square 1
    torch.testing.assert_close(unit.pow(2).mean(-1), torch.ones(5, dtype=torch.float64), atol=1e-5, rtol=0)


def test_swiglu_equals_llama_mlp():
    config = LlamaConfig(hidden_size=32, intermediate_size=88)
    theirs = randomise_(LlamaMLP(config)).double()
    ours = SwiGLUFeedForward(32, 88).double()
    with torch.no_grad():
        for name in ("gate", "up", "down"):
            getattr(ours, name).weight.copy_(getattr(theirs, f"{name}_proj").weight)
    assert not any(name.endswith("bias") for name, _ in ours.named_parameters())  # no biases, as in Llama
    x = randn(2, 5, 32, seed=3, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-12, rtol=0)
    gate, up = ours.gate(x), ours.up(x)  # and the formula: down(silu(gate) * up)
    torch.testing.assert_close(ours(x), ours.down(gate * torch.sigmoid(gate) * up), atol=1e-12, rtol=0)


# ---------------------------------------------------------------- grouped-query attention with RoPE


def llama_attention_pair(h, n_kv_heads, d_model=64, base=10000.0):
    config = LlamaConfig(
        hidden_size=d_model,
        num_attention_heads=h,
        num_key_value_heads=n_kv_heads,
        max_position_embeddings=128,
        rope_theta=base,
        attn_implementation="eager",
    )
    theirs = randomise_(LlamaAttention(config, layer_idx=0), seed=4).eval()
    ours = MultiHeadAttention(
        d_model, h, bias=False, n_kv_heads=n_kv_heads, rotary=RotaryEmbedding(d_model // h, max_len=128, base=base)
    ).eval()
    with torch.no_grad():
        for mine, name in ((ours.w_q, "q_proj"), (ours.w_k, "k_proj"), (ours.w_v, "v_proj"), (ours.w_o, "o_proj")):
            mine.weight.copy_(getattr(theirs, name).weight)
    return ours, theirs, LlamaRotaryEmbedding(config)


def run_llama_attention(theirs, rope, x, position_ids, causal=True):
    """transformers' eager attention: RoPE tables from position_ids, an additive causal mask."""
    n = x.shape[1]
    mask = None
    if causal:
        mask = torch.zeros(n, n).masked_fill(~causal_mask(n), torch.finfo(torch.float32).min)[None, None]
    return theirs(x, position_embeddings=rope(x, position_ids), attention_mask=mask)


@pytest.mark.parametrize("h, n_kv_heads", [(8, 2), (4, 1), (4, 4)])
def test_gqa_rotary_attention_equals_llama_attention(h, n_kv_heads):
    ours, theirs, rope = llama_attention_pair(h, n_kv_heads, base=100000.0)
    x = randn(2, 9, 64, seed=5)
    assert ours.w_k.weight.shape == ours.w_v.weight.shape == (n_kv_heads * 64 // h, 64)
    with torch.no_grad():
        out, weights = ours.forward_with_weights(x, mask=causal_mask(9))
        expected, expected_weights = run_llama_attention(theirs, rope, x, torch.arange(9)[None])
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=1e-5)
        # no mask at all (bidirectional), and positions that start at 20 (decoding after a cached prefix)
        expected, _ = run_llama_attention(theirs, rope, x, torch.arange(9)[None], causal=False)
        torch.testing.assert_close(ours(x), expected, atol=1e-5, rtol=1e-5)
        expected, _ = run_llama_attention(theirs, rope, x, torch.arange(20, 29)[None])
        torch.testing.assert_close(ours(x, mask=causal_mask(9), positions=20), expected, atol=1e-5, rtol=1e-5)


def test_gqa_is_mha_with_shared_key_value_heads():
    """n_kv_heads < h equals ordinary attention whose W^K, W^V repeat each K/V head's rows for its group."""
    d_model, h, n_kv, d_k = 24, 6, 2, 4
    gqa = randomise_(MultiHeadAttention(d_model, h, n_kv_heads=n_kv), seed=6).double()
    mha = MultiHeadAttention(d_model, h).double()
    with torch.no_grad():
        for name in ("w_k", "w_v"):  # (n_kv · d_k, d_model) -> (h · d_k, d_model): head j serves heads 3j..3j+2
            w = getattr(gqa, name).weight.view(n_kv, 1, d_k, d_model).expand(n_kv, h // n_kv, d_k, d_model)
            getattr(mha, name).weight.copy_(w.reshape(d_model, d_model))
            getattr(mha, name).bias.copy_(getattr(gqa, name).bias.view(n_kv, 1, d_k).expand(n_kv, 3, d_k).flatten())
        for name in ("w_q", "w_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
    x = randn(2, 5, d_model, seed=7, dtype=torch.float64)
    torch.testing.assert_close(gqa(x, mask=causal_mask(5)), mha(x, mask=causal_mask(5)), atol=1e-12, rtol=0)
    # the defaults are the original attention: same parameter names and shapes
    assert {k: v.shape for k, v in MultiHeadAttention(d_model, h, n_kv_heads=h).state_dict().items()} == {
        k: v.shape for k, v in mha.state_dict().items()
    }


# ---------------------------------------------------------------- a tiny random Llama


def test_from_hf_llama_tiny_same_logits(tiny_llama):
    hf, model = tiny_llama
    assert not model.training and model.lm_head.weight is model.tok_embed.weight and model.pos_embed is None
    block = model.blocks[0]
    assert isinstance(block.norm1, RMSNorm) and isinstance(block.ffn, SwiGLUFeedForward)
    assert block.self_attn.n_kv_heads == 2 and block.self_attn.rotary is model.blocks[1].self_attn.rotary
    assert len(model.state_dict()) == len(hf.state_dict())  # no extra keys: RoPE tables are not saved
    x = torch.randint(100, (3, 17), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = hf(x).logits
        logits = model(x)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)


def test_llama_style_gpt_from_scratch():
    """The options work without transformers too: a Llama-shaped GPT trains like any other."""
    torch.manual_seed(0)
    model = GPT(GPTConfig.llama(vocab_size=30, d_model=32, h=4, N=2, d_ff=64, max_len=16, n_kv_heads=2))
    assert "pos_embed.embedding.weight" not in model.state_dict()
    assert not any(name.endswith("bias") for name in model.state_dict())
    x = torch.randint(30, (2, 10))
    y = x.clone()
    y[:, 6:] = 0
    torch.testing.assert_close(model(x)[:, :6], model(y)[:, :6])  # causal: the future does not matter
    loss = torch.nn.functional.cross_entropy(model(x)[:, :-1].reshape(-1, 30), x[:, 1:].reshape(-1))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    assert generate(model, x[:, :3], 5).shape == (2, 8)


# ---------------------------------------------------------------- the real SmolLM2-135M-Instruct

PROMPTS = ["The capital of France is", "def fibonacci(n):\n    "]


# the `smollm2` fixture (model, ours, tokenizer) is in tests/conftest.py, loaded once per session


def test_smollm2_config(smollm2):
    hf, model, _ = smollm2
    attn = model.blocks[0].self_attn
    assert (len(model.blocks), attn.d_model, attn.h, attn.n_kv_heads, attn.d_k) == (30, 576, 9, 3, 64)
    assert attn.rotary.base == 100000.0 and model.blocks[0].ffn.d_ff == 1536 and model.vocab_size == 49152
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in hf.parameters())


def test_smollm2_same_logits(smollm2):
    hf, model, tokenizer = smollm2
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is a transformer?"}], add_generation_prompt=True, tokenize=False
    )
    for text in PROMPTS + [chat]:
        ids = tokenizer(text, return_tensors="pt").input_ids
        with torch.no_grad():
            expected, logits = hf(ids).logits, model(ids)
        diff = (logits - expected).abs().max().item()
        print(f"SmolLM2 max |logit difference| vs eager attention on {ids.shape[1]} tokens: {diff:.2e}")
        assert diff <= 1e-4, diff  # in fact 0: the same float32 operations
        assert torch.equal(logits.argmax(-1), expected.argmax(-1))
    # transformers' default attention (torch's fused sdpa) sums in another order: float32 noise, still close
    ids = tokenizer(PROMPTS[0], return_tensors="pt").input_ids
    hf.set_attn_implementation("sdpa")
    try:
        with torch.no_grad():
            diff = (model(ids) - hf(ids).logits).abs().max().item()
    finally:
        hf.set_attn_implementation("eager")
    print(f"SmolLM2 max |logit difference| vs sdpa attention on {ids.shape[1]} tokens: {diff:.2e}")
    assert diff <= 1e-4, diff


def test_smollm2_same_greedy_continuation(smollm2):
    hf, model, tokenizer = smollm2
    ids = tokenizer(PROMPTS[0], return_tensors="pt").input_ids  # the whole sequence every step, as lecture 8
    expected = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=20, do_sample=False)
    ours = generate(model, ids, 20, eos_id=hf.generation_config.eos_token_id, use_cache=False)
    assert torch.equal(ours, expected), (tokenizer.decode(ours[0]), tokenizer.decode(expected[0]))
    assert tokenizer.decode(ours[0, ids.shape[1] :]).startswith(" Paris")


# ---------------------------------------------------------------- bad input


def test_bad_input():
    with pytest.raises(ValueError, match="n_kv_heads \\(3\\) must divide .* h \\(8\\)"):
        MultiHeadAttention(64, 8, n_kv_heads=3)
    with pytest.raises(ValueError, match="n_kv_heads"):
        MultiHeadAttention(64, 8, n_kv_heads=0)
    with pytest.raises(ValueError, match="d_head = d_k = 8"):
        MultiHeadAttention(64, 8, rotary=RotaryEmbedding(16))
    with pytest.raises(ValueError, match="positions only mean something with a rotary"):
        MultiHeadAttention(64, 8)(randn(1, 3, 64), positions=2)
    rotary_attention = MultiHeadAttention(64, 8, rotary=RotaryEmbedding(8, max_len=16))
    with pytest.raises(ValueError, match="self-attention"):
        rotary_attention(randn(1, 3, 64), randn(1, 4, 64))
    with pytest.raises(ValueError, match="positions must lie in 0..15"):
        rotary_attention(randn(1, 3, 64), positions=14)
    with pytest.raises(ValueError, match="unknown norm 'batchnorm'"):
        EncoderBlock(32, 4, 64, norm="batchnorm")
    with pytest.raises(ValueError, match="unknown ffn 'moe'"):
        EncoderBlock(32, 4, 64, ffn="moe")
    config = dict(vocab_size=10, d_model=32, h=4, N=1, d_ff=64, max_len=8)
    with pytest.raises(ValueError, match="unknown norm 'rms'"):
        GPTConfig(**config, norm="rms")
    with pytest.raises(ValueError, match="unknown ffn 'glu'"):
        GPT(GPTConfig(**config, ffn="glu"))
    with pytest.raises(ValueError, match="unknown positional 'sinusoidal'"):
        GPTConfig(**config, positional="sinusoidal")
    with pytest.raises(ValueError, match="n_kv_heads"):
        GPT(GPTConfig(**config, n_kv_heads=3))
    with pytest.raises(ValueError, match="d_head must be even"):
        GPT(GPTConfig.llama(vocab_size=10, d_model=12, h=4, n_kv_heads=2, N=1, d_ff=8, max_len=8))
    with pytest.raises(ValueError, match="eps"):
        RMSNorm(8, eps=0)
    gpt2 = GPT2LMHeadModel(
        GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10, n_positions=8, bos_token_id=0, eos_token_id=0)
    )
    with pytest.raises(ValueError, match="expected a 'llama' model, got model_type 'gpt2'"):
        from_hf_llama(gpt2)
    gelu_llama = LlamaForCausalLM(
        LlamaConfig(
            hidden_size=8,
            intermediate_size=16,
            num_attention_heads=2,
            num_hidden_layers=1,
            vocab_size=10,
            hidden_act="gelu",
        )
    )
    with pytest.raises(ValueError, match="hidden_act 'gelu'"):
        from_hf_llama(gelu_llama)
