"""Checks of lecture 10's exercises (exercises/10_decoding.ipynb); see course.checks."""

import itertools

from transformers import LlamaConfig, LlamaForCausalLM, MinPLogitsWarper

from course.checks.support import (
    BUILTINS,
    F,
    call,
    close,
    equal,
    math,
    tensor,
    tools,
    torch,
    untampered,
    values,
)
from scratch.l10_decoding import generate

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid = tools.forbid
_product, _no_grad, _fork_rng = itertools.product, torch.no_grad, torch.random.fork_rng

# The checks' own inputs, made when the set-up imports this module: the set-up's kinds, other numbers.
with _fork_rng():
    torch.manual_seed(10)
    _Z = 3 * torch.randn(4, 50)  # a batch of 4 next-token logit vectors, V = 50
    _V, _EOS = 8, 0
    _BIGRAM = 2 * torch.randn(_V, _V)
    _DRIFT = 0.5 * torch.randn(64, _V)


def _toy_model(ids):  # a language model in miniature: ids (batch, L) -> logits (batch, L, V)
    return _BIGRAM[ids] + _DRIFT[: ids.shape[1]]


def _llama(vocab_size, hidden_size, layers, heads, kv_heads, scale, seed):
    with _fork_rng():
        torch.manual_seed(seed)
        return LlamaForCausalLM(
            LlamaConfig(
                vocab_size=vocab_size,
                hidden_size=hidden_size,
                intermediate_size=2 * hidden_size,
                num_hidden_layers=layers,
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                max_position_embeddings=128,
                initializer_range=scale,
                bos_token_id=None,
                eos_token_id=None,
                pad_token_id=None,
            )
        ).eval()


_TINY_LM = _llama(12, 32, 2, 4, 2, 0.5, 1)
_OTHER_LM = _llama(9, 16, 1, 2, 1, 0.8, 3)


def _tempered_reference(probs, T):  # softmax(log P / T), in float64
    return F.softmax(probs.double().log() / T, dim=-1).to(probs.dtype)


def temper(student_temper):
    """Exercise 1."""
    untampered()

    def tempered(probs, T):
        what = f"temper(probs of shape {tuple(probs.shape)} {probs.dtype}, T={T})"
        before = probs.clone()
        out = call(student_temper, probs, T, what=what)
        tensor(out, f"{what}: the shape and dtype of probs", shape=probs.shape, dtype=probs.dtype)
        assert equal(probs, before), f"hint: {what}: leave probs as it is (no in-place operations on it)"
        assert not bool(out.isnan().any()), (
            f"hint: {what} gives nan: raising tiny probabilities to a large power underflows to 0 in every entry of "
            "a row; where else can temperature be applied? (lecture 10, temperature)"
        )
        return out, what

    probs = F.softmax(_Z, dim=-1)  # (4, 50)
    cases = [(probs, T) for T in (0.3, 0.7, 1.0, 1.5, 4.0)]
    for shape in ((50,), (2, 2, 50), (1, 4, 1, 50)):  # one row, and batches of other ranks
        rows = F.softmax(3 * torch.randn(shape, generator=torch.Generator().manual_seed(len(shape))), dim=-1)
        cases += [(rows, T) for T in (0.5, 2.0)]
    cases.append((probs.double(), 0.8))  # float64 too
    cut = F.softmax(_Z.masked_fill(_Z < _Z.topk(5, dim=-1).values[:, -1:], -math.inf), dim=-1)  # top-5 kept
    cases += [(cut, T) for T in (0.5, 2.0, 1000.0)]
    cold_rows = torch.tensor(
        [[0.25, 0.25, 0.25, 0.25, 0.0], [0.3, 0.2, 0.2, 0.2, 0.1], [0.1, 0.2, 0.2, 0.2, 0.3]]
    )  # a flat row and near-flat ones: every entry ** (1 / T) underflows
    cases += [(cold_rows, T) for T in (0.01, 0.02)]
    for rows, T in cases:
        got, what = tempered(rows, T)
        if rows is cut:
            assert equal(got == 0, rows == 0), f"hint: {what}: a token of probability 0 keeps probability 0"
        assert close(got, _tempered_reference(rows, T), atol=1e-5), (
            f"hint: {what}: the tempered distribution differs: temperature divides the LOGITS; what does that do to "
            "the probabilities, and is each row renormalised? (lecture 10, temperature)"
        )
    print("Exercise 1: OK")


