"""scratch.l10_decoding and the decoder's KV cache: the logits transforms against transformers' logits processors,
greedy, beam search and sampling against transformers' `generate` (a tiny random GPT-2, a tiny random Llama and
the real SmolLM2-135M-Instruct), the cache against recomputation, text measures, and bad input."""

import copy
import itertools

import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from course.metrics import distinct_n, repetition
from scratch.l02_positions import RotaryEmbedding
from scratch.l03_attention import causal_mask
from scratch.l04_multi_head_attention import MultiHeadAttention
from scratch.l06_gpt import GPT, GPTConfig
from scratch.l08_llama import Llama, LlamaAttention, LlamaConfig
from scratch.l10_decoding import (
    KVCache,
    apply_temperature,
    generate,
    new_kv_cache,
    process_logits,
    top_k_filter,
    top_p_filter,
)

# tiny_gpt2, tiny_llama (a random transformers model and ours with its weights) and smollm2 are in conftest.py


def hf_generate(model, prompt, max_new_tokens, **kwargs):
    """transformers' generate on an unpadded prompt; eos_token_id=None unless given (no early stop)."""
    kwargs.setdefault("eos_token_id", None)
    kwargs.setdefault("pad_token_id", kwargs["eos_token_id"] if kwargs["eos_token_id"] is not None else 0)
    kwargs.setdefault("do_sample", False)
    return model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=max_new_tokens, **kwargs)


PROMPT = torch.randint(1, 99, (3, 5), generator=torch.Generator().manual_seed(2))


# ---------------------------------------------------------------- logits transforms vs transformers' processors


