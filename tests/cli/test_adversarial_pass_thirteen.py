"""A thirteenth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at what the twelfth pass's findings mended (E1-E8: a model.json checked against its
checkpoint's shapes, escaped notes, links and ``..`` in output paths, a finished run left alone),
with new inputs of the same classes; inputs kept as tests.

The pass threw about 140 inputs, each a call of the CLI (in-process, or a subprocess where a signal
or the environment was the question), recording exit status, stderr lines and traceback:

* a trained run's model.json that disagrees with its checkpoint other than in size (100: 25
  changes x ``generate``, ``export --hf``, ``capacity measure``, ``probe``): tied_embeddings false,
  ffn kind gelu, an MoE FFN (n_experts 4, top_k 2), vocab_size 512 and 10, positions learned, FFN
  bias, lm_head_bias, qk_norm, qkv_fused false, norm layernorm, n_kv_heads 1, n_heads 4, an unknown
  key, final_norm false, mtp_layers 1, d_ff "86" and 86.0, d_model true, max_positions 2**40, a
  name with ESC and U+202E, prepared_data /etc and one with ESC, no "model", params.total 1.
* the Ctrl-C resume hint of ``train`` (2, subprocesses, SIGINT at 5 s): ``--out`` named
  ``r<ESC>[2J x`` (and, in-process, ``my run``); the final summary line of a finished run so named.
* ``perplexity --dataset`` (8, model ``e1``, a 4-step run exported, and ``nomodel``): nope.txt,
  data/test.txt (not here), a .jsonl whose page is an int, a .csv with only a header, an empty
  .txt, a FIFO, /dev/zero, a name with ESC.
* engine names (9, ``fit llama-3-8b --mode serve --engine``): VLLM@0.8, Vllm, 'vllm ', hf-trainer,
  HF-TRAINER, full-width VLLM, vLLM@0.8.0, sglang@0.4, deepspeed@0.14: each refused in one line.
* output paths (5, ``export run --hf``; 1, ``probe --out``; lnk a link to else/sub, flink a link
  to a file): lnk/../../x1, flink/x2, c.txt/x3, lnk/../lnk/x4, a/b/../../../x5 (and ``probe``
  to a/b/../../../pz).
* resumes of tampered runs (4, ``train --out R --resume``, files hashed before and after): a
  finished run with ``--set train.max_steps=2``; summary.json removed; the last checkpoint
  (step-0000004) removed, summary.json kept; metrics.jsonl cut to its first 2 lines.
* degenerate reports (2, ``report SW --out rr``): a real 1-arm, 1-seed, 1-step sweep (its one run
  set aside: results.json null, report.md and arms.csv "nan"); a fake 2-arm, 2-seed sweep whose
  gelu-r2 runs end at 10 nats (both set aside). No warning or traceback either time.
* location variables (7, ``table org/tiny`` offline, no HF_HOME/XDG_CACHE_HOME/FFNLAB_CACHE unless
  said): HOME a file, HOME a link to a file, XDG_CACHE_HOME ``/``, a link to ``/``, a relative one,
  HF_HOME a link to ``/``, HOME ``~root``.

Findings (5 root causes; each a strict xfail below until mended; all five mended since, each test now a check):

F1. A run's model.json whose attention differs from the run's own config.yaml in a way the
   checkpoint's shapes cannot tell is used as it says: with ``"n_heads": 4`` in model.json (the
   run trained with ``n_heads: 2``, as its config.yaml says; d_model 32, so the fused qkv weight is
   (96, 32) either way), ``generate`` answers exit 0, ``export --hf`` writes a config.json with
   ``"num_attention_heads": 4`` (a model whose logits are not the trained one's), ``capacity
   measure`` and ``probe`` measure it (qkv_fused false and d_ff 86.0 load the same, harmlessly).
   ``training/export.py`` ``load_run_checkpoint`` (lines 593-611) reads config.yaml (``cfg``) and
   model.json (``files.model``) and compares model.json's model only with the checkpoint's shapes
   (``check_shapes``, line 610), never with the model config.yaml describes
   (``runconfig.model_config(cfg, vocab_size=...)``). Mended: ``runfiles.check_run_model``, called
   by ``load_run_checkpoint`` after the shapes and before the model is built, refuses in one line
   naming both files and the keys.
F2. The Ctrl-C resume hint writes the run folder raw and unquoted: ``train long.yaml --out
   $'r\\e[2J x'`` stopped by SIGINT after 5 s prints "interrupted: the last checkpoint is
   step-0000096 (of 400000 steps); continue with: ffnlab train --out r<ESC>[2J x --resume" (the
   escape itself, which clears a terminal, and a command that a shell splits at the space into
   ``--out r<ESC>[2J`` and an extra argument ``x``); the finished run's summary line, through
   ``escape.one_line``, shows ``r\\x1b[2J x``. ``cli/training.py`` ``_say_how_to_resume`` (line
   150) formats ``{out}`` with neither ``escape.one_line`` nor ``shlex.quote``.

F3. A ``--dataset`` that names a file not here is taken for a Hub dataset id, after the model: a
   typo'd ``perplexity e1 --dataset data/test.txt`` (e1 an exported run) loads the model, then ends
   in "error: Couldn't reach 'data/test.txt' on the Hub (OfflineModeIsEnabled)" with
   HF_HUB_OFFLINE=1, and "error: dataset 'nope.txt': cannot connect to the Hub at huggingface.co:
   [Errno -2] Name or service not known" without it (6.8 s, a network request, where a missing
   file is the answer); with a model that is not here the line is the model's. ``training/wikitext.py``
   ``is_local`` (line 111) is ``exists()`` alone, so ``cli/evaluate.py`` line 112 reads a local
   file first only when it is there; a name with one of the suffixes the help lists is never
   asked whether it was meant as a file.

F4. A resume that only has to complete a run's record rewrites its config.yaml: a 4-step run
   whose summary.json is gone (stopped after its last checkpoint; removed here) resumed with
   ``train --out run --resume`` trains nothing, writes summary.json (exit 0), and rewrites
   config.yaml with ``ratio: 4`` become ``ratio: 4.0`` (the same config, other bytes; the same with
   metrics.jsonl cut to 2 lines). ``training/trainer.py`` ``_train`` calls ``_write_run_files``
   (line 298) on every resume, which dumps the loaded config again (line 373) instead of keeping
   the config.yaml the resume was checked against (E8's rewrite, mended only for a run
   ``already_finished`` finds finished). Mended: ``_write_run_files`` leaves a file alone when it
   already holds what would be written (the config read back, the JSON, the metrics text).

F5. An arm whose every run is set aside shows "nan" as its perplexity and bits per byte: ``report``
   of a sweep whose gelu-r2 runs both end worse than chance writes the report.md row "| gelu-r2 |
   4.000 / 4.000 | ... | nan no interval | nan no interval |" and arms.csv cells "nan", where
   results.json says null. ``experiments/reporting/model.py`` lines 316-317 format ``r.val_ppl``
   and ``r.val_bpb`` with ``:.3f``/``:.4f`` whatever they hold (the arms table's own cells, and
   ``bounds``, say "n/a" / "no interval").

Per class, inputs tried / failures: model.json against its checkpoint 100 / 4 (F1: n_heads 4 in
each command); the resume hint and summary line 3 / 2 (F2); perplexity --dataset 8 / 2 (F3);
engine names 9 / 0; output paths 6 / 0; tampered resumes 4 / 2 (F4);
degenerate reports 2 / 2 (F5); location variables 7 / 0.

Noted, not broken promises: model.json with ``"total": 1`` in params is refused as "params.non_embedding
must be an integer in [1, 1], got 12448" (one line, naming the field checked against the lie rather
than the lie); prepared_data ``/etc`` is read only by ``capacity measure`` and ``probe`` (one line
each), ``generate`` and ``export`` do not need it; XDG_CACHE_HOME ``/`` puts the HF cache at
``/huggingface/hub`` (a folder the user named, unlike E7's HOME); a relative XDG_CACHE_HOME is
ignored (the XDG rule); HOME a file or a link to one reads "error: cannot fetch org/tiny
config.json: [Errno 20] Not a directory: '.../c.txt/.cache/huggingface/token'" (one line).

Also noted: ``export --hf a/b/../../../x5`` writes x5 beside the working folder and leaves the empty
a/b it had to make to read ``..`` (as ``mkdir -p`` does; ``files.py`` ``_walk`` says so);
``flink/x2`` (flink a link to a file) reads "cannot write flink/x2 (File exists); nothing was
written" (one line, though the system's word is ENOTDIR); a run whose last checkpoint was removed
but whose summary.json says finished is "already finished its 4 steps: nothing to train, no file
changed", and ``generate``/``export`` would then use step-0000002; ``sglang@0.4`` is refused
("SGLang has no profile '0.4'") where an unknown hf-trainer version is a note.

Not reached before the deadline: E3 (Hub encodings, chunked bodies, redirects), zero-variance
losses over several seeds, HOME ``~user`` forms beyond ``~root``.
"""

