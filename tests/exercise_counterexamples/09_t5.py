"""Known-wrong and borrowed solutions to lecture 9's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

WRONG_SOLUTIONS = {
    1: {
        "one item per span: only the first word after each sentinel is put back": """
def restore(inputs, targets, sentinels):
    original = []
    for item in inputs:
        if item in sentinels:
            original.append(targets[targets.index(item) + 1])
        else:
            original.append(item)
    return original
""",
        "the target's final sentinel is copied into the text": """
def restore(inputs, targets, sentinels):
    spans, current = {}, None
    for item in targets:
        if item in sentinels:
            current = item
            spans[current] = []
        else:
            spans[current].append(item)
    original = []
    for item in inputs:
        original += spans[item] if item in sentinels else [item]
    if targets and targets[-1] in sentinels and targets[-1] not in inputs:
        original.append(targets[-1])
    return original
""",
        "a span at the very start of the text is lost": """
def restore(inputs, targets, sentinels):
    spans, current = [], None
    for item in targets:
        if item in sentinels:
            spans.append([])
        else:
            spans[-1].append(item)
    original, k = [], 0
    for i, item in enumerate(inputs):
        if item in sentinels:
            if i > 0:
                original += spans[k]
            k += 1
        else:
            original.append(item)
    return original
""",
        "string surgery on '<extra_id_k>' names: fails on token ids": """
def restore(inputs, targets, sentinels):
    import re
    parts = re.split(r"<extra_id_[0-9]+>", " ".join(map(str, targets)))[1:]
    text = " ".join(map(str, inputs))
    for k, part in enumerate(parts):
        text = text.replace(f"<extra_id_{k}>", part.strip())
    return text.split()
""",
    },
    2: {
        "borrowed: scratch.embeddings.relative_position_bucket": """
def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    from scratch.embeddings import relative_position_bucket
    return relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)
""",
        "sign flipped: keys to the left get the upper half of the buckets": """
def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = relative_position.long()
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position < 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(distance.clamp(min=1).float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(distance < max_exact, distance, large)
""",
        "no cap: distances past max_distance run beyond the last bucket": """
def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = relative_position.long()
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(distance.clamp(min=1).float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    return buckets + torch.where(distance < max_exact, distance, large)
""",
        "causal buckets from |j - i|: future keys do not share bucket 0": """
def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = relative_position.long()
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).long() * num_buckets
    distance = relative_position.abs()
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(distance.clamp(min=1).float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(distance < max_exact, distance, large)
""",
        "borrowed: transformers' T5Attention._relative_position_bucket": """
def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    from transformers.models.t5.modeling_t5 import T5Attention
    return T5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)
""",
    },
    3: {
        "borrowed: labels= lets transformers shift the labels": """
def answer_log_probs(model, tokenizer, source, answers):
    values = []
    for answer in answers:
        enc = tokenizer(source, text_target=answer, return_tensors="pt")
        with torch.no_grad():
            values.append(-model(input_ids=enc.input_ids, labels=enc.labels).loss * enc.labels.shape[1])
    return torch.stack(values)
""",
        "not shifted: the decoder reads the piece it must predict": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    real = labels != tokenizer.pad_token_id
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=labels).logits
    picked = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (picked * real).sum(dim=-1)
""",
        "padding scored as part of the shorter answers": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    decoder_input_ids = torch.full_like(labels, model.config.decoder_start_token_id)
    decoder_input_ids[:, 1:] = labels[:, :-1]
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    return logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0].sum(dim=-1)
""",
        "mean over pieces instead of the sum": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    real = labels != tokenizer.pad_token_id
    decoder_input_ids = torch.full_like(labels, model.config.decoder_start_token_id)
    decoder_input_ids[:, 1:] = labels[:, :-1]
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    picked = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (picked * real).sum(dim=-1) / real.sum(dim=-1)
""",
        "</s> left out of the score": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    real = (labels != tokenizer.pad_token_id) & (labels != tokenizer.eos_token_id)
    decoder_input_ids = torch.full_like(labels, model.config.decoder_start_token_id)
    decoder_input_ids[:, 1:] = labels[:, :-1]
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    picked = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (picked * real).sum(dim=-1)
""",
        "decoder starts from </s> instead of decoder_start_token_id": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    real = labels != tokenizer.pad_token_id
    decoder_input_ids = torch.full_like(labels, tokenizer.eos_token_id)
    decoder_input_ids[:, 1:] = labels[:, :-1]
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    picked = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (picked * real).sum(dim=-1)
""",
        "shortcut: cross_entropy with ignore_index": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    decoder_input_ids = torch.full_like(labels, model.config.decoder_start_token_id)
    decoder_input_ids[:, 1:] = labels[:, :-1]
    labels = labels.masked_fill(labels == tokenizer.pad_token_id, -100)
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    return -losses.sum(dim=-1)
""",
    },
    4: {
        "divides the scores by sqrt(d_k): T5 does not": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    position = torch.arange(S)
    buckets = t5_bucket(position[None, :] - position[:, None], True, attention.relative_attention_num_buckets,
                        attention.relative_attention_max_distance)
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    return scores.softmax(dim=-1)
""",
        "bucket(i - j): the bias mirrored": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1)
    position = torch.arange(S)
    buckets = t5_bucket(position[:, None] - position[None, :], True, attention.relative_attention_num_buckets,
                        attention.relative_attention_max_distance)
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    return scores.softmax(dim=-1)
""",
        "causal buckets in the encoder": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1)
    position = torch.arange(S)
    buckets = t5_bucket(position[None, :] - position[:, None], False, attention.relative_attention_num_buckets,
                        attention.relative_attention_max_distance)
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    return scores.softmax(dim=-1)
""",
        "borrowed: the module's compute_bias": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    return (Q @ K.transpose(-2, -1) + attention.compute_bias(S, S)[0]).softmax(dim=-1)
