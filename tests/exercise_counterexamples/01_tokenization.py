"""Known-wrong and borrowed solutions for lecture 1's exercises: each must fail its check with a hint."""

WRONG_SOLUTIONS = {
    1: {
        "the learner's overlapping count taken as the saving": """
def best_merge(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, counts[pair]
""",
        "ties broken by the pairs' text: '(10, 9)' < '(9, 20)'": """
def best_merge(ids):
    saved, last_start = {}, {}
    for t, pair in enumerate(zip(ids, ids[1:])):
        if last_start.get(pair) == t - 1:
            continue
        saved[pair] = saved.get(pair, 0) + 1
        last_start[pair] = t
    pair = min(saved, key=lambda p: (-saved[p], str(p)))
    return pair, saved[pair]
""",
        "ties go to the first pair seen": """
def best_merge(ids):
    saved, last_start = {}, {}
    for t, pair in enumerate(zip(ids, ids[1:])):
        if last_start.get(pair) == t - 1:
            continue
        saved[pair] = saved.get(pair, 0) + 1
        last_start[pair] = t
    pair = max(saved, key=saved.get)
    return pair, saved[pair]
""",
        "skips every pair equal to the one before, even a skipped one: a run of four saves 1, not 2": """
def best_merge(ids):
    saved, previous = {}, None
    for pair in zip(ids, ids[1:]):
        if pair != previous:
            saved[pair] = saved.get(pair, 0) + 1
        previous = pair
    pair = min(saved, key=lambda p: (-saved[p], p))
    return pair, saved[pair]
""",
        "borrowed: the library's merge, once per pair": """
from scratch.l01_tokenization import merge

def best_merge(ids):
    saved = {pair: len(ids) - len(merge(ids, pair, -1)) for pair in set(zip(ids, ids[1:]))}
    pair = min(saved, key=lambda p: (-saved[p], p))
    return pair, saved[pair]
""",
        "the best pair, but its overlapping count instead of the saving": """
def best_merge(ids):
    saved, last_start, counts = {}, {}, {}
    for t, pair in enumerate(zip(ids, ids[1:])):
        counts[pair] = counts.get(pair, 0) + 1
        if last_start.get(pair) == t - 1:
            continue
        saved[pair] = saved.get(pair, 0) + 1
        last_start[pair] = t
    pair = min(saved, key=lambda p: (-saved[p], p))
    return pair, counts[pair]
""",
    },
    2: {
        "each word encoded without its leading space": """
def tokens_per_word(encode, text):
    return [len(encode(word)) for word in text.split(" ")]
""",
        "every word with a leading space, the first one too": """
def tokens_per_word(encode, text):
    return [len(encode(" " + word)) for word in text.split(" ")]
""",
        "characters per word instead of tokens": """
def tokens_per_word(encode, text):
    return [len(word) for word in text.split(" ")]
""",
        "the average spread evenly over the words": """
def tokens_per_word(encode, text):
    words = text.split(" ")
    return [round(len(encode(text)) / len(words))] * len(words)
""",
        "cuts GPT-2's encoding of the whole text with GPT-2's decode, whatever encode is": """
def tokens_per_word(encode, text):
    counts = []
    for token_id in gpt2.encode(text):
        if not counts or gpt2.decode([token_id]).startswith(" "):
            counts.append(0)
        counts[-1] += 1
    return counts
""",
        "the first word found by its text: a repeat of it later loses its space": """
def tokens_per_word(encode, text):
    words = text.split(" ")
    return [len(encode(word if word == words[0] else " " + word)) for word in words]
""",
        "the leading space taken as exactly one extra token": """
def tokens_per_word(encode, text):
    words = text.split(" ")
    return [len(encode(" " + word)) - (k == 0) for k, word in enumerate(words)]
""",
    },
    3: {
        "shortest match first": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk]
    return pieces
""",
        "no '##' on continuation pieces": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            if word[start:end] in vocab:
                pieces.append(word[start:end])
                start = end
                break
        else:
            return [unk]
    return pieces
""",
        "only the unmatched rest becomes [UNK]": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return pieces + [unk]
    return pieces
""",
        "backtracks to find a segmentation": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    def search(start):
        if start == len(word):
            return []
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                rest = search(end)
                if rest is not None:
                    return [piece] + rest
        return None
    found = search(0)
    return [unk] if found is None else found
""",
        "no length limit": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk]
    return pieces