def min_p_filter(student_min_p_filter):
    """Exercise 2."""
    untampered()
    z = _Z
    tied = torch.tensor([[2.0, 5.0, -1.0, 5.0, 4.9, 0.0]])  # two top tokens of the same probability
    cases = [(rows, p_min) for rows in (z, z / 4, z * 3) for p_min in (0.0, 0.05, 0.1, 0.3, 1.0)]
    cases += [
        (z.view(2, 2, 50), 0.2),  # a batch of another rank
        (z[0], 0.1),  # one row (V,)
        (3 * z - 300, 0.1),  # all logits far below 0: exp underflows without care
        (3 * z + 300, 0.6),  # all far above 0: exp overflows without care
        (z.masked_fill(z < 0, -math.inf), 0.02),  # some tokens already cut (-inf)
        (tied, 1.0),  # p_min = 1: keep exactly the tokens tied with the top
        (tied, 0.9),
        (z.double(), 0.1),  # float64 too
    ]
    expected = [
        MinPLogitsWarper(p_min)(None, logits.reshape(-1, logits.shape[-1])).view(logits.shape)
        for logits, p_min in cases
    ]
    kept = []
    with forbid(
        "transformers.MinPLogitsWarper.__call__", hint="compare each probability with p_min x the row's largest"
    ):
        for (logits, p_min), theirs in zip(cases, expected):
            what = f"min_p_filter(logits of shape {tuple(logits.shape)} {logits.dtype}, {p_min})"
            before = logits.clone()
            ours = call(student_min_p_filter, logits, p_min, what=what)
            assert equal(logits, before), f"hint: {what}: leave the logits you are given as they are"
            tensor(ours, f"{what}: keep the shape and dtype", shape=logits.shape, dtype=logits.dtype)
            assert not bool(ours.isnan().any()), (
                f"hint: {what}: nan in the result: large logits overflow exp, very negative ones underflow it; how "
                "does a softmax avoid that? (lecture 3, section 3)"
            )
            assert equal(torch.isfinite(ours), torch.isfinite(theirs)), (
                f"hint: {what}: the tokens kept differ: a token is kept when its PROBABILITY is at least p_min times "
                "the most probable token's probability in the same row (lecture 10, filtering)"
            )
            assert equal(ours[torch.isfinite(ours)], logits[torch.isfinite(ours)]), (
                f"hint: {what}: kept logits stay unchanged"
            )
            assert bool((ours[~torch.isfinite(ours)] == -math.inf).all()), (
                f"hint: {what}: removed tokens get the logit -inf"
            )
            if p_min == 0.1 and logits.shape == (4, 50) and logits.dtype == torch.float32 and len(kept) < 3:
                kept.append(int(torch.isfinite(ours[0]).sum()))  # medium, flat, peaked
    print(
        f"Exercise 2: OK (p_min = 0.1 keeps {kept[2]}, {kept[0]} and {kept[1]} tokens of a peaked, medium and flat row)"
    )


def greedy_no_repeat(student_greedy):
    """Exercise 3."""
    untampered()
    prompts = torch.tensor([[3, 7, 5, 4, 8, 5], [0, 0, 0, 0, 1, 2], [1, 2, 8, 5, 11, 8]])  # row 1 repeats itself
    repeats = torch.tensor([[4, 2, 4, 7, 4, 1, 4], [5, 5, 3, 5, 6, 5, 8]])  # the first token comes back
    cases = [  # (model, prompts, n, max_new_tokens)
        (_TINY_LM, prompts, 2, 20),
        (_TINY_LM, prompts, 3, 20),
        (_TINY_LM, prompts[2:], 4, 7),
        (_TINY_LM, repeats, 2, 9),
        (_OTHER_LM, repeats, 2, 12),
        (_OTHER_LM, repeats, 3, 15),
        (_OTHER_LM, torch.tensor([[6]]), 5, 16),  # a prompt shorter than n - 1
        (_OTHER_LM, prompts[:2] % 9, 2, 1),
    ]
    options = dict(do_sample=False, use_cache=False)
    expected = [
        model.generate(
            ids, attention_mask=torch.ones_like(ids), no_repeat_ngram_size=n, max_new_tokens=steps, **options
        )
        for model, ids, n, steps in cases
    ]
    shortcuts = (
        "transformers.GenerationMixin.generate",
        "transformers.NoRepeatNGramLogitsProcessor.__call__",
        "transformers.generation.logits_process._get_ngrams",
        "transformers.generation.logits_process._get_generated_ngrams",
        "scratch.l10_decoding.generate",
        "scratch.l10_decoding._token_by_token",
    )
    for (model, ids, n, steps), theirs in zip(cases, expected):
        what = f"greedy_no_repeat(model with V = {model.config.vocab_size}, {values(ids)}, {steps}, n={n})"
        with forbid(*shortcuts, hint="write the greedy loop and the n-gram ban yourself"):
            ours = call(student_greedy, model, ids.clone(), steps, n, what=what)
        tensor(ours, f"{what}: the prompts plus max_new_tokens tokens", shape=theirs.shape)
        assert equal(ours[:, : ids.shape[1]], ids), f"hint: {what}: the result starts with the prompt"
        for row, prompt in zip(values(ours), values(ids)):
            first_new = max(len(prompt) - n + 1, 0)  # the first n-gram that holds a generated token
            new_grams = [tuple(row[i : i + n]) for i in range(first_new, len(row) - n + 1)]
            earlier = [tuple(row[i : i + n]) for i in range(first_new)]
            assert not set(new_grams) & set(earlier) and len(set(new_grams)) == len(new_grams), (
                f"hint: {what}: a generated {n}-gram repeats one of the same row: which earlier runs of n - 1 tokens "
                "do you compare with, and do you ban the follower of each of them? (lecture 10, section 9)"
            )
        assert equal(ours, theirs), (
            f"hint: {what}: expected {values(theirs)}, got {values(ours)}: the same ban as transformers' "
            "no_repeat_ngram_size, then the argmax of the model you were given"
        )
    print("Exercise 3: OK")


