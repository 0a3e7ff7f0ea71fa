"""Scores of a model's answers (lectures 6, 7, 9 and 10).

exact_match             the share of predictions equal to their target (after strip())
bio_spans               the (type, start, end) entity spans of a BIO tag sequence
span_scores             per-type precision, recall and F1 of predicted spans against gold spans (exact match)
fill_mask_accuracy      top-1 / top-5 accuracy of a masked LM on held-out masked words
context_free_baselines  the best guesses that ignore the context (the most frequent training words)
distinct_n, repetition  how varied a generated text is: the share of distinct n-grams, and of repeated ones
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from scratch import validate
from scratch.l06_training import eval_mode


def exact_match(predictions: list[str], targets: list[str]) -> float:
    """The fraction of predictions equal to their target, character for character (after strip())."""
    if len(predictions) != len(targets) or not targets:
        raise ValueError(
            f"need as many predictions as targets, and at least one; got {len(predictions)} and {len(targets)}"
        )
    return sum(p.strip() == t.strip() for p, t in zip(predictions, targets)) / len(targets)


def bio_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """Entity spans of a BIO sequence as (type, start, end) with end exclusive. 'B-X' starts an X; 'I-X'
    continues it (an 'I-X' with no open X starts one, the usual lenient reading); 'O' is outside."""
    spans = set()
    kind = None
    start = 0
    for i, tag in enumerate([*tags, "O"]):
        if tag != "O" and not tag.startswith(("B-", "I-")):
            raise ValueError(f"tag {tag!r} at position {i} is not 'O', 'B-<type>' or 'I-<type>'")
        continues = tag.startswith("I-") and tag[2:] == kind
        if kind is not None and not continues:
            spans.add((kind, start, i))
            kind = None
        if tag != "O" and not continues:
            kind = tag[2:]
            start = i
    return spans


def span_scores(gold: list[set], predicted: list[set]) -> dict[str, dict]:
    """Exact-match span precision/recall/F1 per entity type (and 'all'), summed over the sentences.

    gold, predicted: one set of (type, start, end) per sentence, as bio_spans returns.
    Returns {type: {'precision', 'recall', 'f1', 'gold', 'predicted', 'correct'}}.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted ones")
    counts: dict[str, list[int]] = {}
    for g, p in zip(gold, predicted):
        for kind in {s[0] for s in g | p} | {"all"}:
            c = counts.setdefault(kind, [0, 0, 0])
            g_k = g if kind == "all" else {s for s in g if s[0] == kind}
            p_k = p if kind == "all" else {s for s in p if s[0] == kind}
            c[0] += len(g_k)
            c[1] += len(p_k)
            c[2] += len(g_k & p_k)
    scores = {}
    for kind, (n_gold, n_pred, correct) in sorted(counts.items()):
        precision = correct / n_pred if n_pred else 0.0
        recall = correct / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[kind] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "gold": n_gold,
            "predicted": n_pred,
            "correct": correct,
        }
    return scores


def fill_mask_accuracy(model, examples, batch_size: int = 32) -> dict:
    """Top-1 and top-5 accuracy of a BertForMaskedLM-like model (returns .logits) on masked_word_eval_set's
    examples (all windows of one length), in eval mode. Returns {'top1', 'top5', 'n'} (n = masked words scored)."""
    if not examples:
        raise ValueError("examples is empty: nothing to score")
    top1 = top5 = n = 0
    with eval_mode(model):
        for start in range(0, len(examples), batch_size):
            batch = examples[start : start + batch_size]
            ids = torch.nn.utils.rnn.pad_sequence([e[0] for e in batch], batch_first=True)
            attention_mask = torch.nn.utils.rnn.pad_sequence([torch.ones_like(e[0]) for e in batch], batch_first=True)
            logits = model(input_ids=ids, attention_mask=attention_mask).logits  # (batch, T, vocab)
            for row, (_, positions, targets) in enumerate(batch):
                best = logits[row, positions].topk(5, dim=-1).indices  # (k, 5)
                top1 += (best[:, 0] == targets).sum().item()
                top5 += (best == targets[:, None]).any(-1).sum().item()
                n += len(targets)
    return {"top1": top1 / n, "top5": top5 / n, "n": n}


def context_free_baselines(train_targets: torch.Tensor, test_targets: torch.Tensor, k: int = 5) -> dict:
    """The best guesses that ignore the context, chosen on the training words and scored on the test words:
    always the most frequent training word (top-1), and always the k most frequent ones (top-k).

    Ties in frequency are broken by the smaller token id, so the guesses are deterministic.
    Returns {'top1', f'top{k}', 'guesses' (token ids, most frequent first), 'n'}.
    """
    if train_targets.numel() == 0 or test_targets.numel() == 0:
        raise ValueError("both the training and the test targets must be non-empty")
    ids, counts = torch.unique(train_targets, return_counts=True)  # ids ascending
    order = sorted(range(len(ids)), key=lambda i: (-counts[i].item(), ids[i].item()))[:k]
    guesses = ids[order]
    return {
        "top1": (test_targets == guesses[0]).float().mean().item(),
        f"top{k}": torch.isin(test_targets, guesses).float().mean().item(),
        "guesses": guesses.tolist(),
        "n": test_targets.numel(),
    }


def _ngrams(tokens: Sequence, n: int) -> list[tuple]:
    n = validate.integer(n, "n")
    if isinstance(tokens, torch.Tensor):
        if tokens.dim() != 1:
            raise ValueError(f"tokens must be one sequence (1-D), got shape {tuple(tokens.shape)}")
        tokens = tokens.tolist()
    tokens = list(tokens)
    if len(tokens) < n:
        raise ValueError(f"a text of {len(tokens)} tokens has no {n}-grams")
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


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
