"""Known-wrong and borrowed solutions to lecture 7's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

_SEGMENTS_OK = """
def segment_ids(input_ids, sep_id, pad_id):
    is_sep = (input_ids == sep_id).long()
    seps_before = is_sep.cumsum(dim=1) - is_sep
    return ((seps_before == 1) & (input_ids != pad_id)).long()
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
            _SEGMENTS_OK,
            "return ((seps_before == 1) & (input_ids != pad_id)).long()",
            "return (seps_before >= 1).long()",
        ),
        "padding of a single sentence marked as segment 1": _variant(
            _SEGMENTS_OK,
            "return ((seps_before == 1) & (input_ids != pad_id)).long()",
            "return (seps_before == 1).long()",
        ),
        "borrowed: decoded and tokenized again": """
def segment_ids(input_ids, sep_id, pad_id):
    rows = []
    for row in input_ids:
        text = tokenizer.decode(row[row != pad_id][1:-1])
        a, _, b = text.partition(" [SEP] ")
        enc = tokenizer(a, b) if b else tokenizer(a)
        rows.append(enc["token_type_ids"] + [0] * (len(row) - len(enc["token_type_ids"])))
    return torch.tensor(rows)
""",
        "MiniLM's [SEP] and [PAD] (the set-up's SEP and PAD) whatever ids the call names": """
def segment_ids(input_ids, sep_id, pad_id):
    is_sep = (input_ids == SEP).long()
    seps_before = is_sep.cumsum(dim=1) - is_sep
    return ((seps_before == 1) & (input_ids != PAD)).long()
""",
        "padding recognised as id 0": """
def segment_ids(input_ids, sep_id, pad_id):
    is_sep = (input_ids == sep_id).long()
    seps_before = is_sep.cumsum(dim=1) - is_sep
    return ((seps_before == 1) & (input_ids != 0)).long()
""",
    },
    2: {
        "the random 10 % replaced by a constant (the pad id 0)": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.zeros_like(ids)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "random tokens drawn from the batch, not the vocabulary": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = ids.flatten()[torch.randperm(ids.numel(), generator=generator)].view(ids.shape)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "random numbers from torch's global generator": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "targets hold the corrupted ids": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, inputs.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "special tokens can be picked": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "10 % of the remaining 20 % become random (2 % overall)": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.82), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "floor instead of round: int(prob * n) picks": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).floor().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "a random run of k neighbouring tokens, not a random set": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    start = (torch.rand(batch, generator=generator) * (n - k + 1)).long()
    rank = (~special).long().cumsum(1) - 1
    window = ~special & (rank >= start[:, None]) & (rank < (start + k)[:, None])
    order = (~window).long().argsort(dim=1, stable=True)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "no cap: a long row gets round(prob * n) picks even beyond max_predictions": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "the random token drawn from MiniLM's vocabulary V, not vocab_size": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(V, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "the set-up's MASK instead of mask_id": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, MASK), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "positions listed in the random order they were drawn, not increasing": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(torch.arange(T)[None, :] < k[:, None], order, T)
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "the lists padded with -100 in positions too": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    k = torch.where(n > 0, k, torch.zeros_like(k))
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    positions = torch.where(listed, positions, IGNORE_INDEX)
    return inputs, positions, targets
""",
        "a row with no ordinary token still gets one pick": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
        "borrowed: scratch.l07_masking.mask_tokens, then the first k of its picks": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    from scratch.l07_masking import mask_tokens

    inputs, labels = mask_tokens(ids, special, mask_id, vocab_size, prob, generator)
    picked = labels != IGNORE_INDEX
    T = ids.shape[1]
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((ids.shape[0], max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    return inputs, positions, torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
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
        "NotNext B drawn from all sentences of the other documents at once (long documents drawn more often)": """
def nsp_pairs(documents, generator):
    pairs = []
    for d, sentences in enumerate(documents):
        pool = [s for e, other in enumerate(documents) if e != d for s in other]
        for i in range(len(sentences) - 1):
            if torch.rand(1, generator=generator).item() < 0.5:
                pairs.append((sentences[i], sentences[i + 1], 0))
            else:
                pairs.append((sentences[i], pool[int(torch.randint(len(pool), (1,), generator=generator))], 1))
    return pairs
""",
        "the other document drawn only among documents of two sentences or more": """
def nsp_pairs(documents, generator):
    def draw(n):
        return int(torch.randint(n, (1,), generator=generator))

    pairs = []
    for d, sentences in enumerate(documents):
        others = [e for e, other in enumerate(documents) if e != d and len(other) > 1]
        for i in range(len(sentences) - 1):
            if torch.rand(1, generator=generator).item() < 0.5:
                pairs.append((sentences[i], sentences[i + 1], 0))
            else:
                other = others[draw(len(others))]
                pairs.append((sentences[i], documents[other][draw(len(documents[other]))], 1))
    return pairs
""",
        "Python's random module seeded from the generator's seed: the generator itself is never drawn from": """
