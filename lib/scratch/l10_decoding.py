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
    KVCache, new_kv_cache(model)   the keys and values a Llama's layers have computed so far, kept between steps

Every transform maps logits (..., V) to logits (..., V), filtered entries set to -inf (probability 0), so they
compose: top_p_filter(top_k_filter(apply_temperature(z, 0.7), 50), 0.9). generate works with the course's GPT
(lecture 6, no cache) and Llama (lecture 8, with a KVCache per layer), with a transformers causal LM (it returns an
output with .logits; generation uses its past_key_values), and with any callable ids -> logits (use_cache=False).

How varied a generated text is (distinct_n, repetition) is measured by course.metrics.
Shapes: batch, T prompt tokens, V vocabulary.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from contextlib import nullcontext

import torch
from torch.nn import functional as F

from scratch import validate
from scratch.l06_gpt import GPT
from scratch.l06_training import eval_mode
from scratch.l08_llama import Llama

STRATEGIES = ("greedy", "sample", "beam")


def _check_logits(logits) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(
            f"logits must be a floating-point tensor, got {getattr(logits, 'dtype', type(logits).__name__)}"
        )
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape (..., V) with V >= 1 vocabulary entries, got {tuple(logits.shape)}")
    return logits


def _check_temperature(temperature) -> float:
    temperature = validate.real(temperature, "temperature")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be > 0 and finite, got {temperature} (for T -> 0 use greedy decoding)")
    return temperature


