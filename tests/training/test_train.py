"""Training end to end on CPU: learning, exact resume after SIGKILL, DDP, export, failure paths."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_inproc import run_cli
from cli_run import assert_usage_error, run
from fswait import watching

TINY = ["model.d_model=32", "model.n_layers=2", "model.n_heads=2", "train.seq_len=32", "train.batch_size=8",
        "train.warmup_steps=5", "train.lr=0.01", "train.eval_tokens=4096", "train.progress=off",
        "train.tensorboard=false", "train.threads=1", "train.peak_flops=1e11"]


def sets(*items: str) -> list[str]:
    return [a for item in items for a in ("--set", item)]


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("data_cache"))


def train_args(out: Path, cache_dir: str, *extra: str) -> list[str]:
    return ["train", "--out", str(out), *sets(*TINY, f"data.cache_dir={cache_dir}", *extra)]


CHECKPOINTED = ("train.max_steps=4", "train.checkpoint_every=2")


@pytest.fixture(scope="module")
def checkpointed_run(tmp_path_factory, cache_dir) -> Path:
    """A tiny run with two checkpoints (:data:`CHECKPOINTED`), trained once per test process: the
    tests that damage or resume one work on their own copy (a run folder may move)."""
    out = tmp_path_factory.mktemp("checkpointed") / "run"
    p = run(*train_args(out, cache_dir, *CHECKPOINTED))
    assert p.returncode == 0, p.stderr
    return out


def records(run_dir: Path, kind: str) -> list[dict]:
    from ffnlab.training.runfiles import read_records

    # tolerant reader: a run being polled may be half-way through writing its last line
    return [r for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == kind]


def test_tiny_model_learns_well_below_unigram_entropy(tmp_path, cache_dir):
    from ffnlab.training.corpus import load_prepared

    out = tmp_path / "run"
    p = run(*train_args(out, cache_dir, "train.max_steps=150", "train.eval_every=75", "model.d_model=128",
                        "model.n_layers=2", "model.n_heads=4", "train.batch_size=16", "train.seq_len=64",
                        "train.lr=0.003", "train.warmup_steps=30"))
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    prepared = load_prepared(json.loads((out / "model.json").read_text())["prepared_data"])
    unigram = prepared.unigram_entropy_nats("val")
    assert summary["final_val_loss"] < 0.8 * unigram, (summary["final_val_loss"], unigram)
    evals = records(out, "eval")
    assert [e["step"] for e in evals] == [75, 150] and evals[1]["val_loss"] < evals[0]["val_loss"]
    assert summary["final_val_bpb"] == pytest.approx(summary["final_val_loss"] / 0.6931471805599453)
    assert (out / "config.yaml").exists() and (out / "checkpoints").is_dir()


def test_resume_after_sigkill_reproduces_the_curve_bit_for_bit(tmp_path, cache_dir):
    steps = ["train.max_steps=240", "train.checkpoint_every=40", "train.eval_every=40", "train.log_every=1",
             "train.keep_last=2"]
    full, cut = tmp_path / "full", tmp_path / "cut"
    p = run(*train_args(full, cache_dir, *steps))
    assert p.returncode == 0, p.stderr

    def moved_past_a_checkpoint() -> bool:
        ckpts = list((cut / "checkpoints").glob("step-*")) if (cut / "checkpoints").exists() else []
        return bool(ckpts) and (cut / "metrics.jsonl").exists() and len(records(cut, "train")) >= 100

    with watching(cut) as changes:  # woken by each write under the run folder, not by a clock
        proc = subprocess.Popen([sys.executable, "-m", "ffnlab", *train_args(cut, cache_dir, *steps)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        changes.wait(moved_past_a_checkpoint, proc)  # kill once a checkpoint exists and training moved past it
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (cut / "summary.json").exists(), "the run finished before it could be killed"
    killed_at = len(records(cut, "train"))
    assert 40 <= killed_at < 240
    p = run(*train_args(cut, cache_dir, *steps), "--resume")
    assert p.returncode == 0, p.stderr
    for kind, key in (("train", "loss"), ("train", "grad_norm"), ("eval", "val_loss")):
        a, b = records(full, kind), records(cut, kind)
        assert [r["step"] for r in a] == [r["step"] for r in b]
        assert [r[key] for r in a] == [r[key] for r in b], kind  # exact float equality
    assert len(list((cut / "checkpoints").glob("step-*"))) == 2  # keep-last-K


def test_rerun_without_resume_refuses_and_keeps_the_run(tmp_path, cache_dir):
    out = tmp_path / "run"
    assert run(*train_args(out, cache_dir, "train.max_steps=3")).returncode == 0
    before = (out / "metrics.jsonl").read_bytes()
    assert_usage_error(run(*train_args(out, cache_dir, "train.max_steps=3")), "--resume")
    assert_usage_error(run(*train_args(out, cache_dir, "train.max_steps=3", "model.d_model=64"), "--resume"),
                       "model.d_model")
    assert (out / "metrics.jsonl").read_bytes() == before


@pytest.mark.slow
def test_ddp_two_processes_match_one_process(tmp_path, cache_dir):
    common = ["train.max_steps=6", "train.eval_every=6", "train.log_every=1", "train.batch_size=8"]
    one, two = tmp_path / "one", tmp_path / "two"
    p = run(*train_args(one, cache_dir, *common))
    assert p.returncode == 0, p.stderr
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                        "29533", "-m", "ffnlab", *train_args(two, cache_dir, *common)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    a, b = records(one, "train"), records(two, "train")
    assert len(a) == len(b) == 6
    for x, y in zip(a, b, strict=True):
        assert y["loss"] == pytest.approx(x["loss"], rel=1e-5, abs=1e-6)
    assert records(two, "eval")[0]["val_loss"] == pytest.approx(records(one, "eval")[0]["val_loss"], rel=1e-5)


def test_gradient_accumulation_matches_the_larger_batch(tmp_path, cache_dir):
    common = ["train.max_steps=5", "train.eval_every=5", "train.log_every=1", "train.tensorboard=true"]
    big, acc = tmp_path / "big", tmp_path / "acc"
    assert run(*train_args(big, cache_dir, *common, "train.batch_size=8")).returncode == 0
    p = run(*train_args(acc, cache_dir, *common, "train.batch_size=4", "train.grad_accum=2"))
    assert p.returncode == 0, p.stderr
    for x, y in zip(records(big, "train"), records(acc, "train"), strict=True):
        assert y["loss"] == pytest.approx(x["loss"], rel=1e-5) and y["tokens"] == x["tokens"]
    assert list((big / "tb").glob("events.out.tfevents.*"))  # TensorBoard logs alongside the JSONL


@pytest.mark.parametrize("arch", [
    ["model.ffn.kind=swiglu", "model.norm=rmsnorm", "model.positions=rope", "model.n_kv_heads=1",
     "model.tied_embeddings=false"],
    ["model.ffn.kind=gelu_tanh", "model.ffn.rule=ratio", "model.norm=layernorm", "model.positions=learned",
     "model.bias=true", "model.ffn.bias=true"],
    ["model.ffn.kind=relu", "model.ffn.rule=ratio", "model.norm=layernorm", "model.positions=learned"],
    ["model.ffn.kind=gelu", "model.ffn.rule=ratio"],  # defaults for a plain MLP: GPT-2
    ["model.ffn.kind=gelu", "model.ffn.rule=ratio", "model.norm=layernorm", "model.positions=rope"],  # Starcoder2
    ["model.ffn.kind=swiglu", "model.norm=layernorm", "model.positions=rope"],  # StableLM (the presets' layout)
    ["model.ffn.n_experts=2", "model.ffn.top_k=1"],  # Mixtral
])
def test_export_round_trip_same_logits(tmp_path, cache_dir, capsys, arch):
    transformers = pytest.importorskip("transformers")
    out, hf = tmp_path / "run", tmp_path / "hf"
    p = run(*train_args(out, cache_dir, "train.max_steps=3", *arch))
    assert p.returncode == 0, p.stderr
    p = run_cli(capsys, "export", str(out), "--hf", str(hf))  # in this process: torch and transformers are loaded
    assert p.returncode == 0, p.stderr
    from ffnlab.training.export import load_run_model

    ours = load_run_model(out)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(hf)).eval()
    idx = torch.randint(0, 256, (2, 32))
    with torch.no_grad():
        diff = (ours(idx)[0] - theirs(idx).logits).abs().max().item()
    assert diff < 1e-4
    assert_usage_error(run_cli(capsys, "export", str(out), "--hf", str(hf)), "not empty")  # never overwrites


def test_unexportable_model_is_refused_before_anything_is_written(tmp_path, cache_dir):
    out = tmp_path / "runs" / "moe"  # runs/ does not exist yet: a refusal must not leave it behind
    plain_moe = ["model.ffn.kind=gelu", "model.ffn.rule=ratio", "model.ffn.n_experts=2", "model.ffn.top_k=1",
                 "train.max_steps=2"]
    p = run(*train_args(out, cache_dir, *plain_moe))
    assert_usage_error(p, "plain gelu experts")
    assert "--ffn swiglu" in p.stderr and "--no-export-check" in p.stderr  # the fix, and the way around it
    assert not (tmp_path / "runs").exists()
    p = run(*train_args(out, cache_dir, *plain_moe), "--no-export-check")
    assert p.returncode == 0, p.stderr
    assert_usage_error(run("export", str(out), "--hf", str(tmp_path / "hf")), "plain gelu experts")
    assert not (tmp_path / "hf").exists()


def test_refused_train_leaves_no_empty_parent_folders(tmp_path, cache_dir):
    out = tmp_path / "runs" / "a" / "b"
    assert_usage_error(run(*train_args(out, cache_dir, "train.seq_len=1000000")), "GiB")  # the memory pre-check
    # refused after the run folder was made: the folder and the parents made for it go again
    assert_usage_error(run(*train_args(out, cache_dir, "data.corpus=" + str(tmp_path / "missing.txt"))), "corpus")
    assert not (tmp_path / "runs").exists()


def test_common_flags_set_the_config_keys(tmp_path):
    p = run("train", "--out", str(tmp_path / "r"), "--d-model", "48", "--n-layers", "3", "--n-heads", "6",
            "--lr", "0.002", "--batch-size", "12", "--seq-len", "24", "--max-steps", "7", "--ffn", "gelu",
            "--rule", "ratio", "--print-config")
    assert p.returncode == 0, p.stderr
    import yaml

    cfg = yaml.safe_load(p.stdout)
    assert (cfg["model"]["d_model"], cfg["model"]["n_layers"], cfg["model"]["n_heads"]) == (48, 3, 6)
    assert (cfg["train"]["lr"], cfg["train"]["batch_size"], cfg["train"]["seq_len"], cfg["train"]["max_steps"]) \
        == (0.002, 12, 24, 7)
    # the FFN kind sets the norm and positions `ffnlab size` assumes for it: GPT-2's for a plain MLP
    assert (cfg["model"]["norm"], cfg["model"]["positions"]) == ("layernorm", "learned")
    assert not (tmp_path / "r").exists()  # --print-config writes nothing
    help_text = run("train", "--help").stdout
    assert "docs/" not in help_text and "--max-steps" in help_text


def test_resume_reuses_the_saved_config(tmp_path, cache_dir):
    steps = ["train.max_steps=6", "train.checkpoint_every=3", "train.eval_every=3", "train.keep_last=3",
             "train.log_every=1"]
    full, cut = tmp_path / "full", tmp_path / "cut"
    p = run(*train_args(full, cache_dir, *steps))
    assert p.returncode == 0, p.stderr
    shutil.copytree(full, cut, symlinks=True)  # the same run, moved: then cut back to its step-3 checkpoint
    shutil.rmtree(cut / "checkpoints" / "step-0000006")  # as if stopped after the step-3 checkpoint
    (cut / "summary.json").unlink()
    p = run("train", "--out", str(cut), "--resume")  # nothing retyped
    assert p.returncode == 0, p.stderr
    for kind, keys in (("train", ("step", "loss", "grad_norm", "lr")), ("eval", ("step", "val_loss"))):
        a, b = records(full, kind), records(cut, kind)
        assert [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b], kind  # bit for bit
    p = run("train", "--out", str(cut), "--resume", "--max-steps", "9")
    assert_usage_error(p, "max_steps")  # a change that alters the trajectory is still refused


def test_ctrl_c_says_how_to_resume_and_export_names_the_step_of_a_running_run(tmp_path, cache_dir):
    out, hf = tmp_path / "run", tmp_path / "hf"
    long_run = ["train.max_steps=100000", "train.checkpoint_every=2", "train.keep_last=100000"]  # none deleted

    def checkpoints() -> list[Path]:
        return sorted((out / "checkpoints").glob("step-*")) if (out / "checkpoints").is_dir() else []

    with watching(out) as changes:  # woken by each write under the run folder, not by a clock
        # a suite started in the background (CI) inherits an ignored SIGINT, which the child would
        # inherit too and so never see the Ctrl-C below: give it the default a terminal gives
        proc = subprocess.Popen([sys.executable, "-m", "ffnlab", *train_args(out, cache_dir, *long_run)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        changes.wait(lambda: bool(checkpoints()), proc)
    try:
        assert proc.poll() is None, "the run ended before its first checkpoint"
        p = run("export", str(out), "--hf", str(hf))
        assert p.returncode == 0, p.stderr
        step = int(p.stdout.split(", step ")[1].split(" of")[0].replace(",", ""))
        assert f"still training; this is step {step:,}" in p.stdout
        assert step > 0 and (out / "checkpoints" / f"step-{step:07d}").is_dir()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=120)  # a hang guard; the step in flight ends in well under 1 s
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"SIGINT not honoured within 120 s; the run's stderr ends with: {err[-2000:]}")
    assert proc.returncode == 130, err
    assert f"continue with: ffnlab train --out {out} --resume" in err and "the last checkpoint is step-" in err


@pytest.mark.parametrize("overrides, fragment", [
    (["model.d_model=30", "model.n_heads=4"], "does not divide"),
    (["model.d_model=30"], "even head_dim"),
    (["model.ffn.ratio=-1"], "ratio"),
    (["train.lr=fast"], "train.lr"),
    (["train.max_stepz=3"], "did you mean max_steps"),
    (["data.corpus=/nonexistent/corpus.txt"], "'/nonexistent/corpus.txt' is not 'shakespeare'"),
    (["data.tokenizer=words"], "tokenizer"),
    (["train.device=cuda"], "CUDA"),
    (["train.device=gpu"], "train.device"),
    (["train.beta1=1.5"], "beta1"),
    (["train.dtype=fp16"], "dtype"),
])
def test_bad_config_exits_2(tmp_path, cache_dir, overrides, fragment):
    if "train.device=cuda" in overrides and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert_usage_error(run(*train_args(tmp_path / "r", cache_dir, *overrides)), fragment)


def test_bad_config_files(tmp_path, cache_dir):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    assert_usage_error(run("train", str(bad), "--out", str(tmp_path / "r")), "cannot parse")
    assert_usage_error(run("train", str(tmp_path / "missing.yaml")), "not found")


def test_missing_hf_dataset_exits_2(tmp_path, cache_dir):
    assert_usage_error(run(*train_args(tmp_path / "r", cache_dir, "data.corpus=hf:no-such-org/no-such-dataset")),
                       "cannot load Hugging Face dataset 'no-such-org/no-such-dataset'")


@pytest.mark.parametrize("damage", ["truncate", "pickle", "delete"])
def test_corrupt_or_pickled_checkpoint_exits_2_and_keeps_files(tmp_path, cache_dir, capsys, checkpointed_run, damage):
    out = tmp_path / "run"
    shutil.copytree(checkpointed_run, out, symlinks=True)
    (out / "summary.json").unlink()  # killed after its last checkpoint: a finished run's resume reads none
    ckpt = sorted((out / "checkpoints").glob("step-*"))[-1]
    target = ckpt / "model.safetensors"
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[:100])
    elif damage == "pickle":
        torch.save({"w": torch.zeros(3)}, target)  # a pickle where safetensors belongs
    else:
        target.unlink()
    snapshot = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    p = run(*train_args(out, cache_dir, *CHECKPOINTED), "--resume")
    assert_usage_error(p, "checkpoint")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot
    assert_usage_error(run_cli(capsys, "export", str(out), "--hf", str(tmp_path / "hf")), "checkpoint")


def test_non_finite_loss_stops_with_clear_message(tmp_path, cache_dir):
    out = tmp_path / "run"
    p = run(*train_args(out, cache_dir, "train.max_steps=40", "train.checkpoint_every=2", "train.lr=1e12",
                        "train.warmup_steps=0", "train.grad_clip=1e30"))
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "loss became" in p.stderr and "Traceback" not in p.stderr
    assert not (out / "summary.json").exists()


def test_a_run_stopped_after_it_began_keeps_its_files_without_a_lock_holding_them(tmp_path, cache_dir, capsys,
                                                                                   monkeypatch):
    """A new run's folder is provisional only until the run has written its files (``settle``): a
    failure later (here a loss that diverges after the first checkpoints) keeps the run to be
    resumed, whatever it holds. It must not rest on files ffnlab does not note as made (the lock,
    the appended metrics.jsonl) happening to be there: with the lock taken away and every file
    read as made by this process, the run folder was removed whole before ``settle`` (checked)."""
    import contextlib

    from ffnlab import files
    from ffnlab.training import locking

    monkeypatch.setattr(locking, "folder_lock", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr(files, "made_here", lambda path, since=0: os.path.lexists(path))
    out = tmp_path / "new" / "run"
    p = run_cli(capsys, *train_args(out, cache_dir, "train.max_steps=40", "train.checkpoint_every=1",
                                    "train.lr=1e12", "train.warmup_steps=0", "train.grad_clip=1e30"))
    assert p.returncode == 3 and "loss became" in p.stderr, (p.returncode, p.stderr)
    assert (out / "config.yaml").is_file() and (out / "metrics.jsonl").is_file() and not (out / ".lock").exists()
    assert any((out / "checkpoints").glob("step-*"))  # what a resume would start from


@pytest.mark.slow
def test_export_overwrite_replaces_an_earlier_export_and_nothing_else(tmp_path, cache_dir):
    """--overwrite swaps in the new export whole (the oracle: the later checkpoint's weights in
    the folder); a folder holding anything an export does not write is refused, untouched."""
    from safetensors.torch import load_file

    out, hf = tmp_path / "run", tmp_path / "hf"
    p = run(*train_args(out, cache_dir, "train.max_steps=4", "train.checkpoint_every=2", "train.keep_last=2"))
    assert p.returncode == 0, p.stderr
    assert run("export", str(out), "--hf", str(hf), "--checkpoint", "step-0000002").returncode == 0
    first = load_file(str(hf / "model.safetensors"))
    p = run("export", str(out), "--hf", str(hf), "--overwrite")
    assert p.returncode == 0, p.stderr
    second = load_file(str(hf / "model.safetensors"))
    assert any(not torch.equal(first[k], second[k]) for k in first)  # the latest checkpoint now
    assert sorted(x.name for x in tmp_path.iterdir()) == ["hf", "run"]  # nothing left beside it
    (hf / "notes.txt").write_text("mine")
    assert_usage_error(run("export", str(out), "--hf", str(hf), "--overwrite"), "not an earlier export")
    after = load_file(str(hf / "model.safetensors"))
    assert (hf / "notes.txt").read_text() == "mine" and all(torch.equal(after[k], second[k]) for k in second)


@pytest.mark.slow
def test_generate_continues_a_prompt_greedily_as_the_model_scores_it_and_by_seed(tmp_path, cache_dir):
    """--temperature 0 is the model's argmax each step (the oracle: a loop over the model's own
    logits here); sampling is the same text for the same seed."""
    from ffnlab.training.export import load_run_model

    out = tmp_path / "run"
    assert run(*train_args(out, cache_dir, "train.max_steps=3")).returncode == 0
    p = run("generate", str(out), "--prompt", "To be", "--tokens", "8", "--temperature", "0")
    assert p.returncode == 0, p.stderr
    model, ids = load_run_model(out), list(b"To be")
    with torch.no_grad():
        for _ in range(8):
            ids.append(int(model(torch.tensor([ids]))[0][0, -1].argmax()))
    assert p.stdout.rstrip("\n") == bytes(ids).decode("utf-8", errors="replace")
    a, b = (run("generate", str(out), "-p", "To be", "-n", "16", "--seed", "3") for _ in range(2))
    assert a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("To be")
    assert_usage_error(run("generate", str(out), "--prompt", "", "--tokens", "4"), "give a --prompt")


def test_summary_records_the_thread_count_and_who_set_it(tmp_path, cache_dir):
    """A CPU run is bit-exact per seed *and* thread count, so summary.json keeps both the count
    torch trained with and its origin: train.threads, else the environment, else the free cores.
    Oracle: the OMP_NUM_THREADS the child process was given, which torch obeys at start-up."""
    given = tmp_path / "given"
    p = run(*train_args(given, cache_dir, "train.max_steps=4", "train.eval_every=4"))
    assert p.returncode == 0, p.stderr
    s = json.loads((given / "summary.json").read_text())
    assert s["threads"] == 1 and s["threads_set_by"] == "train.threads"
    env_run = tmp_path / "env"
    args = [a for a in train_args(env_run, cache_dir, "train.max_steps=4", "train.eval_every=4")
            if a != "train.threads=1"]
    args = [a for i, a in enumerate(args) if not (a == "--set" and args[i + 1] == "--set")]
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    env.pop("MKL_NUM_THREADS", None)
    q = subprocess.run([sys.executable, "-m", "ffnlab", *args], capture_output=True, text=True, env=env,
                       timeout=600)
    assert q.returncode == 0, q.stderr
    s = json.loads((env_run / "summary.json").read_text())
    assert s["threads"] == 2 and s["threads_set_by"] == "the environment (OMP_NUM_THREADS=2)"


def test_without_a_setting_train_takes_the_free_cores():
    """No train.threads and no thread variable: the cores torch would use less the 1-minute load
    average, rounded, at least 1 (what benchmarks/train_threads.py measured faster both idle and
    beside a test suite). Oracle: the arithmetic on a stated load, and the precedence the help
    text states (train.threads, then OMP_NUM_THREADS / MKL_NUM_THREADS)."""
    from ffnlab.training.threads import choose_threads

    assert choose_threads(None, {}, 2, 0.28).count == 2
    assert choose_threads(None, {}, 2, 3.08).count == 1  # oversubscribed: one thread, never 0
    assert choose_threads(None, {}, 16, 5.4).count == 11
    assert choose_threads(None, {}, 16, 5.6).count == 10
    busy = choose_threads(None, {}, 2, 3.08)
    assert busy.set_by == "the free cores at start (1 of 2; load average 3.08)"
    assert choose_threads(None, {}, 4, None).count is None  # no load average: torch's default stands
    assert choose_threads(3, {"OMP_NUM_THREADS": "2"}, 2, 9.0).count == 3
    assert choose_threads(3, {}, 2, 9.0).set_by == "train.threads"
    env = choose_threads(None, {"OMP_NUM_THREADS": "2"}, 2, 9.0)
    assert env.count is None and env.set_by == "the environment (OMP_NUM_THREADS=2)"
    assert choose_threads(None, {"OMP_NUM_THREADS": ""}, 2, 0.0).count == 2  # an empty variable sets nothing


