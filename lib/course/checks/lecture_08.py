"""Checks of lecture 8's exercises (exercises/08_gpt.ipynb); see course.checks."""

import copy
import random
import sys
import types
import warnings

from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from course import assets
from course.checks.support import (
    BUILTINS,
    F,
    call,
    close,
    equal,
    integer,
    plain,
    tensor,
    tools,
    torch,
    untampered,
    values,
)
from scratch import l08_sft as sft

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid = tools.forbid
_deepcopy, _no_grad, _fork_rng = copy.deepcopy, torch.no_grad, torch.random.fork_rng
_modules, _Function = sys.modules, types.FunctionType
_Random = random.Random
_catch_warnings, _filter_warnings = warnings.catch_warnings, warnings.filterwarnings
_sft_example, _collate, _reply_accuracy, _SYSTEM = sft.sft_example, sft.collate, sft.reply_accuracy, sft.SYSTEM
_SFT_SHORTCUTS = ("scratch.l08_sft.sft_example", "scratch.l08_sft.collate")

# The checks' own SmolLM2 and tokenizer, loaded when the set-up imports this module.
_SMOLLM2 = AutoModelForCausalLM.from_pretrained(assets.smollm2_dir(), dtype=torch.float32, attn_implementation="eager")
_SMOLLM2 = _SMOLLM2.eval()
_TOKENIZER = AutoTokenizer.from_pretrained(assets.smollm2_dir())


def chat_prompt(student_chat_prompt):
    """Exercise 1."""
    untampered()
    question = "What is the capital of France?"
    conversations = [
        [{"role": "user", "content": question}],
        [{"role": "system", "content": "You are a pirate."}, {"role": "user", "content": "Hello!"}],
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Name a whale.\nJust one."},
        ],
        [  # a system message that does not come first is an ordinary turn
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Answer in French."},
            {"role": "user", "content": "Bonjour?"},
        ],
        [{"role": "tool", "content": "42"}, {"role": "assistant", "content": "The answer is 42."}],  # other roles
        [{"role": "user", "content": "  Two spaces first, a newline last\n"}],  # contents are taken as they are
    ]
    cases = [(c, g) for c in conversations for g in (True, False)]
    expected = [_TOKENIZER.apply_chat_template(c, add_generation_prompt=g, tokenize=False) for c, g in cases]
    with forbid(
        "transformers.tokenization_utils_base.PreTrainedTokenizerBase.apply_chat_template",
        "transformers.utils.chat_template_utils.render_jinja_template",
        "jinja2.environment.Template.render",
        hint="build the string from the format's rules, not by rendering the template",
    ):
        for (conversation, generation), theirs in zip(cases, expected):
            given = _deepcopy(conversation)
            what = f"chat_prompt({conversation}, add_generation_prompt={generation})"
            mine = plain(call(student_chat_prompt, given, add_generation_prompt=generation, what=what), what)
            assert type(mine) is str, f"hint: {what}: return the prompt as one string"
            assert given == conversation, f"hint: {what}: leave the caller's messages as they are (build a new list)"
            if mine != theirs:
                first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
                raise AssertionError(
                    f"hint: {what}: the strings differ from character {first}: yours "
                    f"{mine[max(first - 10, 0) : first + 20]!r}, expected {theirs[max(first - 10, 0) : first + 20]!r}: "
                    "when does the default system message come, and when the generation prompt? (lecture 8, section 6)"
                )
        what = "chat_prompt(messages) without add_generation_prompt"
        by_default = plain(call(student_chat_prompt, _deepcopy(conversations[0]), what=what), what)
    assert by_default == expected[0], "hint: add_generation_prompt is True unless the caller says otherwise"
    raw_ids = _TOKENIZER(question, return_tensors="pt").input_ids
    chat_ids = _TOKENIZER(expected[0], return_tensors="pt").input_ids
    with _no_grad():
        p_raw = F.softmax(_SMOLLM2(raw_ids).logits[0, -1], dim=-1)
        p_chat = F.softmax(_SMOLLM2(chat_ids).logits[0, -1], dim=-1)
    print(
        f"first token after the raw question: {_TOKENIZER.decode(p_raw.argmax())!r} (p = {p_raw.max():.2f}); "
        f"after your prompt: {_TOKENIZER.decode(p_chat.argmax())!r} (p = {p_chat.max():.2f})"
    )
    print("Exercise 1: OK")


