"""scratch.l06_transformer, l06_gpt and l07_bert: the encoder-decoder against torch.nn.Transformer, GPT against
Hugging Face GPT-2, BERT against the real MiniLM, the configuration's presets, greedy decoding, and bad input."""

import dataclasses
import math

import pytest
import torch
from torch import nn

from course.pretrained import from_hf_bert
from scratch.l03_attention import causal_mask
from scratch.l06_gpt import GPT, GPTConfig
from scratch.l06_transformer import Transformer, TransformerConfig, greedy_decode
from scratch.l07_bert import BERT, BERTConfig
from scratch.l08_llama import Llama, LlamaConfig
from scratch.l10_decoding import generate

PAD, BOS, EOS = 0, 1, 2


def ids(*rows, pad=PAD):
    """A right-padded (batch, L) id tensor from lists of ids."""
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows])


def small_transformer(norm_first=False, activation="relu", dtype=torch.float64, seed=0, **kwargs):
    torch.manual_seed(seed)
    config = dict(src_vocab_size=13, tgt_vocab_size=11, d_model=32, h=4, N=2, d_ff=64, dropout=0.0, max_len=20)
    config.update(kwargs)
    return Transformer(norm_first=norm_first, activation=activation, **config).to(dtype).eval()


SRC = ids([3, 4, 5, 6, 7], [8, 9, 3], [12, 11, 10, 9])
TGT = ids([BOS, 3, 4, 5], [BOS, 6], [BOS, 7, 8, 9])


# ---------------------------------------------------------------- Transformer vs torch.nn.Transformer


def copy_attention(ours, theirs):
    with torch.no_grad():
        for linear, w, b in zip(
            (ours.w_q, ours.w_k, ours.w_v), theirs.in_proj_weight.chunk(3), theirs.in_proj_bias.chunk(3)
        ):
            linear.weight.copy_(w)
            linear.bias.copy_(b)
        ours.w_o.load_state_dict(theirs.out_proj.state_dict())


def torch_twin(model, norm_first, activation):
    """torch.nn.Transformer with random weights (LayerNorm gains and all biases too), copied into `model`.

    torch always ends both stacks with a LayerNorm; the paper's post-LN model does not (each block already
    ends with one), so for post-LN those two are removed from torch's model.
    """
    ref = (
        nn.Transformer(32, 4, 2, 2, 64, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first)
        .double()
        .eval()
    )
    with torch.no_grad():
        for p in ref.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    for ours, theirs in zip([*model.encoder, *model.decoder], [*ref.encoder.layers, *ref.decoder.layers]):
        copy_attention(ours.self_attn, theirs.self_attn)
        if hasattr(ours, "cross_attn"):
            copy_attention(ours.cross_attn, theirs.multihead_attn)
        ours.ffn.linear1.load_state_dict(theirs.linear1.state_dict())
        ours.ffn.linear2.load_state_dict(theirs.linear2.state_dict())
        for name in ("norm1", "norm2", "norm3"):
            if hasattr(theirs, name):
                getattr(ours, name).load_state_dict(getattr(theirs, name).state_dict())
    if norm_first:
        model.encoder_norm.load_state_dict(ref.encoder.norm.state_dict())
        model.decoder_norm.load_state_dict(ref.decoder.norm.state_dict())
    else:
        ref.encoder.norm = ref.decoder.norm = None
    return ref


