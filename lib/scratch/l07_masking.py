"""BERT's labels (lecture 7): the masked-language-model objective, and word tags for token classification.

IGNORE_INDEX          -100: a label that is not scored (PyTorch's cross_entropy default, transformers' too)
mask_tokens           BERT's corruption: pick 15 % of the tokens; of those 80 % -> [MASK], 10 % -> a random
                      token, 10 % unchanged; the loss is computed at the picked positions only
label_first_pieces    word-level tags -> WordPiece-level labels (first piece of a word labelled)
"""

from __future__ import annotations

import torch

IGNORE_INDEX = -100  # label of positions without a loss (PyTorch's cross_entropy default, transformers' too)


# ---------------------------------------------------------------- masked language modelling


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


def label_first_pieces(word_ids: list[int | None], word_labels: list[int]) -> list[int]:
    """Word-level labels -> one label per WordPiece token: a word's first piece gets the word's label; its
    other pieces and the special tokens ([CLS], [SEP], padding: word id None) get IGNORE_INDEX (-100).

    word_ids: a fast tokenizer's `encoding.word_ids()` (the index of the word each token came from).
    """
    if any(w is not None and not 0 <= w < len(word_labels) for w in word_ids):
        raise ValueError(f"word_ids refer to words outside word_labels (which has {len(word_labels)} labels)")
    labels, previous = [], None
    for word in word_ids:
        labels.append(IGNORE_INDEX if word is None or word == previous else word_labels[word])
        previous = word
    return labels