from __future__ import annotations

import csv
import json
import shlex
import subprocess
from pathlib import Path

import pytest
from adversarial_cli import FACTS_RUN_YAML, copy_run, interrupted_train, strict_json, train_run
from fuzz_cli import assert_refused, cli, snapshot

GENERATE = ["generate", "run", "--prompt", "hi", "--tokens", "3"]

TRAIN_YAML = FACTS_RUN_YAML


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_run(tmp_path_factory.mktemp("trained"), TRAIN_YAML)


_copy = copy_run


def _edit_model(run: Path, change) -> None:  # noqa: ANN001
    path = run / "model.json"
    data = json.loads(path.read_text())
    change(data["model"])
    path.write_text(json.dumps(data))


# -- F1: a model.json whose attention differs from config.yaml's, invisibly to the shapes ---------------


READERS = {
    "generate": GENERATE,
    "export": ["export", "run", "--hf", "hf"],
    "probe": ["probe", "run", "--out", "pz"],
    "capacity": ["capacity", "measure", "run"],
}


@pytest.mark.parametrize("command", list(READERS))
def test_a_model_json_with_other_heads_than_its_run_config_is_refused(trained, tmp_path, command):
    from ffnlab.training import runconfig

    run = _copy(trained, tmp_path)
    # oracle: the run's own config.yaml, from which the trainer built the model it trained
    assert runconfig.load(run / "config.yaml").model.n_heads == 2
    _edit_model(run, lambda m: m["attn"].update(n_heads=4))
    before = snapshot(tmp_path)
    line = assert_refused(cli(*READERS[command], where=tmp_path), "model.json")
    assert "config.yaml" in line and "attn.n_heads 4 vs 2" in line, line
    assert snapshot(tmp_path) == before  # nothing written: no hf/, no pz, no capacity.json


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda m: m["attn"].update(n_heads=1), "attn.n_heads 1 vs 2"),  # head_dim 32: qkv still (96, 32)
        (lambda m: m.update(max_positions=2**40), f"max_positions {2**40} vs 32"),  # RoPE: no position weights
    ],
    ids=["one-head", "max-positions"],
)
def test_a_model_json_its_shapes_cannot_tell_from_its_run_config_is_refused(trained, tmp_path, change, key):
    # a second input of F1's class: changes the checkpoint's tensors do not show (oracle: the
    # checkpoint loads into the edited model, as safetensors' shapes say), refused against config.yaml
    from safetensors.torch import load_file

    from ffnlab.sizing.config import ModelConfig
    from ffnlab.training.nn import build_model

    run = _copy(trained, tmp_path)
    _edit_model(run, change)
    edited = ModelConfig.from_dict(json.loads((run / "model.json").read_text())["model"])
    saved = load_file(str(run / "checkpoints" / "step-0000004" / "model.safetensors"))
    shapes = {k: tuple(v.shape) for k, v in build_model(edited, max_seq_len=32).state_dict().items()}
    assert all(shapes.get(k) == tuple(v.shape) for k, v in saved.items()), "the shapes tell it"
    before = snapshot(tmp_path)
    line = assert_refused(cli(*GENERATE, where=tmp_path), "model.json")
    assert "config.yaml" in line and key in line, line
    assert snapshot(tmp_path) == before