def random_logits(seed, batch=6, vocab=100):
    """Random rows plus hard cases: heavy ties (rounded), a -inf entry, all-equal, one dominant, huge values."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(batch, vocab, generator=g) * 3
    z[1] = z[1].round()  # many ties, also at the cut
    z[2, :7] = float("-inf")  # tokens already impossible
    z[3] = 0.5  # uniform: everything tied
    z[4, 13] = 40.0  # one token takes nearly all the mass
    z[5] = z[5] * 1e4  # extreme logits: probabilities underflow to 0
    return z


@pytest.mark.parametrize("k", [1, 2, 5, 50, 99, 100, 1000])
def test_top_k_equals_transformers(k):
    for seed in range(3):
        z = random_logits(seed)
        assert torch.equal(top_k_filter(z, k), TopKLogitsWarper(k)(None, z))
    z = random_logits(0)
    kept = torch.isfinite(top_k_filter(z, k)).sum(-1)
    assert kept[0] == min(k, 100) and kept[3] == 100  # distinct logits: exactly k; all tied: all kept


@pytest.mark.parametrize("p", [1e-6, 0.01, 0.3, 0.5, 0.9, 0.95, 0.999999, 1.0])
def test_top_p_equals_transformers(p):
    for seed in range(3):
        z = random_logits(seed)
        assert torch.equal(top_p_filter(z, p), TopPLogitsWarper(p)(None, z))
    assert torch.equal(top_p_filter(z[0], p), TopPLogitsWarper(p)(None, z[:1])[0])  # one row (V,) works too


@pytest.mark.parametrize("temperature", [1e-3, 0.1, 0.5, 1.0, 1.7, 100.0])
def test_temperature_equals_transformers(temperature):
    z = random_logits(4)
    assert torch.equal(apply_temperature(z, temperature), TemperatureLogitsWarper(temperature)(None, z))


def test_process_logits_applies_temperature_then_top_k_then_top_p():
    z = random_logits(5)
    theirs = LogitsProcessorList([TemperatureLogitsWarper(0.7), TopKLogitsWarper(20), TopPLogitsWarper(0.8)])
    assert torch.equal(process_logits(z, temperature=0.7, top_k=20, top_p=0.8), theirs(None, z))
    assert torch.equal(process_logits(z), z)  # nothing asked, nothing changed
    assert torch.equal(
        top_p_filter(top_k_filter(apply_temperature(z, 0.7), 20), 0.8),
        process_logits(z, temperature=0.7, top_k=20, top_p=0.8),
    )


def test_top_p_keeps_the_smallest_set_reaching_p():
    """The definition, in float64 on distinct probabilities: the kept tokens are the most probable ones, their mass
    reaches p, and without the least probable of them it would not."""
    g = torch.Generator().manual_seed(6)
    z = torch.randn(50, 200, generator=g, dtype=torch.float64) * 2
    for p in (0.1, 0.5, 0.9, 0.99):
        probs, kept = z.softmax(-1), torch.isfinite(top_p_filter(z, p))
        order = probs.argsort(dim=-1, descending=True)
        n_kept = kept.sum(-1)
        for row in range(z.shape[0]):
            top = order[row, : n_kept[row]]
            assert kept[row, top].all()  # the n most probable tokens, no others
            mass = probs[row, top].sum()
            assert mass >= p - 1e-12 and mass - probs[row, top[-1]] < p


def test_temperature_limits():
    z = random_logits(7)[0]
    cold = apply_temperature(z, 1e-4).softmax(-1)
    hot = apply_temperature(z, 1e6).softmax(-1)
    assert cold.argmax() == z.argmax() and cold.max() > 1 - 1e-6  # T -> 0: all mass on the argmax
    torch.testing.assert_close(hot, torch.full_like(hot, 1 / 100), atol=1e-5, rtol=0)  # T -> infinity: uniform


# ---------------------------------------------------------------- greedy and beam search vs transformers


@pytest.mark.parametrize("which", ["tiny_gpt2", "tiny_llama"])
def test_greedy_equals_transformers(which, request):
    hf, ours = request.getfixturevalue(which)
    expected = hf_generate(hf, PROMPT, 20)
    for model, use_cache in ((ours, True), (ours, False), (hf, True)):
        assert torch.equal(generate(model, PROMPT, 20, use_cache=use_cache), expected)
    eos = int(expected[0, 5 + 3])  # row 0 emits it 4th: that row stops early
    expected = hf_generate(hf, PROMPT, 20, eos_token_id=eos)
    assert (expected[0, 9:] == eos).all()
    assert torch.equal(generate(ours, PROMPT, 20, eos_id=eos), expected)
    assert torch.equal(generate(ours, PROMPT, 20, "beam", num_beams=1, eos_id=eos), expected)  # one beam: greedy


def pick_eos(hf, num_beams, max_new_tokens=12, **options):
    """A token that, as EOS, really ends some row's best hypothesis early: the first such among the tokens that
    beam search emits without one."""
    plain = hf_generate(hf, PROMPT, max_new_tokens, num_beams=num_beams, **options)
    for token in dict.fromkeys(plain[:, 5:].T.flatten().tolist()):  # in order of appearance
        out = hf_generate(hf, PROMPT, max_new_tokens, num_beams=num_beams, eos_token_id=token, **options)
        if (out[:, 5:-1] == token).any():
            return token
    raise AssertionError("no token ends a hypothesis early")


@pytest.mark.parametrize("num_beams", [2, 3, 5])
@pytest.mark.parametrize("with_eos", [False, True])
def test_beam_search_equals_transformers(tiny_gpt2, num_beams, with_eos):
    hf, ours = tiny_gpt2
    eos = pick_eos(hf, num_beams) if with_eos else None
    expected = hf_generate(hf, PROMPT, 12, num_beams=num_beams, eos_token_id=eos)
    if with_eos:
        assert (expected[:, 5:-1] == eos).any()  # some row finished early
    else:
        assert expected.shape == (3, 17)
    for model, use_cache in ((ours, True), (ours, False), (hf, True)):
        got = generate(model, PROMPT, 12, "beam", num_beams=num_beams, eos_id=eos, use_cache=use_cache)
        assert torch.equal(got, expected), (num_beams, eos, type(model).__name__, use_cache)


@pytest.mark.slow
def test_beam_search_length_penalty_equals_transformers(tiny_gpt2, tiny_llama):
    """Finished hypotheses are ranked by score / length ** length_penalty: with an EOS that ends some early, every
    penalty gives transformers' result, with either stopping rule (early_stopping=False, the default heuristic,
    and "never", which searches until no running beam can win)."""
    for hf, ours in (tiny_gpt2, tiny_llama):
        for num_beams in (2, 4):
            eos = pick_eos(hf, num_beams, 10)  # ends a hypothesis early with the default options
            for length_penalty, early_stopping in itertools.product((1.0, 0.0, 2.0, -1.0), (False, "never")):
                options = dict(num_beams=num_beams, length_penalty=length_penalty, early_stopping=early_stopping)
                expected = hf_generate(hf, PROMPT, 10, eos_token_id=eos, **options)
                got = generate(ours, PROMPT, 10, "beam", eos_id=eos, **options)
                assert torch.equal(got, expected), (num_beams, length_penalty, early_stopping)
    with pytest.raises(ValueError, match="early_stopping must be False or 'never'"):
        generate(tiny_llama[1], PROMPT, 2, "beam", early_stopping=True)


def test_beam_search_is_the_inline_search_without_eos(tiny_llama):
    """Lecture 10's inline beam search (keep the num_beams best of beams x V, no EOS) finds the same best beam."""
    _, ours = tiny_llama

    def inline(prompt, num_beams, steps):
        beams, scores = prompt, torch.zeros(1)
        for _ in range(steps):
            log_p = torch.log_softmax(ours(beams)[:, -1], dim=-1)
            best = (scores[:, None] + log_p).flatten().topk(num_beams)
            parents, tokens = best.indices // log_p.shape[-1], best.indices % log_p.shape[-1]
            beams, scores = torch.cat([beams[parents], tokens[:, None]], dim=1), best.values
        return beams[0]

    with torch.no_grad():
        for row in range(PROMPT.shape[0]):
            for num_beams in (2, 3):
                expected = inline(PROMPT[row : row + 1], num_beams, 8)
                assert torch.equal(generate(ours, PROMPT[row : row + 1], 8, "beam", num_beams=num_beams)[0], expected)


