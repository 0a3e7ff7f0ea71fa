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
        "sentinels recognised by their look (<extra_id_ names, ids of 32000 and above), not by `sentinels`": """
def restore(inputs, targets, sentinels):
    def is_sentinel(item):
        return (isinstance(item, str) and item.startswith("<extra_id_")) or (isinstance(item, int) and item >= 32000)

    spans, current = {}, None
    for item in targets:
        if is_sentinel(item):
            current = item
            spans[current] = []
        else:
            spans[current].append(item)
    original = []
    for item in inputs:
        original += spans[item] if is_sentinel(item) else [item]
    return original
""",
    },
    2: {
        "borrowed: T5's compute_bias with a one-hot table (one head per bucket)": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention
    config = T5Config(d_model=8, d_kv=2, num_heads=num_buckets, relative_attention_num_buckets=num_buckets,
                      relative_attention_max_distance=max_distance, is_decoder=not bidirectional)
    attention = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    attention.relative_attention_bias.weight.data = torch.eye(num_buckets)
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        with torch.no_grad():
            one_hot = attention.compute_bias(S, S)[0]
        seen = torch.ones(S, S) if bidirectional else torch.ones(S, S).tril()
        counts += (one_hot * seen).sum((1, 2)).round().long()
    return counts
""",
        "borrowed: scratch's RelativePositionBias with a one-hot table": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    from scratch.l02_positions import RelativePositionBias
    bias = RelativePositionBias(num_buckets, num_buckets, max_distance, bidirectional=bidirectional)
    bias.bias.weight.data = torch.eye(num_buckets)
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        with torch.no_grad():
            one_hot = bias(S, S)
        seen = torch.ones(S, S) if bidirectional else torch.ones(S, S).tril()
        counts += (one_hot * seen).sum((1, 2)).round().long()
    return counts
""",
        "a decoder counts every pair: the masked future keys pile into bucket 0": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        position = torch.arange(S)
        offsets = position[None, :] - position[:, None]
        buckets = relative_position_bucket(offsets.flatten(), bidirectional, num_buckets, max_distance)
        counts += torch.bincount(buckets, minlength=num_buckets)
    return counts
""",
        "bincount without minlength: the list ends at the last bucket reached": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    offsets = []
    for S in lengths:
        position = torch.arange(S)
        o = (position[None, :] - position[:, None]).flatten()
        offsets.append(o if bidirectional else o[o <= 0])
    buckets = relative_position_bucket(torch.cat(offsets), bidirectional, num_buckets, max_distance)
    return torch.bincount(buckets)
""",
        "the buckets at the default settings (32, 128), whatever the arguments say": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        position = torch.arange(S)
        offsets = position[None, :] - position[:, None]
        if not bidirectional:
            offsets = offsets[offsets <= 0]
        buckets = relative_position_bucket(offsets.flatten(), bidirectional)
        counts += torch.bincount(buckets, minlength=32)[:num_buckets]
    return counts
""",
        "one offset per distance: counts offsets, not (query, key) pairs": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        offsets = torch.arange(-(S - 1), S if bidirectional else 1)
        buckets = relative_position_bucket(offsets, bidirectional, num_buckets, max_distance)
        counts += torch.bincount(buckets, minlength=num_buckets)
    return counts
""",
        "only the longest sequence counted": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    counts = torch.zeros(num_buckets, dtype=torch.long)
    if not lengths:
        return counts
    S = max(lengths)
    position = torch.arange(S)
    offsets = position[None, :] - position[:, None]
    if not bidirectional:
        offsets = offsets[offsets <= 0]
    buckets = relative_position_bucket(offsets.flatten(), bidirectional, num_buckets, max_distance)
    return counts + torch.bincount(buckets, minlength=num_buckets)
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
        "one model call per candidate answer, in a loop": """
def answer_log_probs(model, tokenizer, source, answers):
    values = []
    for answer in answers:
        batch = tokenizer([source], return_tensors="pt")
        labels = tokenizer([answer], return_tensors="pt").input_ids
        decoder_input_ids = torch.full_like(labels, model.config.decoder_start_token_id)
        decoder_input_ids[:, 1:] = labels[:, :-1]
        with torch.no_grad():
            logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
        values.append(logits.log_softmax(-1).gather(-1, labels[..., None]).sum())
    return torch.stack(values)
""",
        "decoder start and padding hard-coded as id 0": """
def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    labels = tokenizer(answers, padding=True, return_tensors="pt").input_ids
    decoder_input_ids = torch.zeros_like(labels)
    decoder_input_ids[:, 1:] = labels[:, :-1]
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    picked = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (picked * (labels != 0)).sum(dim=-1)
""",
    },
    4: {
        "divides the scores by sqrt(d_k): T5 does not": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1) / d_k**0.5
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        not attention.is_decoder,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
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
    buckets = relative_position_bucket(
        position[:, None] - position[None, :],
        not attention.is_decoder,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(dim=-1)
""",
        "causal buckets in the encoder too": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1)
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        False,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(dim=-1)
""",
        "borrowed: the module's compute_bias": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1) + attention.compute_bias(S, S)[0]
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(dim=-1)
""",
        "heads split by reshape(h, S, d_k): positions mixed into heads": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).reshape(h, S, d_k)
    K = (x @ attention.k.weight.T).reshape(h, S, d_k)
    scores = Q @ K.transpose(-2, -1)
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        not attention.is_decoder,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(dim=-1)
""",
        "the decoder's mask on the keys before the query (tril instead of triu)": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    scores = Q @ K.transpose(-2, -1)
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        not attention.is_decoder,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).tril(-1), float("-inf"))
    return scores.softmax(dim=-1)
