"""Wrong and borrowed solutions to the exercises of notebooks/10_decoding.ipynb; each must fail its check."""

# the correct solution of exercise 5, from which its wrong variants below differ by one change
BEAM = '''
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    """prompt: (1, T) -> the best finished hypothesis (1, T + L), L <= max_new_tokens new tokens."""
    beams, scores = prompt, torch.zeros(1)                             # (beams, T + step), (beams,)
    finished = []                                                      # (normalised score, sequence)
    for step in range(1, max_new_tokens + 1):
        log_p = torch.log_softmax(model(beams)[:, -1], dim=-1)         # (beams, V)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == eos_id
        last = step == max_new_tokens
        for i in range(min(num_beams, len(order))):                     # the num_beams best candidates
            if ends[i] or last:
                finished.append((float(ranked[i]) / step ** length_penalty, sequences[i]))
        if last:
            break
        running = (~ends).nonzero().flatten()[:num_beams]               # the best that did not end run on
        beams, scores = sequences[running], ranked[running]
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
'''

WRONG_SOLUTIONS = {
    1: {
        "temperature after the softmax: the probabilities treated as logits": """
def temper(probs, T):
    return torch.softmax(probs / T, dim=-1)
""",
        "divides the probabilities by T and renormalises: nothing changes": """
def temper(probs, T):
    scaled = probs / T
    return scaled / scaled.sum(dim=-1, keepdim=True)
""",
        "P ** T instead of P ** (1 / T): the effect reversed": """
def temper(probs, T):
    scaled = probs ** T
    return scaled / scaled.sum(dim=-1, keepdim=True)
""",
        "P ** (1 / T) without renormalising": """
def temper(probs, T):
    return probs ** (1 / T)
""",
        "log of the probabilities with an epsilon: cut tokens come back": """
def temper(probs, T):
    return torch.softmax((probs + 1e-9).log() / T, dim=-1)
""",
        "P ** (1 / T) renormalised: a flat row at small T underflows to 0 / 0 = nan": """
def temper(probs, T):
    scaled = probs ** (1 / T)
    return scaled / scaled.sum(dim=-1, keepdim=True)
""",
        "renormalises over dim=1: right for a batch (B, V) only": """
def temper(probs, T):
    return torch.softmax(torch.log(probs) / T, dim=1)
""",
        "flattens to (rows, V) and returns the flat batch: a (V,) row or a (B1, B2, V) batch changes shape": """
def temper(probs, T):
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.softmax(torch.log(flat) / T, dim=-1)
""",
        "works in float64 and returns float64 for float32 probabilities": """
def temper(probs, T):
    return torch.softmax(probs.double().log() / T, dim=-1)
""",
        "takes the logarithm in place: the caller's probabilities are overwritten": """
def temper(probs, T):
    return torch.softmax(probs.log_() / T, dim=-1)
""",
    },
    2: {
        "absolute threshold: keeps tokens with probability >= p_min": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    return z.masked_fill(probs < p_min, float("-inf"))
""",
        "threshold on the logits instead of the probabilities": """
def min_p_filter(z, p_min):
    return z.masked_fill(z < p_min * z.max(dim=-1, keepdim=True).values, float("-inf"))
""",
        "one threshold for the whole batch (the largest probability of all rows)": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    return z.masked_fill(probs < p_min * probs.max(), float("-inf"))
""",
        "returns renormalised log-probabilities instead of the kept logits": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    kept = z.masked_fill(probs < p_min * probs.max(dim=-1, keepdim=True).values, float("-inf"))
    return torch.log_softmax(kept, dim=-1)
""",
        "borrowed: transformers' MinPLogitsWarper": """
def min_p_filter(z, p_min):
    from transformers import MinPLogitsWarper
    return MinPLogitsWarper(p_min)(None, z.reshape(-1, z.shape[-1])).view(z.shape)
""",
        "probabilities from exp(z) / sum exp(z) without subtracting the maximum: nan for large logits": """
def min_p_filter(z, p_min):
    e = z.exp()
    probs = e / e.sum(dim=-1, keepdim=True)
    return z.masked_fill(probs < p_min * probs.max(dim=-1, keepdim=True).values, float("-inf"))
""",
        "the row maximum over dim=1: right for (B, V) only": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    return z.masked_fill(probs < p_min * probs.max(dim=1, keepdim=True).values, float("-inf"))
""",
        "keeps only the argmax when p_min is 1: a token tied with the top is dropped": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    top = probs.max(dim=-1, keepdim=True)
    keep = probs >= p_min * top.values
    if p_min >= 1:
        keep = torch.zeros_like(keep).scatter_(-1, top.indices, True)
    return z.masked_fill(~keep, float("-inf"))
""",
        "ratio of exponentials exp(z - z_top) computed as exp(z) / exp(z_top): inf / inf for large logits": """
def min_p_filter(z, p_min):
    ratio = z.exp() / z.max(dim=-1, keepdim=True).values.exp()
    return z.masked_fill(ratio < p_min, float("-inf"))
""",
        "masks the caller's logits in place": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    return z.masked_fill_(probs < p_min * probs.max(dim=-1, keepdim=True).values, float("-inf"))
""",
    },
    3: {
        "ignores the prompt: bans only n-grams of the generated tokens": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    T = ids.shape[1]
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n + 1:])
            banned = [seq[i + n - 1] for i in range(T, len(seq) - n + 1) if tuple(seq[i:i + n - 1]) == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "off by one: matches the last n tokens, so it bans repeated (n + 1)-grams": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n:])
            banned = [seq[i + n] for i in range(len(seq) - n) if tuple(seq[i:i + n]) == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "bans only the token after the latest occurrence (a dict overwritten)": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            follower = {tuple(seq[i:i + n - 1]): seq[i + n - 1] for i in range(len(seq) - n + 1)}
            context = tuple(seq[len(seq) - n + 1:])
            if context in follower:
                logits[row, follower[context]] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "one history for the whole batch: a row's n-grams ban tokens in the others": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        seqs = ids.tolist()
        grams = {tuple(seq[i:i + n]) for seq in seqs for i in range(len(seq) - n + 1)}
        for row, seq in enumerate(seqs):
            context = tuple(seq[len(seq) - n + 1:])
            banned = [gram[-1] for gram in grams if gram[:-1] == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "bans every token seen in the row, whatever n": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            logits[row, seq] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "borrowed: transformers' generate(no_repeat_ngram_size=n)": """
def greedy_no_repeat(model, ids, max_new_tokens, n):
    return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False,
                          no_repeat_ngram_size=n)
""",
        "borrowed: transformers' NoRepeatNGramLogitsProcessor in a greedy loop": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    from transformers import NoRepeatNGramLogitsProcessor
    ban = NoRepeatNGramLogitsProcessor(n)
    for _ in range(max_new_tokens):
        logits = ban(ids, model(ids).logits[:, -1])
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "reads the global tiny_lm instead of the model it is given": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = tiny_lm(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n + 1 :])
            banned = [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i : i + n - 1]) == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "always 20 new tokens, whatever max_new_tokens says": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(20):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n + 1 :])
            banned = [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i : i + n - 1]) == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "bans only the token after the FIRST earlier occurrence (a list.index search)": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n + 1 :])
            windows = [tuple(seq[i : i + n - 1]) for i in range(len(seq) - n + 1)]
            if context in windows:
                logits[row, seq[windows.index(context) + n - 1]] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
        "off by one: the window right before the context is never compared": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = model(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n + 1 :])
            banned = [seq[i + n - 1] for i in range(len(seq) - n) if tuple(seq[i : i + n - 1]) == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
    },
    4: {
        "accepts the draft's guesses without checking them": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        for _ in range(k):
            ids = torch.cat([ids, draft(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
        ids = torch.cat([ids, target(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids[:, :goal]
""",
        "verifies token by token: one target call per token": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        guess = draft(ids)[:, -1].argmax(-1, keepdim=True)
        choice = target(ids)[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, guess if torch.equal(guess, choice) else choice], dim=1)
    return ids
""",
        "forgets the target's own token after k agreed guesses": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        choices = target(proposal)[0, ids.shape[1] - 1:].argmax(-1)
        guesses = proposal[0, ids.shape[1]:]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        ids = torch.cat([ids, choices[None, :min(agreed + 1, k)]], dim=1)
    return ids[:, :goal]
""",
        "off by one: compares each guess with the target's choice AFTER it": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        choices = target(proposal)[0, ids.shape[1]:].argmax(-1)
        guesses = proposal[0, ids.shape[1]:]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        ids = torch.cat([ids, guesses[None, :agreed], choices[None, agreed:agreed + 1]], dim=1)
    return ids[:, :goal]
""",
        "ignores the draft: the target's plain greedy loop": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    for _ in range(max_new_tokens):
        ids = torch.cat([ids, target(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids
""",
        "does not cut the surplus tokens of the last round": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        choices = target(proposal)[0, ids.shape[1] - 1:].argmax(-1)
        guesses = proposal[0, ids.shape[1]:]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        ids = torch.cat([ids, choices[None, :agreed + 1]], dim=1)
    return ids
""",
        "verifies with the target but takes the token after k agreed guesses from the global toy_model": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        choices = target(proposal)[0, ids.shape[1] - 1 :].argmax(-1)
        guesses = proposal[0, ids.shape[1] :]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        if agreed == k:
            ids = torch.cat([proposal, toy_model(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        else:
            ids = torch.cat([ids, choices[None, : agreed + 1]], dim=1)
    return ids[:, :goal]
""",
        "verifies all k + 1 prefixes as a batch of k + 1 sequences in one call": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        batch = proposal.expand(k + 1, -1)
        logits = target(batch)
        choices = torch.stack([logits[i, ids.shape[1] - 1 + i] for i in range(k + 1)]).argmax(-1)
        guesses = proposal[0, ids.shape[1] :]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        ids = torch.cat([ids, choices[None, : agreed + 1]], dim=1)
    return ids[:, :goal]
""",
        "proposes k tokens even when fewer are needed, and does not cut: overshoots when k > max_new_tokens": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    while ids.shape[1] < goal:
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        choices = target(proposal)[0, ids.shape[1] - 1 :].argmax(-1)
        guesses = proposal[0, ids.shape[1] :]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        ids = torch.cat([ids, choices[None, : agreed + 1]], dim=1)
        if ids.shape[1] >= goal and k < max_new_tokens:
            ids = ids[:, :goal]
    return ids
""",
        "after the first disagreement, verifies token by token: more target calls than rounds": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    goal = ids.shape[1] + max_new_tokens
    trusting = True
    while ids.shape[1] < goal:
        if not trusting:
            ids = torch.cat([ids, target(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
            continue
        proposal = ids
        for _ in range(k):
            proposal = torch.cat([proposal, draft(proposal)[:, -1].argmax(-1, keepdim=True)], dim=1)
        choices = target(proposal)[0, ids.shape[1] - 1 :].argmax(-1)
        guesses = proposal[0, ids.shape[1] :]
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        trusting = agreed == k
        ids = torch.cat([ids, choices[None, : agreed + 1]], dim=1)
    return ids[:, :goal]
""",
    },
    5: {
        "no length normalisation: the raw sum whatever length_penalty says": BEAM.replace(
            "float(ranked[i]) / step ** length_penalty", "float(ranked[i])"
        ),
        "normalises by the whole length, prompt included": BEAM.replace(
            "float(ranked[i]) / step ** length_penalty", "float(ranked[i]) / sequences.shape[1] ** length_penalty"
        ),
        "normalises by the length without the EOS": BEAM.replace(
            "float(ranked[i]) / step ** length_penalty",
            "float(ranked[i]) / max(step - int(ends[i]), 1) ** length_penalty",
        ),
        "finishes every EOS candidate, not only those among the num_beams best": BEAM.replace(
            "if ends[i] or last:", "if last:"
        ).replace(
            "        if last:\n            break",
            "        finished += [(float(ranked[i]) / step ** length_penalty, sequences[i])\n"
            "                     for i in range(num_beams, len(order)) if ends[i]]\n"
            "        if last:\n            break",
        ),
        "EOS is an ordinary token: texts never finish before the last step": BEAM.replace(
            "if ends[i] or last:", "if last:"
        ).replace(
            "running = (~ends).nonzero().flatten()[:num_beams]", "running = torch.arange(min(num_beams, len(order)))"
        ),
        "the running beams are the num_beams best minus those that ended (fewer beams)": BEAM.replace(
            "running = (~ends).nonzero().flatten()[:num_beams]", "running = (~ends[:num_beams]).nonzero().flatten()"
        ),
        "only EOS texts count: unfinished beams at the limit are dropped": BEAM.replace(
            "if ends[i] or last:", "if ends[i]:"
        ).replace("    return max(", "    if not finished:\n        return beams[:1]\n    return max("),
        "borrowed: scratch.l10_decoding.generate": """
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    from scratch.l10_decoding import generate
    return generate(model, prompt, max_new_tokens, "beam", num_beams=num_beams, eos_id=eos_id,
                    length_penalty=length_penalty, early_stopping="never", use_cache=False)
""",
        "the global EOS instead of eos_id": """
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    beams, scores = prompt, torch.zeros(1)
    finished = []
    for step in range(1, max_new_tokens + 1):
        log_p = torch.log_softmax(model(beams)[:, -1], dim=-1)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == EOS
        last = step == max_new_tokens
        for i in range(min(num_beams, len(order))):
            if ends[i] or last:
                finished.append((float(ranked[i]) / step**length_penalty, sequences[i]))
        if last:
            break
        running = (~ends).nonzero().flatten()[:num_beams]
        beams, scores = sequences[running], ranked[running]
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
""",
        "one model call per beam: the beams scored in a loop": """
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    beams, scores = prompt, torch.zeros(1)
    finished = []
    for step in range(1, max_new_tokens + 1):
        log_p = torch.cat([torch.log_softmax(model(beam[None])[:, -1], dim=-1) for beam in beams])
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == eos_id
        last = step == max_new_tokens
        for i in range(min(num_beams, len(order))):
            if ends[i] or last:
                finished.append((float(ranked[i]) / step**length_penalty, sequences[i]))
        if last:
            break
        running = (~ends).nonzero().flatten()[:num_beams]
        beams, scores = sequences[running], ranked[running]
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
""",
        "the first step starts from num_beams copies of the prompt: duplicate candidates crowd the beams": """
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    beams, scores = prompt.repeat(num_beams, 1), torch.zeros(num_beams)
    finished = []
    for step in range(1, max_new_tokens + 1):
        log_p = torch.log_softmax(model(beams)[:, -1], dim=-1)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == eos_id
        last = step == max_new_tokens
        for i in range(min(num_beams, len(order))):
            if ends[i] or last:
                finished.append((float(ranked[i]) / step**length_penalty, sequences[i]))
        if last:
            break
        running = (~ends).nonzero().flatten()[:num_beams]
        beams, scores = sequences[running], ranked[running]
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
""",
        "stops at the first step where the best candidate ends, as greedy does": """
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    beams, scores = prompt, torch.zeros(1)
    finished = []
    for step in range(1, max_new_tokens + 1):
        log_p = torch.log_softmax(model(beams)[:, -1], dim=-1)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == eos_id
        last = step == max_new_tokens
        for i in range(min(num_beams, len(order))):
            if ends[i] or last:
                finished.append((float(ranked[i]) / step**length_penalty, sequences[i]))
        if last or ends[0]:
            break
        running = (~ends).nonzero().flatten()[:num_beams]
        beams, scores = sequences[running], ranked[running]
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
""",
        "length penalty the wrong way round: score * L ** length_penalty": """
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    beams, scores = prompt, torch.zeros(1)
    finished = []
    for step in range(1, max_new_tokens + 1):
        log_p = torch.log_softmax(model(beams)[:, -1], dim=-1)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == eos_id
        last = step == max_new_tokens
        for i in range(min(num_beams, len(order))):
            if ends[i] or last:
                finished.append((float(ranked[i]) * step**length_penalty, sequences[i]))
        if last:
            break
        running = (~ends).nonzero().flatten()[:num_beams]
        beams, scores = sequences[running], ranked[running]
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
""",
        "the last step finishes the previous step's beams: one token short": """
@torch.no_grad()
def beam_search_eos(model, prompt, num_beams, max_new_tokens, eos_id, length_penalty):
    beams, scores = prompt, torch.zeros(1)
    finished = []
    for step in range(1, max_new_tokens):
        log_p = torch.log_softmax(model(beams)[:, -1], dim=-1)
        vocab = log_p.shape[-1]
        candidates = (scores[:, None] + log_p).flatten()
        order = candidates.argsort(descending=True)
        sequences = torch.cat([beams[order // vocab], (order % vocab)[:, None]], dim=1)
        ranked = candidates[order]
        ends = sequences[:, -1] == eos_id
        for i in range(min(num_beams, len(order))):
            if ends[i]:
                finished.append((float(ranked[i]) / step**length_penalty, sequences[i]))
        running = (~ends).nonzero().flatten()[:num_beams]
        beams, scores = sequences[running], ranked[running]
    for beam, score in zip(beams, scores):
        finished.append((float(score) / max(beams.shape[1] - prompt.shape[1], 1) ** length_penalty, beam))
    return max(finished, key=lambda hypothesis: hypothesis[0])[1][None]
""",
    },
}

# Written fresh for issue 34 (checks in course.checks), by kind: (a) an argument ignored, (b) a dtype mishandled,
# (e) tampering after the set-up (returned objects whose == always agrees, torch's names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(b) computed in float32 whatever the dtype: float64 probabilities come back as float32": """
def temper(probs, T):
    return torch.softmax(probs.float().log() / T, dim=-1)
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(e) an always-equal tensor subclass, with torch.equal and torch.isfinite rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.equal = lambda *args, **kwargs: True

def min_p_filter(z, p_min):
    return z.clone().as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(a) the model ignored: the set-up's tiny_lm": """
@torch.no_grad()
def greedy_no_repeat(model, ids, max_new_tokens, n):
    for _ in range(max_new_tokens):
        logits = tiny_lm(ids).logits[:, -1]
        for row, seq in enumerate(ids.tolist()):
            context = tuple(seq[len(seq) - n + 1 :]) if n > 1 else ()
            banned = [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i : i + n - 1]) == context]
            logits[row, banned] = float("-inf")
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(a) the draft ignored: the target alone, one call per token": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    for _ in range(max_new_tokens):
        ids = torch.cat([ids, target(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids
""",
    }
)

# Written fresh for issue 34, the kinds lecture 10 still lacked: (c) an edge case the statement covers (p_min = 1),
# (d) the rule dodged around the instrument (the target reached through the function behind the counter).
WRONG_SOLUTIONS[2].update(
    {
        "(c) a strict comparison: at p_min = 1 even the most probable token is dropped": """
def min_p_filter(z, p_min):
    probs = torch.softmax(z, dim=-1)
    threshold = p_min * probs.max(dim=-1, keepdim=True).values
    return z.masked_fill(probs <= threshold, float("-inf")) if p_min > 0 else z.clone()
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(d) the target called behind its counter, one token at a time; as many counted calls as a perfect draft": """
@torch.no_grad()
def speculative_greedy(target, draft, ids, max_new_tokens, k):
    cells = [cell.cell_contents for cell in (getattr(target, "__closure__", None) or ())]
    inner = next((c for c in cells if callable(c) and c is not target), target)  # behind a counting wrapper
    for _ in range(max_new_tokens):
        ids = torch.cat([ids, inner(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    for _ in range(math.ceil(max_new_tokens / (k + 1))):
        target(ids)
    return ids
""",
    }
)
