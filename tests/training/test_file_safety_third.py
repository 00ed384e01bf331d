"""A third adversarial pass over data safety, with inputs new to the suite (written by someone who
did not write the earlier fixes), kept as tests.

The pass tried: an ``export --overwrite`` and a republished folder observed at every rename of
their swap (a kill at any of those moments leaves what the observation saw); an export killed
inside its staged write, then run again; two exports at once to one new folder, the first paused
inside its write; a refused trainer whose new parent folder gets another process's nested folder,
hidden file, or replacement of a file the trainer wrote; and corpus cache links that lead out in
two hops or dangle. One finding: ``export --overwrite`` renamed the earlier export aside before
renaming the new one in, so a kill between the two left no export at all at the name (and the
next export to it deleted the earlier one, as a stale temporary); ``publish_dir`` (checkpoints,
prepared corpora) had the same gap. Both now swap in one atomic step where Linux can
(``renameat2`` with ``RENAME_EXCHANGE``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fuzz_cli import assert_refused, cli

from ffnlab.errors import FfnlabError

EXPORT_FILES = {"config.json", "model.safetensors"}
# a refusal that comes after the run folder exists (a too-short corpus is refused before it does)
LATE_REFUSAL = "refused once the run folder was made"


def tiny_model(seed: int):  # noqa: ANN201 - a DecoderLM
    from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
    from ffnlab.training.nn import build_model

    cfg = validate(ModelConfig(d_model=16, n_layers=1, vocab_size=40, ffn=FFNSpec("gelu", 32),
                               attn=AttentionSpec(n_heads=2), norm="layernorm", positions="learned", max_positions=8))
    return build_model(cfg, seed=seed, max_seq_len=8, norm_eps=1e-5)


def whole_export(folder: Path) -> bytes | None:
    """The weights of a complete export at ``folder``, or None (missing or partial)."""
    if not folder.is_dir() or not {p.name for p in folder.iterdir()} >= EXPORT_FILES:
        return None
    return (folder / "model.safetensors").read_bytes()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="one-step swaps are Linux's renameat2")
def test_an_overwriting_export_never_leaves_the_name_without_an_export(tmp_path, monkeypatch):
    import ffnlab.training.export as export

    out = tmp_path / "export"
    export.export_model(tiny_model(0), out)
    old = whole_export(out)
    seen: list[bytes | None] = []
    real_rename, real_exchange = os.rename, export.exchange

    def rename(a, b, *args, **kw):  # noqa: ANN001, ANN202 - os.rename's
        real_rename(a, b, *args, **kw)
        seen.append(whole_export(out))  # what a kill right now would leave

    def exchange(a, b):  # noqa: ANN001, ANN202
        done = real_exchange(a, b)
        seen.append(whole_export(out))
        return done

    monkeypatch.setattr(export.os, "rename", rename)
    monkeypatch.setattr(export, "exchange", exchange, raising=False)  # absent before the fix
    export.export_model(tiny_model(1), out, overwrite=True)
    new = whole_export(out)
    assert old is not None and new is not None and new != old
    assert seen and all(s in (old, new) for s in seen), [s is None for s in seen]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # nothing aside left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="one-step swaps are Linux's renameat2")
def test_a_republished_folder_is_never_missing(tmp_path, monkeypatch):
    import ffnlab.files as files

    final = tmp_path / "final"
    final.mkdir()
    (final / "a").write_text("old")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "a").write_text("new")
    seen = []
    real = os.replace

    def replace(a, b, *args, **kw):  # noqa: ANN001, ANN202
        real(a, b, *args, **kw)
        seen.append((final / "a").read_text() if (final / "a").is_file() else None)

    monkeypatch.setattr(files.os, "replace", replace)
    files.publish_dir(tmp, final)
    assert (final / "a").read_text() == "new" and all(s in ("old", "new") for s in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]


# An exporter in another process, paused inside its staged write (files half there) until its
# stdin closes: the state a kill, or a second exporter, meets.
EXPORTER = textwrap.dedent("""
    import contextlib, sys
    from pathlib import Path
    import ffnlab.training.export as export
    from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
    from ffnlab.training.nn import build_model

    def tiny_model(seed):
        cfg = validate(ModelConfig(d_model=16, n_layers=1, vocab_size=40, ffn=FFNSpec("gelu", 32),
                                   attn=AttentionSpec(n_heads=2), norm="layernorm", positions="learned",
                                   max_positions=8))
        return build_model(cfg, seed=seed, max_seq_len=8, norm_eps=1e-5)

    out = Path(sys.argv[1])
    real = export.staged_dir

    @contextlib.contextmanager
    def paused(final, **kw):
        with real(final, **kw) as tmp:
            yield tmp
            (tmp / "partial").write_bytes(b"x" * 100)
            print("ready", flush=True)
            sys.stdin.read()

    export.staged_dir = paused
    export.export_model(tiny_model(int(sys.argv[2])), out)
    print("done", flush=True)