def _reference_scores(attentions, ids):
    rows = []
    for t in range(len(ids)):
        earlier = [s for s in range(t) if ids[s] == ids[t]]
        if earlier:
            rows.append(attentions[..., t, earlier[-1] + 1])
    return torch.stack(rows).mean(dim=0)


def _random_causal_attention(L, h, n, seed):
    scores = torch.randn(L, h, n, n, generator=torch.Generator().manual_seed(seed))
    return F.softmax(scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -float("inf")), dim=-1)


def induction_scores(student_induction_scores):
    """Exercise 2."""
    untampered()

    def scores_of(attentions, ids, where):
        what = f"induction_scores({where})"
        got = call(student_induction_scores, attentions.clone(), ids.clone(), what=what)
        return tensor(got, f"{what}: one score per (layer, head)", shape=attentions.shape[:2])

    cases = [(torch.tensor([5, 6, 7, 5, 6, 5, 9]), 2, 3, 0), (torch.tensor([300, 300, 300, 7000, 300]), 1, 2, 1)]
    generator = torch.Generator().manual_seed(1)
    for trial in range(40):  # short texts from a few token ids: runs, immediate repeats, ids far past 255
        n = int(torch.randint(3, 30, (1,), generator=generator))
        size = int(torch.randint(2, 6, (1,), generator=generator))
        vocabulary = torch.randint(256, 50000, (size,), generator=generator)
        random_ids = vocabulary[torch.randint(len(vocabulary), (n,), generator=generator)]
        L, h = int(torch.randint(1, 4, (1,), generator=generator)), int(torch.randint(1, 5, (1,), generator=generator))
        if len(random_ids.unique()) < len(random_ids):
            cases.append((random_ids, L, h, trial + 2))
    for ids, L, h, seed in cases:
        attentions = _random_causal_attention(L, h, len(ids), seed)
        got = scores_of(attentions, ids, f"ids {values(ids)}")
        assert close(got, _reference_scores(attentions, ids), atol=1e-6), (
            f"hint: induction_scores(ids {values(ids)}): which positions count, and which key does each read? The "
            "most recent earlier occurrence decides, and a token right after its previous occurrence counts too "
            "(lecture 8, induction heads)"
        )
    n = 20
    first_half = torch.randint(1000, 20000, (n,), generator=torch.Generator().manual_seed(0))
    ids = torch.cat([first_half, first_half])  # (2n,): random tokens, then again
    with _no_grad():
        out = _SMOLLM2(ids[None], output_attentions=True)
    attentions = torch.stack(out.attentions)[:, 0]  # (L, h, 2n, 2n)
    expected = _reference_scores(attentions, ids)
    got = scores_of(attentions, ids, "SmolLM2 on 20 random tokens, twice")
    assert close(got, expected, atol=1e-5), "hint: on SmolLM2's weights your scores differ from the reference"
    best = expected.flatten().topk(3)
    heads = [divmod(int(i), expected.shape[1]) for i in best.indices]
    nll = -F.log_softmax(out.logits[0, :-1], dim=-1)[torch.arange(2 * n - 1), ids[1:]]  # -log P(token t + 1)
    first_nll, repeat_nll = nll[: n - 1].mean(), nll[n:].mean()
    print(
        "strongest induction heads: "
        + ", ".join(f"layer {layer} head {k} ({v:.2f})" for (layer, k), v in zip(heads, values(best.values)))
    )
    print(f"loss on the random tokens: {first_nll:.1f} nats the first time, {repeat_nll:.1f} when they repeat")
    print("Exercise 2: OK")


def _lens_reference(model, ids):  # the raw residual stream, read by hooks, through the final norm and E^T
    stream = []
    hooks = [model.model.embed_tokens.register_forward_hook(lambda module, args, out: stream.append(out[0]))]
    hooks += [
        layer.register_forward_hook(
            lambda module, args, out: stream.append((out[0] if isinstance(out, tuple) else out)[0])
        )
        for layer in model.model.layers
    ]
    try:
        with _no_grad():
            logits = model(ids).logits[0]
            return logits, model.model.norm(torch.stack(stream)) @ model.model.embed_tokens.weight.T  # (N + 1, n, V)
    finally:
        for hook in hooks:
            hook.remove()