def _check_top_p(p) -> float:
    if not 0 < validate.real(p, "top-p's p") <= 1:
        raise ValueError(f"top-p's p must be in (0, 1], got {p}")
    return float(p)


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
    k = min(validate.integer(k, "top-k's k"), logits.shape[-1])
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
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
    sorted_logits, order = torch.sort(logits, dim=-1, descending=False)  # least probable first
    tail_mass = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # P(this token or a less probable one)
    drop_sorted = tail_mass <= 1 - p
    drop_sorted[..., -1:] = False  # the most probable token always stays
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def process_logits(
    logits: torch.Tensor, temperature: float | None = None, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The three transforms in transformers' order: temperature, then top-k, then top-p (None = skip)."""
    if temperature is not None:
        logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


# ---------------------------------------------------------------- the KV cache


class KVCache:
    """The keys and values one self-attention layer has computed so far: k (batch, n_kv_heads, M, d_k), v (batch,
    n_kv_heads, M, d_v), M = the number of positions seen.

    A decoder generates one token at a time, and in a causal model the keys and values of past positions never
    change (a position only attends to earlier ones). So instead of recomputing them at every step, each layer
    keeps them here and computes only the new token's: `append` concatenates along M and returns everything
    for the attention. The keys are stored after RoPE (each is rotated once, by its own position) and, with
    grouped-query attention, only the n_kv_heads heads: the cache is h / n_kv_heads times smaller than with
    ordinary multi-head attention. Beam search reorders the rows when it reorders its beams: `reorder(index)`.
    """

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        """M: the number of cached positions (0 when empty)."""
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the keys and values of n new positions, (batch, n_kv_heads, n, d); return all M + n of them."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep the rows `index` (batch',) of the batch, in that order (beam search picks its beams' parents)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)

    def __repr__(self) -> str:
        return f"KVCache(positions={len(self)}, k shape={None if self.k is None else tuple(self.k.shape)})"


def new_kv_cache(model: Llama) -> list[KVCache]:
    """An empty cache for a Llama's forward(ids, kv_cache=...): one KVCache per block."""
    if not isinstance(model, Llama):
        raise TypeError(f"model must be a scratch Llama (lecture 8), got {type(model).__name__}")
    return [KVCache() for _ in model.blocks]


# ---------------------------------------------------------------- the model, step by step


class _Decoder:
    """The model behind one interface: the whole sequence so far (batch, L) -> logits of the next token (batch, V).

    What the model can do decides how it is called: a scratch Llama returns a logits tensor and takes
    kv_cache=new_kv_cache(model); a scratch GPT (no cache) sees the whole sequence at every step; a transformers
    model returns an output with .logits and takes past_key_values (its own cache object); any other callable
    ids -> logits (a tensor or an output with .logits) is run on the whole sequence every step. With a cache, only
    the tokens it has not seen go through the model. A scratch model sees at most its last max_len tokens: once the
    text is longer the window slides, and as a cache cannot slide, the window is recomputed at every step from then on.
    """

    def __init__(self, model, use_cache: bool):
        transformers = sys.modules.get("transformers")  # no import: a model of it implies it is loaded
        self.max_len = None
        if isinstance(model, (GPT, Llama)):
            self.kind = "scratch"
            self.max_len = model.max_len
            use_cache = use_cache and isinstance(model, Llama)
        elif transformers is not None and isinstance(model, transformers.PreTrainedModel):
            self.kind = "transformers"
        elif callable(model):
            self.kind = "callable"
            if use_cache:
                raise ValueError(
                    f"{type(model).__name__} has no KV cache that generate knows; pass use_cache=False "
                    f"(it then runs the model on the whole sequence at every step)"
                )
        else:
            raise TypeError(
                f"model must be a scratch GPT or Llama, a transformers model or a callable ids -> logits, "
                f"got {type(model).__name__}"
            )
        self.model = model
        self.use_cache = use_cache
        self.cache = None
        self.seen = 0

    def next_logits(self, ids: torch.Tensor) -> torch.Tensor:
        if self.max_len is not None and ids.shape[1] > self.max_len:  # the window slides: recompute it
            ids = ids[:, -self.max_len :]
            self.use_cache = False
        new = ids[:, self.seen :] if self.use_cache else ids
        if self.kind == "scratch":  # logits for the last position only
            if not self.use_cache:
                out = self.model(new, last_only=True)
            else:
                self.cache = new_kv_cache(self.model) if self.cache is None else self.cache
                out = self.model(new, kv_cache=self.cache, last_only=True)
        elif self.use_cache:
            out = self.model(input_ids=new, past_key_values=self.cache, use_cache=True)
            self.cache = out.past_key_values
        else:
            out = self.model(ids)
        self.seen = ids.shape[1]
        logits = out.logits if hasattr(out, "logits") else out  # transformers: an output object; scratch: a tensor
        if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[0] != ids.shape[0]:
            found = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise ValueError(f"the model must return logits (batch, length, V) for ids {tuple(ids.shape)}, got {found}")
        return logits[:, -1].float()  # (batch, V), float32 as transformers does

    def reorder(self, rows: torch.Tensor) -> None:
        """Beam search: row i of the next step continues row rows[i] of this one."""
        if self.use_cache and self.kind == "scratch":
            for layer_cache in self.cache:
                layer_cache.reorder(rows)
        elif self.use_cache:
            self.cache.reorder_cache(rows)


# ---------------------------------------------------------------- generation


@torch.no_grad()
def generate(
    model,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    strategy: str = "greedy",
    *,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    logits_transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    generator: torch.Generator | None = None,
    num_beams: int = 4,
    length_penalty: float = 1.0,
    early_stopping: bool | str = False,
    eos_id: int | None = None,
    pad_id: int | None = None,
    use_cache: bool = True,
) -> torch.Tensor:
    """Continue input_ids (batch, T) by up to max_new_tokens tokens -> (batch, T + n), the prompt included.

    strategy
        "greedy"  the most probable token at every step.
        "sample"  a sample from softmax(z'), where z' = the logits after process_logits(z, temperature, top_k,
                  top_p) and then logits_transform (any function (batch, V) -> (batch, V)). All None: pure random
                  sampling from the model's distribution. Draws with torch.multinomial from `generator` (a
                  torch.Generator, for reproducible samples; None = torch's global generator).
        "beam"    beam search with num_beams beams (num_beams = 1 is greedy): the num_beams most probable partial
                  sequences are kept at every step; hypotheses that end with eos_id are set aside with their score
                  (the sum of log-probabilities) divided by length ** length_penalty, and the search stops early once
                  no running beam can beat them (early_stopping=False: the best running beam, normalised by its
                  current length, cannot beat the worst of num_beams finished ones; transformers' default) or runs
                  until no beam is left or max_new_tokens is reached (early_stopping="never": exact). See _beam_search.
    eos_id: a row that emits it is finished; its later positions get pad_id (default eos_id), and generation
    stops early once every row has finished.
    use_cache: keep the keys and values of past positions (the KV cache), so every step runs only the new token
    through the model; False recomputes the whole sequence at every step (same tokens, slower). Lecture 6's GPT
    has no cache: it always recomputes.
    Runs without gradients and in eval mode (dropout off), restoring the model's previous mode after.
    """
    vocab_size = getattr(model, "vocab_size", None) or getattr(getattr(model, "config", None), "vocab_size", None)
    input_ids = validate.token_ids(
        input_ids, vocab_size if isinstance(vocab_size, int) else sys.maxsize, name="input_ids"
    )
    max_new_tokens = validate.integer(max_new_tokens, "max_new_tokens", minimum=0)
    validate.choice(strategy, "strategy", STRATEGIES)
    sampling_options = {
        "temperature": temperature,
        "top_k": top_k,
        "top_p": top_p,
        "logits_transform": logits_transform,
        "generator": generator,
    }
    given = [name for name, value in sampling_options.items() if value is not None]
    if strategy != "sample" and given:
        raise ValueError(f"{', '.join(given)} only apply to strategy='sample', not {strategy!r}")
    if strategy == "sample":  # check the options now, not at the first step
        process_logits(torch.zeros(1), temperature, top_k, top_p)
    num_beams = validate.integer(num_beams, "num_beams (the beam width)")
    length_penalty = validate.real(length_penalty, "length_penalty")
    if early_stopping not in (False, "never"):
        raise ValueError(f"early_stopping must be False or 'never', got {early_stopping!r}")
    if eos_id is not None:
        eos_id = validate.token_id(eos_id, vocab_size or sys.maxsize, "eos_id")
    pad_id = eos_id if pad_id is None else validate.token_id(pad_id, vocab_size or sys.maxsize, "pad_id")
    if max_new_tokens == 0:
        return input_ids

    with eval_mode(model) if isinstance(model, torch.nn.Module) else nullcontext():
        if strategy == "beam" and num_beams > 1:
            best = [
                _beam_search(
                    _Decoder(model, use_cache),
                    prompt[None],
                    max_new_tokens,
                    num_beams,
                    length_penalty,
                    eos_id,
                    early_stopping,
                )
                for prompt in input_ids
            ]
            longest = max(row.shape[0] for row in best)  # rows that ended early are padded
            return torch.stack([F.pad(row, (0, longest - row.shape[0]), value=pad_id or 0) for row in best])
        if strategy == "sample":

            def choose(logits):
                logits = process_logits(logits, temperature, top_k, top_p)
                if logits_transform is not None:
                    logits = logits_transform(logits)
                return torch.multinomial(F.softmax(logits, dim=-1), num_samples=1, generator=generator).squeeze(1)
        else:

            def choose(logits):
                return logits.argmax(dim=-1)

        return _token_by_token(_Decoder(model, use_cache), input_ids, max_new_tokens, choose, eos_id, pad_id)


def _token_by_token(decoder: _Decoder, ids: torch.Tensor, max_new_tokens: int, choose, eos_id, pad_id):
    """Greedy or sampling, the loop of lectures 0, 6 and 10: one token per row and step, chosen by
    choose(logits (batch, V)) -> (batch,), appended, until max_new_tokens or every row has emitted eos_id."""
    unfinished = torch.ones(ids.shape[0], dtype=torch.bool, device=ids.device)
    for _ in range(max_new_tokens):
        next_ids = choose(decoder.next_logits(ids))  # (batch,)
        if eos_id is not None:
            next_ids = torch.where(unfinished, next_ids, pad_id)  # finished rows only get padding
            unfinished &= next_ids != eos_id
        ids = torch.cat([ids, next_ids[:, None]], dim=1)
        if eos_id is not None and not unfinished.any():
            break
    return ids


def _beam_search(
    decoder: _Decoder,
    prompt: torch.Tensor,
    max_new_tokens: int,
    num_beams: int,
    length_penalty: float,
    eos_id: int | None,
    early_stopping: bool | str = False,
) -> torch.Tensor:
    """Beam search for one prompt (1, T), as lecture 10 derives it -> the best sequence (T + n,).

    Start from one beam, the prompt, with log-probability 0. At every step score each candidate (beam, next token)
    by the beam's score plus log P(token | beam), and keep the best: of the 2 · num_beams best candidates, the
    num_beams best that do not end run on. A candidate ends when it emits eos_id or reaches max_new_tokens; if it
    is among the num_beams best of its step, it is set aside as a finished hypothesis with the score
    sum log P / n ** length_penalty (n = its new tokens, EOS included; length_penalty > 0 favours longer
    sequences, < 0 shorter ones), and the num_beams best finished hypotheses are kept. The search stops once
    num_beams hypotheses are finished and the best running beam, normalised by its length, cannot beat the
    worst of them (early_stopping=False), or only when no beam runs any more (early_stopping="never"). The result
    is the best finished hypothesis (with its EOS).
    Without ties between scores this is transformers' beam search (tests/test_sampling.py compares them).
    """
    beams, scores = prompt, torch.zeros(1, device=prompt.device)  # (beams, L), (beams,)
    finished: list[tuple[float, torch.Tensor]] = []  # (normalised score, sequence)
    for step in range(max_new_tokens):
        log_p = F.log_softmax(decoder.next_logits(beams), dim=-1)  # (beams, V)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()  # every beam x every next token
        top = candidates.topk(min(2 * num_beams, candidates.numel()))  # best first
        parents, tokens = top.indices // vocab, top.indices % vocab
        length_norm = (step + 1) ** length_penalty
        running = []
        for rank, (parent, token) in enumerate(zip(parents.tolist(), tokens.tolist())):
            if token == eos_id or step == max_new_tokens - 1:  # this candidate ends
                if rank < num_beams:
                    sequence = torch.cat([beams[parent], tokens[rank : rank + 1]])
                    finished.append((top.values[rank].item() / length_norm, sequence))
            elif len(running) < num_beams:
                running.append(rank)
        finished = sorted(finished, key=lambda hypothesis: -hypothesis[0])[:num_beams]
        if not running or (
            early_stopping is False
            and len(finished) == num_beams
            and top.values[running[0]].item() / length_norm <= finished[-1][0]
        ):
            break  # no running beam can win any more
        keep = torch.tensor(running, device=prompt.device)
        decoder.reorder(parents[keep])  # every beam's cache follows its parent
        beams = torch.cat([beams[parents[keep]], tokens[keep, None]], dim=1)
        scores = top.values[keep]
    return finished[0][1]
