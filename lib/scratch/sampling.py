"""Decoding: from the model's next-token distribution to text (lecture 10).

At every step a language model gives logits z (batch, V) for the next token, and softmax(z) is a probability
distribution over the vocabulary of V tokens. A decoding policy picks the next token from it:

    deterministic   greedy: the most probable token; beam search: the num_beams most probable sequences
    stochastic      a sample from softmax(z), usually after reshaping z with these transforms:

    apply_temperature(z, T)    z / T: T < 1 sharpens the distribution (T -> 0 is greedy), T > 1 flattens it
    top_k_filter(z, k)         keep the k largest logits, every other one -> -inf (k = 1 is greedy)
    top_p_filter(z, p)         keep the smallest set of most probable tokens whose probabilities reach p (nucleus)
    process_logits(z, temperature, top_k, top_p)    the three in transformers' order

    generate(model, input_ids, max_new_tokens, strategy="greedy" | "sample" | "beam", ...)

Every transform maps logits (..., V) to logits (..., V), filtered entries set to -inf (probability 0), so they
compose: top_p_filter(top_k_filter(apply_temperature(z, 0.7), 50), 0.9). generate works with a scratch GPT (it
returns a logits tensor; generation uses its KV cache), with a transformers causal LM (it returns an output
with .logits; generation uses its past_key_values), and with any callable ids -> logits (use_cache=False).

Measured properties of a text (a sequence of token ids or words): distinct_n (the share of distinct n-grams)
and repetition (the share of n-grams that repeat an earlier one).
Shapes: batch, T prompt tokens, V vocabulary.
"""
from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext

import torch
from torch.nn import functional as F

from scratch.models import GPT, _check_count, _check_ids, _check_token_id, _eval_mode

STRATEGIES = ("greedy", "sample", "beam")


# ---------------------------------------------------------------- input checks

def _check_logits(logits) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point tensor, got {logits.dtype}")
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape (..., V) with V >= 1 vocabulary entries, got {tuple(logits.shape)}")
    return logits


def _check_real(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {type(value).__name__}")
    return float(value)


def _check_temperature(temperature) -> float:
    temperature = _check_real(temperature, "temperature")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be > 0 and finite, got {temperature} (for T -> 0 use greedy decoding)")
    return temperature


def _check_top_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"top-k's k must be an int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"top-k's k must be at least 1 (k = 1 is greedy), got {k}")
    return int(k)


def _check_top_p(p) -> float:
    p = _check_real(p, "top-p's p")
    if not 0 < p <= 1:
        raise ValueError(f"top-p's p must be in (0, 1], got {p}")
    return p


# ---------------------------------------------------------------- logits transforms

def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(z / T): logits (..., V) -> logits / T.

    T < 1 stretches the gaps between logits, so the distribution gets sharper (T -> 0: all mass on the argmax);
    T > 1 shrinks them, so it gets flatter (T -> infinity: uniform). T = 1 changes nothing.
    Same as transformers' TemperatureLogitsWarper.
    """
    return _check_logits(logits) / _check_temperature(temperature)


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k largest logits of each row (..., V), set the others to -inf; after a softmax the k survivors
    are renormalised to sum to 1.

    Tokens tied with the k-th largest logit are kept too (so a row may keep more than k), and k >= V keeps
    everything: exactly transformers' TopKLogitsWarper.
    """
    logits = _check_logits(logits)
    k = min(_check_top_k(k), logits.shape[-1])
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]            # (..., 1)
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus filtering: keep the smallest set of most probable tokens whose probabilities add up to at least p,
    set the others to -inf. Rows are (..., V).

    The size of the kept set adapts to the distribution: a peaked one keeps a handful of tokens, a flat one many.
    Computed from the bottom, as transformers' TopPLogitsWarper does (same result, ties included): sort the
    probabilities in increasing order and drop every token whose probability plus that of all less probable tokens
    is at most 1 - p; the most probable token always stays (so p -> 0 is greedy, p = 1 keeps every token of
    non-zero probability).
    """
    logits = _check_logits(logits)
    p = _check_top_p(p)
    sorted_logits, order = torch.sort(logits, dim=-1, descending=False)     # least probable first
    tail_mass = sorted_logits.softmax(dim=-1).cumsum(dim=-1)                 # P(this token or a less probable one)
    drop_sorted = tail_mass <= 1 - p
    drop_sorted[..., -1:] = False                                            # the most probable token always stays
    drop = drop_sorted.scatter(-1, order, drop_sorted)                       # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def process_logits(logits: torch.Tensor, temperature: float | None = None, top_k: int | None = None,
                   top_p: float | None = None) -> torch.Tensor:
    """The three transforms in transformers' order: temperature, then top-k, then top-p (None = skip)."""
    if temperature is not None:
        logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


