"""Masked-language modelling, BERT's pre-training objective (lecture 7), and the course's fill-mask model.

    mask_tokens            BERT's corruption: pick 15 % of the tokens; of those 80 % -> [MASK], 10 % -> a random
                           token, 10 % unchanged; the loss is computed at the picked positions only
    token_windows          a corpus cut into [CLS] ... [SEP] windows of WordPiece ids
    masked_word_eval_set   held-out whole words (single WordPiece tokens) hidden behind [MASK]
    fill_mask_accuracy     top-1 / top-5 accuracy of a masked LM on such a set
    heldout_chapters       Moby-Dick's chapters split into training and held-out ones
    minilm_mlm_with_lora   MiniLM as a BertForMaskedLM with LoRA adapters on every encoder Linear, untrained
    load_minilm_lora_mlm   ... with the adapters and head the course trained (data/checkpoints/minilm-lora-mlm/)
    word_targets           the words a fill-mask test may hide (whole alphabetic single-token words)
    context_free_baselines the best guesses that ignore the context (most frequent training words), scored
                           on the held-out words

MiniLM ships no MLM head (it was fine-tuned for sentence embeddings); data/checkpoints/minilm-mlm-head/
holds the small head trained by its train.py, which scratch.pretrained.load_minilm_mlm puts on MiniLM (superseded:
the head on the frozen encoder reached 4.4 % top-1; data/checkpoints/minilm-lora-mlm/ adapts the encoder too).
"""

from __future__ import annotations

import torch

from scratch.training import eval_mode

IGNORE_INDEX = -100  # label of positions that are not predicted (PyTorch's cross_entropy default)


def mask_tokens(
    ids: torch.Tensor,
    special_mask: torch.Tensor,
    mask_id: int,
    vocab_size: int,
    prob: float = 0.15,
    generator: torch.Generator | None = None,
):
    """BERT's masking: returns (inputs, labels), both (batch, T) like ids.

    Each non-special token is picked with probability `prob`. A picked token becomes [MASK] with
    probability 0.8, a uniformly random token with 0.1, and stays itself with 0.1 (so the model cannot
    assume that an unmasked token is always right). labels hold the original id at picked positions and
    IGNORE_INDEX (-100) everywhere else. special_mask: bool (batch, T), True at [CLS]/[SEP]/[PAD].
    """
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"ids must be an integer tensor, got {getattr(ids, 'dtype', type(ids).__name__)}")
    if not isinstance(special_mask, torch.Tensor) or special_mask.shape != ids.shape:
        raise ValueError(
            f"special_mask must be a bool tensor of the shape of ids {tuple(ids.shape)}, "
            f"got {tuple(special_mask.shape) if isinstance(special_mask, torch.Tensor) else special_mask}"
        )
    if not 0.0 < prob < 1.0:
        raise ValueError(f"prob must be in (0, 1), got {prob}")
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id {mask_id} is outside the vocabulary [0, {vocab_size})")
    picked = (torch.rand(ids.shape, generator=generator) < prob) & ~special_mask.bool()
    labels = torch.where(picked, ids, torch.full_like(ids, IGNORE_INDEX))
    action = torch.rand(ids.shape, generator=generator)  # one draw decides 80/10/10
    to_mask = picked & (action < 0.8)
    to_random = picked & (action >= 0.8) & (action < 0.9)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator, dtype=ids.dtype)
    inputs = torch.where(to_mask, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, labels


def token_windows(tokenizer, texts: list[str], max_len: int = 64) -> list[list[int]]:
    """Each text's WordPiece ids cut into consecutive windows of max_len - 2, framed by [CLS] ... [SEP].

    Every window has exactly max_len ids (a text's last, shorter piece is dropped), so they stack.
    """
    if max_len < 3:
        raise ValueError(f"max_len must be at least 3 ([CLS], one token, [SEP]), got {max_len}")
    body = max_len - 2
    windows = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]  # long texts are the point
        for start in range(0, len(ids), body):
            chunk = ids[start : start + body]
            if len(chunk) == body:
                windows.append([tokenizer.cls_token_id, *chunk, tokenizer.sep_token_id])
    return windows