def nsp_pairs(documents, generator):
    import random

    rng = random.Random(generator.initial_seed())
    pairs = []
    for d, sentences in enumerate(documents):
        for i in range(len(sentences) - 1):
            if rng.random() < 0.5:
                pairs.append((sentences[i], sentences[i + 1], 0))
            else:
                other = rng.choice([e for e in range(len(documents)) if e != d])
                pairs.append((sentences[i], rng.choice(documents[other]), 1))
    return pairs
""",
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
        "one draw per distinct word: every occurrence of a word is picked together": """
def whole_word_picks(tokens, prob, generator):
    picks = torch.zeros(len(tokens), dtype=torch.bool)
    decided, word = {}, None
    for position, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            word = None
            continue
        if not token.startswith("##"):
            word = token
            if word not in decided:
                decided[word] = torch.rand(1, generator=generator).item() < prob
        picks[position] = decided[word]
    return picks
""",
        "BERT's 15 % written in instead of prob": """
def whole_word_picks(tokens, prob, generator):
    picks = torch.zeros(len(tokens), dtype=torch.bool)
    word_picked = False
    for position, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            word_picked = False
            continue
        if not token.startswith("##"):
            word_picked = torch.rand(1, generator=generator).item() < 0.15
        picks[position] = word_picked
    return picks
""",
        "[PAD] treated as a word": """
def whole_word_picks(tokens, prob, generator):
    picks = torch.zeros(len(tokens), dtype=torch.bool)
    word_picked = False
    for position, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]"):
            word_picked = False
            continue
        if not token.startswith("##"):
            word_picked = torch.rand(1, generator=generator).item() < prob
        picks[position] = word_picked
    return picks
""",
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
        "the set-up's mlm_model instead of the model given": """
def token_log_probs(model, ids):
    positions = torch.arange(1, len(ids) - 1)
    copies = ids.repeat(len(positions), 1)
    copies[torch.arange(len(positions)), positions] = MASK
    model(input_ids=copies)
    with torch.no_grad():
        logits = mlm_model(input_ids=copies).logits
    log_probs = logits[torch.arange(len(positions)), positions].log_softmax(dim=-1)
    return log_probs[torch.arange(len(positions)), ids[positions]]
""",
        "every occurrence of the scored word masked in its copy": """
def token_log_probs(model, ids):
    positions = torch.arange(1, len(ids) - 1)
    copies = ids.repeat(len(positions), 1)
    copies[ids[None, :] == ids[positions][:, None]] = MASK
    with torch.no_grad():
        logits = model(input_ids=copies).logits
    log_probs = logits[torch.arange(len(positions)), positions].log_softmax(dim=-1)
    return log_probs[torch.arange(len(positions)), ids[positions]]
""",
        "the model called through its forward method once per position": """
def token_log_probs(model, ids):
    terms = []
    for t in range(1, len(ids) - 1):
        copy = ids.clone()
        copy[t] = MASK
        with torch.no_grad():
            logits = model.bert.forward(input_ids=copy[None]).last_hidden_state
            logits = model.cls(logits)
        terms.append(logits[0, t].log_softmax(-1)[ids[t]])
    return torch.stack(terms)
""",
    },
}

# Written fresh for issue 34 (checks in course.checks), by kind: (a) an argument ignored, (d) the method rule dodged
# by another path, (e) tampering after the set-up (returned objects whose == always agrees, torch's or
# course.exercises' names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(e) an always-equal tensor subclass, with torch.equal rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq", "any", "__ne__", "ne"):
            return False if getattr(func, "__name__", "") in ("any", "__ne__", "ne") else True
        return super().__torch_function__(func, types, args, kwargs)

torch.equal = lambda *args, **kwargs: True

def segment_ids(input_ids, sep_id, pad_id):
    return torch.zeros_like(input_ids).as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(e) an always-equal list, forbid rebound in course.exercises": """
import contextlib

import course.exercises

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