# ---------------------------------------------------------------- the model, step by step

def _is_transformers_model(model) -> bool:
    transformers = sys.modules.get("transformers")           # no import: a model of it implies it is loaded
    return transformers is not None and isinstance(model, transformers.PreTrainedModel)


class _Decoder:
    """Next-token logits (batch, V) for a growing sequence, with or without a KV cache.

    A scratch GPT returns a logits tensor and takes kv_cache=[KVCache, ...]; a transformers model returns an
    output with .logits and takes past_key_values (its own cache object); any other callable ids -> logits
    (a tensor or an output with .logits) is run on the whole sequence every step.
    """

    def __init__(self, model, use_cache: bool):
        if isinstance(model, GPT):
            self.kind = "scratch"
        elif _is_transformers_model(model):
            self.kind = "transformers"
        elif callable(model):
            self.kind = "callable"
            if use_cache:
                raise ValueError(f"{type(model).__name__} has no KV cache that generate knows; pass use_cache=False "
                                 f"(it then runs the model on the whole sequence at every step)")
        else:
            raise TypeError(f"model must be a scratch GPT, a transformers model or a callable ids -> logits, "
                            f"got {type(model).__name__}")
        self.model, self.use_cache, self.cache = model, use_cache, None

    def _logits(self, ids: torch.Tensor) -> torch.Tensor:
        if self.kind == "scratch":                               # logits for the last position only
            out = self.model(ids, kv_cache=self.cache, last_only=True)   # the cache (if any) grows in place
        elif not self.use_cache:
            out = self.model(ids)
        else:
            out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True)
            self.cache = out.past_key_values
        logits = out.logits if hasattr(out, "logits") else out  # transformers: an output object; scratch: a tensor
        if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[0] != ids.shape[0] \
                or logits.shape[1] not in (1, ids.shape[1]):
            found = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise ValueError(f"the model must return logits (batch, length, V) for ids {tuple(ids.shape)}, got {found}")
        return logits[:, -1].float()                            # (batch, V), float32 as transformers does

    def start(self, ids: torch.Tensor) -> torch.Tensor:
        """The prompt (batch, T) -> logits of the token after it (batch, V); fills the cache."""
        if self.use_cache and self.kind == "scratch":
            self.cache = self.model.new_kv_cache()
        return self._logits(ids)

    def step(self, ids: torch.Tensor) -> torch.Tensor:
        """The sequence so far (batch, L), one token longer than at the last call -> next logits (batch, V).
        With a cache only the last token goes through the model."""
        return self._logits(ids[:, -1:] if self.use_cache else ids)

    def reorder(self, rows: torch.Tensor) -> None:
        """Beam search: row i of the next step continues row rows[i] of this one."""
        if not self.use_cache:
            return
        if self.kind == "scratch":
            for layer_cache in self.cache:
                layer_cache.reorder(rows)
        else:
            self.cache.reorder_cache(rows)


# ---------------------------------------------------------------- generation

