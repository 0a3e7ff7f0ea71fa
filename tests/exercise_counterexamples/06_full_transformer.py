"""Known-wrong and borrowed solutions to lecture 6's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

WRONG_SOLUTIONS = {
    1: {
        "no <eos> at the end of each row": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 1
    full = torch.tensor([[bos_id, *seq] + [pad_id] * (width - len(seq) - 1) for seq in sequences])
    return full[:, :-1], full[:, 1:]
""",
        "padded on the left": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 2
    full = torch.tensor([[pad_id] * (width - len(seq) - 2) + [bos_id, *seq, eos_id] for seq in sequences])
    return full[:, :-1], full[:, 1:]
""",
        "input and labels swapped": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 2
    full = torch.tensor([[bos_id, *seq, eos_id] + [pad_id] * (width - len(seq) - 2) for seq in sequences])
    return full[:, 1:], full[:, :-1]
""",
        "padded with <eos> instead of <pad>": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 2
    full = torch.tensor([[bos_id, *seq] + [eos_id] * (width - len(seq) - 1) for seq in sequences])
    return full[:, :-1], full[:, 1:]
""",
        "one column of padding too many": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 3
    full = torch.tensor([[bos_id, *seq, eos_id] + [pad_id] * (width - len(seq) - 2) for seq in sequences])
    return full[:, :-1], full[:, 1:]
""",
        "float tensors": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 2
    full = torch.tensor([[bos_id, *seq, eos_id] + [pad_id] * (width - len(seq) - 2) for seq in sequences],
                        dtype=torch.float32)
    return full[:, :-1], full[:, 1:]
""",
    },
    2: {
        "borrowed: scratch.training.lr_factor": """
def learning_rate(step, steps, peak, warmup, minimum):
    from scratch.training import lr_factor
    return peak * lr_factor(step, steps, warmup, "cosine", minimum / peak)
""",
        "warm-up starts at 0: step / warmup": """
def learning_rate(step, steps, peak, warmup, minimum):
    if step < warmup:
        return peak * step / warmup
    progress = (step - warmup) / (steps - 1 - warmup)
    return minimum + (peak - minimum) * 0.5 * (1 + math.cos(math.pi * progress))
""",
        "decays to 0, not to the minimum": """
def learning_rate(step, steps, peak, warmup, minimum):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (steps - 1 - warmup)
    return peak * 0.5 * (1 + math.cos(math.pi * progress))
""",
        "the cosine never reaches its end: progress over steps - warmup": """
def learning_rate(step, steps, peak, warmup, minimum):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (steps - warmup)
    return minimum + (peak - minimum) * 0.5 * (1 + math.cos(math.pi * progress))
""",
        "the cosine counted from step 0, not from the end of the warm-up": """
def learning_rate(step, steps, peak, warmup, minimum):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = step / (steps - 1)
    return minimum + (peak - minimum) * 0.5 * (1 + math.cos(math.pi * progress))
""",
        "a linear decay instead of a cosine": """
def learning_rate(step, steps, peak, warmup, minimum):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (steps - 1 - warmup)
    return peak - (peak - minimum) * progress
""",
    },
    3: {
        "borrowed: F.cross_entropy with label_smoothing": """
def label_smoothed_loss(logits, targets, epsilon, pad_id):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id, label_smoothing=epsilon)
""",
        "borrowed: nn.CrossEntropyLoss": """
def label_smoothed_loss(logits, targets, epsilon, pad_id):
    loss = torch.nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=epsilon)
    return loss(logits.flatten(0, 1), targets.flatten())
""",
        "epsilon spread over the V - 1 wrong tokens only": """
def label_smoothed_loss(logits, targets, epsilon, pad_id):
    log_probs = logits.log_softmax(dim=-1)
    V = logits.shape[-1]
    q = torch.full_like(log_probs, epsilon / (V - 1)).scatter(-1, targets[..., None], 1 - epsilon)
    real = targets != pad_id
    return (-(q * log_probs).sum(-1) * real).sum() / real.sum()
""",
        "padding averaged in": """