def _settled_reference(lens):
    top = lens.argmax(-1)
    return torch.tensor(
        [min(i for i in range(len(top)) if bool((top[i:, t] == top[-1, t]).all())) for t in range(top.shape[1])]
    )


with _fork_rng():  # another small Llama with tied embeddings, random weights and a large epsilon
    torch.manual_seed(8)
    _TINY = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=50,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            rms_norm_eps=0.5,
            tie_word_embeddings=True,
            initializer_range=0.5,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=None,
        )
    ).eval()


def logit_lens(student_logit_lens, student_settled_layer):
    """Exercise 3: logit_lens and settled_layer."""
    untampered()
    text = "The capital of France is Paris. The capital of Italy is Rome."
    ids = _TOKENIZER(text, return_tensors="pt").input_ids
    for name, model, model_ids in (
        ("SmolLM2", _SMOLLM2, ids),
        ("a 3-layer Llama", _TINY, torch.tensor([[3, 41, 7, 7, 19, 3]])),
    ):
        logits, expected = _lens_reference(model, model_ids)
        what = f"logit_lens({name}, ids {tuple(model_ids.shape)})"
        lens = tensor(call(student_logit_lens, model, model_ids.clone(), what=what), what, shape=expected.shape)
        assert close(lens[-1], logits, atol=1e-3), (
            f"hint: {what}: the last row must be the model's logits: has the last hidden state been normalised "
            "already? (the statement's warning)"
        )
        assert close(lens[0], expected[0], atol=1e-3), (
            f"hint: {what}: row 0 is the embeddings through the final RMSNorm and the tied head of the model you are "
            "given"
        )
        assert close(lens, expected, atol=1e-3), (
            f"hint: {what}: rows 1..N are each layer's output (the residual stream) through the final RMSNorm and "
            "the tied head"
        )
    _, real_lens = _lens_reference(_SMOLLM2, ids)

    def settled_of(lens, where):
        what = f"settled_layer({where})"
        got = call(student_settled_layer, lens.clone(), what=what)
        return tensor(got, f"{what}: one layer index per position", shape=lens.shape[1:2], dtype=torch.long)

    toy = torch.tensor([[5, 5, 1], [7, 5, 1], [5, 5, 2], [5, 5, 3]])  # top token per (layer, position)
    toy_lens = F.one_hot(toy, 8).float()  # (4 layers, 3 positions, V = 8)
    settled = settled_of(toy_lens, f"a lens whose top tokens per position are {values(toy.T)}")
    assert values(settled) == [2, 0, 3], (
        f"hint: for the top tokens {values(toy.T)} (per position) expected [2, 0, 3], got {values(settled)}: a "
        "position that agrees, then disagrees, then agrees again has settled only where it starts to stay"
    )
    assert equal(settled_of(real_lens, "SmolLM2's lens"), _settled_reference(real_lens)), (
        "hint: on the real lens your layers differ"
    )
    generator = torch.Generator().manual_seed(3)
    for L, n, V in ((1, 4, 6), (2, 5, 3), (6, 7, 4), (12, 3, 2)):  # few tokens: the top token changes often
        random_lens = torch.randn(L, n, V, generator=generator)
        settled = settled_of(random_lens, f"a random lens of {L} layers, {n} positions, {V} tokens")
        assert equal(settled, _settled_reference(random_lens)), (
            f"hint: lens of {L} layers, {n} positions, {V} tokens: top tokens {values(random_lens.argmax(-1).T)} per "
            f"position, expected {values(_settled_reference(random_lens))}, got {values(settled)}"
        )
    deep_lens = torch.randn(300, 3, 4, generator=generator)  # more layers than a small integer type counts
    deep_lens[10:, torch.arange(3), torch.tensor([0, 2, 3])] += 100.0  # settled from layer 10 on (or earlier)
    settled = settled_of(deep_lens, "a lens of 300 layers")
    assert equal(settled, _settled_reference(deep_lens)), (
        f"hint: a lens of 300 layers whose top tokens stay from layer 10 on: expected "
        f"{values(_settled_reference(deep_lens))}, got {values(settled)}: count layers in a type that holds any "
        "number of them"
    )
    top, settled_real = real_lens.argmax(-1), _settled_reference(real_lens)
    tokens = [_TOKENIZER.decode(i) for i in ids[0]]
    for t in (tokens.index(" capital", 2), tokens.index(" is", 5)):
        print(
            f"the guess {_TOKENIZER.decode(top[-1, t])!r} after {_TOKENIZER.decode(ids[0, : t + 1])!r} is the lens's "
            f"top token from layer {int(settled_real[t])} on"
        )
    print("Exercise 3: OK")