""",
        "heads split by reshape(h, S, d_k): positions mixed into heads": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).reshape(h, S, d_k)
    K = (x @ attention.k.weight.T).reshape(h, S, d_k)
    scores = Q @ K.transpose(-2, -1)
    position = torch.arange(S)
    buckets = t5_bucket(position[None, :] - position[:, None], True, attention.relative_attention_num_buckets,
                        attention.relative_attention_max_distance)
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    return scores.softmax(dim=-1)
""",
    },
    5: {
        "borrowed: model.generate": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    return model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False,
                          max_new_tokens=max_new_tokens)
""",
        "no attention mask: short inputs attend to their padding": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    config = model.config
    with torch.no_grad():
        memory = model.encoder(input_ids=input_ids).last_hidden_state
        out = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            next_ids = model(encoder_outputs=(memory,), decoder_input_ids=out).logits[:, -1].argmax(-1)
            next_ids = torch.where(done, torch.full_like(next_ids, config.pad_token_id), next_ids)
            out = torch.cat([out, next_ids[:, None]], dim=1)
            done |= next_ids == config.eos_token_id
            if done.all():
                break
    return out
""",
        "finished rows keep writing instead of <pad>": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    config = model.config
    with torch.no_grad():
        memory = model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        out = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits = model(encoder_outputs=(memory,), attention_mask=attention_mask, decoder_input_ids=out).logits
            next_ids = logits[:, -1].argmax(-1)
            out = torch.cat([out, next_ids[:, None]], dim=1)
            done |= next_ids == config.eos_token_id
            if done.all():
                break
    return out
""",
        "the encoder runs again at every step": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    config = model.config
    with torch.no_grad():
        out = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=out).logits
            next_ids = logits[:, -1].argmax(-1)
            next_ids = torch.where(done, torch.full_like(next_ids, config.pad_token_id), next_ids)
            out = torch.cat([out, next_ids[:, None]], dim=1)
            done |= next_ids == config.eos_token_id
            if done.all():
                break
    return out
""",
        "starts from </s> instead of decoder_start_token_id": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    config = model.config
    with torch.no_grad():
        memory = model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        out = torch.full((input_ids.shape[0], 1), config.eos_token_id)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits = model(encoder_outputs=(memory,), attention_mask=attention_mask, decoder_input_ids=out).logits
            next_ids = logits[:, -1].argmax(-1)
            next_ids = torch.where(done, torch.full_like(next_ids, config.pad_token_id), next_ids)
            out = torch.cat([out, next_ids[:, None]], dim=1)
            done |= next_ids == config.eos_token_id
            if done.all():
                break
    return out
""",
        "stops at the first row's </s>": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    config = model.config
    with torch.no_grad():
        memory = model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        out = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id)
        for _ in range(max_new_tokens):
            logits = model(encoder_outputs=(memory,), attention_mask=attention_mask, decoder_input_ids=out).logits
            next_ids = logits[:, -1].argmax(-1)
            out = torch.cat([out, next_ids[:, None]], dim=1)
            if (next_ids == config.eos_token_id).any():
                break
    return out
""",
    },
}