@torch.no_grad()
def generate(model, input_ids: torch.Tensor, max_new_tokens: int, strategy: str = "greedy", *,
             temperature: float | None = None, top_k: int | None = None, top_p: float | None = None,
             logits_transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
             generator: torch.Generator | None = None, num_beams: int = 4, length_penalty: float = 1.0,
             early_stopping: bool | str = False, eos_id: int | None = None, pad_id: int | None = None,
             use_cache: bool = True) -> torch.Tensor:
    """Continue input_ids (batch, T) by up to max_new_tokens tokens -> (batch, T + n), the prompt included.

    strategy
        "greedy"  the most probable token at every step.
        "sample"  a sample from softmax(z'), where z' = the logits after process_logits(z, temperature, top_k,
                  top_p) and then logits_transform (any function (batch, V) -> (batch, V)). All None: pure random
                  sampling from the model's distribution. Draws with torch.multinomial from `generator` (a
                  torch.Generator, for reproducible samples; None = torch's global generator, as transformers).
        "beam"    beam search with num_beams beams (num_beams = 1 is greedy, as in transformers).
    eos_id: a row that emits it is finished; its later positions get pad_id (default eos_id), and generation
    stops early once every row has finished. The scratch GPT needs T + max_new_tokens <= its max_len.
    use_cache: keep the keys and values of past positions (the KV cache), so every step runs only the new token
    through the model; False recomputes the whole sequence at every step (same tokens, slower).
    Runs without gradients and in eval mode (dropout off), restoring the model's previous mode after.

    The result equals transformers' `generate` (greedy: do_sample=False; sampling: do_sample=True with the same
    temperature, top_k (pass top_k=0 there for none: its default is 50) and top_p, after the same
    torch.manual_seed; beam: num_beams, length_penalty, early_stopping), with eos_token_id = eos_id and
    pad_token_id = pad_id. Beam search follows transformers 5's semantics exactly:
      - score of a sequence = sum of the log-probabilities (float32 log_softmax of the logits) of its new tokens;
        the beams start as num_beams copies of the prompt of which only the first may expand at step 1.
      - each step keeps the 2 · num_beams best candidates (beam, next token) by score; the num_beams best of those
        that did not end run on. A candidate that ends (emits eos_id, or reaches max_new_tokens) and is among the
        num_beams best candidates becomes a finished hypothesis with score / n ** length_penalty, n = the number
        of new tokens including the EOS (length_penalty > 0 favours longer sequences, < 0 shorter ones); the
        num_beams best finished hypotheses are kept.
      - early_stopping=False (the default): stop once num_beams hypotheses are finished and the best running
        beam's score divided by its current length ** length_penalty cannot beat the worst of them; True: stop as
        soon as num_beams hypotheses are finished; "never": like False but the best running score is divided by
        max_new_tokens ** length_penalty when length_penalty > 0. Always stop after max_new_tokens.
      - the result is the best finished hypothesis of each row (with its EOS); rows shorter than the longest are
        padded with pad_id.
    """
    vocab_size = getattr(model, "vocab_size", None) or getattr(getattr(model, "config", None), "vocab_size", None)
    vocab_size = vocab_size if isinstance(vocab_size, int) else sys.maxsize      # unknown for a plain callable
    input_ids = _check_ids(input_ids, vocab_size, float("inf"), "input_ids")
    max_new_tokens = _check_count(max_new_tokens, "max_new_tokens", minimum=0)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    sampling_options = {"temperature": temperature, "top_k": top_k, "top_p": top_p,
                        "logits_transform": logits_transform, "generator": generator}
    if strategy != "sample":
        given = [name for name, value in sampling_options.items() if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} only apply to strategy='sample', not {strategy!r}")
    else:                                      # check the options now, not at the first step
        process_logits(torch.zeros(1), temperature, top_k, top_p)
        if logits_transform is not None and not callable(logits_transform):
            raise TypeError(f"logits_transform must be a function logits -> logits, got {type(logits_transform).__name__}")
    if strategy == "beam":
        num_beams = _check_count(num_beams, "num_beams (the beam width)")
        length_penalty = _check_real(length_penalty, "length_penalty")
        if early_stopping not in (False, True, "never"):
            raise ValueError(f"early_stopping must be False, True or 'never', got {early_stopping!r}")
    if eos_id is not None:
        eos_id = _check_token_id(eos_id, vocab_size, "eos_id")
    pad_id = eos_id if pad_id is None else _check_token_id(pad_id, vocab_size, "pad_id")
    if isinstance(model, GPT) and input_ids.shape[1] + max_new_tokens > model.max_len:
        raise ValueError(f"{input_ids.shape[1]} prompt tokens + max_new_tokens = {max_new_tokens} exceed the "
                         f"model's max_len = {model.max_len} positions")
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be True or False, got {use_cache!r}")
    if max_new_tokens == 0:
        return input_ids

    decoder = _Decoder(model, use_cache)
    with _eval_mode(model) if isinstance(model, torch.nn.Module) else nullcontext():
        if strategy == "beam" and num_beams > 1:
            return _beam_search(decoder, input_ids, max_new_tokens, num_beams, length_penalty, early_stopping,
                                eos_id, pad_id)
        if strategy == "sample":
            def choose(logits):
                logits = process_logits(logits, temperature, top_k, top_p)
                if logits_transform is not None:
                    logits = logits_transform(logits)
                probs = F.softmax(logits, dim=-1)                                  # (batch, V)
                return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
        else:
            def choose(logits):
                return logits.argmax(dim=-1)
        return _token_by_token(decoder, input_ids, max_new_tokens, choose, eos_id, pad_id)


