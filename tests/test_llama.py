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
from scratch.l08_llama import Llama, RMSNorm, SwiGLUFeedForward
from scratch.l08_llama import LlamaAttention as OurLlamaAttention
from scratch.l08_llama import LlamaConfig as OurConfig
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
    ours = OurLlamaAttention(d_model, h, n_kv_heads).eval()
    with torch.no_grad():
        for mine, name in ((ours.w_q, "q_proj"), (ours.w_k, "k_proj"), (ours.w_v, "v_proj"), (ours.w_o, "o_proj")):
            mine.weight.copy_(getattr(theirs, name).weight)
    return ours, theirs, LlamaRotaryEmbedding(config)


def angles(n, d_k, base, start=0):
    """RoPE's cos and sin for positions start..start+n-1, from lecture 2's RotaryEmbedding."""
    rope = RotaryEmbedding(d_k, max_len=128, base=base)
    return rope.cos_sin(n, start)


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
        out, weights = ours(x, *angles(9, 64 // h, 100000.0), mask=causal_mask(9))
        expected, expected_weights = run_llama_attention(theirs, rope, x, torch.arange(9)[None])
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=1e-5)
        # no mask at all (bidirectional), and positions that start at 20 (decoding after a cached prefix)
        expected, _ = run_llama_attention(theirs, rope, x, torch.arange(9)[None], causal=False)
        torch.testing.assert_close(ours(x, *angles(9, 64 // h, 100000.0))[0], expected, atol=1e-5, rtol=1e-5)
        expected, _ = run_llama_attention(theirs, rope, x, torch.arange(20, 29)[None])
        got = ours(x, *angles(9, 64 // h, 100000.0, start=20), mask=causal_mask(9))[0]
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


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
    assert not model.training and model.lm_head.weight is model.tok_embed.weight and isinstance(model, Llama)
    block = model.blocks[0]
    assert isinstance(block.norm1, RMSNorm) and isinstance(block.ffn, SwiGLUFeedForward)
    assert block.self_attn.n_kv_heads == 2
    assert len(model.state_dict()) == len(hf.state_dict())  # no extra keys: RoPE tables are not saved
    x = torch.randint(100, (3, 17), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = hf(x).logits
        logits = model(x)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)


def test_llama_from_scratch():
    """Our Llama works without transformers too: it trains like lecture 6's GPT."""
    torch.manual_seed(0)
    model = Llama(OurConfig(vocab_size=30, d_model=32, h=4, N=2, d_ff=64, max_len=16, n_kv_heads=2))
    assert not any("pos_embed" in name for name in model.state_dict())
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
    assert model.config.rope_base == 100000.0 and model.blocks[0].ffn.d_ff == 1536 and model.vocab_size == 49152
    assert model.config == OurConfig(eps=model.config.eps)  # LlamaConfig's defaults are SmolLM2-135M's sizes
    assert abs(model.config.eps - OurConfig().eps) < 1e-12  # its config.json stores 1e-5 rounded to float32
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
    config = dict(vocab_size=10, d_model=32, h=4, n_kv_heads=2, N=1, d_ff=64, max_len=8)
    with pytest.raises(ValueError, match="n_kv_heads \\(3\\) must divide"):
        OurConfig(**{**config, "n_kv_heads": 3})
    with pytest.raises(ValueError, match="must be even"):
        OurConfig(**{**config, "d_model": 12})
    with pytest.raises(ValueError, match="eps"):
        OurConfig(**config, eps=0)
    with pytest.raises(ValueError, match="rope_base"):
        OurConfig(**config, rope_base=1)
    with pytest.raises(TypeError, match="LlamaConfig"):
        Llama(config)
    model = Llama(OurConfig(**config))
    with pytest.raises(ValueError, match="too long"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.full((1, 3), 10))
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