def test_an_untouched_run_and_a_renamed_model_json_still_generate(trained, tmp_path):
    # kept: model.json as the trainer wrote it agrees with config.yaml; its name is a label only
    run = _copy(trained, tmp_path)
    assert cli(*GENERATE, where=tmp_path).code == 0
    _edit_model(run, lambda m: m.update(name="renamed"))
    r = cli(*GENERATE, where=tmp_path)
    assert r.code == 0, r.stderr[-500:]


# kept: model.json changes the checkpoint's tensors do tell, each refused in one line naming model.json
@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update(tied_embeddings=False),
        lambda m: m["ffn"].update(n_experts=4, top_k=2),
        lambda m: m.update(vocab_size=10),
        lambda m: m.update(positions="learned"),
        lambda m: m.update(final_norm=False),
        lambda m: m["attn"].update(n_kv_heads=1),
    ],
    ids=["untied", "moe", "vocab10", "learned", "no-final-norm", "kv-heads-1"],
)
def test_a_model_json_its_checkpoint_contradicts_is_one_line(trained, tmp_path, change):
    run = _copy(trained, tmp_path)
    _edit_model(run, change)
    before = snapshot(tmp_path)
    line = assert_refused(cli(*GENERATE, where=tmp_path), "model.json")
    assert "was the config changed" in line, line
    assert snapshot(tmp_path) == before


