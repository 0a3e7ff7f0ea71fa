"""The texts the course reads, and the ways it cuts them: chapters, sentences, words, characters, windows.

    moby_dick_chapters, moby_dick_text   Moby-Dick (Melville, 1851): 135 chapters, or one string
    austen_chapters                      Jane Austen's six novels by chapter (optional: Debian's archive)
    spam_emails, email_text              the SpamAssassin e-mails, and one e-mail as one line of text
    spam_draw                            a draw of labelled training e-mails, and the fixed test e-mails (lecture 7)
    heldout_chapters, is_held_out        the fixed splits: every 10th chapter; an input whose crc32 is 0 mod 10
    split_words, split_sentences         a text's words and punctuation; its sentences
    CharDataset, moby_dick_dataset       a text as characters: train/val split, random (x, y) windows (lecture 5, 6)
    token_windows                        texts cut into [CLS] ... [SEP] windows of WordPiece ids (lecture 7)

Every split here is fixed by the text itself (a chapter number, a hash), the same on every machine.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib

import torch

from course import assets
from course.rdata import read_r_serialized
from scratch import validate
from scratch.l01_tokenization import CharTokenizer

SPLITS = ("train", "val")
HELD_OUT_MODULUS = 10  # 1 in 10 inputs is held out
EMAIL_CHARS = 300  # characters of an e-mail that email_text keeps by default


# ---------------------------------------------------------------- the texts


def moby_dick_chapters() -> list[dict]:
    """Moby-Dick (Melville, 1851) as 135 chapters: dicts with 'chapter', 'title' and 'text'."""
    folder = assets.package_folder("moby-dick") / "package" / "data"
    files = sorted(folder.glob("chapter_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def moby_dick_text() -> str:
    """The whole novel as one string, chapters separated by a blank line."""
    return "\n\n".join(chapter["text"] for chapter in moby_dick_chapters())


SPAM_GROUPS = {"easy-ham-1": 0, "easy-ham-2": 0, "hard-ham-1": 0, "spam-1": 1, "spam-2": 1}


def spam_emails() -> list[dict]:
    """The SpamAssassin corpus (6,046 e-mails from 2002) as dicts, in a fixed order (group, then file name):

    'text' the body with the e-mail headers stripped (everything after the first blank line), 'subject'
    the Subject header ('' if none), 'label' 0 = ham / 1 = spam, 'group' (easy-ham-1, ..., spam-2), 'id'.
    """
    folder = assets.package_folder("spam-assassin") / "package" / "data"
    emails = []
    for group, label in SPAM_GROUPS.items():
        for path in sorted((folder / group).glob("*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            raw = record["text"].replace("\r\n", "\n")
            headers, _, body = raw.partition("\n\n")
            subject = next(
                (
                    line[len("subject:") :].strip()
                    for line in headers.split("\n")
                    if line.lower().startswith("subject:")
                ),
                "",
            )
            emails.append(
                {"id": record["id"], "group": group, "label": label, "subject": subject, "text": body.strip()}
            )
    if not emails:
        raise assets.AssetError(f"no e-mails found in {folder}. Fix: rm -rf {folder.parent.parent}; {assets.FIX_ALL}")
    return emails


def email_text(email: dict, max_chars: int | None = EMAIL_CHARS) -> str:
    """An e-mail as one line of text: subject and body, HTML tags dropped, whitespace collapsed, cut to
    max_chars characters (None: all of it). `email` is one of spam_emails()'s dicts."""
    text = re.sub(r"<[^>]*>", " ", f"{email['subject']} {email['text']}")
    text = " ".join(text.split())
    return text if max_chars is None else text[:max_chars]


AUSTEN_BOOKS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")


def austen_chapters() -> list[dict]:
    """Jane Austen's six novels (1811-1818) as chapters: dicts with 'book', 'chapter' (1, 2, ... per book) and
    'text' (paragraphs separated by a blank line, each paragraph's lines joined by spaces).

    From Debian's `r-cran-janeaustenr` (Project Gutenberg texts), so it needs apt-get (course.assets).
    """
    data = assets.package_folder("austen") / "usr" / "lib" / "R" / "site-library" / "janeaustenr" / "data"
    index = read_r_serialized(gzip.decompress((data / "Rdata.rdx").read_bytes()))
    database = (data / "Rdata.rdb").read_bytes()
    chapters = []
    for book in AUSTEN_BOOKS:
        offset, length = (int(v) for v in index["variables"][book])
        blob = database[offset : offset + length]  # a 4-byte length, then a zlib stream
        lines = read_r_serialized(zlib.decompress(blob[4:]))
        current: list[str] | None = None  # the front matter before chapter 1 is dropped
        for line in [*lines, "CHAPTER END"]:
            line = (line or "").strip()
            if re.fullmatch(r"chapter\s+([0-9]+|[ivxlc]+)\.?|chapter end", line, re.IGNORECASE):
                if current is not None:
                    paragraphs = " ".join(current).split("\x00")
                    text = "\n\n".join(p.strip() for p in paragraphs if p.strip())
                    chapters.append(
                        {"book": book, "chapter": sum(c["book"] == book for c in chapters) + 1, "text": text}
                    )
                current = []
            elif current is not None and not re.fullmatch(r"volume\s+[ivx]+\.?", line, re.IGNORECASE):
                current.append(line if line else "\x00")  # a blank line ends a paragraph
    if len(chapters) < 250:
        raise assets.AssetError(
            f"only {len(chapters)} chapters read from {data}. Fix: rm -rf {assets.DEB_PACKAGES['austen'].folder}; "
            + assets.FIX_ALL
        )
    return chapters


