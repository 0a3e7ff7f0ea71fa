"""Assets are pinned, verified, described in data/README.md, and fail with an error that says the fix."""

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from course import assets, corpora
from course.rdata import read_r_serialized

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.assets
@pytest.mark.parametrize("key", assets.all_assets())
def test_every_asset_is_present_and_verified(key):
    if key in assets.OPTIONAL_ASSETS and not assets.apt_available():
        pytest.skip(f"{key} is optional and needs apt-get, which this system lacks")
    assert assets.verify(key) == "OK"


def test_readme_lists_every_asset_with_version_and_checksum():
    readme = (ROOT / "data" / "README.md").read_text()
    for pkg in [*assets.NPM_PACKAGES.values(), *assets.PIP_PACKAGES.values(), *assets.DEB_PACKAGES.values()]:
        assert pkg.name in readme and pkg.version in readme, pkg.spec
        checksum = pkg.file_sha256 if pkg.kind == "pip" else pkg.sha256
        assert checksum in readme, f"data/README.md lacks the checksum of {pkg.spec}"


def test_assets_are_not_committed():
    tracked = subprocess.run(["git", "ls-files", "data"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "data/assets/" not in tracked and "data/cache/" not in tracked


@pytest.mark.assets
def test_moby_dick_is_the_whole_novel():
    chapters = corpora.moby_dick_chapters()
    assert len(chapters) == 135
    assert chapters[0]["text"].startswith("Call me Ishmael.")
    assert len(corpora.moby_dick_text()) > 1_000_000


@pytest.mark.assets
def test_gpt2_files_are_the_originals():
    encoder, merges = assets.gpt2_bpe_files()
    assert assets.sha256_of(encoder) == assets.GPT2_ENCODER_JSON_SHA256
    assert merges.read_text(encoding="utf-8").startswith("#version: 0.2")


@pytest.mark.assets
@pytest.mark.slow
def test_smollm2_cache_loads_offline():
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(assets.smollm2_dir())
    assert config.model_type == "llama" and "quantization_config" not in config.to_dict()


def fake_package(tmp_path, monkeypatch, sha256="0" * 64):
    monkeypatch.setattr(assets, "ASSET_DIR", tmp_path)
    return assets.Package("npm", "left-pad", "1.3.0", sha256, "WTFPL")


def test_missing_npm_names_the_fix(tmp_path, monkeypatch):
    pkg = fake_package(tmp_path, monkeypatch)
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    with pytest.raises(assets.AssetError, match=r"npm.*not on PATH.*make assets"):
        assets._fetch_npm(pkg)


def test_registry_failure_names_the_fix(tmp_path, monkeypatch):
    pkg = fake_package(tmp_path, monkeypatch)
    monkeypatch.setattr(assets.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(
        assets.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", "ENOTFOUND registry")
    )
    with pytest.raises(assets.AssetError, match=r"(?s)npm pack left-pad@1.3.0.*failed.*ENOTFOUND.*make assets"):
        assets._fetch_npm(pkg)


def test_checksum_mismatch_is_refused(tmp_path, monkeypatch):
    pkg = fake_package(tmp_path / "assets", monkeypatch)

    def fake_npm_pack(command, **kwargs):  # writes a small valid .tgz where npm would
        destination = Path(command[command.index("--pack-destination") + 1])
        with tarfile.open(destination / "left-pad-1.3.0.tgz", "w:gz") as tar:
            info = tarfile.TarInfo("package/index.js")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"//\n"))
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(assets.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(assets.subprocess, "run", fake_npm_pack)
    with pytest.raises(assets.AssetError, match="checksum mismatch"):
        assets._fetch_npm(pkg)
    assert not (pkg.folder / ".verified").exists()


def test_unknown_asset_is_a_key_error():
    with pytest.raises(KeyError, match="unknown asset 'gpt2-weights'"):
        assets.verify("gpt2-weights")


@pytest.mark.assets
def test_spam_emails_are_labelled_bodies_without_headers():
    emails = corpora.spam_emails()
    assert len(emails) == 6046
    counts = {label: sum(e["label"] == label for e in emails) for label in (0, 1)}
    assert counts == {0: 2500 + 1400 + 250, 1: 500 + 1396}
    assert {e["group"] for e in emails} == set(corpora.SPAM_GROUPS)
    assert all(e["label"] == corpora.SPAM_GROUPS[e["group"]] for e in emails)
    first = emails[0]
    assert first["group"] == "easy-ham-1" and first["subject"] == "Re: New Sequences Window"
    # headers are gone (the raw first e-mail starts "From exmh-workers-admin@redhat.com ... Return-Path: ...");
    # the odd body that starts with headers is a forwarded or bounced message, quoted whole
    assert not first["text"].startswith("From exmh") and "Return-Path:" not in first["text"]
    assert sum(e["text"].startswith(("Received:", "Return-Path:")) for e in emails) <= 5
    assert sum(bool(e["text"]) for e in emails) > 6000


@pytest.mark.assets
def test_spam_draws_share_one_test_set_and_nest_their_sizes():
    train, valid, test = corpora.spam_draw(0, n_train=100, n_valid=50, n_test=200)
    assert (len(train), len(valid), len(test)) == (100, 50, 200)
    ids = [[(e["group"], e["id"]) for e in part] for part in (train, valid, test)]
    assert not set(ids[0]) & set(ids[1]) and not (set(ids[0]) | set(ids[1])) & set(ids[2])
    assert all(corpora.is_held_out(corpora.email_text(e)) for e in test)
    assert not any(corpora.is_held_out(corpora.email_text(e)) for e in train + valid)
    other_train, _, other_test = corpora.spam_draw(1, n_train=100, n_test=200)
    assert [(e["group"], e["id"]) for e in other_test] == ids[2]
    assert [(e["group"], e["id"]) for e in other_train] != ids[0]
    assert [(e["group"], e["id"]) for e in corpora.spam_draw(0, n_train=20)[0]] == ids[0][:20]
    with pytest.raises(ValueError, match="seed must be at least 0"):
        corpora.spam_draw(-1)
    with pytest.raises(ValueError, match="at most"):
        corpora.spam_draw(0, n_test=10_000)


@pytest.mark.assets
def test_austen_is_six_whole_novels():
    if not assets.apt_available():
        pytest.skip("Jane Austen's novels come from a Debian package: this system has no apt-get")
    chapters = corpora.austen_chapters()
    per_book = {book: sum(c["book"] == book for c in chapters) for book in corpora.AUSTEN_BOOKS}
    assert per_book == {
        "sensesensibility": 50,
        "prideprejudice": 61,
        "mansfieldpark": 48,
        "emma": 55,
        "northangerabbey": 31,
        "persuasion": 24,
    }
    pride = next(c for c in chapters if c["book"] == "prideprejudice")
    assert pride["text"].startswith("It is a truth universally acknowledged, that a single man in possession of a good")
    assert 3_900_000 < sum(len(c["text"]) for c in chapters) < 4_100_000


def test_missing_apt_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(assets, "ASSET_DIR", tmp_path)
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    with pytest.raises(assets.AssetError, match="no `apt-get`.*optional"):
        assets.package_folder("austen")


def _xdr(*parts) -> bytes:
    import struct

    out = b"X\n" + struct.pack(">3i", 2, 0x040000, 0x020300)
    for part in parts:
        out += part if isinstance(part, bytes) else struct.pack(">i", part)
    return out


def test_read_r_serialized_decodes_vectors_and_names():
    import struct

    def char(s):  # a CHARSXP, UTF-8 flagged
        return struct.pack(">2i", 9 | (1 << 15), len(s)) + s.encode()

    # list(a = c("x", NA), b = 1:2): a VECSXP with a names attribute (a pairlist tagged by the symbol "names")
    data = _xdr(
        19 | (1 << 9),
        2,
        16,
        2,
        char("x"),
        9,
        -1,
        13,
        2,
        1,
        2,
        2 | (1 << 10),
        1,
        char("names"),
        16,
        2,
        char("a"),
        char("b"),
        254,
    )
    assert read_r_serialized(data) == {"a": ["x", None], "b": [1, 2]}
    assert read_r_serialized(_xdr(14, 1, struct.pack(">d", 0.5))) == [0.5]
    with pytest.raises(ValueError, match="not an R serialization"):
        read_r_serialized(b"RDX2\n")
    with pytest.raises(ValueError, match="R type 3 is not supported"):
        read_r_serialized(_xdr(3, 0))