# -- F2: the Ctrl-C resume hint -----------------------------------------------------------------------


def _hint(stderr: str) -> str:
    lines = [x for x in stderr.splitlines() if "continue with: " in x]
    assert len(lines) == 1, repr(stderr)
    return lines[0].split("continue with: ", 1)[1]


def _bash_words(command: str) -> list[str]:
    """The words bash splits ``command`` into (its quoting, ``$'...'`` included)."""
    p = subprocess.run(["bash", "-c", f'set -- {command}; printf "%s\\0" "$@"'], capture_output=True, check=True)
    return [w.decode("utf-8", "surrogateescape") for w in p.stdout.split(b"\0")[:-1]]


@pytest.mark.parametrize("out", ["r\x1b[2J", "my run", "it's \u202e\\x"], ids=["escape", "space", "quote-bidi"])
def test_the_resume_hint_is_a_command_a_shell_reads_back(tmp_path, monkeypatch, out):
    code, stderr = interrupted_train(tmp_path, out, monkeypatch)
    assert code == 130, (code, stderr)
    assert "\x1b" not in stderr and "\u202e" not in stderr, repr(stderr)
    # oracle: the shell's own splitting (bash, where the hint is pasted) gives back the run's folder
    words = _bash_words(_hint(stderr))
    assert words[:3] == ["ffnlab", "train", "--out"] and (tmp_path / words[3] / "config.yaml").is_file(), words
    assert words[3:] == [out, "--resume"], words


def test_the_resume_hint_of_a_plain_folder(tmp_path, monkeypatch):
    # kept: the hint's form for a folder whose name needs neither escape nor quote
    code, stderr = interrupted_train(tmp_path, "runs/a", monkeypatch)
    assert code == 130, (code, stderr)
    assert shlex.split(_hint(stderr)) == ["ffnlab", "train", "--out", "runs/a", "--resume"]
    assert (tmp_path / "runs" / "a" / "config.yaml").is_file()  # the run that began is kept


# -- F3: a missing local --dataset taken for a Hub dataset id -----------------------------------------


def test_a_missing_local_dataset_file_is_said_before_the_model(tmp_path, monkeypatch):
    # a local file is read before any model (cli/evaluate.py); a name with a file suffix that is not
    # here is a typo'd file, and the one line should name it, not the Hub or the model
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = assert_refused(cli("perplexity", "nomodel", "--dataset", "data/test.txt", where=tmp_path))
    assert "data/test.txt" in line and "no such file" in line, line