# ---------------------------------------------------------------- fixed splits


def heldout_chapters(chapters: list[dict], every: int = 10) -> tuple[list[dict], list[dict]]:
    """Moby-Dick split by chapter: every `every`-th chapter (10, 20, ...) is held out. -> (train, held_out)."""
    held = [c for c in chapters if int(c["chapter"]) % every == 0]
    return [c for c in chapters if int(c["chapter"]) % every != 0], held


def spam_draw(seed: int, n_train: int = 100, n_valid: int = 200, n_test: int = 200):
    """(train, valid, test) lists of spam_emails()'s dicts. train and valid: n_train and then n_valid e-mails of one
    random order (seeded by `seed`) of the nine tenths not held out, so a smaller training set is a prefix of a larger
    one. test: n_test held-out e-mails, the same for every seed (the order that seed 0 draws after its training
    order)."""
    seed, n_train = validate.integer(seed, "seed", minimum=0), validate.integer(n_train, "n_train")
    emails = spam_emails()
    held_out = [e for e in emails if is_held_out(email_text(e))]
    rest = [e for e in emails if not is_held_out(email_text(e))]
    if n_train + n_valid > len(rest) or n_test > len(held_out):
        raise ValueError(f"at most {len(rest)} training and validation, {len(held_out)} test e-mails")
    order = torch.randperm(len(rest), generator=torch.Generator().manual_seed(seed))
    test_draw = torch.Generator().manual_seed(0)
    torch.randperm(len(rest), generator=test_draw)  # seed 0's training order comes first
    test = [held_out[i] for i in torch.randperm(len(held_out), generator=test_draw)[:n_test].tolist()]
    train = [rest[i] for i in order[:n_train].tolist()]
    valid = [rest[i] for i in order[n_train : n_train + n_valid].tolist()]
    return train, valid, test


def is_held_out(key: str) -> bool:
    """Whether an input (its canonical text) belongs to the val split: a fixed hash, the same on any machine."""
    return zlib.crc32(key.encode("utf-8")) % HELD_OUT_MODULUS == 0


# ---------------------------------------------------------------- words and sentences


WORD_PATTERN = r"[A-Za-z]+(?:-[A-Za-z]+)*|'s\b|[0-9]+|[^\sA-Za-z0-9]"  # a possessive 's is a word of its own


def split_words(text: str) -> list[str]:
    """Words and punctuation marks of a text, the unit that NER labels: "Ahab's boat." -> Ahab, 's, boat, ."""
    return re.findall(WORD_PATTERN, text)


def split_sentences(text: str) -> list[str]:
    """A text's sentences: split after . ! or ? when a capital letter or a quote follows (not after Mr. Mrs. Dr.
    St.); paragraphs (lines) never share a sentence; whitespace inside a sentence is collapsed."""
    boundary = r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bDr\.)(?<!\bSt\.)(?<=[.!?])\s+(?=[\"'“‘A-Z])"
    return [" ".join(s.split()) for line in text.split("\n") for s in re.split(boundary, line) if s.strip()]


# ---------------------------------------------------------------- characters and token windows


class CharDataset:
    """A text as one long sequence of character ids, split into train (the first part) and val (the end).

    A batch is batch_size random windows: x = data[i : i + block_size] and y = data[i + 1 : i + block_size + 1],
    so y[t] is the character after x[0..t]: block_size next-character predictions per window.
    """

    def __init__(self, text: str, val_fraction: float = 0.1):
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        self.tokenizer = CharTokenizer().train(text)  # vocabulary = the sorted characters
        data = torch.tensor(self.tokenizer.encode(text), dtype=torch.long)
        n_val = int(len(data) * val_fraction)
        if n_val < 2 or len(data) - n_val < 2:
            raise ValueError(
                f"the text ({len(data)} characters) is too short to split with val_fraction {val_fraction}"
            )
        self.train_data, self.val_data = data[:-n_val], data[-n_val:]

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def encode(self, text: str) -> torch.Tensor:
        return torch.tensor(self.tokenizer.encode(text), dtype=torch.long)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids.tolist() if isinstance(ids, torch.Tensor) else ids)

    def get_batch(
        self,
        split: str = "train",
        batch_size: int = 32,
        block_size: int = 128,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x, y: (batch_size, block_size) ids, y shifted one character to the right of x."""
        data = self.train_data if validate.choice(split, "split", SPLITS) == "train" else self.val_data
        if not 1 <= block_size < len(data):
            raise ValueError(f"block_size must be in 1..{len(data) - 1} for the {split} split, got {block_size}")
        starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)  # (batch,)
        index = starts[:, None] + torch.arange(block_size)  # (batch, block)
        return data[index], data[index + 1]


def moby_dick_dataset(val_fraction: float = 0.1) -> CharDataset:
    """Moby-Dick as characters; the last val_fraction of the novel is the validation split."""
    return CharDataset(moby_dick_text(), val_fraction)


def token_windows(tokenizer, texts: list[str], max_len: int = 64) -> list[list[int]]:
    """Each text's WordPiece ids cut into consecutive windows of max_len - 2, framed by [CLS] ... [SEP].

    Every window has exactly max_len ids (a text's last, shorter piece is dropped), so they stack.
    """
    if max_len < 3:
        raise ValueError(f"max_len must be at least 3 ([CLS], one token, [SEP]), got {max_len}")
    body = max_len - 2
    windows = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]  # long texts are the point
        for start in range(0, len(ids), body):
            chunk = ids[start : start + body]
            if len(chunk) == body:
                windows.append([tokenizer.cls_token_id, *chunk, tokenizer.sep_token_id])
    return windows
