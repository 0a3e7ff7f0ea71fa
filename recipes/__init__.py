"""The recipes that trained the course's checkpoints (data/checkpoints/<name>/), one module per checkpoint.

    tiny_t5              tiny-t5: a T5 trained from scratch on four text-to-text tasks (lecture 9)
    tiny_t5_pretrained   tiny-t5-pretrained: the same shape pre-trained by span corruption, and its transfer test
    minilm_lora_mlm      minilm-lora-mlm: MiniLM adapted for fill-mask with LoRA (lecture 7)
    minilm_mlm_head      minilm-mlm-head: a masked-LM head on the frozen MiniLM, which minilm-lora-mlm superseded
    minilm_nsp           minilm-nsp: MiniLM adapted for next-sentence prediction with LoRA
    minilm_nsp_stories   the everyday stories SmolLM2 wrote for minilm-nsp's second stage
    minilm_ner           minilm-ner: a person/place tagger, MiniLM's last block fine-tuned

Each exposes a `Config` (the shipped run's settings as defaults) and `main(config) -> metrics`; run one from the
repository root with `python -m recipes.<name> --help`. Every checkpoint's README gives the exact commands that made
it; tests/test_recipes.py runs each recipe on a tiny configuration. Recipes run on the numeric path their checkpoint
was trained on: the lectures' pinned path (minilm_ner, minilm_mlm_head), or MKL's fast path (the others, which import
recipes.fast_path first).
"""