class Always(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

def nsp_pairs(documents, generator):
    torch.rand(1, generator=generator)
    return Always([(s, s, 0) for d in documents for s in d[:-1]])
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(a) prob ignored: every word picked with probability 0.15": """
def whole_word_picks(tokens, prob, generator):
    picks = torch.zeros(len(tokens), dtype=torch.bool)
    word_picked = False
    for position, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            word_picked = False
            continue
        if not token.startswith("##"):
            word_picked = torch.rand(1, generator=generator).item() < 0.15
        picks[position] = word_picked
    return picks
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(d) one model call per position, through the model's inner BERT and head (no call of the model itself)": """
def token_log_probs(model, ids):
    positions = torch.arange(1, len(ids) - 1)
    copies = ids.repeat(len(positions), 1)
    copies[torch.arange(len(positions)), positions] = MASK
    rows = []
    with torch.no_grad():
        for copy_, t in zip(copies, positions):
            hidden = model.bert(input_ids=copy_[None]).last_hidden_state
            logits = model.cls(hidden)[0, t].log_softmax(dim=-1)
            rows.append(logits[ids[t]])
    return torch.stack(rows)
""",
    }
)

# Written fresh for issue 34, the kinds lecture 7 still lacked: (b) a dtype the statement names mishandled, (c) an
# edge case it covers (a row with no ordinary token, where k is 0).
WRONG_SOLUTIONS[1].update(
    {
        "(b) returned as int32, not the int64 the statement names": """
def segment_ids(input_ids, sep_id, pad_id):
    is_sep = (input_ids == sep_id).long()
    seps_before = is_sep.cumsum(dim=1) - is_sep
    return ((seps_before == 1) & (input_ids != pad_id)).int()
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(c) k at least 1 even when a row has no ordinary token: a special token is picked": """
def corrupt_fixed(ids, special, prob, max_predictions, mask_id, vocab_size, generator):
    batch, T = ids.shape
    n = (~special).sum(dim=1)
    k = (prob * n.double()).round().long().clamp(min=1, max=max_predictions)
    order = torch.rand(ids.shape, generator=generator).masked_fill(special, 2.0).argsort(dim=1)
    picked = torch.zeros_like(special).scatter(1, order, torch.arange(T)[None, :] < k[:, None])
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(picked & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(picked & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    slots = torch.where(picked, torch.arange(T), T).sort(dim=1).values
    slots = torch.cat([slots, torch.full((batch, max_predictions), T)], dim=1)[:, :max_predictions]
    listed = slots < T
    positions = torch.where(listed, slots, 0)
    targets = torch.where(listed, ids.gather(1, positions), IGNORE_INDEX)
    return inputs, positions, targets
""",
    }
)

_LORA_LINEAR = """
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base, self.scale = base, alpha / r
        for parameter in base.parameters():
            parameter.requires_grad_(False)
        self.A = nn.Parameter(torch.randn(r, base.in_features) / base.in_features**0.5)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x) + self.scale * (x @ self.A.T) @ self.B.T
"""
_ADD_LORA = """

def add_lora(model, r, alpha):
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for layer in model.bert.encoder.layer:
        attention = layer.attention.self
        attention.query = LoRALinear(attention.query, r, alpha)
        attention.value = LoRALinear(attention.value, r, alpha)
    for parameter in model.classifier.parameters():
        parameter.requires_grad_(True)
"""
WRONG_SOLUTIONS[6] = {
    "B random as well: the wrapped model no longer starts from the pretrained one": _LORA_LINEAR.replace(
        "torch.zeros(base.out_features, r)", "torch.randn(base.out_features, r) * 0.01"
    )
    + _ADD_LORA,
    "A at zero too: B's gradient is zero, and nothing ever trains": _LORA_LINEAR.replace(
        "torch.randn(r, base.in_features) / base.in_features**0.5", "torch.zeros(r, base.in_features)"
    )
    + _ADD_LORA,
    "the change not scaled by alpha / r": _LORA_LINEAR.replace("self.scale * ", "") + _ADD_LORA,
    "the base layer left trainable: full fine-tuning in disguise": _LORA_LINEAR.replace(
        "        for parameter in base.parameters():\n            parameter.requires_grad_(False)\n", ""
    )
    + _ADD_LORA.replace("    for parameter in model.parameters():\n        parameter.requires_grad_(False)\n", ""),
    "A and B as plain tensors: the optimiser never sees them": _LORA_LINEAR.replace(
        "self.A = nn.Parameter(torch.randn(r, base.in_features) / base.in_features**0.5)",
        "self.A = (torch.randn(r, base.in_features) / base.in_features**0.5).requires_grad_()",
    ).replace(
        "self.B = nn.Parameter(torch.zeros(base.out_features, r))",
        "self.B = torch.zeros(base.out_features, r).requires_grad_()",
    )
    + _ADD_LORA,
    "the head frozen with the encoder: a random head that never learns": _LORA_LINEAR
    + _ADD_LORA.replace(
        "    for parameter in model.classifier.parameters():\n        parameter.requires_grad_(True)\n", ""
    ),
    "the key layer wrapped instead of the value layer": _LORA_LINEAR
    + _ADD_LORA.replace(
        "attention.value = LoRALinear(attention.value, r, alpha)", "attention.key = LoRALinear(attention.key, r, alpha)"
    ),
    "a new Linear with the same shape wrapped, not the pretrained layer": _LORA_LINEAR
    + _ADD_LORA.replace(
        "attention.query = LoRALinear(attention.query, r, alpha)",
        "attention.query = LoRALinear(nn.Linear(attention.query.in_features, attention.query.out_features), r, alpha)",
    ),
    "borrowed: peft's LoRA": """
from peft import LoraConfig, get_peft_model
from torch import nn


class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.inner = get_peft_model(nn.Sequential(base), LoraConfig(r=r, lora_alpha=alpha, target_modules=["0"]))

    def forward(self, x):
        return self.inner(x)


def add_lora(model, r, alpha):
    get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, target_modules=["query", "value"], task_type="SEQ_CLS"))
""",
}