""",
        "borrowed: MiniLM's tokenizer": """
from transformers import AutoTokenizer

_bert = AutoTokenizer.from_pretrained(assets.minilm_dir())

def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    return _bert.tokenize(word)
""",
        "borrowed: the tokenizers library's WordPiece model": """
from tokenizers import Tokenizer
from tokenizers.models import WordPiece

def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    model = WordPiece({piece: i for i, piece in enumerate(sorted(vocab) + [unk])}, unk_token=unk,
                      max_input_chars_per_word=max_chars)
    return Tokenizer(model).encode(word).tokens
""",
        "max_chars ignored: the limit fixed at 100": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > 100:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk]
    return pieces
""",
        "a word that is too long becomes '[UNK]', whatever unk is": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk]
    return pieces
""",
        "a missing '##' piece falls back to the piece without '##'": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
            if start > 0 and word[start:end] in vocab:
                pieces.append(word[start:end])
                start = end
                break
        else:
            return [unk]
    return pieces
""",
        "the length limit measured in UTF-8 bytes": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word.encode("utf-8")) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk]
    return pieces
""",
    },
    4: {
        "replays every merge in order": """
def encode_chunk(chunk, merges, byte_ids):
    ids = [byte_ids[b] for b in chunk.encode("utf-8")]
    for pair, new_id in sorted(merges.items(), key=lambda item: item[1]):
        merged, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                merged.append(new_id)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
    return ids
""",
        "merges the leftmost mergeable pair first": """
def encode_chunk(chunk, merges, byte_ids):
    ids = [byte_ids[b] for b in chunk.encode("utf-8")]
    while True:
        for i in range(len(ids) - 1):
            if (ids[i], ids[i + 1]) in merges:
                ids = ids[:i] + [merges[ids[i], ids[i + 1]]] + ids[i + 2:]
                break
        else:
            return ids
""",
        "merges the most frequent pair of the chunk first": """