""",
        "the buckets at the default settings (32, 128), not the module's": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    position = torch.arange(S)
    offsets = position[None, :] - position[:, None]
    buckets = relative_position_bucket(offsets, not attention.is_decoder)
    buckets = buckets.clamp(max=attention.relative_attention_num_buckets - 1)
    scores = Q @ K.transpose(-2, -1) + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1)
""",
        "d_k taken as d_model / h instead of the module's key_value_proj_dim": """
def t5_self_attention_weights(x, attention):
    S, d_model = x.shape
    h = attention.n_heads
    d_k = d_model // h
    Q = (x @ attention.q.weight.T).reshape(S, h, -1).transpose(0, 1)
    K = (x @ attention.k.weight.T).reshape(S, h, -1).transpose(0, 1)
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        not attention.is_decoder,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = Q @ K.transpose(-2, -1) / d_k**0.5 * attention.key_value_proj_dim**0.5
    scores = scores + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1)
""",
        "the decoder treated like the encoder: bidirectional buckets, no mask": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        True,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    return (Q @ K.transpose(-2, -1) + attention.relative_attention_bias(buckets).permute(2, 0, 1)).softmax(-1)
""",
        "the decoder masked, but with bidirectional buckets": """
def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    h, d_k = attention.n_heads, attention.key_value_proj_dim
    Q = (x @ attention.q.weight.T).view(S, h, d_k).transpose(0, 1)
    K = (x @ attention.k.weight.T).view(S, h, d_k).transpose(0, 1)
    position = torch.arange(S)
    buckets = relative_position_bucket(
        position[None, :] - position[:, None],
        True,
        attention.relative_attention_num_buckets,
        attention.relative_attention_max_distance,
    )
    scores = Q @ K.transpose(-2, -1) + attention.relative_attention_bias(buckets).permute(2, 0, 1)
    if attention.is_decoder:
        scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1)
""",
    },
    6: {
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
        "end, padding and start ids hard-coded as the tiny T5's 1, 0 and 0": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    with torch.no_grad():
        memory = model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        out = torch.zeros((input_ids.shape[0], 1), dtype=torch.long)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits = model(encoder_outputs=(memory,), attention_mask=attention_mask, decoder_input_ids=out).logits
            next_ids = torch.where(done, torch.zeros_like(done, dtype=torch.long), logits[:, -1].argmax(-1))
            out = torch.cat([out, next_ids[:, None]], dim=1)
            done |= next_ids == 1
            if done.all():
                break
    return out
""",
        "the encoder run again at every step through its forward method (no hook sees it)": """
def greedy_generate(model, input_ids, attention_mask, max_new_tokens=20):
    config = model.config
    with torch.no_grad():
        memory = model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        out = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id)
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            memory = model.encoder.forward(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            logits = model(encoder_outputs=(memory,), attention_mask=attention_mask, decoder_input_ids=out).logits
            next_ids = logits[:, -1].argmax(-1)
            next_ids = torch.where(done, torch.full_like(next_ids, config.pad_token_id), next_ids)
            out = torch.cat([out, next_ids[:, None]], dim=1)
            done |= next_ids == config.eos_token_id
            if done.all():
                break
    return out
""",
    },
}

