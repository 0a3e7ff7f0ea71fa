"""Known-wrong and borrowed solutions to lecture 7's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

_SEGMENTS_OK = """
def segment_ids(input_ids):
    is_sep = (input_ids == SEP).long()
    seps_before = is_sep.cumsum(dim=1) - is_sep
    return ((seps_before == 1) & (input_ids != PAD)).long()
"""

_CORRUPT_OK = """
def corrupt(ids, special, prob, generator):
    picked = (torch.rand(ids.shape, generator=generator) < prob) & ~special
    labels = torch.where(picked, ids, torch.full_like(ids, IGNORE_INDEX))
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(V, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, MASK), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    return inputs, labels
"""

_PAIRS_OK = """
def nsp_pairs(documents, generator):
    def draw(n):
        return int(torch.randint(n, (1,), generator=generator))

    pairs = []
    for d, sentences in enumerate(documents):
        for i in range(len(sentences) - 1):
            if torch.rand(1, generator=generator).item() < 0.5:
                pairs.append((sentences[i], sentences[i + 1], 0))
            else:
                other = draw(len(documents) - 1)
                other += other >= d
                pairs.append((sentences[i], documents[other][draw(len(documents[other]))], 1))
    return pairs
"""

_WHOLE_WORD_OK = """
def whole_word_picks(tokens, prob, generator):
    picks = torch.zeros(len(tokens), dtype=torch.bool)
    word_picked = False
    for position, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            word_picked = False
            continue
        if not token.startswith("##"):
            word_picked = torch.rand(1, generator=generator).item() < prob
        picks[position] = word_picked
    return picks
"""

_PLL_OK = """
def token_log_probs(model, ids):
    positions = torch.arange(1, len(ids) - 1)
    copies = ids.repeat(len(positions), 1)
    copies[torch.arange(len(positions)), positions] = MASK
    with torch.no_grad():
        logits = model(input_ids=copies).logits
    log_probs = logits[torch.arange(len(positions)), positions].log_softmax(dim=-1)
    return log_probs[torch.arange(len(positions)), ids[positions]]
"""


def _variant(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the variant's anchor {old!r} must occur once"
    return source.replace(old, new)


WRONG_SOLUTIONS = {
    1: {
        "the first [SEP] counted in segment 1": _variant(
            _SEGMENTS_OK, "seps_before = is_sep.cumsum(dim=1) - is_sep", "seps_before = is_sep.cumsum(dim=1)"
        ),
        "padding after sentence B marked as segment 1": _variant(
            _SEGMENTS_OK, "return ((seps_before == 1) & (input_ids != PAD)).long()", "return (seps_before >= 1).long()"
        ),
        "padding of a single sentence marked as segment 1": _variant(
            _SEGMENTS_OK, "return ((seps_before == 1) & (input_ids != PAD)).long()", "return (seps_before == 1).long()"
        ),
        "borrowed: decoded and tokenized again": """
def segment_ids(input_ids):
    rows = []
    for row in input_ids:
        text = tokenizer.decode(row[row != PAD][1:-1])
        a, _, b = text.partition(" [SEP] ")
        enc = tokenizer(a, b) if b else tokenizer(a)
        rows.append(enc["token_type_ids"] + [0] * (len(row) - len(enc["token_type_ids"])))
    return torch.tensor(rows)
""",
    },
    2: {
        "the random 10 % replaced by a constant ([PAD])": _variant(
            _CORRUPT_OK,
            "random_ids = torch.randint(V, ids.shape, generator=generator)",
            "random_ids = torch.full_like(ids, PAD)",
        ),
        "random tokens drawn from the batch, not the vocabulary": _variant(
            _CORRUPT_OK,
            "random_ids = torch.randint(V, ids.shape, generator=generator)",
            "random_ids = ids.flatten()[torch.randperm(ids.numel(), generator=generator)].view(ids.shape)",
        ),
        "random numbers from torch's global generator": _variant(
            _CORRUPT_OK,
            "random_ids = torch.randint(V, ids.shape, generator=generator)",
            "random_ids = torch.randint(V, ids.shape)",
        ),
        "labels hold the corrupted ids": _variant(
            _CORRUPT_OK,
            "    return inputs, labels",
            "    return inputs, torch.where(picked, inputs, torch.full_like(ids, IGNORE_INDEX))",
        ),
        "special tokens can be picked": _variant(_CORRUPT_OK, "< prob) & ~special", "< prob)"),
        "10 % of the remaining 20 % become random (2 % overall)": _variant(
            _CORRUPT_OK, "(action >= 0.8) & (action < 0.9)", "(action >= 0.8) & (action < 0.82)"
        ),
        "borrowed: scratch.mlm.mask_tokens": """
def corrupt(ids, special, prob, generator):
    from scratch.mlm import mask_tokens
    return mask_tokens(ids, special, MASK, V, prob=prob, generator=generator)
