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
        "borrowed: scratch.l06_training.lr_factor": """
def learning_rate(step, steps, peak, warmup, minimum):
    from scratch.l06_training import lr_factor
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
        "each micro-batch's own mean loss, averaged over the micro-batches": """
def accumulate_gradients(model, src, tgt, micro_batch):
    model.zero_grad()
    parts = range(0, src.shape[0], micro_batch)
    total = 0.0
    for start in parts:
        rows = slice(start, start + micro_batch)
        loss = F.cross_entropy(
            model(src[rows], tgt[rows, :-1]).flatten(0, 1), tgt[rows, 1:].flatten(), ignore_index=model.pad_id
        ) / len(parts)
        loss.backward()
        total += loss.item()
    return total
""",
        "micro-batch means weighted by their share of the rows, not of the labels": """
def accumulate_gradients(model, src, tgt, micro_batch):
    model.zero_grad()
    total = 0.0
    for start in range(0, src.shape[0], micro_batch):
        rows = slice(start, start + micro_batch)
        mean = F.cross_entropy(
            model(src[rows], tgt[rows, :-1]).flatten(0, 1), tgt[rows, 1:].flatten(), ignore_index=model.pad_id
        )
        loss = mean * len(src[rows]) / len(src)
        loss.backward()
        total += loss.item()
    return total
""",
        "gradients not zeroed first: what .grad held is added in": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_out != model.pad_id).sum())
    total = 0.0
    for start in range(0, src.shape[0], micro_batch):
        rows = slice(start, start + micro_batch)
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        (summed / labels).backward()
        total += summed.item() / labels
    return total
""",
        "real labels counted in the decoder input tgt[:, :-1]": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_in != model.pad_id).sum())
    model.zero_grad()
    total = 0.0
    for start in range(0, src.shape[0], micro_batch):
        rows = slice(start, start + micro_batch)
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        (summed / labels).backward()
        total += summed.item() / labels
    return total
""",
        "padding id 0 assumed, not model.pad_id": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_out != 0).sum())
    model.zero_grad()
    total = 0.0
    for start in range(0, src.shape[0], micro_batch):
        rows = slice(start, start + micro_batch)
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=0, reduction="sum"
        )
        (summed / labels).backward()
        total += summed.item() / labels
    return total
""",
        "micro_batch ignored: the whole batch at once": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_out != model.pad_id).sum())
    model.zero_grad()
    total = 0.0
    for start in range(0, src.shape[0], src.shape[0]):
        rows = slice(start, start + src.shape[0])
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        (summed / labels).backward()
        total += summed.item() / labels
    return total
""",
        "the last, shorter micro-batch left out": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_out != model.pad_id).sum())
    model.zero_grad()
    total = 0.0
    for start in range(0, src.shape[0] - micro_batch + 1, micro_batch):
        rows = slice(start, start + micro_batch)
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        (summed / labels).backward()
        total += summed.item() / labels
    return total
""",
        "returns the last micro-batch's loss, not the batch's": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_out != model.pad_id).sum())
    model.zero_grad()
    total = 0.0
    for start in range(0, src.shape[0], micro_batch):
        rows = slice(start, start + micro_batch)
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        (summed / labels).backward()
        total = summed.item() / labels
    return total
""",
        "the whole batch run on a copy of the model, its gradients copied back": """
import copy