def label_smoothed_loss(logits, targets, epsilon, pad_id):
    log_probs = logits.log_softmax(dim=-1)
    nll = -log_probs.gather(-1, targets[..., None])[..., 0]
    per_position = (1 - epsilon) * nll + epsilon * -log_probs.mean(dim=-1)
    real = targets != pad_id
    return (per_position * real).sum() / real.numel()
""",
        "the target's own weight not reduced: 1 instead of 1 - epsilon": """
def label_smoothed_loss(logits, targets, epsilon, pad_id):
    log_probs = logits.log_softmax(dim=-1)
    nll = -log_probs.gather(-1, targets[..., None])[..., 0]
    per_position = nll + epsilon * -log_probs.mean(dim=-1)
    real = targets != pad_id
    return (per_position * real).sum() / real.sum()
""",
        "the smoothing term summed over V instead of averaged": """
def label_smoothed_loss(logits, targets, epsilon, pad_id):
    log_probs = logits.log_softmax(dim=-1)
    nll = -log_probs.gather(-1, targets[..., None])[..., 0]
    per_position = (1 - epsilon) * nll + epsilon * -log_probs.sum(dim=-1)
    real = targets != pad_id
    return (per_position * real).sum() / real.sum()
""",
    },
    4: {
        "a set of words instead of a multiset: 'one hundred one' == 'one hundred'": """
def order_blind_ceiling(numbers):
    return len({frozenset(english_tokens(n)) for n in numbers}) / len(numbers)
""",
        "only the numbers that collide with no other counted": """
def order_blind_ceiling(numbers):
    from collections import Counter
    keys = [tuple(sorted(english_tokens(n))) for n in numbers]
    counts = Counter(keys)
    return sum(counts[key] == 1 for key in keys) / len(numbers)
""",
        "the share of numbers that collide": """
def order_blind_ceiling(numbers):
    groups = {tuple(sorted(english_tokens(n))) for n in numbers}
    return 1 - len(groups) / len(numbers)
""",
        "grouped by the German tokens (the target side) instead of the English source": """
def order_blind_ceiling(numbers):
    return len({tuple(sorted(german_tokens(n))) for n in numbers}) / len(numbers)
""",
        "word order kept: every number counted as distinguishable": """
def order_blind_ceiling(numbers):
    return len({tuple(english_tokens(n)) for n in numbers}) / len(numbers)
""",
    },
    5: {
        "borrowed: greedy_decode whatever the width": """
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    tokens = model.greedy_decode(src, bos_id, eos_id, max_len)[0]
    return tokens, 0.0
""",
        "greedy decoding, written out, whatever the width": """
@torch.no_grad()
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    memory = model.encode(src)
    ys, score = torch.tensor([[bos_id]]), 0.0
    for _ in range(max_len):
        log_p = model.decode(ys, memory, src)[0, -1].log_softmax(-1)
        token = int(log_p.argmax())
        score += float(log_p[token])
        ys = torch.cat([ys, torch.tensor([[token]])], dim=1)
        if token == eos_id:
            break
    return ys[0, 1:], score
""",
        "returns the first hypothesis to finish, not the best": """
@torch.no_grad()
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    memory = model.encode(src)
    running, scores = torch.tensor([[bos_id]]), torch.zeros(1)
    for _ in range(max_len):
        n = running.shape[0]
        logits = model.decode(running, memory.expand(n, -1, -1), src.expand(n, -1))[:, -1]
        candidates = (scores[:, None] + logits.log_softmax(dim=-1)).flatten()
        best = candidates.topk(min(num_beams, candidates.numel()))
        parents, tokens = best.indices // logits.shape[-1], best.indices % logits.shape[-1]
        running, scores = torch.cat([running[parents], tokens[:, None]], dim=1), best.values
        for row, score in zip(running, scores):
            if row[-1] == eos_id:
                return row[1:], float(score)
    return running[0, 1:], float(scores[0])
""",
        "the k best tokens of EACH hypothesis kept (up to k x k), not the k best overall": """