def llama_parameter_count(student_count):
    """Exercise 4."""
    untampered()
    configs = [
        _SMOLLM2.config,
        LlamaConfig(
            hidden_size=64,
            intermediate_size=96,
            num_attention_heads=8,
            num_key_value_heads=2,
            num_hidden_layers=3,
            vocab_size=100,
            tie_word_embeddings=False,
        ),
        LlamaConfig(
            hidden_size=48,
            intermediate_size=200,
            num_attention_heads=4,
            num_key_value_heads=4,
            num_hidden_layers=2,
            vocab_size=37,
            tie_word_embeddings=True,
        ),
    ]
    generator = torch.Generator().manual_seed(4)
    for _ in range(8):  # random shapes: n_kv from 1 (one K/V head) to h, one layer or several, tied or not
        h = int(torch.randint(1, 9, (1,), generator=generator))
        divisors = [k for k in range(1, h + 1) if h % k == 0]  # n_kv divides h
        n_kv = divisors[int(torch.randint(len(divisors), (1,), generator=generator))]
        configs.append(
            LlamaConfig(
                hidden_size=h * 2 * int(torch.randint(1, 7, (1,), generator=generator)),  # d_k even, for rotary
                intermediate_size=int(torch.randint(5, 300, (1,), generator=generator)),
                num_attention_heads=h,
                num_key_value_heads=n_kv,
                num_hidden_layers=int(torch.randint(1, 5, (1,), generator=generator)),
                vocab_size=int(torch.randint(2, 400, (1,), generator=generator)),
                tie_word_embeddings=bool(torch.randint(0, 2, (1,), generator=generator)),
            )
        )
    expected = [sum(p.numel() for p in _SMOLLM2.parameters())]
    for config in configs[1:]:
        with torch.device("meta"):
            expected.append(sum(p.numel() for p in LlamaForCausalLM(config).parameters()))
    with forbid(
        "torch.nn.Module.parameters",
        "torch.nn.Module.named_parameters",
        "torch.nn.Module.state_dict",
        "transformers.modeling_utils.ModuleUtilsMixin.num_parameters",
        "transformers.models.llama.modeling_llama.LlamaForCausalLM.__init__",
        "transformers.models.llama.modeling_llama.LlamaModel.__init__",
        hint="count from the configuration's numbers alone, by formula",
    ):
        for config, reference in zip(configs, expected):
            what = (
                f"llama_parameter_count(d = {config.hidden_size}, h = {config.num_attention_heads}, n_kv = "
                f"{config.num_key_value_heads}, d_ff = {config.intermediate_size}, N = {config.num_hidden_layers}, "
                f"V = {config.vocab_size}, tied = {config.tie_word_embeddings})"
            )
            count = integer(call(student_count, _deepcopy(config), what=what), what)
            assert count == reference, (
                f"hint: {what}: expected {reference:,}, got {count:,} (off by {count - reference:,}): count every "
                "matrix and gain the statement lists, with the widths grouped-query attention gives W^K and W^V; "
                "what does a tied head add? (lecture 8, section 10)"
            )
    print(f"SmolLM2: {expected[0]:,} parameters by formula")
    print("Exercise 4: OK")


def _layer_inputs_and_outputs(model, ids, checked):  # {i: (x, out)}: what layer i receives and returns, (n, d_model)
    seen = {}
    hooks = [
        model.model.layers[i].register_forward_hook(
            lambda module, args, kwargs, out, i=i: seen.__setitem__(
                i, (kwargs.get("hidden_states", args[0] if args else None), out)
            ),
            with_kwargs=True,
        )
        for i in checked
    ]
    try:
        with _no_grad():
            model(ids)
    finally:
        for hook in hooks:
            hook.remove()
    return {i: (x[0], (out[0] if isinstance(out, tuple) else out)[0]) for i, (x, out) in seen.items()}