def _toy_lm(seed, vocab):  # another toy language model: logits from the last token and the position
    generator = torch.Generator().manual_seed(seed)
    table = 2 * torch.randn(vocab, vocab, generator=generator)
    by_position = 0.5 * torch.randn(64, vocab, generator=generator)
    return lambda ids: table[ids] + by_position[: ids.shape[1]]


def _counted(model):  # counts the calls, and refuses anything but one sequence (1, L)
    def counting_model(ids):
        counting_model.calls += 1
        assert type(ids) is torch.Tensor and ids.dim() == 2 and ids.shape[0] == 1, (
            f"hint: call the target on one sequence (1, L), got {tuple(getattr(ids, 'shape', ()))}"
        )
        return model(ids)

    counting_model.calls = 0
    return counting_model


def _greedy_reference(model, ids, n):  # the target alone, one call per token
    for _ in range(n):
        ids = torch.cat([ids, model(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids


def _rounds(model, draft, prompt, n, k):  # how many target calls the method needs: one per round
    continuation, done, count = values(_greedy_reference(model, prompt, n)[0, prompt.shape[1] :]), 0, 0
    while done < n:  # a round accepts the guesses that agree with the target, then one token of the target's
        ids, agreed = torch.cat([prompt, torch.tensor([continuation[:done]], dtype=torch.long)], dim=1), 0
        while agreed < k and done + agreed < n and int(draft(ids)[0, -1].argmax()) == continuation[done + agreed]:
            ids, agreed = torch.cat([ids, torch.tensor([[continuation[done + agreed]]])], dim=1), agreed + 1
        done, count = done + agreed + 1, count + 1
    return count


def speculative_greedy(student_speculative):
    """Exercise 4."""
    untampered()
    targets = {
        "a toy model": (_toy_model, _V),
        "a V = 8 model": (_toy_lm(11, 8), 8),
        "a V = 5 model": (_toy_lm(12, 5), 5),
    }
    shortcuts = ("scratch.l10_decoding.generate", "scratch.l10_decoding._token_by_token")
    for target_name, (model, vocab) in targets.items():
        noise = 1.5 * torch.randn(vocab, vocab, generator=torch.Generator().manual_seed(1))
        drafts = {
            "perfect": model,  # the target itself, uncounted
            "noisy": lambda ids, model=model, noise=noise: model(ids) + noise[ids],  # often right, sometimes wrong
            "always token 3": lambda ids, vocab=vocab: F.one_hot(torch.full_like(ids, 3), vocab).float(),
        }
        for draft_name, draft in drafts.items():
            for k, n in ((1, 9), (3, 12), (4, 11), (6, 4), (2, 1)):
                for start in ([[2]], [[4, 1, 3]]):
                    prompt = torch.tensor(start)
                    expected, needed = _greedy_reference(model, prompt, n), _rounds(model, draft, prompt, n, k)
                    target = _counted(model)
                    what = f"speculative_greedy(target {target_name}, {draft_name} draft, {start}, {n}, k = {k})"
                    with forbid(*shortcuts, hint="propose with the draft, verify with one target call"):
                        got = call(student_speculative, target, draft, prompt.clone(), n, k, what=what)
                    tensor(got, f"{what}: (1, T + max_new_tokens)", shape=expected.shape)
                    assert equal(got, expected), (
                        f"hint: {what}: the result must be the target's own greedy continuation: which of the "
                        "target's positions predicts each proposed token, and what is appended where they first "
                        "disagree? (lecture 10, speculative decoding)"
                    )
                    assert target.calls == needed, (
                        f"hint: {what}: {target.calls} target calls, the method needs {needed}: one call per round, "
                        "each round accepting the agreed guesses and one token of the target's (with a perfect draft, "
                        "k + 1 tokens per call)"
                    )
    print("Exercise 4: OK")


def _exhaustive(model, prompt, max_new_tokens, eos_id, alpha, vocab):  # every text that ends or reaches the limit
    best_score, best_text = -math.inf, None
    for L in range(1, max_new_tokens + 1):
        rests = torch.tensor(list(_product(range(vocab), repeat=L)))  # (vocab ** L, L)
        valid = ~(rests[:, :-1] == eos_id).any(1) & ((rests[:, -1] == eos_id) | (L == max_new_tokens))
        texts = torch.cat([prompt.expand(len(rests), -1), rests], dim=1)[valid]
        log_p = F.log_softmax(model(texts), dim=-1)[:, prompt.shape[1] - 1 : -1]  # (texts, L, V)
        scores = log_p.gather(-1, texts[:, prompt.shape[1] :, None]).sum((1, 2)) / L**alpha
        if scores.max().item() > best_score:
            best_score, best_text = scores.max().item(), texts[scores.argmax()][None]
    return best_text


def _batch_counted(model):  # counts the calls and the largest batch
    def counting_model(ids):
        counting_model.calls += 1
        counting_model.largest = max(counting_model.largest, ids.shape[0])
        return model(ids)

    counting_model.calls, counting_model.largest = 0, 0
    return counting_model


def _eos_likelier(ids):  # the toy model, with EOS (token 0) more probable
    return _toy_model(ids) + 1.5 * (torch.arange(_V) == _EOS)


_SMALL_TABLE = 2 * torch.randn(6, 6, generator=torch.Generator().manual_seed(7))


def _small_model(ids):  # another toy model, V = 6
    return _SMALL_TABLE[ids] + _DRIFT[: ids.shape[1], :6]


def beam_search_eos(student_beam_search):
    """Exercise 5."""
    untampered()
    models = {  # name: (model, vocabulary, end tokens to try)
        "a toy model": (_toy_model, _V, (_EOS, 5)),
        "a toy model with a likelier end token": (_eos_likelier, _V, (_EOS,)),
        "a V = 6 model": (_small_model, 6, (4, 2)),
    }
    cases = [
        (name, eos_id, prompt, alpha, k, n)
        for name, (_, vocab, eos_ids) in models.items()
        for eos_id in eos_ids
        for prompt, alpha, k, n in _product(([[3, 1]], [[2]]), (-1.0, 0.0, 0.5, 2.0), (2, 3, 5), (1, 3, 6))
    ]
    wide_cases = [("a toy model with a likelier end token", _EOS, alpha) for alpha in (-1.0, 0.0, 1.0)]
    wide_cases.append(("a V = 6 model", 4, 1.0))

    def searched(name, prompt, k, n, eos_id, alpha):
        model = _batch_counted(models[name][0])
        what = (
            f"beam_search_eos({name}, prompt {prompt}, num_beams = {k}, max_new_tokens = {n}, eos_id = {eos_id}, "
            f"length_penalty = {alpha})"
        )
        with forbid(*shortcuts, hint="write the beam search yourself"):
            out = call(student_beam_search, model, torch.tensor(prompt), k, n, eos_id, alpha, what=what)
        assert model.calls <= n, (
            f"hint: {what}: {model.calls} model calls for {n} steps: call the model once per step, with all beams in "
            "one batch"
        )
        assert model.largest <= k, f"hint: {what}: the model got {model.largest} sequences at once, more than num_beams"
        return tensor(out, what), what

    shortcuts = (
        "scratch.l10_decoding.generate",
        "scratch.l10_decoding._beam_search",
        "scratch.l10_decoding._token_by_token",
    )
    for name, eos_id, alpha in wide_cases:
        model, vocab, _ = models[name]
        best = _exhaustive(model, torch.tensor([[2]]), 4, eos_id, alpha, vocab)
        ours, what = searched(name, [[2]], vocab**4, 4, eos_id, alpha)
        assert tuple(ours.shape) == tuple(best.shape) and equal(ours, best), (
            f"hint: {what} (an exhaustive search): the best text is {values(best[0])}, got {values(ours[0])}: how is "
            "a finished text scored, which tokens does L count, and which texts compete? (the statement's rules)"
        )
    for name, eos_id, prompt, alpha, k, n in cases:
        theirs = generate(
            models[name][0],
            torch.tensor(prompt),
            n,
            "beam",
            num_beams=k,
            eos_id=eos_id,
            length_penalty=alpha,
            early_stopping="never",
            use_cache=False,
        )
        ours, what = searched(name, prompt, k, n, eos_id, alpha)
        assert tuple(ours.shape) == tuple(theirs.shape) and equal(ours, theirs), (
            f"hint: {what}: expected {values(theirs[0])}, got {values(ours[0])}: which eos_id candidates finish, "
            "which candidates run on, and what happens at the last step? (the statement's rules 2 to 4)"
        )
    print("Exercise 5: OK")
