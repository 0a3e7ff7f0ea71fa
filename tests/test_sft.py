"""scratch.l08_sft: lecture 8's SFT data, its labels masked to the answer, batches, and the reply score."""

import pytest
import torch
from transformers import AutoTokenizer

from course import assets
from course.number_words import digits_conversation
from scratch.l07_masking import IGNORE_INDEX
from scratch.l08_sft import collate, reply_accuracy, sft_example


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(assets.smollm2_dir())


def test_digits_conversation_asks_in_words_and_answers_in_digits():
    system, user, assistant = digits_conversation(346)
    assert system["role"] == "system" and user["role"] == "user" and assistant["role"] == "assistant"
    assert user["content"] == "Write three hundred forty-six in digits." and assistant["content"] == "346"
    assert [m["role"] for m in digits_conversation(7, with_answer=False)] == ["system", "user"]
    with pytest.raises(ValueError, match="n"):
        digits_conversation(-1)


@pytest.mark.assets
def test_sft_example_puts_only_the_answer_and_the_end_of_the_turn_in_the_loss(tokenizer):
    ids, labels = sft_example(tokenizer, digits_conversation(346))
    assert len(ids) == len(labels)
    answer = [tokenizer.decode(i) for i, label in zip(ids, labels) if label != IGNORE_INDEX]
    assert answer == ["3", "4", "6", "<|im_end|>", "\n"]
    kept = [i for i, label in enumerate(labels) if label != IGNORE_INDEX]
    assert kept == list(range(kept[0], len(ids))) and all(labels[i] == ids[i] for i in kept)  # one block, at the end
    prompt = tokenizer.apply_chat_template(digits_conversation(346)[:-1], add_generation_prompt=True, tokenize=False)
    assert tokenizer.decode(ids[: kept[0]]) == prompt  # everything before the answer is the prompt the model is given
    with pytest.raises(ValueError, match="assistant"):
        sft_example(tokenizer, digits_conversation(346, with_answer=False))


def test_collate_pads_on_the_right_and_ignores_the_padding():
    batch = collate([([5, 6, 7], [IGNORE_INDEX, 6, 7]), ([8], [8])], pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[IGNORE_INDEX, 6, 7], [8, IGNORE_INDEX, IGNORE_INDEX]]
    with pytest.raises(ValueError, match="at least one"):
        collate([], pad_id=0)
    with pytest.raises(ValueError, match="pad_id"):
        collate([([1], [1])], pad_id=-1)


class _Echo:
    """A stand-in model whose greedy reply is fixed: the tokens of `reply` then end-of-turn."""

    def __init__(self, tokenizer, replies):
        self.tokenizer, self.replies = tokenizer, replies

    def generate(self, input_ids, attention_mask, max_new_tokens, do_sample):
        new = [self.tokenizer(r + "<|im_end|>").input_ids for r in self.replies]
        width = max(len(row) for row in new)
        pad = self.tokenizer.pad_token_id
        return torch.cat([input_ids, torch.tensor([row + [pad] * (width - len(row)) for row in new])], dim=1)


@pytest.mark.assets
def test_reply_accuracy_counts_exact_replies_only(tokenizer):
    conversations = [digits_conversation(n) for n in (12, 345, 6)]
    accuracy, replies = reply_accuracy(_Echo(tokenizer, ["12", "The number is 345.", " 6 "]), tokenizer, conversations)
    assert replies[0] == "12" and "345" in replies[1]
    assert accuracy == pytest.approx(2 / 3)  # spaces around the answer are stripped; a sentence around it is wrong
    with pytest.raises(ValueError, match="at least one"):
        reply_accuracy(_Echo(tokenizer, []), tokenizer, [])