def single_token_words(tokenizer, ids: list[int]) -> list[int]:
    """Positions of whole alphabetic words that are one WordPiece token (not '##x', not followed by '##x')."""
    tokens = tokenizer.convert_ids_to_tokens(ids)
    return [
        i
        for i, tok in enumerate(tokens)
        if tok.isalpha()
        and tok.isascii()
        and tok not in tokenizer.all_special_tokens
        and not (i + 1 < len(tokens) and tokens[i + 1].startswith("##"))
    ]


def masked_word_eval_set(tokenizer, windows: list[list[int]], prob: float = 0.15, seed: int = 0):
    """Hide about `prob` of each window's single-token words behind [MASK] (at least one per window).

    Returns a list of (input_ids (T,), positions (k,), targets (k,)) tensors, deterministic for a seed.
    """
    generator = torch.Generator().manual_seed(seed)
    examples = []
    for window in windows:
        candidates = single_token_words(tokenizer, window)
        if not candidates:
            continue
        k = max(1, round(prob * len(candidates)))
        chosen = sorted(candidates[i] for i in torch.randperm(len(candidates), generator=generator)[:k].tolist())
        ids = torch.tensor(window)
        positions = torch.tensor(chosen)
        targets = ids[positions].clone()
        ids[positions] = tokenizer.mask_token_id
        examples.append((ids, positions, targets))
    return examples


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


def heldout_chapters(chapters: list[dict], every: int = 10) -> tuple[list[dict], list[dict]]:
    """Moby-Dick split by chapter: every `every`-th chapter (10, 20, ...) is held out. -> (train, held_out)."""
    held = [c for c in chapters if int(c["chapter"]) % every == 0]
    return [c for c in chapters if int(c["chapter"]) % every != 0], held


# ---------------------------------------------------------------- MiniLM adapted for masked LM with LoRA

LORA_CHECKPOINT = "minilm-lora-mlm"


def minilm_mlm_with_lora(rank: int = 16, alpha: float = 32.0):
    """all-MiniLM-L6-v2 as a BertForMaskedLM whose encoder is adapted with LoRA (scratch.finetuning), untrained.

    Trainable: the low-rank adapters on every Linear of the 6 encoder blocks (Q, K, V, attention output, both
    FFN layers), the encoder's biases and LayerNorms, and the MLM head (dense + GELU + LayerNorm, and the output
    bias). Frozen: the pretrained weight matrices and the word embeddings, which are also the head's decoder (tied).
    """
    from transformers import BertForMaskedLM

    from scratch.finetuning import minilm_with_lora

    model = minilm_with_lora(BertForMaskedLM, rank, alpha, heads=("cls.predictions.",))
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)  # = the decoder's weight
    return model


def load_minilm_lora_mlm(name: str = LORA_CHECKPOINT):
    """MiniLM + the course's LoRA adapters and MLM head -> (BertForMaskedLM in eval mode, tokenizer).

    data/checkpoints/<name>/model.safetensors holds only what training changed (scratch.finetuning.trainable_state);
    its metadata names the adapters' rank and alpha. Everything else is MiniLM's, as installed.
    """
    from transformers import BertForMaskedLM

    from scratch.finetuning import load_minilm_with_lora

    return load_minilm_with_lora(BertForMaskedLM, name, heads=("cls.predictions.",))


def word_targets(tokenizer, windows: list[list[int]]) -> torch.Tensor:
    """Every whole alphabetic single-token word in the windows (the kind of word the fill-mask test hides)."""
    return torch.tensor([w[i] for w in windows for i in single_token_words(tokenizer, w)], dtype=torch.long)


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