def test_beam_search_finds_more_probable_sequences_than_greedy(tiny_gpt2):
    _, ours = tiny_gpt2

    def log_prob(ids):  # sum of log P(new token | its prefix)
        with torch.no_grad():
            log_probs = ours(ids).log_softmax(-1)[:, 4:-1]
        return log_probs.gather(-1, ids[:, 5:, None]).sum(dim=(1, 2))

    greedy, beam = generate(ours, PROMPT, 8), generate(ours, PROMPT, 8, "beam", num_beams=4)
    assert (log_prob(beam) >= log_prob(greedy) - 1e-5).all() and (log_prob(beam) > log_prob(greedy)).any()


# ---------------------------------------------------------------- sampling


def test_sampling_equals_transformers_with_the_same_seed(tiny_gpt2, tiny_llama):
    """Same global seed, same probabilities, same torch.multinomial draws: the same tokens as do_sample=True
    (transformers' top_k defaults to 50, so pure sampling needs top_k=0 there)."""
    for hf, ours in (tiny_gpt2, tiny_llama):
        for options in (
            dict(),
            dict(top_k=5),
            dict(top_p=0.8),
            dict(temperature=0.7),
            dict(temperature=1.3, top_k=10, top_p=0.9),
        ):
            torch.manual_seed(7)
            expected = hf_generate(hf, PROMPT, 15, do_sample=True, **{"top_k": 0, **options})
            torch.manual_seed(7)
            assert torch.equal(generate(ours, PROMPT, 15, "sample", **options), expected), options


def test_sampling_is_reproducible_with_a_generator(tiny_llama):
    _, ours = tiny_llama

    def sample(seed, **options):
        return generate(ours, PROMPT, 20, "sample", generator=torch.Generator().manual_seed(seed), **options)

    assert torch.equal(sample(1), sample(1)) and not torch.equal(sample(1), sample(2))
    assert torch.equal(sample(3, top_p=0.9, temperature=0.8), sample(3, top_p=0.9, temperature=0.8))
    greedy = generate(ours, PROMPT, 20)
    assert torch.equal(sample(4, top_k=1), greedy)  # k = 1 is greedy
    assert torch.equal(sample(5, temperature=1e-4), greedy)  # T -> 0 is greedy
    assert torch.equal(sample(6, top_p=1e-6), greedy)  # p -> 0 is greedy
    assert not torch.equal(sample(7), greedy)


def test_logits_transform_and_per_row_policies(tiny_gpt2):
    """A custom transform composes with the named ones; one per row runs several policies in one batch."""
    _, ours = tiny_gpt2
    prompt = PROMPT[:1].expand(3, -1)

    def per_row(logits):  # row 0 greedy, row 1 top-k 5, row 2 as it is
        return torch.stack([top_k_filter(logits[0], 1), top_k_filter(logits[1], 5), logits[2]])

    out = generate(ours, prompt, 15, "sample", logits_transform=per_row, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out[:1], generate(ours, PROMPT[:1], 15))


