"""Supervised fine-tuning (SFT) of a chat model: conversations whose assistant turn is the wanted answer, the loss on
the answer's tokens only (lecture 8).

    sft_example           a conversation's token ids and its labels: IGNORE_INDEX on the prompt, the answer's ids after
    collate               a batch of examples right-padded: input_ids, attention_mask, labels (padding ignored too)
    reply_accuracy        greedy replies to conversations without their answers, and the share exactly right

The tokenizer is a transformers tokenizer with a chat template (SmolLM2's); nothing here imports transformers.
"""

from __future__ import annotations

import warnings

import torch

from scratch import validate
from scratch.l07_masking import IGNORE_INDEX

# peft 0.21.2 reads `is_gradient_checkpointing`, which transformers 5 deprecates: a warning no user can act on
warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)

# A short system message: the template's default one is about 20 tokens longer, on every example
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def _prompt_text(tokenizer, conversation: list[dict]) -> str:
    """The conversation up to its last assistant turn, with the assistant's turn opened (the model writes next)."""
    return tokenizer.apply_chat_template(conversation[:-1], add_generation_prompt=True, tokenize=False)


def sft_example(tokenizer, conversation: list[dict]) -> tuple[list[int], list[int]]:
    """(ids, labels) of a conversation that ends with the assistant's answer: labels are IGNORE_INDEX up to the end
    of the prompt (the assistant's turn opened) and the ids themselves from the answer on, its end-of-turn included."""
    if not conversation or conversation[-1].get("role") != "assistant":
        raise ValueError("sft_example needs a conversation that ends with the assistant's answer")
    ids = tokenizer(tokenizer.apply_chat_template(conversation, tokenize=False)).input_ids
    prompt_ids = tokenizer(_prompt_text(tokenizer, conversation)).input_ids
    if ids[: len(prompt_ids)] != prompt_ids:
        raise ValueError("the prompt's tokens are not a prefix of the whole conversation's")
    return ids, [IGNORE_INDEX] * len(prompt_ids) + ids[len(prompt_ids) :]


def collate(examples: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad (ids, labels) pairs to the longest: input_ids (pad_id), attention_mask (0 on padding) and labels
    (IGNORE_INDEX on padding), each (batch, length)."""
    if not examples:
        raise ValueError("collate needs at least one example")
    pad_id = validate.integer(pad_id, "pad_id", minimum=0)
    width = max(len(ids) for ids, _ in examples)

    def pad(rows, value):
        return torch.tensor([row + [value] * (width - len(row)) for row in rows])

    ids, labels = zip(*examples)
    mask = [[1] * len(row) for row in ids]
    return {"input_ids": pad(ids, pad_id), "attention_mask": pad(mask, 0), "labels": pad(labels, IGNORE_INDEX)}


@torch.no_grad()
def reply_accuracy(model, tokenizer, conversations: list[list[dict]], max_new_tokens: int = 12):
    """Greedy replies (prompts padded on the left, one batch) to conversations that end with their answer, which is
    left out of the prompt; returns (the share of replies equal to the answer after stripping spaces, the replies)."""
    if not conversations:
        raise ValueError("reply_accuracy needs at least one conversation")
    prompts = [_prompt_text(tokenizer, conversation) for conversation in conversations]
    batch = tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left")
    new = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False)[:, batch["input_ids"].shape[1] :]
    replies = tokenizer.batch_decode(new, skip_special_tokens=True)
    right = [reply.strip() == conversation[-1]["content"] for reply, conversation in zip(replies, conversations)]
    return sum(right) / len(right), replies