@pytest.mark.parametrize("name", ["./wiki.test.raw", "corpora/a/b", "~/held-out.parquet"])
def test_a_missing_dataset_shaped_like_a_path_is_no_such_file(tmp_path, monkeypatch, name):
    # a second input of F3's class: names no Hub dataset id can be (org/name, no file type) are files
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    line = assert_refused(cli("perplexity", "nomodel", "--dataset", name, where=tmp_path))
    assert "no such file" in line and name in line, line


# -- F4: a resume that only has to write the summary rewrites config.yaml -----------------------------


def test_a_resume_that_only_writes_the_summary_keeps_config_yaml(trained, tmp_path):
    # a run stopped after its last checkpoint and before its summary.json (removed here): the resume
    # trains nothing and writes the summary; config.yaml, read back the same, keeps its bytes
    run = _copy(trained, tmp_path)
    (run / "summary.json").unlink()
    before = (run / "config.yaml").read_bytes()
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert (run / "summary.json").is_file()  # the run's record completed
    assert (run / "config.yaml").read_bytes() == before, (run / "config.yaml").read_text()[:400]


def test_a_resume_of_a_run_whose_metrics_were_cut_keeps_its_unchanged_files(trained, tmp_path):
    # a second input of F4's class: metrics.jsonl cut to its first 2 lines (summary.json removed, so
    # the run is not finished): the resume evaluates the last step again and writes the summary;
    # oracle: the saved bytes of config.yaml and model.json, and metrics.jsonl's first 2 lines
    run = _copy(trained, tmp_path)
    (run / "summary.json").unlink()
    head = b"".join((run / "metrics.jsonl").read_bytes().splitlines(keepends=True)[:2])
    (run / "metrics.jsonl").write_bytes(head)
    kept = {n: (run / n).read_bytes() for n in ("config.yaml", "model.json")}
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert {n: (run / n).read_bytes() for n in kept} == kept
    assert (run / "metrics.jsonl").read_bytes().startswith(head)
    assert (run / "summary.json").is_file()


def test_a_resume_with_a_changed_resumable_key_writes_it_to_config_yaml(trained, tmp_path):
    # kept: a file whose content does change is written (oracle: config.yaml read back)
    from ffnlab.training import runconfig

    run = _copy(trained, tmp_path)
    (run / "summary.json").unlink()
    model = (run / "model.json").read_bytes()
    r = cli("train", "--out", "run", "--resume", "--set", "train.eval_every=4", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert runconfig.load(run / "config.yaml").train.eval_every == 4
    assert (run / "model.json").read_bytes() == model


# -- F5: an arm whose every run is set aside shows "nan" in the report's tables ------------------------


def test_an_arm_whose_runs_are_all_set_aside_shows_no_nan(tmp_path):
    from fake_sweeps import fake_sweep

    # both seeds of gelu-r2 end at 10 nats, worse than chance (ln 256 = 5.55): set aside
    fake_sweep(
        tmp_path / "sw",
        {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.0, 1.0)},
        seeds=2,
        noise=0.01,
        final={"gelu-r2-s0": 10.0, "gelu-r2-s1": 10.0},
    )
    r = cli("report", "sw", "--out", "rr", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    # oracle: results.json, strict JSON, has no figure for the arm (null); the table should say so too
    arms = {a["arm"]: a for a in strict_json((tmp_path / "rr" / "results.json").read_text())["arms"]}
    assert arms["gelu-r2"]["val_ppl"] is None, arms["gelu-r2"]
    cells = [
        c.strip()
        for line in (tmp_path / "rr" / "report.md").read_text().splitlines()
        if line.startswith("| gelu-r2 ")
        for c in line.split("|")
    ]
    assert cells and not [c for c in cells if c.startswith("nan")], cells
    # a second output of the class: arms.csv leaves the cell empty where results.json has null
    with open(tmp_path / "rr" / "arms.csv", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["arm"] == "gelu-r2")
    assert row["val_ppl"] == "" and "nan" not in row.values(), row