@torch.no_grad()
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    memory = model.encode(src)
    running, scores, finished, width = torch.tensor([[bos_id]]), torch.zeros(1), [], num_beams
    for _ in range(max_len):
        n = running.shape[0]
        log_p = model.decode(running, memory.expand(n, -1, -1), src.expand(n, -1))[:, -1].log_softmax(-1)
        top = (scores[:, None] + log_p).topk(min(width, log_p.shape[-1]), dim=-1)    # each hypothesis's k best
        parents = torch.arange(n)[:, None].expand_as(top.indices).flatten()
        tokens, new_scores = top.indices.flatten(), top.values.flatten()
        extended = torch.cat([running[parents], tokens[:, None]], dim=1)
        ends = tokens == eos_id
        finished += [(row[1:], float(s)) for row, s in zip(extended[ends], new_scores[ends])]
        width -= int(ends.sum())
        running, scores = extended[~ends], new_scores[~ends]
        if width <= 0 or len(running) == 0:
            break
    if not finished:
        finished = [(row[1:], float(s)) for row, s in zip(running, scores)]
    return max(finished, key=lambda h: h[1])
""",
        "score is the product of probabilities' mean, not the sum of log-probabilities": """
@torch.no_grad()
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    memory = model.encode(src)
    running, scores, finished, width = torch.tensor([[bos_id]]), torch.zeros(1), [], num_beams
    for _ in range(max_len):
        n = running.shape[0]
        logits = model.decode(running, memory.expand(n, -1, -1), src.expand(n, -1))[:, -1]
        candidates = (scores[:, None] + logits.softmax(dim=-1)).flatten()     # adds probabilities
        best = candidates.topk(min(width, candidates.numel()))
        parents, tokens = best.indices // logits.shape[-1], best.indices % logits.shape[-1]
        extended = torch.cat([running[parents], tokens[:, None]], dim=1)
        ends = tokens == eos_id
        finished += [(row[1:], float(s)) for row, s in zip(extended[ends], best.values[ends])]
        width -= int(ends.sum())
        running, scores = extended[~ends], best.values[~ends]
        if width == 0:
            break
    if not finished:
        finished = [(row[1:], float(s)) for row, s in zip(running, scores)]
    return max(finished, key=lambda h: h[1])
""",
        "finished hypotheses keep their beam slot: the search ends at the first step where all k end": """
@torch.no_grad()
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    memory = model.encode(src)
    running, scores, finished = torch.tensor([[bos_id]]), torch.zeros(1), []
    for _ in range(max_len):
        n = running.shape[0]
        logits = model.decode(running, memory.expand(n, -1, -1), src.expand(n, -1))[:, -1]
        candidates = (scores[:, None] + logits.log_softmax(dim=-1)).flatten()
        best = candidates.topk(min(num_beams, candidates.numel()))
        parents, tokens = best.indices // logits.shape[-1], best.indices % logits.shape[-1]
        extended = torch.cat([running[parents], tokens[:, None]], dim=1)
        ends = tokens == eos_id
        finished += [(row[1:], float(s)) for row, s in zip(extended[ends], best.values[ends])]
        if ends.all():
            break
        running, scores = extended[~ends], best.values[~ends]
    if not finished:
        finished = [(row[1:], float(s)) for row, s in zip(running, scores)]
    return finished[-1]
""",
        "the source encoded again at every step": """
@torch.no_grad()
def beam_translate(model, src, bos_id, eos_id, num_beams, max_len):
    running, scores, finished, width = torch.tensor([[bos_id]]), torch.zeros(1), [], num_beams
    for _ in range(max_len):
        n = running.shape[0]
        memory = model.encode(src)
        logits = torch.cat([model.decode(running[i:i + 1], memory, src) for i in range(n)])[:, -1]
        candidates = (scores[:, None] + logits.log_softmax(dim=-1)).flatten()
        best = candidates.topk(min(width, candidates.numel()))
        parents, tokens = best.indices // logits.shape[-1], best.indices % logits.shape[-1]
        extended = torch.cat([running[parents], tokens[:, None]], dim=1)
        ends = tokens == eos_id
        finished += [(row[1:], float(s)) for row, s in zip(extended[ends], best.values[ends])]
        width -= int(ends.sum())
        running, scores = extended[~ends], best.values[~ends]
        if width == 0:
            break
    if not finished:
        finished = [(row[1:], float(s)) for row, s in zip(running, scores)]
    return max(finished, key=lambda h: h[1])
""",
    },
}