def accumulate_gradients(model, src, tgt, micro_batch):
    twin = copy.deepcopy(model)
    twin.zero_grad()
    loss = F.cross_entropy(twin(src, tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=model.pad_id)
    loss.backward()
    for mine, theirs in zip(model.parameters(), twin.parameters()):
        mine.grad = theirs.grad.clone()
    return loss.item()
""",
        "returns a 0-dim tensor instead of a float": """
def accumulate_gradients(model, src, tgt, micro_batch):
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    labels = int((tgt_out != model.pad_id).sum())
    model.zero_grad()
    total = torch.zeros(())
    for start in range(0, src.shape[0], micro_batch):
        rows = slice(start, start + micro_batch)
        logits = model(src[rows], tgt_in[rows])
        summed = F.cross_entropy(
            logits.flatten(0, 1), tgt_out[rows].flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        (summed / labels).backward()
        total = total + summed.detach() / labels
    return total
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
        "finished rows kept in the batch (padded) until every row ends": """
@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)
    batch = src.shape[0]
    ys = torch.full((batch, 1), bos_id)
    done = torch.zeros(batch, dtype=torch.bool)
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    for _ in range(max_len):
        logits, _, cross = decode_with_weights(model, ys, memory, src)
        log_p = logits[:, -1].log_softmax(dim=-1)
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)
        for r in range(batch):
            if not done[r]:
                tokens[r].append(int(best[r]))
                log_probs[r] += float(log_p[r, best[r]])
                looked_at[r].append(int(where[r]))
                done[r] = bool(best[r] == eos_id)
        if done.all():
            break
        ys = torch.cat([ys, torch.where(done, model.pad_id, best)[:, None]], dim=1)
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "the source encoded again at every step": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, model.encode(src)[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "each row encoded on its own": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = torch.cat([model.encode(src[r : r + 1]) for r in range(src.shape[0])])
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "the memory of the running rows with all of src's rows (padding of the wrong rows)": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[: len(running)])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "looked_at from the FIRST decoder layer": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[0][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "looked_at from the strongest head, not the mean over heads": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].amax(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "looked_at from the first position of the prefix (<bos>), not the last": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, 0].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "log_prob adds probabilities, not log-probabilities": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]].exp())
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "<bos> and <eos> of the set-up (1 and 2), not the arguments": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[BOS, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != EOS]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "max_len - 1 tokens at most": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len - 1):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "rows returned in the order they finished": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    order = sorted(range(batch), key=lambda r: len(tokens[r]))
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in order]
""",
        "stops every row when the first one finishes": """@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)  # (batch, m, d_model), once for the whole batch
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))  # the rows still translating (all with prefixes of the same length)
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])  # (running, n)
        logits, _, cross = decode_with_weights(model, prefix, memory[rows], src[rows])
        log_p = logits[:, -1].log_softmax(dim=-1)  # (running, V): the next token
        best = log_p.argmax(dim=-1)
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)  # last layer, last position, mean over the heads
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        if any(tokens[r][-1] == eos_id for r in running):
            break
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
        "borrowed: greedy_decode for the tokens": """
from scratch.l06_transformer import greedy_decode

@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    out = greedy_decode(model, src, bos_id, eos_id, max_len)
    results = []
    for r, row in enumerate(out):
        ends = (row == eos_id).nonzero()
        tokens = row[: int(ends[0]) + 1] if len(ends) else row
        tgt_in = torch.cat([torch.tensor([bos_id]), tokens[:-1]])[None]
        log_p = model(src[r : r + 1], tgt_in)[0].log_softmax(-1).gather(-1, tokens[:, None]).sum().item()
        weights = model.attention_weights(src[r : r + 1], tgt_in)
        results.append((tokens, log_p, weights["cross"][-1][0].mean(0).argmax(-1)))
    return results
""",
    },
}


# Fresh mistakes of the kinds the stronger checks catch: special ids of the set-up, ids past 255, other
# schedules' settings, tables of the inputs tried before.
WRONG_SOLUTIONS[1].update(
    {
        "<bos>, <eos> and <pad> of the set-up (1, 2, 0), not the arguments": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 2
    full = torch.tensor([[1, *seq, 2] + [0] * (width - len(seq) - 2) for seq in sequences])
    return full[:, :-1], full[:, 1:]
""",
        "ids stored as uint8 (they wrap round past 255), then converted": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(seq) for seq in sequences) + 2
    rows = [[bos_id, *seq, eos_id] + [pad_id] * (width - len(seq) - 2) for seq in sequences]
    full = torch.tensor(rows, dtype=torch.uint8).long()
    return full[:, :-1], full[:, 1:]
""",
        "width from the first and last sequences only": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(sequences[0]), len(sequences[-1])) + 2
    full = torch.tensor([[bos_id, *seq, eos_id] + [pad_id] * (width - len(seq) - 2) for seq in sequences])
    return full[:, :-1], full[:, 1:]
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "the minimum read as a tenth of the peak whenever it is not 0": """
def learning_rate(step, steps, peak, warmup, minimum):
    minimum = 0.1 * peak if minimum else 0.0
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (steps - 1 - warmup)
    return minimum + (peak - minimum) * 0.5 * (1 + math.cos(math.pi * progress))
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "words split at spaces (the hyphenated tens kept whole)": """
from course.number_words import english_number

def order_blind_ceiling(numbers):
    return len({tuple(sorted(english_number(n).split())) for n in numbers}) / len(numbers)
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "looked_at from model.attention_weights, which encodes the source again and runs a second decoder pass": """
@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    memory = model.encode(src)
    batch = src.shape[0]
    tokens, log_probs, looked_at = [[] for _ in range(batch)], [0.0] * batch, [[] for _ in range(batch)]
    running = list(range(batch))
    for _ in range(max_len):
        if not running:
            break
        rows = torch.tensor(running)
        prefix = torch.tensor([[bos_id, *tokens[r]] for r in running])
        log_p = model.decode(prefix, memory[rows], src[rows])[:, -1].log_softmax(dim=-1)
        best = log_p.argmax(dim=-1)
        cross = model.attention_weights(src[rows], prefix)["cross"]
        where = cross[-1][:, :, -1].mean(dim=1).argmax(dim=-1)
        for i, r in enumerate(running):
            tokens[r].append(int(best[i]))
            log_probs[r] += float(log_p[i, best[i]])
            looked_at[r].append(int(where[i]))
        running = [r for r in running if tokens[r][-1] != eos_id]
    return [(torch.tensor(tokens[r]), log_probs[r], torch.tensor(looked_at[r])) for r in range(batch)]
""",
    }
)

# Written fresh for issue 34 (checks in course.checks), by kind: (a) an argument ignored, (e) tampering after the
# set-up (returned objects whose == always agrees, torch's, math's or course.exercises' names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(e) always-equal tensors in an always-equal tuple, with torch.equal rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq", "tolist"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

class Always(tuple):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__

torch.equal = lambda *args, **kwargs: True

def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(s) for s in sequences) + 1
    empty = torch.zeros(len(sequences), width, dtype=torch.long).as_subclass(Agreeable)
    return Always((empty, empty))
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(e) an always-close float, with math.isclose rebound": """
class Always(float):
    def __eq__(self, other):
        return True

    def __sub__(self, other):
        return Always(0.0)

    __rsub__ = __sub__
    __hash__ = float.__hash__

math.isclose = lambda *args, **kwargs: True

def learning_rate(step, steps, peak, warmup, minimum):
    return Always(peak)
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(a) the numbers given ignored: the ceiling of 0..99,999 always": """
def order_blind_ceiling(numbers):
    every = range(100_000)
    return len({tuple(sorted(english_tokens(n))) for n in every}) / len(every)
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(e) forbid rebound in course.exercises, then the library's greedy_decode": """
import contextlib

import course.exercises
from scratch.l06_transformer import greedy_decode

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

@torch.no_grad()
def translate_batch(model, src, bos_id, eos_id, max_len):
    rows = greedy_decode(model, src, bos_id, eos_id, max_len)
    out = []
    for row in rows:
        ends = (row == eos_id).nonzero()
        tokens = row[: int(ends[0]) + 1] if len(ends) else row
        out.append((tokens, 0.0, torch.zeros_like(tokens)))
    return out
""",
    }
)

# Written fresh for issue 34, the kinds lecture 6 still lacked: (b) an integer dtype too small for the ids the
# statement allows, (c) an edge case it covers (every sequence empty), (d) the rule dodged through another path to the
# same computation (PyTorch's own schedulers instead of the two formulas).
WRONG_SOLUTIONS[1].update(
    {
        "(b) rows built in an int16 tensor: ids past 32,767 wrap": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(s) for s in sequences) + 2
    rows = torch.full((len(sequences), width), pad_id, dtype=torch.int16)
    for r, seq in enumerate(sequences):
        rows[r, : len(seq) + 2] = torch.tensor([bos_id, *seq, eos_id], dtype=torch.int16)
    rows = rows.long()
    return rows[:, :-1], rows[:, 1:]
""",
        "(c) the width taken from the non-empty sequences: a batch of empty sequences fails": """
def make_decoder_batch(sequences, bos_id, eos_id, pad_id):
    width = max(len(s) for s in sequences if s) + 2
    rows = [[bos_id, *s, eos_id] + [pad_id] * (width - len(s) - 2) for s in sequences]
    rows = torch.tensor(rows, dtype=torch.long)
    return rows[:, :-1], rows[:, 1:]
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(d) PyTorch's LinearLR and CosineAnnealingLR in closed form instead of the formulas": """
def learning_rate(step, steps, peak, warmup, minimum):
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=peak)
    if step < warmup:
        schedule = torch.optim.lr_scheduler.LinearLR(
            optimizer, start_factor=1 / warmup, end_factor=1.0, total_iters=max(warmup - 1, 1)
        )
        schedule.last_epoch = step
    else:
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps - 1 - warmup, eta_min=minimum)
        schedule.last_epoch = step - warmup
    return schedule._get_closed_form_lr()[0]
""",
    }
)