""")


def paused_exporter(out: Path, seed: int) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", EXPORTER, str(out), str(seed)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line == "ready\n", (line, p.stderr.read() if p.poll() is not None else "")
    return p


def test_an_export_killed_inside_its_write_is_cleaned_by_the_next(tmp_path):
    from ffnlab.training.export import export_model

    out = tmp_path / "export"
    p = paused_exporter(out, 0)
    p.kill()
    p.wait(timeout=60)
    left = [q.name for q in tmp_path.iterdir()]
    assert not out.exists() and len(left) == 1 and left[0].startswith(".ffnlab-tmp-export-"), left
    export_model(tiny_model(1), out)
    assert whole_export(out) is not None and [q.name for q in tmp_path.iterdir()] == ["export"]


def test_a_second_export_leaves_a_live_exporters_write_alone(tmp_path):
    from ffnlab.training.export import export_model

    out = tmp_path / "export"
    first = paused_exporter(out, 0)
    try:
        export_model(tiny_model(1), out)  # the name is free: the first has not renamed yet
        second = whole_export(out)
    finally:
        stdout, stderr = first.communicate(timeout=60)
    assert second is not None and first.returncode is not None
    assert whole_export(out) == second  # the first, finding the name taken, did not replace it
    assert [q.name for q in tmp_path.iterdir()] == ["export"]  # the first's temporary is gone too


# -- a refused trainer and another process's files in its new parent ---------------------------

@pytest.mark.parametrize("intrusion", ["nested-folder", "hidden-file", "empty-folder", "link-out"])
def test_a_refused_trainer_keeps_what_another_process_put_in_its_new_parent(tmp_path, monkeypatch, intrusion):
    from ffnlab.training import trainer

    (tmp_path / "tiny.txt").write_text("to be or not to be, " * 300)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_text("keep")
    parent = tmp_path / "P"

    def build_while_another_writes(*a, **k):  # noqa: ANN002, ANN003, ANN202
        if intrusion == "nested-folder":
            (parent / "theirs" / "deep").mkdir(parents=True)
            (parent / "theirs" / "deep" / "notes.txt").write_text("mine")
        elif intrusion == "hidden-file":
            (parent / "a" / ".theirs").write_text("mine")
        elif intrusion == "empty-folder":
            (parent / "theirs").mkdir()
        else:
            (parent / "theirs").symlink_to(tmp_path / "elsewhere")
        raise FfnlabError(LATE_REFUSAL)

    monkeypatch.setattr(trainer, "_build", build_while_another_writes)
    r = cli("train", "--out", str(parent / "a"), "--set", "data.corpus=tiny.txt", "--set", "data.cache_dir=cache",
            "--set", "train.seq_len=64", "--set", "train.progress=off", where=tmp_path)
    assert_refused(r, LATE_REFUSAL)
    assert (tmp_path / "elsewhere" / "keep.txt").read_text() == "keep"
    if intrusion == "nested-folder":
        assert (parent / "theirs" / "deep" / "notes.txt").read_text() == "mine"
    elif intrusion == "hidden-file":
        assert (parent / "a" / ".theirs").read_text() == "mine"
    else:
        assert os.path.lexists(parent / "theirs")


def test_a_refused_trainer_keeps_a_lock_another_process_put_at_its_name(tmp_path, monkeypatch):
    """The trainer made run/.lock; another process replaced it (a new file at the name, its own
    lock): the folder holds something the trainer did not make, so it and the file stay."""
    from ffnlab.training import trainer

    (tmp_path / "tiny.txt").write_text("to be or not to be, " * 300)
    out = tmp_path / "run"

    def build_after_a_replacement(*a, **k):  # noqa: ANN002, ANN003, ANN202
        assert (out / ".lock").is_file()
        (tmp_path / "x").write_text("theirs")
        os.replace(tmp_path / "x", out / ".lock")
        raise FfnlabError(LATE_REFUSAL)

    monkeypatch.setattr(trainer, "_build", build_after_a_replacement)
    r = cli("train", "--out", str(out), "--set", "data.corpus=tiny.txt", "--set", "data.cache_dir=cache",
            "--set", "train.seq_len=64", "--set", "train.progress=off", where=tmp_path)
    assert_refused(r, LATE_REFUSAL)
    assert (out / ".lock").read_text() == "theirs"


# -- the corpus cache through links ---------------------------------------------------------------

@pytest.mark.parametrize("layout", ["two-hops-out", "dangling-out"])
def test_a_cache_link_leading_out_in_two_hops_or_dangling_is_refused(tmp_path, monkeypatch, layout):
    from ffnlab.training.corpus import prepare

    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir()
    (tmp_path / "text.txt").write_text("to be or not to be, that is the question. " * 40)
    monkeypatch.setenv("FFNLAB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    if layout == "two-hops-out":
        elsewhere.mkdir()
        (cache / "hop").symlink_to("../elsewhere")
        (cache / "corpora").symlink_to("hop")
    else:
        (cache / "corpora").symlink_to(elsewhere)  # not there yet: making it would make it outside
    with pytest.raises(FfnlabError, match="symlink") as e:
        prepare("text.txt", "byte", progress=False)
    assert "\n" not in str(e.value)
    assert not elsewhere.exists() or list(elsewhere.iterdir()) == []