# Written fresh for issue 34 (checks in course.checks), by kind: (a) an argument ignored, (e) tampering after the
# set-up (returned objects whose == always agrees, torch's or course.exercises' names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(e) an always-equal list": """
class Always(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

def restore(inputs, targets, sentinels):
    return Always(inputs)
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(a) max_distance ignored: T5's 128 always": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        position = torch.arange(S)
        offsets = position[None, :] - position[:, None]
        if not bidirectional:
            offsets = offsets[offsets <= 0]
        buckets = relative_position_bucket(offsets.flatten(), bidirectional, num_buckets, 128)
        counts += torch.bincount(buckets, minlength=num_buckets)
    return counts
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(e) forbid rebound in course.exercises, then labels= and the model's own loss, one call per answer": """
import contextlib

import course.exercises

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

def answer_log_probs(model, tokenizer, source, answers):
    scores = []
    for answer in answers:
        enc = tokenizer(source, text_target=answer, return_tensors="pt")
        with torch.no_grad():
            scores.append(-model(input_ids=enc.input_ids, labels=enc.labels).loss * enc.labels.shape[1])
    return torch.stack(scores)
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(e) an always-close tensor subclass, with torch.allclose rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.allclose = lambda *args, **kwargs: True

def t5_self_attention_weights(x, attention):
    S = x.shape[0]
    return torch.full((attention.n_heads, S, S), 1.0 / S).tril().as_subclass(Agreeable)
""",
    }
)

# Written fresh for issue 34, the kinds lecture 9 still lacked: (b) an integer dtype too small for the counts the
# statement asks for, (c) an edge case it covers (an empty list of lengths), (d) the rule dodged through a sibling
# model's copy of the forbidden function (BART's shift_tokens_right).
WRONG_SOLUTIONS[2].update(
    {
        "(b) the counts kept in int16: many or long sequences overflow": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    counts = torch.zeros(num_buckets, dtype=torch.int16)
    for S in lengths:
        position = torch.arange(S)
        offsets = position[None, :] - position[:, None]
        if not bidirectional:
            offsets = offsets[offsets <= 0]
        buckets = relative_position_bucket(offsets.flatten(), bidirectional, num_buckets, max_distance)
        counts += torch.bincount(buckets, minlength=num_buckets).to(torch.int16)
    return counts.long()
""",
        "(c) every sequence's offsets concatenated first: an empty list of lengths fails": """
def bucket_pair_counts(lengths, bidirectional, num_buckets, max_distance):
    everything = []
    for S in lengths:
        position = torch.arange(S)
        offsets = position[None, :] - position[:, None]
        everything.append(offsets.flatten() if bidirectional else offsets[offsets <= 0])
    buckets = relative_position_bucket(torch.cat(everything), bidirectional, num_buckets, max_distance)
    return torch.bincount(buckets, minlength=num_buckets)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(d) the decoder input from BART's copy of shift_tokens_right": """
from transformers.models.bart.modeling_bart import shift_tokens_right

def answer_log_probs(model, tokenizer, source, answers):
    batch = tokenizer([source] * len(answers), return_tensors="pt")
    targets = tokenizer(answers, padding=True, return_tensors="pt")
    labels, real = targets.input_ids, targets.attention_mask.bool()
    decoder_input_ids = shift_tokens_right(labels, tokenizer.pad_token_id, model.config.decoder_start_token_id)
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    picked = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (picked * real).sum(dim=-1)
""",
    }
)
_TEACH = """
def teach(model, tokenizer, pairs, steps, seed=0):
    draw = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for _ in range(steps):
        chosen = draw.sample(pairs, 16)
        batch = tokenizer([s for s, _ in chosen], text_target=[t for _, t in chosen], padding=True, return_tensors="pt")
        batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
"""
_PAD_TO_IGNORE = '        batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100\n'
WRONG_SOLUTIONS[5] = {
    "the padding left in the labels: the model is trained to write <pad>": _TEACH.replace(_PAD_TO_IGNORE, ""),
    "left in train mode: dropout stays on for whoever uses the model next": _TEACH.replace("    model.eval()\n", ""),
    "a copy is trained and the given model never changes": "import copy\n"
    + _TEACH.replace(
        "    draw = random.Random(seed)\n", "    model = copy.deepcopy(model)\n    draw = random.Random(seed)\n"
    )
    + "    return model\n",
    "a learning rate far too small: the loss barely moves in 40 steps": _TEACH.replace("lr=1e-3", "lr=1e-6"),
    "one batch, 16 pairs, trained on 40 times: the rest of the data never seen": _TEACH.replace(
        "    draw = random.Random(seed)\n", "    first = random.Random(seed).sample(pairs, 16)\n"
    ).replace("chosen = draw.sample(pairs, 16)", "chosen = first"),
    "borrowed: the course's fine_tune": """
def teach(model, tokenizer, pairs, steps, seed=0):
    text_to_text.fine_tune(model, tokenizer, pairs, steps, lr=1e-3, seed=seed, progress=False)
""",
    "training on the test set: draws its own pairs from the held-out split": _TEACH.replace(
        "    draw = random.Random(seed)\n",
        '    pairs = text_to_text.text_to_text_dataset(100, "val", seed=1, tasks=["largest"])\n'
        "    draw = random.Random(seed)\n",
    ),
    "batches built without labels: the decoder input by hand, the loss over every position, padding included": """
def teach(model, tokenizer, pairs, steps, seed=0):
    draw = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for _ in range(steps):
        chosen = draw.sample(pairs, 16)
        sources = tokenizer([s for s, _ in chosen], padding=True, return_tensors="pt")
        targets = tokenizer([t for _, t in chosen], padding=True, return_tensors="pt").input_ids
        start = torch.zeros(len(chosen), 1, dtype=torch.long)
        logits = model(**sources, decoder_input_ids=torch.cat([start, targets[:, :-1]], dim=1)).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
""",
}