# ---------------------------------------------------------------- the KV cache


@pytest.mark.parametrize("n_kv", [2, 4])
def test_kv_cache_logits_equal_recomputation(n_kv):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=50, d_model=32, h=4, n_kv_heads=n_kv, N=2, d_ff=64, max_len=32)
    model = Llama(config).double().eval()
    x = torch.randint(50, (3, 14))
    with torch.no_grad():
        full = model(x)
        full_weights = model.attention_weights(x)
        cache = new_kv_cache(model)
        pieces = [model(x[:, :5], kv_cache=cache)]  # the prompt at once, then one by one
        for t in range(5, 12):
            pieces.append(model(x[:, t : t + 1], kv_cache=cache))
        snapshot = copy.deepcopy(cache)
        last = model(x[:, 12:], kv_cache=cache)  # and two at once
        weights = model.attention_weights(x[:, 12:], kv_cache=snapshot)
    torch.testing.assert_close(torch.cat(pieces + [last], dim=1), full, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights[1], full_weights[1][:, :, 12:], atol=1e-12, rtol=0)
    assert len(cache) == 2 and len(cache[0]) == 14 and cache[0].k.shape == (3, n_kv, 14, 8)  # GQA: n_kv heads only


def test_kv_cache_in_attention_and_causal_mask_with_past():
    assert torch.equal(causal_mask(2, past=3), torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool))
    assert torch.equal(causal_mask(4, past=0), causal_mask(4))
    attn = LlamaAttention(32, 4, n_kv_heads=2).double().eval()
    cos, sin = (table.double() for table in RotaryEmbedding(8, max_len=16).cos_sin(7))
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    cache = KVCache()
    with torch.no_grad():
        full = attn(x, cos, sin, mask=causal_mask(7))[0]
        first = attn(x[:, :4], cos[:4], sin[:4], mask=causal_mask(4), kv_cache=cache)[0]
        rest = attn(x[:, 4:], cos[4:], sin[4:], mask=causal_mask(3, past=4), kv_cache=cache)[0]
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full, atol=1e-12, rtol=0)
    assert len(cache) == 7 and cache.k.shape == (2, 2, 7, 8)
    cache.reorder(torch.tensor([1, 1, 0]))
    assert cache.k.shape[0] == 3 and torch.equal(cache.k[0], cache.k[1])


