"""Each reliability case of the CLI: one ``error:`` line naming the input, exit 2, folders as they were.

Also the checkpoint guarantees: a damaged but parseable checkpoint is refused before anything in
the run folder changes, and a SIGKILL inside a checkpoint write (mid-file, or before the rename)
leaves no stray temp folder once resumed and the resumed curve equals the uninterrupted one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from fuzz_cli import assert_refused, cli, refused_untouched, snapshot

from ffnlab.errors import FfnlabError

TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=32", "train.batch_size=4",
        "train.warmup_steps=2", "train.lr=0.01", "train.eval_tokens=256", "train.progress=off",
        "train.tensorboard=false", "train.threads=1", "train.peak_flops=1e11", "train.max_steps=12",
        "train.checkpoint_every=4", "train.eval_every=4", "train.log_every=1", "train.keep_last=2"]
LATIN1 = "caf\xe9: 1\n".encode("latin-1")


def sets(*items: str) -> list[str]:
    return [a for item in items for a in ("--set", item)]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("rel_cache"))


def train_argv(out: Path, cache: str, *extra: str) -> list[str]:
    return ["train", "--out", str(out), *sets(*TINY, f"data.cache_dir={cache}", *extra)]


def subprocess_train(argv: list[str], prelude: str = "") -> subprocess.CompletedProcess:
    code = prelude + "\nimport sys\nfrom ffnlab.cli import main\nmain(sys.argv[1:])\n"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=600)


def losses(run: Path) -> list[tuple[int, float]]:
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"] if r["kind"] == "train" else r["val_loss"]) for r in recs]


@pytest.fixture(scope="module")
def reference(tmp_path_factory, cache) -> Path:
    """An uninterrupted 12-step run with checkpoints at 4, 8 and 12."""
    out = tmp_path_factory.mktemp("ref") / "run"
    p = subprocess_train(train_argv(out, cache))
    assert p.returncode == 0, p.stderr[-3000:]
    return out


# -- non-UTF-8 files, huge numbers --------------------------------------------------------------

@pytest.mark.parametrize("command", ["train", "sweep", "verify", "claims", "report"])
def test_non_utf8_files_are_refused_by_every_command(tmp_path, command):
    (tmp_path / "f.yaml").write_bytes(LATIN1)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sweep.json").write_bytes(LATIN1)
    argv = {"train": ["train", "f.yaml", "--out", "r"], "sweep": ["sweep", "f.yaml"],
            "verify": ["verify", "--preset", "f.yaml", "--out", "v"], "claims": ["claims", "--evidence", "f.yaml"],
            "report": ["report", "s"]}[command]
    refused_untouched(tmp_path, *argv, fragment="not UTF-8")


@pytest.mark.parametrize("argv, fragment", [
    (["size", "--d-model", "4096", "--ratio", "1e5000"], "--ratio"),
    (["size", "--d-model", "4096", "--ratio", "1e-5000"], "--ratio"),
    (["train", "--out", "r", "--set", "model.ffn.ratio=1e5000"], "ratio"),
    (["train", "--out", "r", "--set", "train.seed=99999999999999999999"], "train.seed"),
    (["train", "--out", "r", "--seed", "99999999999999999999"], "train.seed"),
])
def test_huge_numbers_are_refused(tmp_path, argv, fragment):
    refused_untouched(tmp_path, *argv, fragment=fragment.lstrip("-"))


def test_config_json_with_a_5001_digit_width(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": 1' + "0" * 5000 + "}")
    refused_untouched(tmp_path, "audit", "config.json", fragment="config.json")


# -- garbage report folders ----------------------------------------------------------------------

GOOD_RUN = {"run": "a-s0", "arm": "a", "seed": 0, "d_model": 32, "d_ff": 128, "params_non_embedding": 10,
            "train_flops_per_token": 100, "config": {"model": {"ffn": {"kind": "gelu", "rule": "ratio"}}}}


@pytest.mark.parametrize("record, metrics, fragment", [
    ({}, None, "no 'spec'"),
    ([], None, "mapping"),
    ({"runs": [], "spec": {"name": "x", "reference": "a"}}, None, "runs"),
    ({"runs": [GOOD_RUN], "spec": {"reference": "a"}}, {"kind": "eval", "step": 4, "val_loss": 2.0}, "tokens"),
    ({"runs": [{**GOOD_RUN, "run": ".."}], "spec": {"reference": "a"}}, None, "runs[0].run"),
    ({"runs": [{**GOOD_RUN, "d_model": "big"}], "spec": {"reference": "a"}}, None, "d_model"),
])
def test_garbage_report_folders_are_refused(tmp_path, record, metrics, fragment):
    (tmp_path / "s" / "runs" / "a-s0").mkdir(parents=True)
    (tmp_path / "s" / "sweep.json").write_text(json.dumps(record))
    if metrics is not None:
        (tmp_path / "s" / "runs" / "a-s0" / "metrics.jsonl").write_text(json.dumps(metrics) + "\n")
    refused_untouched(tmp_path, "report", "s", fragment=fragment)


def test_report_of_a_missing_folder_leaves_nothing(tmp_path):
    refused_untouched(tmp_path, "report", "nonexistent", fragment="nonexistent")


# -- absurd sizes, bounded searches --------------------------------------------------------------

@pytest.mark.parametrize("override, fragment", [
    ("model.d_model=1000000", "GiB"), ("train.batch_size=100000000", "train.batch_size"),
    ("train.grad_accum=1000000000", "train.grad_accum"), ("model.n_layers=1000000", "model.n_layers"),
    ("model.n_layers=9000", "GiB"), ("train.seq_len=1000000", "GiB"),
])
def test_absurd_sizes_are_refused_up_front_with_the_number(tmp_path, override, fragment):
    line = refused_untouched(tmp_path, "train", "--out", "r", "--set", override, fragment=fragment)
    if fragment == "GiB":
        assert "needs about" in line and "this machine has" in line


def test_memory_estimate_counts_weights_gradients_and_adamw_exactly():
    from ffnlab.sizing.counting import count_params
    from ffnlab.training import runconfig
    from ffnlab.training.memory import check_fits, estimate

    cfg = runconfig.load(None, ["model.d_model=64", "model.n_layers=2", "model.n_heads=2"])
    need = estimate(cfg, 256)
    n = count_params(runconfig.model_config(cfg, 256)).total
    assert need.state == 16 * n  # fp32 weights + fp32 grads + two fp32 AdamW moments
    assert need.batch_index == 8 * 16 * 1  # int64 offsets of batch_size x grad_accum windows
    assert check_fits(cfg, "cpu", vocab_size=256, ram=need.total) == need
    with pytest.raises(FfnlabError, match="needs about .* of RAM"):
        check_fits(cfg, "cpu", vocab_size=256, ram=need.total - 1)
    with pytest.raises(FfnlabError, match="the GPU has"):
        check_fits(cfg, "cuda:0", vocab_size=256, ram=10**15, gpu=need.state)


@pytest.mark.parametrize("base, extra, fragment", [
    ({"model": {"d_model": "1e12"}}, {}, "model.d_model"),
    ({"model": {"d_model": 10**12}}, {}, "model.d_model"),
    ({"model": {"d_model": 2**20, "n_heads": 1}}, {"d_step": 1}, "would try"),
])
def test_iso_params_search_is_bounded(tmp_path, base, extra, fragment):
    spec = {"name": "big", "seeds": [0], "base": base, **extra,
            "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
                     {"name": "b", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 2}}]}
    if fragment == "would try":
        from ffnlab.experiments.sweep.spec import resolve, spec_from_dict

        with pytest.raises(FfnlabError, match=fragment):
            resolve(spec_from_dict(spec), 256)
        return
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    refused_untouched(tmp_path, "sweep", "spec.yaml", fragment=fragment)


# -- checkpoints ---------------------------------------------------------------------------------

def _edit_state(ckpt: Path, change) -> None:
    state = json.loads((ckpt / "state.json").read_text())
    change(state)
    (ckpt / "state.json").write_text(json.dumps(state))


def _edit_optim(ckpt: Path, key_part: str, shape: tuple[int, ...] | None) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    t = load_file(str(ckpt / "optim.safetensors"))
    key = next(k for k in sorted(t) if key_part in k)
    if shape is None:
        del t[key]
    else:
        t[key] = torch.zeros(shape, dtype=t[key].dtype)
    save_file(t, str(ckpt / "optim.safetensors"))


def _edit_weights(ckpt: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    t = load_file(str(ckpt / "model.safetensors"))
    key = sorted(t)[0]
    t[key] = torch.zeros(t[key].shape[0] + 1, *t[key].shape[1:])
    save_file(t, str(ckpt / "model.safetensors"))


DAMAGE = {
    "elapsed_s is text": lambda c: _edit_state(c, lambda s: s.update(elapsed_s="abc")),
    "betas is a string": lambda c: _edit_state(c, lambda s: s["optimizer"]["param_groups"][0].update(betas="ab")),
    "JSON Infinity": lambda c: (c / "state.json").write_text(
        (c / "state.json").read_text().replace('"elapsed_s": ', '"elapsed_s": Infinity, "x": ', 1)),
    "lr negative": lambda c: _edit_state(c, lambda s: s["optimizer"]["param_groups"][0].update(lr=-1.0)),
    "weight wrong shape": lambda c: _edit_weights(c),
    "step -5": lambda c: _edit_state(c, lambda s: s.update(step=-5)),
    "step past max_steps": lambda c: _edit_state(c, lambda s: s.update(step=10**6)),
    "tokens disagree": lambda c: _edit_state(c, lambda s: s.update(tokens=s["tokens"] + 1)),
    "state.json not UTF-8": lambda c: (c / "state.json").write_bytes(LATIN1),
    "state.json a list": lambda c: (c / "state.json").write_text("[]"),
    "exp_avg wrong shape": lambda c: _edit_optim(c, ".exp_avg", (3, 3)),
    "rng state missing": lambda c: _edit_optim(c, "rng.cpu", None),
    "a moment missing its param": lambda c: _edit_state(
        c, lambda s: s["optimizer"]["scalars"].update({"state.999.step": 1.0})),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_bad_checkpoint_is_refused_before_the_run_folder_changes(tmp_path, reference, cache, damage):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    (run / "summary.json").unlink()  # killed after its last checkpoint: a finished run's resume reads none
    DAMAGE[damage](sorted((run / "checkpoints").glob("step-*"))[-1])
    n_metrics = len((run / "metrics.jsonl").read_text().splitlines())
    line = refused_untouched(tmp_path, *train_argv(run, cache), "--resume", fragment="step-0000012")
    assert any(w in line for w in ("is invalid", "is corrupt", "does not fit")), line
    assert len((run / "metrics.jsonl").read_text().splitlines()) == n_metrics


KILL = textwrap.dedent("""
    import os, signal
    import safetensors.torch as st
    from ffnlab.training import checkpoint
    POINT, STEP = {point!r}, "step-0000008"

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def half_then_die(real):
        def save(obj, filename, *a, **k):
            real(obj, filename, *a, **k)
            if STEP in str(filename) and POINT in str(filename):
                data = open(filename, "rb").read()
                open(filename, "wb").write(data[: len(data) // 2])
                die()
        return save

    st.save_file = half_then_die(st.save_file)  # optim.safetensors
    st.save_model = half_then_die(st.save_model)  # model.safetensors
    real_publish = checkpoint.publish_dir

    def publish(tmp, final):
        if POINT == "publish" and final.name == STEP:
            die()
        real_publish(tmp, final)

    checkpoint.publish_dir = publish
""")


@pytest.mark.parametrize("point", ["model", "optim", "publish"])
def test_kill_inside_a_checkpoint_write_then_resume(tmp_path, reference, cache, point):
    run = tmp_path / "run"
    killed = subprocess_train(train_argv(run, cache), KILL.format(point=point))
    assert killed.returncode == -9, killed.stderr[-2000:]
    ckpts = run / "checkpoints"
    assert [p.name for p in ckpts.iterdir() if p.name.startswith(".ffnlab-tmp-")]  # the kill landed inside the write
    assert [p.name for p in ckpts.glob("step-*")] == ["step-0000004"]  # the half-written one is not published
    resumed = subprocess_train([*train_argv(run, cache), "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert not [p for p in run.rglob(".ffnlab-tmp-*")] and not [p for p in run.rglob(".ffnlab-old-*")]
    assert losses(run) == losses(reference)  # bit for bit, evals included


def test_remove_stale_removes_only_marked_temp_leftovers(tmp_path):
    """Only folders carrying ffnlab's marker (of a process that is gone) go; names alone never decide."""
    from ffnlab.files import MARK
    from ffnlab.training.checkpoint import remove_stale

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()  # a process id that no longer runs
    marker = f"created by ffnlab, process {dead}; ffnlab may remove this folder\n"
    for d in ("checkpoints/.ffnlab-tmp-step-0000004-1-ab", ".ffnlab-tmp-metrics.jsonl-1-cd"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / MARK).write_text(marker)
        (tmp_path / d / "data").write_text("x")
    (tmp_path / "checkpoints" / f".ffnlab-tmp-empty-{dead}-ef").mkdir()  # killed before its marker: empty
    (tmp_path / "checkpoints" / f".ffnlab-tmp-live-{os.getpid()}-ef").mkdir()  # a live writer's, marker to come
    (tmp_path / "checkpoints" / ".ffnlab-tmp-users-1-01").mkdir()  # a user's folder with the name
    (tmp_path / "checkpoints" / ".ffnlab-tmp-users-1-01" / "notes.txt").write_text("mine")
    (tmp_path / "checkpoints" / ".ffnlab-old-forged").mkdir()  # a forged marker that says nothing
    (tmp_path / "checkpoints" / ".ffnlab-old-forged" / MARK).write_text("hello")
    (tmp_path / "checkpoints" / "step-0000004").mkdir()
    (tmp_path / ".tmp-metrics.jsonl-1-ab").write_text("x")  # the old naming, unmarked: left alone
    (tmp_path / "metrics.jsonl").write_text("{}")
    assert len(remove_stale(tmp_path)) == 3
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        ".tmp-metrics.jsonl-1-ab", "checkpoints", "checkpoints/.ffnlab-old-forged",
        "checkpoints/.ffnlab-old-forged/.ffnlab-owned", f"checkpoints/.ffnlab-tmp-live-{os.getpid()}-ef",
        "checkpoints/.ffnlab-tmp-users-1-01",
        "checkpoints/.ffnlab-tmp-users-1-01/notes.txt", "checkpoints/step-0000004", "metrics.jsonl"]


# -- escapes, folders of failed commands ---------------------------------------------------------

def test_a_sweep_named_dotdot_writes_nothing(tmp_path):
    (tmp_path / "w").mkdir()
    spec = {"name": "..", "seeds": [0], "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}}]}
    (tmp_path / "w" / "spec.yaml").write_text(yaml.safe_dump(spec))
    refused_untouched(tmp_path / "w", "sweep", "spec.yaml", fragment="name")


def test_export_checkpoint_outside_checkpoints_is_refused(tmp_path, reference):
    shutil.copytree(reference, tmp_path / "run")
    (tmp_path / "x").mkdir()
    shutil.copytree(reference / "checkpoints" / "step-0000012", tmp_path / "x" / "step")
    for name in ("../../x/step", "../step-0000012", "/etc"):
        refused_untouched(tmp_path, "export", "run", "--hf", "hf", "--checkpoint", name, fragment="--checkpoint")
    assert cli("export", "run", "--hf", "hf", "--checkpoint", "step-0000012", where=tmp_path).code == 0


@pytest.mark.parametrize("argv, fragment", [
    (["verify", "--workers", "0", "--out", "vv"], "--workers"),
    (["verify", "--backend", "foo", "--out", "vv2"], "--backend"),
    (["sweep", "golden-quick", "--workers", "0", "--out", "s"], "--workers"),
])
def test_refused_commands_leave_no_folder(tmp_path, argv, fragment):
    refused_untouched(tmp_path, *argv, fragment=fragment)


def test_too_short_corpus_leaves_no_run_folder(tmp_path):
    """The corpus is prepared (into the data cache, a cache), then refused before the run folder exists."""
    (tmp_path / "tiny.txt").write_text("to be or not to be, " * 3)
    argv = ["train", "--out", "r", *sets("data.corpus=tiny.txt", "data.cache_dir=cache", "train.seq_len=64",
                                         "train.progress=off")]
    line = assert_refused(cli(*argv, where=tmp_path), "too few")
    assert "train.seq_len" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "tiny.txt"]  # no run folder "r"


# -- bad values, clear messages ------------------------------------------------------------------

@pytest.mark.parametrize("override, fragment", [
    ("model.ffn.n_experts=-4", "model.ffn.n_experts"), ("model.rope_theta=-1", "model.rope_theta"),
    ("model.norm_eps=-1e-5", "model.norm_eps"), ("train.lr=.inf", "train.lr"),
    ("model.ffn.top_k=2", "top_k"),
])
def test_bad_values_are_refused(tmp_path, override, fragment):
    refused_untouched(tmp_path, "train", "--out", "r", "--set", override, fragment=fragment)


@pytest.mark.parametrize("seeds", [[-1], [12345678901234567890], [0, 0]])
def test_bad_sweep_seeds_exit_2_at_once(tmp_path, seeds):
    spec = {"name": "s", "seeds": seeds, "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}}]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    refused_untouched(tmp_path, "sweep", "spec.yaml", fragment="seeds")


@pytest.mark.parametrize("argv, fragments", [
    (["size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--n-heads", "0"], ["--n-heads"]),
    (["size", "--d-model", "768", "--rule", "llama", "--multiplier", "0"], ["multiplier"]),
    (["plan", "7B", "--rule", "foo"], ["--rule", "foo"]),
    (["plan", "1e400"], ["finite"]),
    (["size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--seq-len", "0"], ["--seq-len"]),
])
def test_messages_name_the_input(tmp_path, argv, fragments):
    line = refused_untouched(tmp_path, *argv)
    for f in fragments:
        assert f in line, line


def test_unknown_kind_in_a_sweep_arm_is_named(tmp_path):
    spec = {"name": "s", "seeds": [0], "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
                                                {"name": "b", "ffn": {"kind": "tanh"}}]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    line = refused_untouched(tmp_path, "sweep", "spec.yaml", fragment="unknown FFN kind")
    assert "arm 'b'" in line


def test_errors_are_one_line_even_when_the_cause_has_several(tmp_path):
    (tmp_path / "c.yaml").write_text("model:\n  d_model: [1,\n  x: }\n")
    line = refused_untouched(tmp_path, "train", "c.yaml", fragment="cannot parse")
    assert snapshot(tmp_path) and "\n" not in line


# -- a full disk, interrupted exports, Ctrl-C, metrics that repeat, markup from files ------------

@pytest.fixture
def small_disk(tmp_path):  # noqa: ANN201 - yields (mount point, fill)
    """A 4 MiB tmpfs at ``tmp_path/disk`` (needs root and mount), with ``fill(leave)`` taking all
    but ``leave`` bytes of it; skipped with the reason where it cannot be mounted."""
    disk = tmp_path / "disk"
    disk.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs for a full-disk test: {p.stderr.strip() or p.returncode}")

    def fill(leave: int) -> Path:
        filler = disk / "filler"
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        with open(filler, "r+b") as f:
            f.truncate(max(0, filler.stat().st_size - leave))
        return filler

    try:
        yield disk, fill
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


DISK_FULL_AFTER_STEP_4 = textwrap.dedent("""
    import os
    from ffnlab.training import checkpoint
    real_publish = checkpoint.publish_dir

    def publish(tmp, final):
        real_publish(tmp, final)
        if final.name == "step-0000004":  # the disk fills up (but for 48 KiB) right after the first checkpoint
            filler = os.path.join(os.path.dirname(os.path.dirname(str(final))), os.pardir, "filler")
            with open(filler, "wb") as f:
                try:
                    while True:
                        f.write(b"\\0" * 65536)
                        f.flush()
                except OSError:
                    pass
            with open(filler, "r+b") as f:
                f.truncate(max(0, os.path.getsize(filler) - 48 * 1024))

    checkpoint.publish_dir = publish
""")


def test_full_disk_during_a_checkpoint_is_one_line_and_resume_after_freeing_is_bit_exact(small_disk, reference,
                                                                                         cache):
    disk, _ = small_disk
    run = disk / "run"
    p = subprocess_train(train_argv(run, cache), DISK_FULL_AFTER_STEP_4)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), p.stderr[-3000:]
    assert "No space left" in lines[0] and "Traceback" not in p.stderr
    assert "cannot write checkpoint" in lines[0] and "step-0000004 is kept" in lines[0], lines[0]  # SafetensorError
    assert [c.name for c in (run / "checkpoints").iterdir()] == ["step-0000004"]  # the half-written one is gone
    (disk / "filler").unlink()  # space freed
    resumed = subprocess_train([*train_argv(run, cache), "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert losses(run) == losses(reference)  # bit for bit, evals included
    assert not list(run.rglob(".ffnlab-tmp-*"))


def test_full_disk_during_export_is_one_line_and_writes_nothing(small_disk, reference):
    disk, fill = small_disk
    fill(16 * 1024)
    filler_size = (disk / "filler").stat().st_size
    line = assert_refused(cli("export", str(reference), "--hf", str(disk / "hf")), "No space left")
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # no folder, no temporary left behind
    assert (disk / "filler").stat().st_size == filler_size
    assert str(disk / "hf") in line


KILL_EXPORT_BETWEEN_FILES = textwrap.dedent("""
    import os, signal, pathlib

    def killing(real):
        def write(self, *a, **k):
            if self.name == "config.json":  # model.safetensors is written, config.json not yet
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, *a, **k)
        return write

    pathlib.Path.write_text = killing(pathlib.Path.write_text)
    pathlib.Path.write_bytes = killing(pathlib.Path.write_bytes)
""")


def test_an_export_killed_between_its_files_does_not_block_the_rerun(tmp_path, reference):
    hf = tmp_path / "hf"
    killed = subprocess_train(["export", str(reference), "--hf", str(hf)], KILL_EXPORT_BETWEEN_FILES)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not hf.exists()  # never half an export under the name
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".ffnlab-tmp-hf-"), left
    rerun = subprocess_train(["export", str(reference), "--hf", str(hf)])
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]  # the killed export's temporary is cleaned
    assert {"config.json", "model.safetensors", "generation_config.json"} <= {p.name for p in hf.iterdir()}


KILL_AFTER_TEMP_DIR = textwrap.dedent("""
    import os, signal, builtins, pathlib
    import ffnlab.files as files

    real = files.new_temp_dir

    def killing(*a, **k):
        if "{point}" == "before-marker":  # the folder made, its marker not yet written
            files.open = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        tmp = real(*a, **k)
        os.kill(os.getpid(), signal.SIGKILL)  # just after the temporary folder is made

    files.new_temp_dir = killing
    import ffnlab.training.export as export
    export.new_temp_dir = killing
""")


@pytest.mark.parametrize("point", ["after-marker", "before-marker"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_an_export_killed_right_after_making_its_temporary_is_cleaned_by_the_rerun(tmp_path, reference, point,
                                                                                   overwrite):
    hf = tmp_path / "hf"
    flag = ["--overwrite"] if overwrite else []
    if overwrite:
        assert cli("export", str(reference), "--hf", str(hf)).code == 0  # the earlier export to replace
    killed = subprocess_train(["export", str(reference), "--hf", str(hf), *flag],
                              KILL_AFTER_TEMP_DIR.format(point=point))
    assert killed.returncode == -9, killed.stderr[-2000:]
    left = [p.name for p in tmp_path.iterdir() if p.name != "hf"]
    assert len(left) == 1 and left[0].startswith(".ffnlab-tmp-hf-"), left
    assert cli("export", str(reference), "--hf", str(hf), *flag).code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]  # the killed export's temporary is gone


def test_ctrl_c_while_the_output_drains_is_interrupted_not_success(monkeypatch):
    """A Ctrl-C during the final flush of stdout (the output of a command, buffered in a pipe) is
    reported as 'interrupted', exit 130; before, it escaped as 'Exception ignored' with status 0."""
    import io

    from ffnlab.cli import main

    class Pipe(io.StringIO):
        def flush(self) -> None:
            if self.getvalue():
                raise KeyboardInterrupt

    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", Pipe())
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as e:
        main(["size", "--d-model", "768", "--ratio", "4", "--json"])
    assert e.value.code == 130 and err.getvalue() == "interrupted\n"


def test_ctrl_c_while_the_interpreter_exits_ends_the_process_quietly(tmp_path):
    """The console entry point: a SIGINT after the command finished (here from an atexit callback)
    ends the process by the signal, with no 'Exception ignored ... KeyboardInterrupt' message."""
    code = textwrap.dedent("""
        import atexit, os, signal, sys
        atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))
        sys.argv = ["ffnlab", "size", "--d-model", "768", "--ratio", "4", "--json"]
        from ffnlab.cli import main
        main()
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == -2, (p.returncode, p.stderr)  # killed by SIGINT, as a shell tool interrupted
    assert "Exception ignored" not in p.stderr and "Traceback" not in p.stderr
    assert json.loads(p.stdout)  # the output was complete before the signal


def test_a_closed_stdout_pipe_is_not_a_traceback():
    code = "import sys; from ffnlab.cli import main; sys.argv = ['ffnlab', 'zoo']; main()"
    p = subprocess.run(f"{sys.executable} -c \"{code}\" | head -c 10", shell=True, capture_output=True, text=True,
                       timeout=120)
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr


@pytest.mark.parametrize("evidence", ["x [/nope] y", "[link=mailto:a@b]click[/link]", "[bold]b", "\x1b[2J\x1b]0;t\x07"])
def test_claims_evidence_is_printed_as_text_not_markup(tmp_path, evidence):
    (tmp_path / "ev.json").write_text(json.dumps({"ratio_optimal": {"verdict": "true", "evidence": evidence}}))
    r = cli("claims", "--evidence", "ev.json", where=tmp_path)
    assert r.code == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    shown = evidence.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert shown[:8] in r.stdout.replace("\n", "")


def _fake_finished_sweep(root: Path, metrics: list[dict]) -> None:
    run = root / "s" / "runs" / "a-s0"
    run.mkdir(parents=True)
    (root / "s" / "sweep.json").write_text(json.dumps({"runs": [GOOD_RUN], "spec": {"name": "s", "reference": "a"}}))
    (run / "summary.json").write_text(json.dumps({"final_val_loss": 2.0, "final_val_ppl": 7.39, "final_val_bpb": 3.0,
                                                  "wall_s": 1.0, "tokens": 64, "train_flops": 1.0}))
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


EVAL = {"kind": "eval", "step": 4, "tokens": 64, "val_loss": 2.0}


@pytest.mark.parametrize("metrics, fragment", [
    ([{"kind": "train", "step": 4, "loss": 2.0}], "no eval record"),
    ([{"kind": "train", "step": "x", "loss": 2.0}, EVAL], "step must be an integer"),
    ([EVAL, EVAL], "repeats"),
    ([{**EVAL, "step": 8}, EVAL], "goes back"),
    ([{**EVAL, "tokens": "many"}], "tokens"),
    ([{**EVAL, "val_loss": float("nan")}], "val_loss"),
    ([{"kind": "train", "step": 1}, EVAL], "loss is not a finite number"),
    ([{"kind": "note", "step": 1}, EVAL], "records are train or eval"),
])
def test_report_refuses_metrics_that_cannot_be_a_training_curve(tmp_path, metrics, fragment):
    _fake_finished_sweep(tmp_path, metrics)
    line = refused_untouched(tmp_path, "report", "s", fragment=fragment)
    assert "metrics.jsonl" in line


def test_a_million_duplicated_records_are_refused_at_the_first_repeat(tmp_path):
    """The reported case (10^6 copies of one eval record): refused at line 2, not analysed."""
    _fake_finished_sweep(tmp_path, [])
    (tmp_path / "s" / "runs" / "a-s0" / "metrics.jsonl").write_text((json.dumps(EVAL) + "\n") * 10**6)
    line = refused_untouched(tmp_path, "report", "s", fragment="line 2")
    assert "repeats" in line


def test_resume_refuses_a_metrics_record_with_a_text_step(tmp_path, reference, cache):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"step": 3', '"step": "x"', 1)
    assert '"x"' in lines[2]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    refused_untouched(tmp_path, *train_argv(run, cache), "--resume", fragment="line 3 step")


def test_probe_layers_named_twice_are_refused(tmp_path):
    refused_untouched(tmp_path, "probe", "nowhere", "--layers", "0,0", fragment="more than once")


@pytest.mark.parametrize("change, fragment", [
    ({"exposures": True}, "exposures"), ({"exposures": ".nan"}, "exposures"),
    ({"budgets": [{"name": ".", "model": {}}]}, "budgets[0].name"),
    ({"budgets": [{"name": "", "model": {}}]}, "budgets[0].name"),
    ({"budgets": [{"name": "../up", "model": {}}]}, "budgets[0].name"),
])
def test_capacity_presets_refuse_bad_exposures_and_budget_names(tmp_path, change, fragment):
    from ffnlab.experiments.capacity.design import find_preset

    preset = yaml.safe_load(find_preset("capacity").read_text()) | change
    if change.get("exposures") == ".nan":
        preset["exposures"] = float("nan")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(preset))
    refused_untouched(tmp_path, "capacity", "run", "p.yaml", fragment=fragment)


def test_capacity_run_refuses_absurd_workers(tmp_path):
    refused_untouched(tmp_path, "capacity", "run", "capacity", "--workers", "100000", fragment="--workers")


def test_a_capacity_verdict_where_nothing_was_stored_says_so():
    from ffnlab.experiments.capacity.analysis import ArmCapacity, verdict_gated, verdict_peak

    def arm(name: str, ratio: float, gated: bool) -> ArmCapacity:
        a = ArmCapacity("small", name, "swiglu" if gated else "gelu", gated, 32, int(32 * ratio), ratio,
                        ratio * (1.5 if gated else 1), 1000)
        a.runs = [{"bits_per_param": 0.0} for _ in range(3)]  # every seed stored 0 bits
        return a

    by = {"small": [arm("gelu-r4", 4, False), arm("gelu-r2", 2, False), arm("swiglu-r8_3", 8 / 3, True)]}
    for v in (verdict_peak(by), verdict_gated(by)):
        assert v.verdict == "inconclusive" and "nan" not in v.evidence
        assert "stored 0 bits" in v.evidence


# -- spec and config parsing: alias bombs, duplicate keys, run counts, long arm names -------------

ARM = {"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}}
# nine nested anchors: about 10**9 values once expanded, in a few hundred bytes
BOMB = "".join(f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10) if i else ', '.join(['x'] * 10)}]\n" for i in range(9))


@pytest.mark.parametrize("command", ["sweep", "train"])
def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path, command):
    if command == "sweep":
        (tmp_path / "spec.yaml").write_text(yaml.safe_dump({"name": "s", "seeds": [0], "arms": [ARM],
                                                            "claims": ["ratio_optimal"]})
                                            + "comparisons:\n ratio_optimal:\n" + BOMB)
        argv = ["sweep", "spec.yaml", "--estimate"]
    else:
        (tmp_path / "spec.yaml").write_text("train:\n max_steps:\n" + BOMB)
        argv = ["train", "spec.yaml", "--print-config"]
    line = refused_untouched(tmp_path, *argv, fragment="alias")
    assert "1,000,000 values" in line and "spec.yaml" in line


def test_a_yaml_alias_that_contains_itself_is_refused(tmp_path):
    (tmp_path / "c.yaml").write_text("train: &t\n  extra: [*t]\n")
    refused_untouched(tmp_path, "train", "c.yaml", "--print-config", fragment="contains it")


@pytest.mark.parametrize("name, text", [
    ("c.yaml", "train:\n  seed: 1\n  max_steps: 5\n  seed: 2\n"),
    ("c.json", '{"train": {"seed": 1, "max_steps": 5, "seed": 2}}'),
    ("c.toml", "[train]\nseed = 1\nmax_steps = 5\nseed = 2\n"),
])
def test_a_key_given_twice_in_a_config_is_refused_naming_it(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    line = refused_untouched(tmp_path, "train", name, "--print-config", fragment="duplicate key 'seed'")
    assert name in line


def test_a_key_given_twice_in_a_sweep_spec_is_refused_naming_it(tmp_path):
    from ffnlab.experiments.sweep.spec import load_spec

    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({"name": "s", "seeds": [0], "arms": [ARM]}) + "seeds: [1]\n")
    with pytest.raises(FfnlabError, match="duplicate key 'seeds' at line"):
        load_spec(str(tmp_path / "spec.yaml"))
    refused_untouched(tmp_path, "sweep", "spec.yaml", "--estimate", fragment="duplicate key 'seeds'")


def test_yaml_merge_keys_may_still_be_overridden():
    from ffnlab.files import load_yaml

    assert load_yaml("base: &b {x: 1, y: 2}\nrun:\n  <<: *b\n  x: 3\n")["run"] == {"x": 3, "y": 2}


def test_a_design_with_too_many_runs_is_refused_by_its_run_count(tmp_path):
    from ffnlab.experiments.sweep.spec import spec_from_dict

    seeds = list(range(100_000))
    with pytest.raises(FfnlabError, match=r"100,000 runs \(1 arms x 100,000 seeds\), over the limit of 10,000"):
        spec_from_dict({"name": "s", "seeds": seeds, "arms": [ARM]})
    (tmp_path / "spec.yaml").write_text(json.dumps({"name": "s", "seeds": seeds, "arms": [ARM]}))
    refused_untouched(tmp_path, "sweep", "spec.yaml", "--estimate", fragment="100,000 runs")


def test_arm_names_sharing_their_first_60_characters_are_unique():
    from ffnlab.experiments.sweep.spec import spec_from_dict

    names = ["x" * 70 + "1", "x" * 70 + "2"]
    spec = spec_from_dict({"name": "s", "seeds": [0], "arms": [{**ARM, "name": n} for n in names]})
    assert [a.name for a in spec.arms] == names
    with pytest.raises(FfnlabError, match="unique"):  # the same name twice still is not
        spec_from_dict({"name": "s", "seeds": [0], "arms": [{**ARM, "name": names[0]}] * 2})