with _fork_rng():  # a small Llama: 6 heads sharing 2 K/V heads, a fast rotation, a large epsilon
    torch.manual_seed(5)
    _SMALL = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=_SMOLLM2.config.vocab_size,
            hidden_size=48,
            intermediate_size=80,
            num_hidden_layers=2,
            num_attention_heads=6,
            num_key_value_heads=2,
            rope_parameters={"rope_type": "default", "rope_theta": 50.0},
            rms_norm_eps=0.3,
            initializer_range=0.3,
            tie_word_embeddings=True,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=None,
        )
    ).eval()
LAYER_SHORTCUTS = [
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.rms_norm",
    "transformers.integrations.sdpa_attention.repeat_kv",
    "transformers.integrations.sdpa_attention.sdpa_attention_forward",
    *(
        f"transformers.models.llama.modeling_llama.{name}"
        for name in (
            "LlamaDecoderLayer.forward",
            "LlamaAttention.forward",
            "LlamaMLP.forward",
            "LlamaRMSNorm.forward",
            "LlamaRotaryEmbedding.forward",
            "apply_rotary_pos_emb",
            "rotate_half",
            "repeat_kv",
            "eager_attention_forward",
        )
    ),
    *(
        f"scratch.l08_llama.{name}"
        for name in (
            "RMSNorm.forward",
            "SwiGLUFeedForward.forward",
            "LlamaAttention.forward",
            "LlamaBlock.forward",
            "rotate_half",
            "apply_rotary",
        )
    ),
    "scratch.l04_multi_head_attention.MultiHeadAttention.forward",
    "scratch.l03_attention.scaled_dot_product_attention",
    "scratch.l02_positions.RotaryEmbedding.rotate",
    "scratch.l02_positions.rotate_half",
    "scratch.l02_positions.apply_rotary",
]
# Other model files of transformers carry their own copies of Llama's functions and layers (Mistral's, Qwen2's, ...).
_COPIED_FUNCTIONS = ("apply_rotary_pos_emb", "rotate_half", "repeat_kv", "eager_attention_forward")
_COPIED_LAYERS = ("RMSNorm", "RotaryEmbedding", "Attention", "MLP", "DecoderLayer")


def _copies_of_llamas_parts():
    """The copies of LAYER_SHORTCUTS' transformers functions and layers in every transformers model file loaded now
    (a solution cell that imports one has run before its check)."""
    names = []
    for name, module in list(_modules.items()):
        if module is None or not name.startswith("transformers.models.") or ".modeling_" not in name:
            continue
        for attribute, value in list(vars(module).items()):
            if getattr(value, "__module__", None) != name:
                continue  # imported from another file: its own file lists it
            if attribute in _COPIED_FUNCTIONS and isinstance(value, _Function):
                names.append(f"{name}.{attribute}")
            elif isinstance(value, type) and attribute.endswith(_COPIED_LAYERS) and "forward" in vars(value):
                names.append(f"{name}.{attribute}.forward")
    return names


def decoder_layer_by_hand(student_layer):
    """Exercise 5."""
    untampered()
    ids = _TOKENIZER(
        "It was the best of times, it was the worst of times, it was the age of wisdom", return_tensors="pt"
    ).input_ids
    cases = [
        (f"SmolLM2's layer {i}", _SMOLLM2, i, x, out)
        for i, (x, out) in _layer_inputs_and_outputs(_SMOLLM2, ids, (0, 20)).items()
    ]
    cases += [
        (f"the small Llama's layer {i}", _SMALL, i, x, out)
        for i, (x, out) in _layer_inputs_and_outputs(_SMALL, ids, (0, 1)).items()
    ]
    cases += [
        (f"the small Llama's layer {i}, one position", _SMALL, i, x, out)
        for i, (x, out) in _layer_inputs_and_outputs(_SMALL, ids[:, :1], (1,)).items()
    ]
    for name, model, i, x, expected in cases:
        what = f"decoder_layer_by_hand({name}, x {tuple(x.shape)})"
        update = (expected - x).norm(dim=-1)  # what the layer adds, per position
        x_changed = x.clone()
        x_changed[-1] += 1.0  # change only the last position's input
        shortcuts = [*LAYER_SHORTCUTS, *(name for name in _copies_of_llamas_parts() if name not in LAYER_SHORTCUTS)]
        with _no_grad(), forbid(*shortcuts, hint="compute the layer from its weight matrices"):
            got = call(student_layer, model.model.layers[i], x.clone(), model.config, what=what)
            got_changed = call(student_layer, model.model.layers[i], x_changed, model.config, what=what)
        tensor(got, what, shape=x.shape)
        tensor(got_changed, what, shape=x.shape)
        assert close(got[:-1], got_changed[:-1], atol=1e-4), (
            f"hint: {what}: a later position changed earlier outputs: a decoder never looks ahead"
        )
        error = (got - expected).norm(dim=-1) / update  # relative to the layer's update
        assert error[0].item() < 1e-4, (
            f"hint: {what}: position 0 is wrong (there, rotary positions and the mask change nothing): check the "
            "norms and their constants from config, the residual connections, SwiGLU, the head counts and which "
            "K/V head serves which query head (lecture 8, sections 8 and 9)"
        )
        assert error.max().item() < 1e-4, (
            f"hint: {what}: position 0 is right, later ones are not (relative error up to {error.max().item():.1e}): "
            "check the rotary pairs, their speeds from config's base and the scale of the scores (lecture 2, section 8)"
        )
    print(f"{len(cases)} layers and inputs: equal to the model's own layers (each position within 1e-4 of its update)")
    print("Exercise 5: OK")


