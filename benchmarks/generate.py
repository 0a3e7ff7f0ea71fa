"""How fast does scratch's decoder generate text? Without and with its KV cache, against transformers' generate.

    .venv/bin/python benchmarks/generate.py                      # SmolLM2-135M-Instruct, 128 new tokens, greedy
    .venv/bin/python benchmarks/generate.py --new-tokens 64 --rounds 5 --threads 2

One prompt (the opening of "The Red-Headed League"), greedy decoding, float32 on the CPU:
    scratch, no cache    scratch.l10_decoding.generate(use_cache=False): the whole sequence through the model every step
    scratch, KV cache    scratch.l10_decoding.generate(use_cache=True): only the new token, past keys/values cached
    scratch, KV cache, shared weights   the same, with the parameters pointing at transformers' own weight
                         tensors (no copy)
    transformers         LlamaForCausalLM.generate(do_sample=False) with its default attention and cache
All of them must produce the same tokens (checked). The cached runs and transformers alternate for --rounds rounds
after a warm-up (taking turns to go first), and the fastest round of each counts (the least disturbed by other work
on a shared machine); the uncached run is slow and runs once. Throughput = new tokens per second.
Target: KV cache >= 1.0x transformers.

Why "shared weights": decoding one token reads every weight from memory once, so the speed depends on where the
540 MB of weights lie. transformers' weights are pages of the memory-mapped safetensors file; from_hf_llama
copies them into new memory, and on some machines (a virtual machine, here) the very same matrix products run
measurably slower on one copy than on another. With shared weights both decoders read the same memory, so the
comparison measures the code alone.
"""

import argparse
import statistics
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import scratch
from course import assets
from course.pretrained import from_hf_llama
from scratch.l08_llama import Llama
from scratch.l10_decoding import generate

TARGET = 1.0
PROMPT = "I had called upon my friend, Mr. Sherlock Holmes, one day in the autumn of last year"


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


LLAMA_NAMES = {
    "self_attn.w_q": "self_attn.q_proj",
    "self_attn.w_k": "self_attn.k_proj",
    "self_attn.w_v": "self_attn.v_proj",
    "self_attn.w_o": "self_attn.o_proj",
    "ffn.gate": "mlp.gate_proj",
    "ffn.up": "mlp.up_proj",
    "ffn.down": "mlp.down_proj",
    "norm1": "input_layernorm",
    "norm2": "post_attention_layernorm",
}


def share_weights(model: Llama, hf) -> Llama:
    """Point model's parameters at hf's weight tensors (the same memory, no copy); the values are already equal."""
    theirs = hf.state_dict()
    for name, param in model.named_parameters(remove_duplicate=False):
        if name.startswith("blocks."):
            _, layer, rest = name.split(".", 2)
            module, kind = rest.rsplit(".", 1)
            source = f"model.layers.{layer}.{LLAMA_NAMES[module]}.{kind}"
        else:
            source = {
                "tok_embed.weight": "model.embed_tokens.weight",
                "norm.weight": "model.norm.weight",
                "lm_head.weight": "lm_head.weight",
            }[name]
        assert torch.equal(param, theirs[source]), name
        param.data = theirs[source]
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the two fast decoders")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--skip-no-cache", action="store_true", help="leave out the slow uncached run")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    scratch.seed_everything(0)

    path = assets.smollm2_dir()
    tokenizer = AutoTokenizer.from_pretrained(path)
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    model = from_hf_llama(hf)
    shared = share_weights(from_hf_llama(hf), hf)
    ids = tokenizer(PROMPT, return_tensors="pt").input_ids
    n = args.new_tokens
    print(
        f"SmolLM2-135M-Instruct, float32, {args.threads} thread(s), prompt {ids.shape[1]} tokens, {n} new tokens, "
        f"greedy"
    )

    eos = hf.generation_config.eos_token_id  # both stop at EOS, if greedy ever emits it
    runs = {
        "scratch, KV cache": lambda: generate(model, ids, n, eos_id=eos),
        "scratch, KV cache, shared weights": lambda: generate(shared, ids, n, eos_id=eos),
        "transformers": lambda: hf.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False
        ),
    }
    for run in runs.values():  # warm-up: first calls allocate and pick kernels
        run()
    seconds = {name: [] for name in runs}
    outputs = {}
    for round_ in range(args.rounds):
        for name in sorted(runs, reverse=round_ % 2 == 1):  # alternate who goes first
            outputs[name], s = timed(runs[name])
            seconds[name].append(s)
    if not args.skip_no_cache:
        outputs["scratch, no cache"], s = timed(lambda: generate(model, ids, n, eos_id=eos, use_cache=False))
        seconds["scratch, no cache"] = [s]

    reference = outputs["transformers"]
    n = reference.shape[1] - ids.shape[1]  # new tokens (fewer than asked only after an EOS)
    print(f"{'decoder':34s} {'best tokens/s':>14s} {'median tokens/s':>16s}  same tokens as transformers")
    for name in ("scratch, no cache", "scratch, KV cache", "scratch, KV cache, shared weights", "transformers"):
        if name not in seconds:
            continue
        same = torch.equal(outputs[name], reference)
        print(f"{name:34s} {n / min(seconds[name]):14.2f} {n / statistics.median(seconds[name]):16.2f}  {same}")
    assert all(torch.equal(out, reference) for out in outputs.values()), "the decoders produced different tokens"

    for name in ("scratch, KV cache", "scratch, KV cache, shared weights"):
        ratio = min(seconds["transformers"]) / min(seconds[name])
        print(f"{name} vs transformers: {ratio:.2f}x (target >= {TARGET}x): {'met' if ratio >= TARGET else 'NOT met'}")
    if "scratch, no cache" in seconds:
        print(f"KV cache vs no cache: {min(seconds['scratch, no cache']) / min(seconds['scratch, KV cache']):.2f}x")
    print("continuation:", repr(tokenizer.decode(reference[0, ids.shape[1] :])))


if __name__ == "__main__":
    main()