def _token_by_token(decoder: _Decoder, ids: torch.Tensor, max_new_tokens: int, choose, eos_id, pad_id):
    """Greedy or sampling: one token per row and step, chosen by choose(logits (batch, V)) -> (batch,)."""
    unfinished = torch.ones(ids.shape[0], dtype=torch.bool, device=ids.device)
    logits = decoder.start(ids)
    for step in range(max_new_tokens):
        next_ids = choose(logits)                                              # (batch,)
        if eos_id is not None:
            next_ids = torch.where(unfinished, next_ids, pad_id)               # finished rows only get padding
            unfinished &= next_ids != eos_id
        ids = torch.cat([ids, next_ids[:, None]], dim=1)
        if step == max_new_tokens - 1 or not unfinished.any():
            break
        logits = decoder.step(ids)
    return ids


def _take(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x (batch, beams, ...) -> x[b, index[b, j], ...] of shape (batch, index.shape[1], ...)."""
    return torch.take_along_dim(x, index.view(index.shape + (1,) * (x.dim() - 2)), dim=1)


def _beam_search(decoder: _Decoder, prompt: torch.Tensor, max_new_tokens: int, num_beams: int,
                 length_penalty: float, early_stopping, eos_id, pad_id) -> torch.Tensor:
    """transformers 5's beam search (see generate): arrays (batch, beams, ...), scores in float32.

    -1e9 stands for "impossible" (never chosen while a real candidate exists), as in transformers, whose
    arithmetic this follows step for step so that even ties are broken the same way.
    """
    batch, prompt_len = prompt.shape
    max_len = prompt_len + max_new_tokens
    n_candidates = 2 * num_beams           # enough that num_beams of them still run on if the others end
    is_top = torch.arange(n_candidates, device=prompt.device) < num_beams   # only these may finish
    fill = pad_id if eos_id is not None else -1
    # running beams: num_beams copies of the prompt; only the first expands at step 1 (the others score -1e9)
    running = prompt[:, None, :].expand(batch, num_beams, prompt_len)                    # (batch, K, L)
    running_scores = torch.zeros(batch, num_beams, device=prompt.device)
    running_scores[:, 1:] = -1e9
    # finished hypotheses: sequences padded to max_len, scores (length-normalised), lengths (new tokens)
    finished = torch.full((batch, num_beams, max_len), fill, dtype=prompt.dtype, device=prompt.device)
    finished[:, :, :prompt_len] = prompt[:, None, :]
    finished_scores = torch.full((batch, num_beams), -1e9, device=prompt.device)
    finished_lengths = torch.zeros(batch, num_beams, dtype=torch.long, device=prompt.device)
    is_finished = torch.zeros(batch, num_beams, dtype=torch.bool, device=prompt.device)
    improvable = torch.ones(batch, 1, dtype=torch.bool, device=prompt.device)

    logits = decoder.start(prompt)                                  # the prompt once per row ...
    rows = torch.arange(batch, device=prompt.device).repeat_interleave(num_beams)
    decoder.reorder(rows)                                           # ... then its cache copied for every beam
    logits = logits[rows]                                           # (batch · K, V)
    for step in range(max_new_tokens):
        vocab = logits.shape[-1]
        # a. every (beam, token) continuation, scored by the sum of log-probabilities
        log_probs = F.log_softmax(logits, dim=-1).view(batch, num_beams, vocab) + running_scores[..., None]
        scores, flat = torch.topk(log_probs.view(batch, num_beams * vocab), n_candidates)    # (batch, 2K), best first
        parents, tokens = flat // vocab, flat % vocab
        candidates = torch.cat([_take(running, parents), tokens[..., None]], dim=-1)       # (batch, 2K, L + 1)
        ends = torch.full_like(tokens, prompt_len + step + 1 >= max_len, dtype=torch.bool)
        if eos_id is not None:
            ends |= tokens == eos_id

        # b. the num_beams best candidates that did not end run on
        running_candidates = scores + ends.to(torch.float32) * -1e9
        keep = torch.topk(running_candidates, num_beams).indices                            # (batch, K)
        running, running_scores = _take(candidates, keep), _take(running_candidates, keep)
        parent_rows = _take(parents, keep) + torch.arange(batch, device=prompt.device)[:, None] * num_beams

        # c. candidates that ended (among the num_beams best) join the finished hypotheses if good enough
        normalised = scores / ((step + 1) ** length_penalty)
        normalised += (is_finished.all(dim=-1, keepdim=True) & (early_stopping is True)).to(torch.float32) * -1e9
        normalised += (~improvable).to(torch.float32) * -1e9
        just_finished = ends & is_top
        normalised += (~just_finished) * -1e9
        padded = torch.full((batch, n_candidates, max_len), fill, dtype=prompt.dtype, device=prompt.device)
        padded[..., :candidates.shape[-1]] = candidates
        best = torch.topk(torch.cat([finished_scores, normalised], dim=1), num_beams).indices
        finished = _take(torch.cat([finished, padded], dim=1), best)
        finished_scores = _take(torch.cat([finished_scores, normalised], dim=1), best)
        finished_lengths = _take(torch.cat([finished_lengths, torch.full_like(tokens, step + 1)], dim=1), best)
        is_finished = _take(torch.cat([is_finished, just_finished], dim=1), best)

        # d. can a running beam still beat the worst finished hypothesis? (transformers' heuristic)
        length = max_new_tokens if early_stopping == "never" and length_penalty > 0 else step + 1
        best_possible = running_scores[:, :1] / (length ** length_penalty)
        worst_finished = torch.where(is_finished, finished_scores.min(dim=1, keepdim=True).values, -1e9)
        improvable = improvable & (best_possible > worst_finished).any(dim=-1, keepdim=True)
        all_done = is_finished.all() and early_stopping is True
        if not improvable.any() or all_done or ends.all():
            break
        decoder.reorder(parent_rows.flatten())                      # every beam's cache follows its parent
        logits = decoder.step(running.reshape(batch * num_beams, -1))

    length = prompt_len + int(finished_lengths[:, 0].max())
    return finished[:, 0, :length]                                  # the best hypothesis of each row


# ---------------------------------------------------------------- measured properties of a text

def _ngrams(tokens: Sequence, n: int) -> list[tuple]:
    n = _check_count(n, "n")
    if isinstance(tokens, torch.Tensor):
        if tokens.dim() != 1:
            raise ValueError(f"tokens must be one sequence (1-D), got shape {tuple(tokens.shape)}")
        tokens = tokens.tolist()
    tokens = list(tokens)
    if len(tokens) < n:
        raise ValueError(f"a text of {len(tokens)} tokens has no {n}-grams")
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def distinct_n(tokens: Sequence, n: int) -> float:
    """The share of distinct n-grams among all n-grams of a text: 1 = no n-gram occurs twice, near 0 = a loop.

    tokens: token ids or words (a list, or a 1-D tensor). Li et al. 2016's diversity measure.
    """
    grams = _ngrams(tokens, n)
    return len(set(grams)) / len(grams)


def repetition(tokens: Sequence, n: int = 4) -> float:
    """The share of n-grams that repeat an n-gram seen earlier in the same text (1 - distinct_n for one text):
    0 = nothing repeats, near 1 = the text is stuck in a loop. With n = 4, a repeated phrase counts, a repeated
    common word or pair does not (Welleck et al. 2019's rep-n).
    """
    return 1.0 - distinct_n(tokens, n)