@pytest.mark.filterwarnings("ignore:.*nested.tensor")
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_matches_torch(norm_first, activation):
    model = small_transformer(norm_first, activation)
    ref = torch_twin(model, norm_first, activation)
    with torch.no_grad():
        scale = math.sqrt(32)  # same embeddings, PE and tied head around torch's stacks
        src_x = model.pos(model.src_embed(SRC) * scale)
        tgt_x = model.pos(model.tgt_embed(TGT) * scale)
        # torch's boolean masks mean the opposite of ours: True = hidden
        out = ref(
            src_x,
            tgt_x,
            tgt_mask=~causal_mask(TGT.shape[1]),
            src_key_padding_mask=SRC == PAD,
            memory_key_padding_mask=SRC == PAD,
            tgt_key_padding_mask=TGT == PAD,
        )
        expected = out @ model.tgt_embed.weight.T  # tied de-embedding: h E^T
        logits = model(SRC, TGT)
    assert logits.shape == (3, 4, 11)
    torch.testing.assert_close(logits, expected, atol=1e-10, rtol=0)


def test_transformer_weights_and_tying():
    model = small_transformer()
    assert model.lm_head.weight is model.tgt_embed.weight
    logits = model(SRC, TGT)
    weights = model.attention_weights(SRC, TGT)
    assert sorted(weights) == ["cross", "decoder", "encoder"]
    assert all(len(w) == 2 for w in weights.values())
    assert weights["encoder"][0].shape == (3, 4, 5, 5)
    assert weights["decoder"][1].shape == (3, 4, 4, 4)
    cross = weights["cross"][1]
    assert cross.shape == (3, 4, 4, 5)
    torch.testing.assert_close(cross.sum(-1), torch.ones(3, 4, 4, dtype=torch.float64), atol=1e-12, rtol=0)
    assert (cross[1, :, :, 3:] == 0).all()  # source padding gets no attention
    assert (weights["decoder"][0].triu(1) == 0).all()  # no peeking at later targets
    torch.testing.assert_close(logits, model(SRC, TGT), atol=0, rtol=0)
    untied = small_transformer(tie_embeddings=False)
    assert untied.lm_head.weight is not untied.tgt_embed.weight