""",
    },
    3: {
        "NotNext B may come from A's own document": _variant(
            _PAIRS_OK,
            "                other = draw(len(documents) - 1)\n                other += other >= d\n",
            "                other = draw(len(documents))\n",
        ),
        "NotNext B always from the next document": _variant(
            _PAIRS_OK,
            "                other = draw(len(documents) - 1)\n                other += other >= d\n",
            "                other = (d + 1) % len(documents)\n",
        ),
        "NotNext B always the first sentence of the other document": _variant(
            _PAIRS_OK, "documents[other][draw(len(documents[other]))]", "documents[other][0]"
        ),
        "IsNext B is the sentence after next": _variant(
            _PAIRS_OK,
            "pairs.append((sentences[i], sentences[i + 1], 0))",
            "pairs.append((sentences[i], sentences[min(i + 2, len(sentences) - 1)], 0))",
        ),
        "labels swapped (1 = IsNext)": _variant(_PAIRS_OK, "sentences[i + 1], 0))", "sentences[i + 1], 1))").replace(
            "draw(len(documents[other]))], 1))", "draw(len(documents[other]))], 0))"
        ),
        "random numbers from the random module": _variant(
            _PAIRS_OK,
            "            if torch.rand(1, generator=generator).item() < 0.5:",
            "            import random\n            if random.random() < 0.5:",
        ),
        "the last sentence of a document also gets a pair": _variant(
            _PAIRS_OK, "for i in range(len(sentences) - 1):", "for i in range(len(sentences)):"
        ).replace(
            "pairs.append((sentences[i], sentences[i + 1], 0))",
            "pairs.append((sentences[i], sentences[min(i + 1, len(sentences) - 1)], 0))",
        ),
    },
    4: {
        "pieces picked one by one": """
def whole_word_picks(tokens, prob, generator):
    special = torch.tensor([t in ("[CLS]", "[SEP]", "[PAD]") for t in tokens])
    return (torch.rand(len(tokens), generator=generator) < prob) & ~special
""",
        "a piece picked, then its whole word (long words picked too often)": """
def whole_word_picks(tokens, prob, generator):
    special = [t in ("[CLS]", "[SEP]", "[PAD]") for t in tokens]
    seed = (torch.rand(len(tokens), generator=generator) < prob).tolist()
    word, words = [], []
    for position, token in enumerate(tokens):
        if special[position]:
            word = []
            continue
        if not token.startswith("##"):
            word = []
            words.append(word)
        word.append(position)
    picks = torch.zeros(len(tokens), dtype=torch.bool)
    for word in words:
        if any(seed[p] for p in word):
            picks[word] = True
    return picks
""",
        "'##' pieces treated as words of their own": _variant(
            _WHOLE_WORD_OK,
            '        if not token.startswith("##"):\n            word_picked',
            "        if True:\n            word_picked",
        ),
        "[CLS] and [SEP] can be picked": _variant(
            _WHOLE_WORD_OK,
            '        if token in ("[CLS]", "[SEP]", "[PAD]"):\n            word_picked = False\n            continue\n',
            "",
        ),
        "random numbers from torch's global generator": _variant(
            _WHOLE_WORD_OK, "torch.rand(1, generator=generator)", "torch.rand(1)"
        ),
    },
    5: {
        "no [MASK]: the token scores itself": _variant(
            _PLL_OK, "    copies[torch.arange(len(positions)), positions] = MASK\n", ""
        ),
        "all positions masked at once": _variant(
            _PLL_OK, "copies[torch.arange(len(positions)), positions] = MASK", "copies[:, positions] = MASK"
        ),
        "one model call per position": """
def token_log_probs(model, ids):
    out = []
    for t in range(1, len(ids) - 1):
        copy = ids.clone()
        copy[t] = MASK
        with torch.no_grad():
            out.append(model(input_ids=copy[None]).logits[0, t].log_softmax(-1)[ids[t]])
    return torch.stack(out)
""",
        "logits read one position too far": _variant(
            _PLL_OK,
            "log_probs = logits[torch.arange(len(positions)), positions].log_softmax(dim=-1)",
            "log_probs = logits[torch.arange(len(positions)), positions + 1].log_softmax(dim=-1)",
        ),
        "softmax over the positions instead of the vocabulary": _variant(
            _PLL_OK, "positions].log_softmax(dim=-1)", "positions].log_softmax(dim=0)"
        ),
        "[CLS] and [SEP] scored too": """
def token_log_probs(model, ids):
    positions = torch.arange(0, len(ids))
    copies = ids.repeat(len(positions), 1)
    copies[torch.arange(len(positions)), positions] = MASK
    with torch.no_grad():
        logits = model(input_ids=copies).logits
    log_probs = logits[torch.arange(len(positions)), positions].log_softmax(dim=-1)
    return log_probs[torch.arange(len(positions)), ids[positions]]
""",
        "probabilities instead of log-probabilities": _variant(
            _PLL_OK, "positions].log_softmax(dim=-1)", "positions].softmax(dim=-1)"
        ),
    },
}