def encode_chunk(chunk, merges, byte_ids):
    ids = [byte_ids[b] for b in chunk.encode("utf-8")]
    while True:
        counts = {}
        for pair in zip(ids, ids[1:]):
            if pair in merges:
                counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            return ids
        pair = min(counts, key=lambda p: (-counts[p], p))
        new_id, merged, i = merges[pair], [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                merged.append(new_id)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
""",
        "raw bytes instead of GPT-2's byte ids": """
def encode_chunk(chunk, merges, byte_ids):
    ids = list(chunk.encode("utf-8"))
    while len(ids) >= 2:
        learned = [(merges[pair], pair) for pair in zip(ids, ids[1:]) if pair in merges]
        if not learned:
            break
        new_id, pair = min(learned)
        merged, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                merged.append(new_id)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
    return ids
""",
        "borrowed: scratch's BPETokenizer": """
def encode_chunk(chunk, merges, byte_ids):
    return gpt2.encode(chunk)
""",
        "hostile: redefines forbid as a no-op, then borrows GPT-2's own encode": """
import contextlib

@contextlib.contextmanager
def forbid(*names, hint):
    yield

def encode_chunk(chunk, merges, byte_ids):
    return gpt2.encode(chunk)
""",
        "GPT-2's byte ids from the set-up, not the byte_ids given": """
def encode_chunk(chunk, merges, byte_ids):
    ids = [gpt2.byte_ids[b] for b in chunk.encode("utf-8")]
    while len(ids) >= 2:
        learned = [(merges[pair], pair) for pair in zip(ids, ids[1:]) if pair in merges]
        if not learned:
            break
        new_id, pair = min(learned)
        merged, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                merged.append(new_id)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
    return ids
""",
        "GPT-2's merges from the set-up, not the merges given": """
def encode_chunk(chunk, merges, byte_ids):
    merges = gpt2.merges
    ids = [byte_ids[b] for b in chunk.encode("utf-8")]
    while len(ids) >= 2:
        learned = [(merges[pair], pair) for pair in zip(ids, ids[1:]) if pair in merges]
        if not learned:
            break
        new_id, pair = min(learned)
        merged, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                merged.append(new_id)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
    return ids
""",
        "occurrences merged right to left: [a, a, a] becomes [a, aa]": """
def encode_chunk(chunk, merges, byte_ids):
    ids = [byte_ids[b] for b in chunk.encode("utf-8")]
    while len(ids) >= 2:
        learned = [(merges[pair], pair) for pair in zip(ids, ids[1:]) if pair in merges]
        if not learned:
            break
        new_id, pair = min(learned)
        merged, i = [], len(ids) - 1
        while i >= 0:
            if i >= 1 and (ids[i - 1], ids[i]) == pair:
                merged.insert(0, new_id)
                i -= 2
            else:
                merged.insert(0, ids[i])
                i -= 1
        ids = merged
    return ids
""",
        "the earliest merge found by comparing new ids as text": """
def encode_chunk(chunk, merges, byte_ids):
    ids = [byte_ids[b] for b in chunk.encode("utf-8")]
    while len(ids) >= 2:
        learned = [(str(merges[pair]), pair) for pair in zip(ids, ids[1:]) if pair in merges]
        if not learned:
            break
        new_id, pair = min(learned)
        new_id = int(new_id)
        merged, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                merged.append(new_id)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
    return ids
""",
    },
    5: {
        "the best segmentation only (Viterbi), no average": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    best, start_of_last = [1.0] + [0.0] * L, [0] * (L + 1)
    for j in range(1, L + 1):
        for i in range(max(0, j - longest), j):
            if word[i:j] in probs and best[i] * probs[word[i:j]] > best[j]:
                best[j], start_of_last[j] = best[i] * probs[word[i:j]], i
    counts, j = {}, L
    while j > 0:
        i = start_of_last[j]
        counts[word[i:j]] = counts.get(word[i:j], 0.0) + 1.0
        j = i
    return counts
""",
        "not normalised by the total probability": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    spans = [(i, j, probs[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - longest), j)
             if word[i:j] in probs]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    beta = [0.0] * L + [1.0]
    for i, j, p in sorted(spans, key=lambda span: -span[0]):
        beta[i] += p * beta[j]
    counts = {}
    for i, j, p in spans:
        counts[word[i:j]] = counts.get(word[i:j], 0.0) + alpha[i] * p * beta[j]
    return counts
""",
        "forward only, no backward": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    spans = [(i, j, probs[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - longest), j)
             if word[i:j] in probs]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    counts = {}
    for i, j, p in spans:
        counts[word[i:j]] = counts.get(word[i:j], 0.0) + alpha[i] * p / alpha[L]
    return counts
""",
        "enumerates every segmentation": """
import itertools

def expected_piece_counts(word, probs, longest):
    weights = {}
    for cuts in itertools.product([False, True], repeat=len(word) - 1):
        pieces, start = [], 0
        for position, cut in enumerate(cuts, start=1):
            if cut:
                pieces.append(word[start:position])
                start = position
        pieces.append(word[start:])
        if all(len(piece) <= longest and piece in probs for piece in pieces):
            weight = 1.0
            for piece in pieces:
                weight *= probs[piece]
            weights[tuple(pieces)] = weight
    total, counts = sum(weights.values()), {}
    for pieces, weight in weights.items():
        for piece in pieces:
            counts[piece] = counts.get(piece, 0.0) + weight / total
    return counts
""",
        "counts each piece once per word, not per occurrence": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    spans = [(i, j, probs[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - longest), j)
             if word[i:j] in probs]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    beta = [0.0] * L + [1.0]
    for i, j, p in sorted(spans, key=lambda span: -span[0]):
        beta[i] += p * beta[j]
    counts = {}
    for i, j, p in spans:
        counts[word[i:j]] = max(counts.get(word[i:j], 0.0), alpha[i] * p * beta[j] / alpha[L])
    return counts
""",
        "hostile: redefines LookupOnly as a plain dict, then walks the whole table": """
class LookupOnly(dict):
    def __init__(self, mapping, budget, what):
        super().__init__(mapping)

def expected_piece_counts(word, probs, longest):
    table = dict(probs.items())  # every piece, whatever the word
    L = len(word)
    spans = [
        (i, j, table[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - longest), j) if word[i:j] in table
    ]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    beta = [0.0] * L + [1.0]
    for i, j, p in sorted(spans, key=lambda span: -span[0]):
        beta[i] += p * beta[j]
    counts = {}
    for i, j, p in spans:
        share = alpha[i] * p * beta[j] / alpha[L]
        if share > 0:
            counts[word[i:j]] = counts.get(word[i:j], 0.0) + share
    return counts
""",
        "every substring up to longest assumed to be a piece": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    spans = [(i, j, probs[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - longest), j)]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    beta = [0.0] * L + [1.0]
    for i, j, p in sorted(spans, key=lambda span: -span[0]):
        beta[i] += p * beta[j]
    counts = {}
    for i, j, p in spans:
        counts[word[i:j]] = counts.get(word[i:j], 0.0) + alpha[i] * p * beta[j] / alpha[L]
    return counts
""",
        "longest ignored: pieces of up to 3 characters": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    spans = [(i, j, probs[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - 3), j)
             if word[i:j] in probs]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    beta = [0.0] * L + [1.0]
    for i, j, p in sorted(spans, key=lambda span: -span[0]):
        beta[i] += p * beta[j]
    counts = {}
    for i, j, p in spans:
        counts[word[i:j]] = counts.get(word[i:j], 0.0) + alpha[i] * p * beta[j] / alpha[L]
    return counts
""",
        "pieces one character short of longest: range(j - longest + 1, j)": """
def expected_piece_counts(word, probs, longest):
    L = len(word)
    spans = [(i, j, probs[word[i:j]]) for j in range(1, L + 1) for i in range(max(0, j - longest + 1), j)
             if word[i:j] in probs]
    alpha = [1.0] + [0.0] * L
    for i, j, p in spans:
        alpha[j] += alpha[i] * p
    beta = [0.0] * L + [1.0]
    for i, j, p in sorted(spans, key=lambda span: -span[0]):
        beta[i] += p * beta[j]
    counts = {}
    for i, j, p in spans:
        counts[word[i:j]] = counts.get(word[i:j], 0.0) + alpha[i] * p * beta[j] / alpha[L]
    return counts
""",
    },
}

# Written fresh for issue 34, by kind: (a) an argument ignored, (c) an edge case the statement covers, (e) tampering
# after the set-up (returned objects whose == always agrees, the built-ins' or course.exercises' names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(e) an always-equal tuple, with builtins.all rebound": """
import builtins

class Always(tuple):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = tuple.__hash__

builtins.all = lambda iterable: True

def best_merge(ids):
    return Always(((ids[0], ids[1]), 1))
""",
        "(c) a run of equal ids counted as overlapping pairs when the run has odd length": """
def best_merge(ids):
    saved = {}
    for pair in zip(ids, ids[1:]):
        saved[pair] = saved.get(pair, 0) + 1
    for pair in saved:
        if pair[0] == pair[1]:
            saved[pair] = (saved[pair] + 1) // 2
    pair = min(saved, key=lambda p: (-saved[p], p))
    return pair, saved[pair]
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(e) an always-equal list": """
class Always(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

def tokens_per_word(encode, text):
    return Always([1] * len(text.split(" ")))
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(e) forbid rebound in course.exercises, then transformers' own WordPiece": """
import contextlib

import course.exercises
from transformers.models.bert.tokenization_bert_legacy import WordpieceTokenizer

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    return WordpieceTokenizer(vocab={piece: i for i, piece in enumerate(vocab)}, unk_token=unk,
                              max_input_chars_per_word=max_chars).tokenize(word)
""",
        "(a) max_chars ignored: BERT's 100 always": """
def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > 100:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk]
    return pieces
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(e) an always-equal dict": """
class Always(dict):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

def expected_piece_counts(word, probs, longest):
    return Always({word[0]: 1.0})
""",
    }
)

# Written fresh for issue 34, the kinds lecture 1 still lacked: (b) an integer dtype too small for the ids the statement
# names, (d) the rule dodged through another path to the same computation (a sibling copy of the forbidden function).
WRONG_SOLUTIONS[1].update(
    {
        "(b) ids packed into a uint8 array: merged ids of 256 and more wrap around": """
import numpy as np

def best_merge(ids):
    packed = np.array(ids).astype(np.uint8)
    saved, last_start = {}, {}
    for t, pair in enumerate(zip(packed.tolist(), packed[1:].tolist())):
        if last_start.get(pair) == t - 1:
            continue
        saved[pair] = saved.get(pair, 0) + 1
        last_start[pair] = t
    pair = min(saved, key=lambda p: (-saved[p], p))
    return pair, saved[pair]
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(d) transformers' ProphetNet copy of BERT's WordPiece": """
from transformers.models.prophetnet.tokenization_prophetnet import WordpieceTokenizer

def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    return WordpieceTokenizer(vocab={piece: i for i, piece in enumerate(vocab)}, unk_token=unk,
                              max_input_chars_per_word=max_chars).tokenize(word)
""",
    }
)