def test_transformer_is_causal_and_ignores_padding():
    model = small_transformer(norm_first=True)
    logits = model(SRC, TGT)
    changed = TGT.clone()
    changed[:, -1] = 5  # a different last target token
    torch.testing.assert_close(model(SRC, changed)[:, :-1], logits[:, :-1], atol=1e-12, rtol=0)
    more_padding = torch.cat([SRC, torch.zeros(3, 2, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(more_padding, TGT), logits, atol=1e-12, rtol=0)


def test_encode_decode_equals_forward():
    model = small_transformer()
    memory = model.encode(SRC)
    assert memory.shape == (3, 5, 32)
    torch.testing.assert_close(model.decode(TGT, memory, SRC), model(SRC, TGT), atol=0, rtol=0)


def test_greedy_decode_matches_step_by_step_argmax():
    model = small_transformer(seed=3)
    out = greedy_decode(model, SRC, BOS, EOS, max_len=8)
    assert out.shape[0] == 3 and out.shape[1] <= 8
    for row in range(3):  # re-run each source alone, full forward each step
        ys = [BOS]
        for _ in range(out.shape[1]):
            nxt = int(model(SRC[row : row + 1], torch.tensor([ys]))[0, -1].argmax())
            ys.append(nxt)
            if nxt == EOS:
                break
        generated = ys[1:]
        assert out[row, : len(generated)].tolist() == generated
        assert (out[row, len(generated) :] == PAD).all()


def test_greedy_decode_stops_at_eos_and_restores_mode():
    model = small_transformer(seed=4)
    push_eos = torch.zeros(11, dtype=torch.float64)
    push_eos[EOS] = 100.0  # EOS always wins from the second step on
    calls = []
    model.lm_head.register_forward_hook(lambda m, i, o: calls.append(1) or (o + push_eos if len(calls) > 1 else o))
    model.train()
    out = greedy_decode(model, SRC, BOS, EOS, max_len=8)
    assert out.shape == (3, 2) and (out[:, 1] == EOS).all()  # one token, then EOS everywhere: stopped
    assert len(calls) == 2
    assert model.training  # the previous mode is restored


# ---------------------------------------------------------------- GPT vs Hugging Face GPT-2


def test_gpt_from_hf_gpt2_same_logits(tiny_gpt2):
    hf, model = tiny_gpt2
    assert not model.training and model.lm_head.weight is model.tok_embed.weight
    x = torch.randint(100, (3, 17), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = hf(x).logits
        logits = model(x)
        weights = model.attention_weights(x)
        hf_weights = hf(x, output_attentions=True).attentions
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    assert len(weights) == 2 and weights[0].shape == (3, 4, 17, 17)
    for ours, theirs in zip(weights, hf_weights):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_config_defaults():
    """GPTConfig's defaults are GPT-2 small (124 M parameters); LlamaConfig's are SmolLM2-135M's."""
    with torch.device("meta"):  # shapes only, no memory
        gpt2, llama = GPT(GPTConfig.gpt2()), Llama(LlamaConfig())
    assert GPTConfig() == GPTConfig.gpt2() and sum(p.numel() for p in gpt2.parameters()) == 124_439_808
    assert sum(p.numel() for p in llama.parameters()) == 134_515_008  # SmolLM2-135M-Instruct
    assert llama.blocks[0].self_attn.n_kv_heads == 3 and not llama.config.bias
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        GPTConfig(activation="swish")
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(d_model=100, h=3)


def test_gpt_is_causal_and_initialised_small():
    torch.manual_seed(0)
    model = GPT(GPTConfig.gpt2(vocab_size=50, d_model=32, h=4, N=2, d_ff=128, max_len=16))
    x = torch.randint(50, (2, 10))
    y = x.clone()
    y[:, 6:] = 0
    torch.testing.assert_close(model(x)[:, :6], model(y)[:, :6])
    assert abs(model.tok_embed.weight.std().item() - 0.02) < 0.002
    assert model.blocks[0].ffn.linear2.weight.std().item() < 0.012  # 0.02 / sqrt(2N) = 0.01


# ---------------------------------------------------------------- BERT vs the real MiniLM


def test_bert_from_hf_bert_matches_minilm(minilm):
    hf, tokenizer = minilm
    model = from_hf_bert(hf)
    assert len(model.blocks) == 6 and model.blocks[0].self_attn.h == 12
    batch = tokenizer(
        ["The dog ate the food because it was hungry.", "Call me Ishmael."], padding=True, return_tensors="pt"
    )
    pair = tokenizer(
        "I went to the store to buy some groceries.",
        "When I got home, I realized I forgot to buy milk.",
        return_tensors="pt",
    )
    assert pair["token_type_ids"].max() == 1 and (batch["attention_mask"] == 0).any()
    for inputs in (batch, pair):
        with torch.no_grad():
            expected = hf(**inputs, output_hidden_states=True, output_attentions=True)
            states = model.hidden_states(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])
            weights = model.attention_weights(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])
            last = model(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])
        torch.testing.assert_close(last, expected.last_hidden_state, atol=1e-4, rtol=1e-4)
        assert len(states) == 7 and len(weights) == 6
        for ours, theirs in zip(states, expected.hidden_states):
            torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)
        for ours, theirs in zip(weights, expected.attentions):
            torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)
    # without an explicit attention_mask, padding is found from pad_id
    with torch.no_grad():
        default = model(batch["input_ids"], batch["token_type_ids"])
    torch.testing.assert_close(default, hf(**batch).last_hidden_state, atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------- bad input


def test_bad_token_ids():
    model = small_transformer()
    with pytest.raises(ValueError, match=r"src contains token ids outside the vocabulary 0..12"):
        model(ids([3, 13]), ids([BOS, 4]))
    with pytest.raises(ValueError, match=r"tgt contains token ids outside the vocabulary 0..10"):
        model(ids([3, 4]), ids([BOS, -1]))
    with pytest.raises(ValueError, match="src is too long: 21 tokens, but max_len = 20"):
        model(torch.full((1, 21), 3), ids([BOS]))
    with pytest.raises(ValueError, match="batch sizes differ: tgt has 1, memory has 2, src has 2"):
        model(ids([3], [4]), ids([BOS]))
    with pytest.raises(TypeError, match="integer tensor"):
        model(ids([3, 4]).float(), ids([BOS]))
    with pytest.raises(ValueError, match=r"shape \(batch, length\)"):
        model(torch.tensor([3, 4]), ids([BOS]))
    with pytest.raises(ValueError, match="only of padding"):
        model(ids([3, 4], [0, 0]), ids([BOS], [BOS]))
    with pytest.raises(ValueError, match="max_len = 30 exceeds"):
        greedy_decode(model, ids([3]), BOS, EOS, max_len=30)
    with pytest.raises(ValueError, match="eos_id = 11 is outside"):
        greedy_decode(model, ids([3]), BOS, 11)
    gpt = GPT(GPTConfig.gpt2(vocab_size=20, d_model=16, h=2, N=1, d_ff=32, max_len=8))
    with pytest.raises(ValueError, match="outside the vocabulary 0..19"):
        gpt(torch.tensor([[1, 20]]))
    with pytest.raises(ValueError, match="too long: 9 tokens"):
        gpt(torch.ones(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(gpt, torch.ones(1, 2, dtype=torch.long), -1)
    bert = BERT(vocab_size=30, d_model=16, h=2, N=1, d_ff=32, max_len=8)
    with pytest.raises(ValueError, match="token_type_ids contains token ids outside the vocabulary 0..1"):
        bert(torch.ones(1, 3, dtype=torch.long), token_type_ids=torch.full((1, 3), 2))
    with pytest.raises(ValueError, match="attention_mask must be a tensor of the shape of ids"):
        bert(torch.ones(1, 3, dtype=torch.long), attention_mask=torch.ones(1, 4))


def test_bad_configuration():
    with pytest.raises(ValueError, match="divisible"):
        Transformer(10, 10, d_model=30, h=4)
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(vocab_size=10, d_model=30, h=4, N=1, d_ff=8, max_len=8)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        Transformer(10, 10, d_model=32, h=4, N=1, d_ff=8, activation="swish")
    with pytest.raises(ValueError, match="unknown activation"):
        BERT(10, 32, 4, 1, 8, activation="swish")
    with pytest.raises(ValueError, match="pad_id = 10 is outside"):
        Transformer(10, 12, d_model=32, h=4, N=1, d_ff=8, pad_id=10)
    with pytest.raises(ValueError, match="N must be at least 1"):
        GPTConfig(vocab_size=10, d_model=32, h=4, N=0, d_ff=8, max_len=8)
    with pytest.raises(TypeError, match="config must be a GPTConfig"):
        GPT(dict(vocab_size=10))


def test_every_model_has_a_config():
    """Each model keeps its checked arguments in a frozen config dataclass, and from_config rebuilds it."""
    transformer = Transformer(10, 12, d_model=16, h=2, N=1, d_ff=32, max_len=8)
    bert = BERT(30, 16, 2, 1, 32, max_len=8)
    gpt = GPT(GPTConfig.gpt2(vocab_size=20, max_len=8, d_model=16, h=2, N=1, d_ff=32))
    llama = Llama(LlamaConfig(vocab_size=20, max_len=8, d_model=16, h=2, n_kv_heads=1, N=1, d_ff=32))
    assert isinstance(transformer.config, TransformerConfig) and isinstance(bert.config, BERTConfig)
    for model in (transformer, bert):
        rebuilt = type(model).from_config(model.config)
        assert rebuilt.config == model.config
        assert {k: v.shape for k, v in rebuilt.state_dict().items()} == {
            k: v.shape for k, v in model.state_dict().items()
        }
    for model in (transformer, bert, gpt, llama):
        with pytest.raises(dataclasses.FrozenInstanceError):
            model.config.d_model = 8