# Exercise 6's task: an ISO date to its words, "1932-03-27" -> "27 March 1932" (SmolLM2 gets none right as it is).
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip
_SFT_STEPS, _SFT_THRESHOLD, _MAX_TRAINED = 12, 0.4, 0.02


def date_conversation(year: int, month: int, day: int, with_answer: bool = True) -> list[dict]:
    """Exercise 6's conversation: the course's short system message, "Write the date YYYY-MM-DD in words.", and the
    answer "D Month YYYY" (if with_answer)."""
    question = {"role": "user", "content": f"Write the date {year:04d}-{month:02d}-{day:02d} in words."}
    answer = [{"role": "assistant", "content": f"{day} {_MONTHS[month - 1]} {year}"}] if with_answer else []
    return [_SYSTEM, question, *answer]


def date_conversations(n: int, seed: int) -> list[list[dict]]:
    """n conversations of exercise 6's task, dates drawn uniformly from 1900-2099 (days 1-28) with `seed`."""
    draw = _Random(seed)
    return [date_conversation(draw.randint(1900, 2099), draw.randint(1, 12), draw.randint(1, 28)) for _ in range(n)]


def _reference_batch(conversations):
    return _collate([_sft_example(_TOKENIZER, c) for c in conversations], _TOKENIZER.pad_token_id)


def date_sft(student_sft_batch, student_lora_sft):
    """Exercise 6: the batches, then the fine-tune they feed."""
    untampered()
    _check_sft_batch(student_sft_batch)
    accuracy = _check_lora_sft(student_lora_sft)
    print(f"Exercise 6: OK ({accuracy:.0%} of 25 held-out dates exactly right)")


def _check_sft_batch(student_sft_batch):
    conversations = [
        date_conversation(1932, 3, 27),
        [_SYSTEM, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}],
        date_conversation(2001, 11, 5),
        [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue"}],
    ]
    for group in (conversations, conversations[1:2], conversations[::-1]):
        want = {key: values(t) for key, t in _reference_batch(group).items()}
        what = f"sft_batch(tokenizer, {len(group)} conversations)"
        with forbid(*_SFT_SHORTCUTS, hint="build the ids and labels yourself from the chat template"):
            got = call(student_sft_batch, _TOKENIZER, _deepcopy(group), what=what)
        assert isinstance(got, dict) and sorted(got) == ["attention_mask", "input_ids", "labels"], (
            f"hint: {what}: a dict with input_ids, attention_mask and labels"
        )
        for key in want:
            tensor(got[key], f"{what}[{key!r}]", shape=(len(group), len(want[key][0])), dtype=torch.long)
        assert values(got["input_ids"]) == want["input_ids"], (
            f"hint: {what}: input_ids are each whole conversation through the chat template, right-padded with "
            "tokenizer.pad_token_id to the longest"
        )
        assert values(got["attention_mask"]) == want["attention_mask"], (
            f"hint: {what}: attention_mask is 1 on every real token, 0 on padding"
        )
        for row, (mine, theirs) in enumerate(zip(values(got["labels"]), want["labels"])):
            assert mine == theirs, (
                f"hint: {what}, conversation {row}: labels {mine}, expected {theirs}: -100 on the whole prompt (up to "
                "and including the opened assistant turn) and on padding, the ids themselves from the answer on, "
                "its end-of-turn included; transformers shifts them itself"
            )