def test_grouped_query_attention_with_every_kind_of_mask():
    """GQA (each K/V head repeated for its group of query heads) is ordinary attention whose W^K, W^V repeat each
    K/V head for its group, for masks of every broadcastable shape."""
    d_model, h, n_kv, d_k, n = 24, 6, 2, 4, 5
    torch.manual_seed(0)
    gqa = MultiHeadAttention(d_model, h, n_kv_heads=n_kv).double().eval()
    mha = MultiHeadAttention(d_model, h).double().eval()
    with torch.no_grad():
        for name in ("w_k", "w_v"):
            w, b = getattr(gqa, name).weight, getattr(gqa, name).bias
            getattr(mha, name).weight.copy_(
                w.view(n_kv, 1, d_k, d_model).expand(n_kv, h // n_kv, d_k, d_model).reshape(d_model, d_model)
            )
            getattr(mha, name).bias.copy_(b.view(n_kv, 1, d_k).expand(n_kv, h // n_kv, d_k).flatten())
        for name in ("w_q", "w_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
    x = torch.randn(3, n, d_model, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)

    def random_mask(*shape):
        mask = torch.rand(*shape, generator=g) > 0.4
        mask[..., 0] = True  # every query sees at least one key
        return mask

    masks = {
        "none": None,
        "causal (N, M)": causal_mask(n),
        "padding (batch, 1, 1, M)": random_mask(3, 1, 1, n),
        "(batch, N, M)": random_mask(3, n, n),
        "(batch, h, N, M)": random_mask(3, h, n, n),
        "(1, 1, N, M)": random_mask(1, 1, n, n),
        "(h, N, M) as (1, h, N, M)": random_mask(1, h, n, n),
    }
    with torch.no_grad():
        for name, mask in masks.items():
            out, weights = gqa.forward_with_weights(x, mask=mask)
            expected, expected_weights = mha.forward_with_weights(x, mask=mask)
            torch.testing.assert_close(out, expected, atol=1e-12, rtol=0, msg=name)
            torch.testing.assert_close(weights, expected_weights, atol=1e-12, rtol=0, msg=name)
        with pytest.raises(RuntimeError, match="must match"):  # torch's own error: no check in every layer
            gqa(x, mask=random_mask(3, 4, n, n))  # 4 heads: neither 1 nor h = 6


def test_last_only_logits(tiny_llama):
    _, ours = tiny_llama
    with torch.no_grad():
        full, last = ours(PROMPT), ours(PROMPT, last_only=True)
        assert last.shape == (3, 1, 100)
        torch.testing.assert_close(last, full[:, -1:], atol=1e-6, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["tiny_gpt2", "tiny_llama"])
def test_kv_cache_same_tokens(which, request):
    _, ours = request.getfixturevalue(which)
    for strategy, options in (("greedy", {}), ("beam", dict(num_beams=3)), ("sample", dict(top_p=0.9))):
        runs = [
            generate(
                ours,
                PROMPT,
                25,
                strategy,
                use_cache=use_cache,
                **options,
                **({"generator": torch.Generator().manual_seed(0)} if strategy == "sample" else {}),
            )
            for use_cache in (True, False)
        ]
        assert torch.equal(*runs), strategy


def test_generate_with_any_callable_and_restores_mode(tiny_gpt2):
    _, ours = tiny_gpt2
    expected = generate(ours, PROMPT, 10)
    assert torch.equal(generate(lambda ids: ours(ids), PROMPT, 10, use_cache=False), expected)
    ours.train()
    try:
        assert torch.equal(generate(ours, PROMPT, 10), expected)  # dropout off while generating
        assert ours.training  # and the mode restored after
    finally:
        ours.eval()
    assert torch.equal(generate(ours, PROMPT, 0), PROMPT)


def test_a_longer_text_slides_the_window_of_max_len_tokens():
    """Past max_len tokens the model sees its last max_len (the cache cannot slide, so they are recomputed)."""
    torch.manual_seed(0)
    model = GPT(GPTConfig.gpt2(vocab_size=20, d_model=16, h=2, N=1, d_ff=32, max_len=8)).eval()
    prompt = torch.randint(20, (2, 6))
    out = generate(model, prompt, 5)
    assert out.shape == (2, 11) and torch.equal(out, generate(model, prompt, 5, use_cache=False))
    with torch.no_grad():
        for t in range(6, 11):  # token t was chosen from the (at most) 8 before it
            assert torch.equal(out[:, t], model(out[:, max(0, t - 8) : t])[:, -1].argmax(-1))


# ---------------------------------------------------------------- the real SmolLM2-135M-Instruct

# the `smollm2` fixture (model, ours, tokenizer) is in tests/conftest.py, loaded once per session


def test_smollm2_greedy_and_cache(smollm2):
    hf, ours, tokenizer = smollm2
    ids = tokenizer(
        "I had called upon my friend, Mr. Sherlock Holmes, one day in the autumn of last year", return_tensors="pt"
    ).input_ids
    expected = hf_generate(hf, ids, 20, eos_token_id=2)
    assert torch.equal(generate(ours, ids, 20, eos_id=2), expected)
    assert torch.equal(generate(ours, ids, 20, eos_id=2, use_cache=False), expected)  # without the cache too
    assert tokenizer.decode(expected[0, ids.shape[1] :]).startswith(", to assist me")


def test_smollm2_beam_search_with_eos(smollm2):
    hf, ours, tokenizer = smollm2
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Say hi."}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"]
    expected = hf_generate(hf, chat, 30, num_beams=3, eos_token_id=2)
    assert expected[0, -1] == 2 and expected.shape[1] < chat.shape[1] + 30  # the answer ended with EOS
    assert torch.equal(generate(ours, chat, 30, "beam", num_beams=3, eos_id=2), expected)


def test_smollm2_sampling_equals_transformers(smollm2):
    hf, ours, tokenizer = smollm2
    ids = tokenizer("The weather today is", return_tensors="pt").input_ids
    torch.manual_seed(0)
    expected = hf_generate(hf, ids, 12, do_sample=True, top_k=50, top_p=0.9, temperature=0.8)
    torch.manual_seed(0)
    assert torch.equal(generate(ours, ids, 12, "sample", top_k=50, top_p=0.9, temperature=0.8), expected)


# ---------------------------------------------------------------- measured properties of a text


def test_distinct_n_and_repetition():
    loop = "the cat sat on the mat the cat sat on the mat".split()
    assert distinct_n(loop, 1) == 5 / 12 and distinct_n(loop, 2) == 6 / 11
    assert repetition(loop, 4) == pytest.approx(1 - 6 / 9)  # 9 four-grams, 6 distinct
    fresh = list(range(20))
    assert distinct_n(fresh, 2) == 1.0 and repetition(fresh) == 0.0
    assert distinct_n(torch.tensor([1, 1, 1, 1]), 1) == 0.25  # token ids as a tensor work too
    with pytest.raises(ValueError, match="no 4-grams"):
        repetition([1, 2, 3], 4)
    with pytest.raises(ValueError, match="n must be at least 1"):
        distinct_n([1, 2, 3], 0)


# ---------------------------------------------------------------- bad input


def test_bad_input(tiny_gpt2, tiny_llama):
    hf, ours = tiny_gpt2
    llama = tiny_llama[1]
    z = torch.randn(2, 10)
    for k in (0, -3):
        with pytest.raises(ValueError, match="k must be at least 1"):
            top_k_filter(z, k)
    with pytest.raises(TypeError, match="k must be an int"):
        top_k_filter(z, 2.5)
    for p in (0.0, -0.1, 1.01, float("nan")):
        with pytest.raises(ValueError, match=r"p must be in \(0, 1\]"):
            top_p_filter(z, p)
    for temperature in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="temperature must be > 0"):
            apply_temperature(z, temperature)
    with pytest.raises(TypeError, match="floating-point"):
        top_k_filter(torch.ones(2, 10, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="V >= 1"):
        top_p_filter(torch.ones(2, 0), 0.5)
    # generate
    with pytest.raises(ValueError, match="k must be at least 1"):
        generate(ours, PROMPT, 5, "sample", top_k=0)
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\]"):
        generate(ours, PROMPT, 5, "sample", top_p=1.5)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        generate(ours, PROMPT, 5, "sample", temperature=0)
    with pytest.raises(ValueError, match="num_beams .* at least 1"):
        generate(ours, PROMPT, 5, "beam", num_beams=0)
    with pytest.raises(ValueError, match="input_ids is empty"):
        generate(ours, torch.zeros(1, 0, dtype=torch.long), 5)
    with pytest.raises(ValueError, match="input_ids is empty"):
        generate(hf, torch.zeros(0, 3, dtype=torch.long), 5)
    with pytest.raises(TypeError, match="integer tensor"):
        generate(ours, PROMPT.float(), 5)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        generate(ours, PROMPT + 100, 5)
    with pytest.raises(ValueError, match="max_new_tokens must be at least 0"):
        generate(ours, PROMPT, -1)
    with pytest.raises(ValueError, match="unknown strategy 'nucleus'"):
        generate(ours, PROMPT, 5, "nucleus")
    with pytest.raises(ValueError, match="top_p only apply to strategy='sample'"):
        generate(ours, PROMPT, 5, "greedy", top_p=0.9)
    with pytest.raises(ValueError, match="eos_id = 100 is outside the vocabulary"):
        generate(ours, PROMPT, 5, eos_id=100)
    with pytest.raises(ValueError, match="use_cache=False"):
        generate(lambda ids: ours(ids), PROMPT, 5)
    with pytest.raises(TypeError, match="model must be"):
        generate("gpt2", PROMPT, 5, use_cache=False)
    # the cache
    with pytest.raises(TypeError, match="list of 2 caches"):
        llama(PROMPT, kv_cache=[KVCache()])
    with pytest.raises(TypeError, match="must be a scratch Llama"):
        new_kv_cache(ours)
    cache = new_kv_cache(llama)
    with torch.no_grad():
        llama(PROMPT, kv_cache=cache)
        with pytest.raises(ValueError, match="5 cached positions \\+ 60 new tokens exceed"):
            llama(torch.zeros(3, 60, dtype=torch.long), kv_cache=cache)
    with pytest.raises(ValueError, match="past .* must be at least 0"):
        causal_mask(3, past=-1)