def _check_lora_sft(student_lora_sft):
    train_conversations, test_conversations = date_conversations(80, seed=0), date_conversations(25, seed=1)
    model = _deepcopy(_SMOLLM2)
    original = {name: p.detach().clone() for name, p in model.named_parameters()}
    total = sum(p.numel() for p in original.values())
    expected = {}  # each training conversation's ids -> its labels
    for conversation in train_conversations:
        ids, labels = _sft_example(_TOKENIZER, conversation)
        expected[tuple(ids)] = labels
    batches, seen = [], set()  # the size of each training batch; the conversations trained on so far

    def watching_forward(*args, _forward=model.forward, **kwargs):
        if model.training:
            trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
            assert 0 < trained <= _MAX_TRAINED * total, (
                f"hint: {trained:,} of the model's {total:,} numbers are trained: LoRA trains a few low-rank "
                f"matrices (at most {_MAX_TRAINED:.0%} here), with every pretrained weight frozen"
            )
            ids, mask, labels = kwargs.get("input_ids"), kwargs.get("attention_mask"), kwargs.get("labels")
            assert ids is not None and mask is not None and labels is not None, (
                "hint: call the model with input_ids=, attention_mask= and labels= (the batch sft_batch builds)"
            )
            for row_ids, row_mask, row_labels in zip(values(ids), values(mask), values(labels)):
                real = tuple(i for i, m in zip(row_ids, row_mask) if m)
                assert real in expected, "hint: each training row is one training conversation's ids, right-padded"
                assert row_labels[: len(real)] == expected[real], (
                    "hint: a training batch's labels are not -100 on the prompt and the ids on the answer: build "
                    "the batches with your sft_batch"
                )
            rows = {tuple(i for i, m in zip(r, k) if m) for r, k in zip(values(ids), values(mask))}
            assert len(seen) == len(expected) or not rows <= seen, (
                "hint: a training batch repeats conversations already trained on while others were never seen: "
                "take the next 4 conversations at every step"
            )
            seen.update(rows)
            batches.append(len(values(ids)))
        return _forward(*args, **kwargs)

    model.forward = watching_forward
    what = f"lora_sft(a copy of SmolLM2, tokenizer, 80 date conversations, steps={_SFT_STEPS}, seed=0)"
    try:
        with (
            forbid(*_SFT_SHORTCUTS, hint="build the ids and labels yourself from the chat template"),
            _catch_warnings(),
        ):
            _filter_warnings("ignore", message=".*is_gradient_checkpointing.*")  # peft's, not the student's
            tuned = call(student_lora_sft, model, _TOKENIZER, train_conversations, _SFT_STEPS, seed=0, what=what,
                         seconds=900, slow="12 steps of 4 short conversations take well under a minute")  # fmt: skip
    finally:
        del model.forward
    assert len(batches) == _SFT_STEPS and all(size == 4 for size in batches), (
        f"hint: {what}: {len(batches)} forward passes in train mode, of batch sizes {sorted(set(batches))}: "
        f"put the model in train mode (.train()) and run {_SFT_STEPS} steps of 4 conversations, one pass each"
    )
    assert tuned is not None and hasattr(tuned, "generate"), f"hint: {what}: return the fine-tuned (peft) model"
    assert not tuned.training, f"hint: {what}: return the model in eval mode"
    for name, parameter in model.named_parameters():
        plain_name = name.replace("base_model.model.", "").replace(".base_layer", "")
        if plain_name in original:
            assert equal(parameter.detach(), original[plain_name]), (
                f"hint: {what}: the pretrained weight {plain_name} changed: LoRA leaves every pretrained weight as "
                "it was (merge only after training, if at all)"
            )
    accuracy, replies = _reply_accuracy(tuned, _TOKENIZER, test_conversations)
    assert accuracy >= _SFT_THRESHOLD, (
        f"hint: {what}: {accuracy:.0%} of 25 held-out dates written exactly right, {_SFT_THRESHOLD:.0%} needed (e.g. "
        f"{test_conversations[0][1]['content']!r} -> {replies[0]!r}): is the loss falling? the rate, the layers "
        "adapted, zero_grad"
    )
    return accuracy
