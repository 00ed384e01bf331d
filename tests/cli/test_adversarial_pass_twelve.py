"""A twelfth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the mechanisms added since the eleventh (held notes, the typed run-file reader,
the engine spec reader, cut error lines, empty location variables, the Hub's byte limit, the one
"finished" test) and at signals, full disks, long and odd paths; inputs kept as tests.

The pass threw about 250 inputs, each a call of the CLI (in-process, or a subprocess where a Hub,
a signal, a resource limit or two processes at once were the question), recording exit status,
stderr lines, traceback, strict JSON and the files left:

* a trained run's model.json (19, a real 4-step run): its model's d_model 64, 2 layers, vocabulary
  300 and 10, another FFN kind, max_positions 1 (``generate``: one line each, or the answer);
  d_model 16,384 x 64 layers (``generate``, ``export``, ``probe``, ``capacity measure``);
  ``generate`` ``--tokens 40`` past the 32-token window, a 100-character prompt, ``--temperature``
  1e-30/1e-40/1e-45/3e-39 (float32 underflow: greedy, no NaN), ``--top-k`` 1 and 1000.
* run files (33: ``generate``, ``export``, ``capacity measure`` each): state.json with a byte that is
  not UTF-8; config.yaml the same; model.json with a UTF-8 byte-order mark, in UTF-16, a key twice,
  a link to /dev/zero, a link to another run's; model.safetensors a link to /dev/zero, empty, cut
  100 bytes short; ``checkpoints`` a link to itself.
* capacity measure --json (7): summary.json tokens 0 and 2**62, losses 0, train_flops 0, wall_s 0,
  final_val_ppl 1e308; params 2**62: strict JSON each.
* sweep records and the "finished" test (31, ``report SW --out rr`` of a fake sweep): a run's
  summary.json with final_val_loss NaN, Infinity (every run, one arm), -1, 0, -0.0, 1e-300, 1e308;
  final_val_ppl NaN, final_val_bpb Infinity, wall_s NaN, train_flops Infinity, tokens NaN; status
  Finished, 'finished ', FINISHED, done, 'finished\\x00'; steps 10.0 and 11; two reports at once
  on one new --out (3 rounds).
* ``--engine NAME@VERSION`` (35): trailing and leading spaces, a newline, '@ 5', 'name @5', '@',
  '@@', 'hf-trainer@@5', 'hf-trainer@5@', Arabic-Indic and full-width digits, a NUL, '+cpu' and
  '+cu121' local versions, 5,000 digits and letters, 1e999, -0, 5.25, U+202E, ESC [2J, 'a b',
  HF-Trainer, deepspeed; serving: 'vllm@0.8 ', Arabic-Indic zero, 'vllm@@', VLLM, 'sglang@',
  'llama.cpp@b1', 0.8.0rc1, 6,000 characters.
* launch config notes (3): TRL YAML whose lora_target_modules holds ESC [2J and U+202E, a
  lora_target_modules string with ESC, a config file named with ESC [2J.
* the Hub (7, servers of the pass's own on 127.0.0.1): a config.json sent with
  ``Content-Encoding: gzip`` (a 149-byte one; a 200 MB one in 204 KB, with and without
  Content-Length); huggingface_hub's own ``/api/agent-harnesses`` request stalling (``--timeout``
  10 and 1) or sending 300 MB; a stalling Hub for an ``hf:`` corpus with FFNLAB_TIMEOUT=2.
* paths (18): ``export --hf`` and ``--plot`` with a name of bytes not UTF-8; a 300-byte component
  as ``export --hf``, ``train --out``, ``probe --out``, ``--plot``, ``report``, ``generate``;
  the same inside a new folder (``a/LONG/b``) for export, train, probe and ``--plot``; 25
  components of 200 bytes; ``export``/``train``/``probe`` to ``lnk/../x`` where lnk is a link to
  a folder elsewhere (and ``train`` there refused early and late).
* signals and full disks (28, subprocesses): SIGINT and SIGTERM to ``train`` at 3, 4.5 and 6 s;
  ``train --resume`` after a SIGTERM left a checkpoint's temporary folder; a rerun over a run folder
  a SIGTERM left holding only .lock, or .lock, config.yaml and model.json; SIGINT to ``export`` at
  1.5-3.4 s (10 delays) and to ``report`` at 1.5-3.5 s; SIGTERM to ``export`` at 2.4-2.6 s;
  ``export`` and ``train`` under a 40 KiB file-size limit (``ulimit -f``: EFBIG, a full disk's kind
  of failure).
* run commands (5): ``train --resume`` of a finished run (with and without its config, and with
  more steps), ``claims --evidence RUN``, ``capacity report RUN``.
* train configs (5, ``--print-config``): an alias bomb, a merge key, 40 MB, 50,000 nested lists,
  a ``!!python/name`` tag.
* environment (5): HOME '//', '/./', '/tmp/..', '///' and a link to / (``train``, no cache set).
* links out of a run folder (16: ``train --resume`` with and without more steps, ``capacity
  measure``, ``export``): .lock a link to a new file elsewhere, metrics.jsonl, config.yaml and
  checkpoints/ links to copies elsewhere (what they lead to compared before and after).
* claims evidence (16, ``claims --evidence EV`` with and without ``--json``): a report's
  claims.json with ESC and OSC sequences in an evidence string, a verdict "maybe", 100,000
  characters of evidence, an unknown claim, an entry a list, an interval of 1e400, 100,000 claims.
* special files as configs (15): a FIFO, a link to /dev/zero and a folder as ``--engine-config``,
  ``sweep`` spec and ``train`` config; /proc/self/environ and /dev/stdin as ``--engine-config``;
  a TrainingArguments ``deepspeed`` naming a FIFO, /dev/zero and itself; a link to
  /proc/self/pagemap named pm.yaml as a train config.
* a learned-positions run (2): ``generate --tokens 100`` past its 32 positions, a 60-character
  prompt; a SIGINT to ``sweep`` at 9 s (1).

Root (``id -u`` 0) ran this pass, so read-only folders and files without permission (chmod) were not
tried: root reads and writes through them; a file-size limit stood in for a full disk.

Findings (8 root causes; each a strict xfail below):

E1. A run's model.json that names a bigger model than its checkpoint holds is built whole before
   the checkpoint's shapes are compared: with ``"d_model": 16384, "n_layers": 64`` (a valid model
   config), ``generate``, ``export``, ``probe`` and ``capacity measure`` end in "RuntimeError:
   [enforce fail at alloc_cpu.cpp:127] ... DefaultCPUAllocator: can't allocate memory: you tried
   to allocate 3221225472 bytes" under a 6 GB address-space limit (without one, they allocate
   toward the 275 GB that model holds); d_model 64 is refused in one line ("weight ... has shape
   (32,) ..., this model needs (64,)"). ``training/export.py`` ``load_run_checkpoint`` (lines
   596-597) checks config.yaml's model against the memory (``check_fits(cfg, ...)``) and then builds
   model.json's (``build_model(files.model, ...)``), which nothing compares with the checkpoint
   before ``load_checkpoint``.
E2. Held notes write control characters raw: ``size --d-model 1024 --ratio 4 --n-layers 2
   --engine 'hf-trainer@<ESC>[2J'`` prints "note: hf-trainer@\\x1b[2J is not known: ..." with the
   escape itself (it clears a terminal); a NUL and U+202E the same; a launch config's report
   prints a lora_target_modules entry, and the config's file name, with their escapes raw. Error
   lines go through ``escape.terminal`` (``cli/__init__.py`` line 146); ``cli/notes.py``
   ``release`` writes the held lines as said, and ``sizing/memory/engines.py`` line 122 and
   ``sizing/memory/engine_config.py`` line 218 quote the values through ``clip`` (a cut, no escape).
E3. The Hub's byte limit counts the bytes on the wire, not the file: a config.json sent with
   ``Content-Encoding: gzip`` is inflated past the 16 MiB limit. With no Content-Length, 204 KB sent
   became a 209,715,358-byte config.json left in the HF cache, then "is 209,715,358 bytes, over the
   16,777,216-byte limit" (the tenth pass's C5, mended for plain bodies); with a Content-Length, the
   200 MB are inflated and the line is huggingface_hub's "Consistency check failed: file should be
   of size 203978 but has size 209715358" (the test keeps the first form, 24 MiB).
   ``netwait.py`` ``StallReported.__iter__`` counts the transport's (compressed) chunks and
   ``_announced_size`` reads the compressed length; httpx decodes above both.
E4. A folder named through a link and ``..`` is made at two places: ``train t.yaml --out lnk/../tr``
   (lnk a link to /elsewhere/sub) writes the run to /elsewhere/tr, as the system reads the path, and
   leaves an empty ``tr/checkpoints`` in the working folder; ``probe RUN --out lnk/../pr`` leaves an
   empty ``pr``. ``files.py`` ``make_dir`` (line 124) walks and makes the missing folders of
   ``os.path.abspath(path)``, which drops ``lnk/..`` without following the link.
E5. A refused ``export`` or ``probe`` leaves the new folders above its output: ``export RUN --hf
   a/<300 x>/b`` and ``probe RUN --out c/<300 x>/b`` end in "error: File name too long: ..." and
   leave ``a/`` and ``c/``. ``files.py`` ``make_dir`` does not undo the folders it made when a
   later one fails, and ``provisional_dir`` (line 938) removes the folders above only when it
   removed the output folder itself, which was never made.
E6. A report of a sweep whose every run is set aside (final losses no better than chance, as a
   sweep too short to learn has them) answers exit 0 but writes matplotlib's warning twice on
   stderr, quoting ffnlab's source: ".../experiments/reporting/plots.py:114: UserWarning: No
   artists with labels found to put in legend ... ax.legend(fontsize=FONT - 1, ncol=2)" (and
   line 239): the plots call ``ax.legend`` with nothing drawn.
E7. HOME a link to the file system's root passes the home check: ``HOME=/tmp/rootlink train
   t.yaml`` (no cache set; rootlink -> /) put the corpus cache in /.cache/ffnlab (the tenth pass's
   C4 class, mended for an empty HOME and for '/', '//', '/./', '/tmp/..'; removed by hand after).
   ``files.py`` ``user_home`` (line 635) compares ``os.path.normpath(home)``, not the folder the
   link leads to.
E8. ``train --out RUN --resume`` of a finished run trains nothing, answers exit 0, and rewrites the
   run's record: summary.json gets this session's ``wall_s`` (0.0428 became 0.0389), a new measured
   ``peak_flops`` and ``peak_source`` (0.1736 became 0.2022 TFLOP/s, after about 3 s of matmul
   timing), config.yaml is rewritten (``ratio: 4`` became ``ratio: 4.0``), and the last evaluation
   is run again. ``training/trainer.py`` ``_train`` writes the run files (line 262, through
   ``_write_run_files``, which drops the last step's eval record at line 334), measures the peak
   (line 264) and ``_loop`` ends in ``_summary`` (line 602) whatever step the run was restored at,
   where a summary.json saying "finished" at ``max_steps`` already holds the run's figures.

Per class, inputs tried / failures: a trained run's model.json 19 / 4 (E1); run files 33 / 0;
capacity measure --json 7 / 0; sweep records and "finished" 31 / 1 (E6); engine specs 35 / 3 (E2);
launch config notes 3 / 3 (E2); the Hub 7 / 2 (E3); paths 18 / 4 (E4 2, E5 2); signals and full
disks 28 / 0; run commands 5 / 1 (E8); train configs 5 / 0; environment 5 / 1 (E7); links out of a
run folder 16 / 0; claims evidence 16 / 0; special files 15 / 0; a learned-positions run and a sweep
interrupted 3 / 0.

Noted, not broken promises: a run's summary.json with a NaN loss counts as finished for ``sweep``
(``experiments/sweep/runs.py`` ``finished_summary`` reads JSON constants), so the sweep skips it,
while ``report`` refuses the sweep in one line ("NaN is not a number JSON allows"): the trainer
never writes one, so only a tampered run gets there; huggingface_hub 1.x GETs ``/api/agent-harnesses``
before the first Hub file unless HF_HUB_DISABLE_TELEMETRY is set (bounded: 3 s, or --timeout if
less; its wait is announced as the config.json's); ``--engine VLLM`` is read as vllm while
``--engine HF-Trainer`` is refused; a SIGINT to ``train`` prints "interrupted: the last checkpoint
is ..." then "interrupted" (two lines, exit 130), and one to ``export`` at 2.6 s ended it by the
signal (exit -2) where others gave 130; ``generate`` of a run whose checkpoints folder is a link
loop says "run has no checkpoint to export"; model.json a link to /dev/zero reads "is not an ffnlab
run folder (no config.yaml/model.json)"; SIGTERM leaves a checkpoint's temporary folder, which the
next ``train --resume`` removes; a ``train`` over a folder a SIGTERM left holding only .lock starts
afresh; a train config that is a link to /proc/self/pagemap reads "error: [Errno 22] Invalid
argument" (one line, but the file unnamed; ``files.py`` ``read_text`` reads a file whole before
cutting it at its limit, which a /proc file reporting size 0 passes); the links out of a run folder
were refused (.lock, checkpoints/) or replaced by the run's own files, what they led to untouched.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from adversarial_cli import FACTS_RUN_YAML, copy_run, fake_hub_process, strict_json, train_run
from fake_hub import FakeHub
from fuzz_cli import assert_refused, cli, refused_untouched, snapshot
from hub_waits import LLAMA

SIZE = ["size", "--d-model", "1024", "--ratio", "4", "--n-layers", "2"]
GENERATE = ["generate", "run", "--prompt", "hi", "--tokens", "3"]
EXPORT = ["export", "run", "--hf", "ex"]
CAPACITY = ["capacity", "measure", "run"]
PROBE = ["probe", "run", "--out", "p", "--tokens", "256", "--corpus", "c.txt"]
LONG = "x" * 300

TRAIN_YAML = FACTS_RUN_YAML


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_run(tmp_path_factory.mktemp("trained"), TRAIN_YAML)


def _copy(trained: Path, tmp_path: Path) -> Path:
    run = copy_run(trained, tmp_path)
    (run / "capacity.json").unlink(missing_ok=True)
    return run


def _edit_json(path: Path, change) -> None:  # noqa: ANN001
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# -- E1: a model.json bigger than its checkpoint ----------------------------------------------------------


def _under_address_limit(argv: list[str], where: Path) -> str:
    """``cli(argv)`` refused under an address-space limit of what this process has plus 2 GiB: a
    model built whole fails at its first big tensor (torch's RuntimeError, the traceback a user
    sees) instead of swapping; returns the one error line."""
    import ffnlab.training.export  # noqa: F401  (torch and the loader imported before the limit)

    with open("/proc/self/statm") as fh:
        have = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (have + 2 * 2**30, hard))
    try:
        r = cli(*argv, where=where)
    except RuntimeError as e:
        r = None
        error = str(e)[:200]
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert r is not None, error
    return assert_refused(r, "model.json")


@pytest.mark.parametrize("argv", [GENERATE, EXPORT, PROBE, CAPACITY], ids=["generate", "export", "probe", "capacity"])
def test_a_model_json_bigger_than_its_checkpoint_is_one_line_not_an_allocation(trained, tmp_path, argv):
    run = _copy(trained, tmp_path)
    # the model this model.json names holds ~275 GB of weights
    _edit_json(run / "model.json", lambda m: m["model"].update(d_model=16384, n_layers=64))
    before = snapshot(tmp_path)
    _under_address_limit(argv, tmp_path)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("argv", [GENERATE, EXPORT, PROBE, CAPACITY], ids=["generate", "export", "probe", "capacity"])
def test_a_model_json_with_a_wider_ffn_than_its_checkpoint_is_one_line(trained, tmp_path, argv):
    # a second input of E1's class: the same layers, one FFN 2**26 wide (24 GiB of float32 weights)
    from safetensors.torch import load_file

    run = _copy(trained, tmp_path)
    _edit_json(run / "model.json", lambda m: m["model"]["ffn"].update(d_ff=2**26))
    line = _under_address_limit(argv, tmp_path)
    # oracle: the checkpoint's own tensors, read by safetensors: the line names an FFN weight and
    # the shape the checkpoint holds for it
    saved = load_file(str(run / "checkpoints" / "step-0000004" / "model.safetensors"))
    named = [k for k in saved if f"weight {k} has shape {tuple(saved[k].shape)}," in line]
    assert named and ".ffn." in named[0], line


def test_a_model_json_that_differs_from_its_checkpoint_is_one_line(trained, tmp_path):
    # the oracle of E1's promise at a size that builds: the shapes compared, one line
    run = _copy(trained, tmp_path)
    _edit_json(run / "model.json", lambda m: m["model"].update(d_model=64))
    refused_untouched(tmp_path, *GENERATE, fragment="was the config changed")


# -- E2: held notes with control characters -------------------------------------------------------------


@pytest.mark.parametrize("version", ["\x1b[2J", "5.25.0\x08\x08", "\u202e5"], ids=["esc", "backspace", "bidi"])
def test_an_unknown_engine_versions_note_shows_control_characters_escaped(tmp_path, version):
    r = cli(*SIZE, "--engine", f"hf-trainer@{version}", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert "is not known" in r.stderr
    # oracle: the error line's escaping (escape.terminal), which the same value gets when refused
    assert version not in r.stderr, repr(r.stderr)


@pytest.mark.parametrize("where", ["value", "name"])
def test_a_launch_configs_report_shows_control_characters_escaped(tmp_path, where):
    text = 'use_peft: true\nlora_r: 8\nlora_target_modules: ["q_proj", "zz\\u001b[2J"]\n'
    name = "c\x1b[2J.yaml" if where == "name" else "c.yaml"
    (tmp_path / name).write_text(text if where == "value" else "per_device_train_batch_size: 2\n")
    argv = ["size", "--from", "llama-3-8b", *(["--finetune", "lora"] if where == "value" else [])]
    r = cli(*argv, "--engine-config", name, where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert "engine config" in r.stderr
    assert "\x1b" not in r.stderr, repr(r.stderr)


def test_a_note_naming_a_run_folder_with_control_characters_shows_them_escaped(trained, tmp_path):
    # a second input of E2's class: a note that quotes a path (generate's "N tokens from RUN")
    run = _copy(trained, tmp_path)
    run.rename(tmp_path / "r\x1b[2J\u202e")
    r = cli("generate", "r\x1b[2J\u202e", "--prompt", "hi", "--tokens", "3", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    # oracle: the name as written by hand with its escapes visible, and no raw control character
    assert "tokens from r\\x1b[2J\\u202e at " in r.stderr, repr(r.stderr)
    assert not any(c in r.stderr for c in "\x1b\u202e"), repr(r.stderr)


@pytest.mark.parametrize("text", ["a\u2028error: faked", "a\nerror: faked", "a\rerror: faked", "a\x00b\x9bc"])
def test_a_held_note_is_one_line_whatever_it_quotes(text):
    # held or said at once, a note is one line on stderr with no control character: Python's own
    # splitlines (which breaks at U+2028 too) and unicodedata's categories are the oracles
    import contextlib
    import io
    import unicodedata

    from ffnlab.cli import notes

    for hold in (notes.held, contextlib.nullcontext):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), hold():
            notes.say(f"note: {text}")
        said = err.getvalue()
        assert len(said.splitlines()) == 1, repr(said)
        assert not [c for c in said[:-1] if unicodedata.category(c) in ("Cc", "Zl", "Zp")], repr(said)


def test_a_refused_engine_version_with_control_characters_is_one_escaped_line(tmp_path):
    line = assert_refused(
        cli(
            "fit",
            "llama-3-8b",
            "--mode",
            "serve",
            "--gpu",
            "H100",
            "--gpus",
            "1",
            "--engine",
            "vllm@\x1b[2J",
            where=tmp_path,
        ),
        "vllm",
    )
    assert "\x1b" not in line


# -- E3: a gzip-encoded file past the Hub's byte limit ----------------------------------------------------

LIMIT = 16 * 2**20


def _gzip_hub(tmp_path: Path, raw: bytes, length: bool, *argv: str) -> subprocess.CompletedProcess:
    """``ffnlab ARGV`` against a Hub on 127.0.0.1 serving ``raw`` as org/tiny's config.json with
    ``Content-Encoding: gzip`` (with or without a Content-Length)."""
    p, _ = fake_hub_process(tmp_path, None if length else "no-length", *argv, "--timeout", "5",
                            repos={"org/tiny": {"main": {"config.json": raw}}}, hub=FakeHub(gzip=True))
    return p




def _assert_stopped_at_the_limit(p: subprocess.CompletedProcess, tmp_path: Path) -> None:
    """Oracles: the limit the one refusal line names, and no file past it on disk in the HF home
    (what the user did not ask for)."""
    lines = [x for x in p.stderr.splitlines() if x.startswith("error: ")]
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-1500:]
    files = [f for f in (tmp_path / "hfhome").rglob("*") if f.is_file()]
    biggest = max((f.stat().st_size for f in files), default=0)
    assert len(lines) == 1 and "limit" in lines[0] and biggest <= LIMIT, (lines, f"{biggest:,} bytes kept")


def test_a_gzip_encoded_config_past_the_limit_is_stopped_at_the_limit(tmp_path):
    # sent with no Content-Length (the tenth pass's C5 form); with one, the 24 MiB are inflated too
    raw = json.dumps({**LLAMA, "pad": "x" * (24 * 2**20)}).encode()  # 24 MiB inflated, ~25 KB sent
    _assert_stopped_at_the_limit(_gzip_hub(tmp_path, raw, False, "table", "org/tiny"), tmp_path)


def test_a_gzip_encoded_config_with_a_length_past_the_limit_is_stopped_at_the_limit(tmp_path):
    # a second input of E3's class: a Content-Length (of the compressed body) that passes the limit,
    # and 40 MiB of another text inflated from it
    raw = json.dumps({**LLAMA, "pad": "0123456789abcdef" * (40 * 2**16)}).encode()
    assert len(gzip.compress(raw, 1)) < LIMIT < len(raw)
    _assert_stopped_at_the_limit(_gzip_hub(tmp_path, raw, True, "table", "org/tiny"), tmp_path)


def test_a_small_gzip_encoded_config_reads_as_the_file_it_encodes(tmp_path):
    # the Hub sends text files gzip-encoded with no Content-Length: the limit counts, never refuses, them;
    # oracle: the same config.json read from a folder
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "config.json").write_text(json.dumps(LLAMA))
    local = cli("table", "local", "--json", where=tmp_path)
    p = _gzip_hub(tmp_path, json.dumps(LLAMA).encode(), False, "table", "org/tiny", "--json")
    assert local.code == 0 and p.returncode == 0, p.stderr[-1500:]
    drop = ("model", "name")
    got = [{k: v for k, v in row.items() if k not in drop} for row in json.loads(p.stdout)]
    want = [{k: v for k, v in row.items() if k not in drop} for row in json.loads(local.stdout)]
    assert got == want


# -- E4, E5: folders made where nothing was asked ---------------------------------------------------------


def test_an_out_named_through_a_link_and_dotdot_makes_no_folder_beside(trained, tmp_path):
    _copy(trained, tmp_path)
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    for name in ("run", "cache", "c.txt"):
        (tmp_path / "work" / name).symlink_to(tmp_path / name)
    (tmp_path / "work" / "lnk").symlink_to(tmp_path / "elsewhere" / "sub")
    r = cli("probe", "run", "--out", "lnk/../pr", "--tokens", "256", "--corpus", "c.txt", where=tmp_path / "work")
    assert r.code == 0, r.stderr[-1500:]
    assert (tmp_path / "elsewhere" / "pr").is_dir()  # where the system's path leads: the probe is there
    assert not (tmp_path / "work" / "pr").exists(), "an empty pr/ made in the working folder"


def test_a_run_named_through_a_link_and_dotdot_is_made_only_where_the_system_reads_it(trained, tmp_path):
    # E4's class with another writer: train makes its run folder, .lock and checkpoints/ (make_dir each)
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    (work / "t.yaml").write_text(TRAIN_YAML)
    (work / "cache").symlink_to(trained / "cache")
    (work / "lnk").symlink_to(tmp_path / "elsewhere" / "sub")
    before = snapshot(work)
    import torch

    threads = torch.get_num_threads()
    try:
        r = cli("train", "t.yaml", "--out", "lnk/../tr", where=work)
    finally:
        torch.set_num_threads(threads)  # train.threads set this process's: give the next test its own
    assert r.code == 0, r.stderr[-1500:]
    # oracle: the file system; the run lies where the kernel reads lnk/../tr, and nothing is beside lnk
    assert snapshot(work) == before, sorted(set(snapshot(work)) ^ set(before))
    assert (tmp_path / "elsewhere" / "tr" / "summary.json").is_file()
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["sub", "tr"]


@pytest.mark.parametrize(
    "argv",
    [["export", "run", "--hf", f"a/{LONG}/b"], ["probe", "run", "--out", f"a/{LONG}/b", "--tokens", "256"]],
    ids=["export", "probe"],
)
def test_a_refused_writer_leaves_no_folder_above_its_output(trained, tmp_path, argv):
    _copy(trained, tmp_path)
    refused_untouched(tmp_path, *argv, fragment="too long")


@pytest.mark.parametrize(
    "argv",
    [["export", "run", "--hf", f"g/h/{LONG}"], ["probe", "run", "--out", f"k/m/{LONG}", "--tokens", "256"]],
    ids=["export-renamed-last", "probe-made-last"],
)
def test_a_writer_refused_at_its_own_name_leaves_no_folder_above_it(trained, tmp_path, argv):
    # E5's class, failing at the output's own name: export's folders on the way are made whole and its
    # rename fails (provisional_dir, the output never made); probe's make_dir fails at the last folder
    _copy(trained, tmp_path)
    refused_untouched(tmp_path, *argv, fragment="too long")


def test_a_refused_writer_keeps_a_new_folder_another_process_wrote_in(tmp_path):
    from ffnlab.files import make_dir, provisional_dir

    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(OSError, match="refused"), provisional_dir(out):
        make_dir(out.parent)
        (tmp_path / "a" / "theirs.txt").write_text("another process's")  # not made by this process's ffnlab
        raise OSError("refused")
    # oracle: the file system; b (made here, empty) went, a (holding what another wrote) stays as it is
    assert snapshot(tmp_path) == {"a": ("dir", None), "a/theirs.txt": ("file", b"another process's")}


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "run", "--hf", LONG],
        ["train", "t.yaml", "--out", LONG],
        ["train", "t.yaml", "--out", f"b/{LONG}/b"],
        ["probe", "run", "--out", LONG, "--tokens", "256"],
        ["report", LONG],
        ["generate", LONG, "--prompt", "hi"],
        [*SIZE, "--plot", f"{LONG}.svg"],
    ],
    ids=["export", "train", "train-nested", "probe", "report", "generate", "plot"],
)
def test_a_name_too_long_is_one_short_line_and_touches_nothing(trained, tmp_path, argv):
    _copy(trained, tmp_path)
    (tmp_path / "t.yaml").write_text(TRAIN_YAML)
    line = refused_untouched(tmp_path, *argv)
    assert len(line) < 400, len(line)


# -- E6: a report of runs all set aside --------------------------------------------------------------------


def _fake(tmp_path: Path) -> Path:
    from fake_sweeps import fake_sweep

    fake_sweep(tmp_path / "sw", {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)
    return tmp_path / "sw"


def _summaries(sw: Path, change, runs: int = 4) -> None:  # noqa: ANN001
    for summary in sorted((sw / "runs").glob("*/summary.json"))[:runs]:
        _edit_json(summary, change)


def test_a_report_of_runs_all_set_aside_writes_no_library_warning(tmp_path):
    # ln 256 = 5.55 nats: every run no better than chance, set aside by the pre-registered rule
    _summaries(_fake(tmp_path), lambda s: s.update(final_val_loss=6.0))
    with warnings.catch_warnings(record=True) as caught:  # what a shell's stderr shows, here recorded
        warnings.simplefilter("always")
        r = cli("report", "sw", "--out", "rr", where=tmp_path)
    assert r.code == 0, r.stderr[-1500:]
    shown = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if issubclass(w.category, UserWarning)]
    assert r.stderr == "" and not shown, shown


def test_a_report_of_runs_all_diverged_says_no_run_is_shown_and_draws_no_empty_legend(tmp_path, monkeypatch):
    # a second input of E6's class: every run set aside by the divergence rule (its last loss 5.0,
    # below chance but far above its best), not by chance
    import csv

    from fake_sweeps import fake_sweep
    from matplotlib.text import Text

    from ffnlab.experiments.reporting import plots

    names = [f"{arm}-s{seed}" for arm in ("gelu-r4", "gelu-r2") for seed in range(2)]
    fake_sweep(
        tmp_path / "sw",
        {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)},
        seeds=2,
        noise=0.01,
        final=dict.fromkeys(names, 5.0),
    )
    drawn: list[tuple[set[str], int]] = []  # each figure's texts and its legends, as matplotlib holds them
    real = plots._png

    def png(fig):  # noqa: ANN001, ANN202
        drawn.append(({t.get_text() for t in fig.findobj(Text)}, sum(ax.get_legend() is not None for ax in fig.axes)))
        return real(fig)

    monkeypatch.setattr(plots, "_png", png)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # matplotlib's empty-legend warning fails the report
        r = cli("report", "sw", "--out", "rr", where=tmp_path)
    assert r.code == 0 and r.stderr == "", r.stderr[-1500:]
    # oracles: the report's own runs.csv sets every run aside as diverged; matplotlib's figures
    with open(tmp_path / "rr" / "runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(row["run"] for row in rows) == sorted(names)
    assert all(row["left_out"].startswith("diverged") for row in rows), rows
    empty = [legends for texts, legends in drawn if plots.NO_RUN in texts]
    assert len(empty) == 2 and empty == [0, 0], drawn  # loss curves and frontier: said, no legend box


@pytest.mark.parametrize(
    "change, fragment",
    [
        (lambda s: s.update(final_val_loss=float("nan")), "NaN"),
        (lambda s: s.update(final_val_bpb=float("inf")), "Infinity"),
        (lambda s: s.update(final_val_loss=-1.0), "final_val_loss"),
        (lambda s: s.update(status="Finished"), "have not finished"),
        (lambda s: s.update(status="finished\x00"), "have not finished"),
        (lambda s: s.update(steps=10.0), "have not finished"),
    ],
    ids=["loss-nan", "bpb-inf", "loss-negative", "status-capital", "status-nul", "steps-float"],
)
def test_a_tampered_run_summary_refuses_the_report_in_one_line(tmp_path, change, fragment):
    _summaries(_fake(tmp_path), change, runs=1)
    refused_untouched(tmp_path, "report", "sw", "--out", "rr", fragment=fragment)


# -- E7: a home that is the root through a link ----------------------------------------------------------


def test_a_home_linked_to_the_root_is_no_usable_home(tmp_path, monkeypatch):
    from ffnlab.errors import FfnlabError
    from ffnlab.training.corpus.prepare import default_cache_dir

    (tmp_path / "home").symlink_to("/")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FFNLAB_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    # asked, not written: where train would put its corpus cache (/.cache/ffnlab through the link)
    with pytest.raises(FfnlabError, match="HOME"):
        default_cache_dir()


def test_a_home_that_leads_to_the_root_through_dotdot_after_a_link_is_no_usable_home(tmp_path, monkeypatch):
    from ffnlab.errors import FfnlabError
    from ffnlab.files import check_hf_home

    top = Path(os.sep, tmp_path.parts[1])  # a folder right under the root (/tmp, say)
    (tmp_path / "top").symlink_to(top)
    home = str(tmp_path / "top" / "..")  # read as written, tmp_path; as the system reads it, the root
    root, there = os.stat(os.sep), os.stat(home)
    assert (there.st_dev, there.st_ino) == (root.st_dev, root.st_ino)  # oracle: the kernel's own reading
    monkeypatch.setenv("HOME", home)
    for name in ("HF_HOME", "XDG_CACHE_HOME", "FFNLAB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    # asked, not written: where huggingface_hub would put its cache (/.cache/huggingface)
    with pytest.raises(FfnlabError, match=r"HOME gives .*, which leads to /\)"):
        check_hf_home()


@pytest.mark.parametrize("home", ["/", "//", "/./", "/tmp/..", "///"])
def test_a_home_that_is_the_root_is_refused(monkeypatch, home):
    from ffnlab.errors import FfnlabError
    from ffnlab.training.corpus.prepare import default_cache_dir

    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("FFNLAB_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    with pytest.raises(FfnlabError, match="HOME"):
        default_cache_dir()


# -- inputs that behaved: kept cheap -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, fragment",
    [
        (" hf-trainer", "--engine"),
        ("hf-trainer\n", "--engine"),
        ("hf-trainer @5", "--engine"),
        ("@", "no version"),
        ("@@", "--engine"),
        ("HF-Trainer", "--engine"),
        ("deepspeed", "--engine"),
    ],
)
def test_an_engine_spec_at_its_edges_is_one_line(tmp_path, spec, fragment):
    assert_refused(cli(*SIZE, "--engine", spec, where=tmp_path), fragment)


@pytest.mark.parametrize("version", ["vllm@0.8 ", "vllm@\u0660.8", "vllm@@", "vllm@0.8.0rc1", "vllm@" + "1." * 3000])
def test_a_serving_engine_version_not_known_is_one_short_line(tmp_path, version):
    line = assert_refused(
        cli(
            "fit", "llama-3-8b", "--mode", "serve", "--gpu", "H100", "--gpus", "1", "--engine", version, where=tmp_path
        ),
        "profile",
    )
    assert len(line) < 400


@pytest.mark.parametrize("version", ["9" * 5000, "a" * 5000])
def test_a_long_unknown_engine_version_is_one_short_note(tmp_path, version):
    r = cli(*SIZE, "--engine", f"hf-trainer@{version}", where=tmp_path)
    assert r.code == 0 and len(r.stderr) < 400, len(r.stderr)


def _write(rel: str, data: bytes):  # noqa: ANN202
    return lambda run: (run.parent / rel).write_bytes(data)


def _replace_link(rel: str, target: str):  # noqa: ANN202
    def go(run: Path) -> None:
        (run.parent / rel).unlink()
        (run.parent / rel).symlink_to(target)

    return go


@pytest.mark.parametrize(
    "how, fragment",
    [
        (_write("run/checkpoints/step-0000004/state.json", b'{"step": 4, "x": "\xff"}'), "UTF-8"),
        (_write("run/config.yaml", b"model: {d_model: 32}\n\xff\n"), "UTF-8"),
        (lambda run: (run / "model.json").write_bytes((run / "model.json").read_text().encode("utf-16")), "binary"),
        (
            lambda run: (run / "model.json").write_text((run / "model.json").read_text()[:-2] + ', "params": 1}'),
            "duplicate key",
        ),
        (_write("run/checkpoints/step-0000004/model.safetensors", b""), "safetensors"),
        (_replace_link("run/checkpoints/step-0000004/model.safetensors", "/dev/zero"), "model.safetensors"),
    ],
    ids=["state-not-utf8", "config-not-utf8", "model-utf16", "model-key-twice", "weights-empty", "weights-dev-zero"],
)
@pytest.mark.parametrize("command", ["generate", "export", "capacity"])
def test_a_damaged_run_file_is_one_line_for_every_reader(trained, tmp_path, how, fragment, command):
    how(_copy(trained, tmp_path))
    argv = {"generate": GENERATE, "export": EXPORT, "capacity": CAPACITY}[command]
    refused_untouched(tmp_path, *argv, fragment=fragment)


@pytest.mark.parametrize("temperature", ["1e-40", "1e-45"])
def test_generate_at_a_temperature_below_float32_is_greedy(trained, tmp_path, temperature):
    _copy(trained, tmp_path)
    # oracle: --top-k 1 is greedy decoding by definition; a temperature that underflows must agree
    want = cli(*GENERATE, "--top-k", "1", where=tmp_path)
    got = cli(*GENERATE, "--temperature", temperature, where=tmp_path)
    assert want.code == got.code == 0, got.stderr[-800:]
    assert got.stdout == want.stdout


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(tokens=0),
        lambda s: s.update(final_val_loss=0.0, final_train_loss=0.0),
        lambda s: s.update(tokens=2**62),
        lambda s: s.update(wall_s=0),
    ],
    ids=["tokens-0", "losses-0", "tokens-2**62", "wall-0"],
)
def test_capacity_measure_of_an_edge_summary_is_strict_json(trained, tmp_path, change):
    run = _copy(trained, tmp_path)
    _edit_json(run / "summary.json", change)
    r = cli(*CAPACITY, "--json", where=tmp_path)
    assert r.code == 0, r.stderr[-800:]
    strict_json(r.stdout)
    strict_json((run / "capacity.json").read_text())


def test_an_export_past_a_file_size_limit_is_one_line_and_leaves_nothing(trained, tmp_path):
    # a file-size limit (Python ignores SIGXFSZ: a write past it is EFBIG), a full disk's kind of failure
    _copy(trained, tmp_path)
    before = snapshot(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (40 * 1024, hard))
    try:
        r = cli(*EXPORT, where=tmp_path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert_refused(r, "cannot write ex")
    assert snapshot(tmp_path) == before


def test_a_resume_of_a_finished_run_changes_none_of_its_files(trained, tmp_path):
    import torch

    _copy(trained, tmp_path)
    before = snapshot(tmp_path)
    threads = torch.get_num_threads()
    try:
        r = cli("train", "--out", "run", "--resume", where=tmp_path)
    finally:
        torch.set_num_threads(threads)  # train.threads set this process's: give the next test its own
    assert r.code == 0, r.stderr[-800:]
    after = snapshot(tmp_path)
    assert after == before, sorted(k for k in after if after[k] != before.get(k))


@pytest.mark.parametrize("lock", ["kept", "removed"])
def test_a_resume_of_a_finished_run_from_its_config_file_says_so_and_changes_nothing(trained, tmp_path, lock):
    # a second input of E8's class: the run's own config file named again (not the saved config.yaml);
    # oracles: every byte under the folder (the snapshot), the sweep's test of "finished", the one line.
    # "removed": a run copied without its .lock (a dotfile) gets none from the look either
    import torch

    from ffnlab.experiments.sweep.run import run_finished

    run = _copy(trained, tmp_path)
    if lock == "removed":
        (run / ".lock").unlink()
    shutil.copy(trained / "t.yaml", tmp_path / "t.yaml")
    assert run_finished(run, 4, evaluated=True)
    before = snapshot(tmp_path)
    threads = torch.get_num_threads()
    try:
        r = cli("train", "t.yaml", "--out", "run", "--resume", where=tmp_path)
    finally:
        torch.set_num_threads(threads)
    assert r.code == 0 and r.stdout == "", (r.stdout, r.stderr[-800:])
    assert r.stderr.splitlines() == ["run has already finished its 4 steps: nothing to train, no file changed"]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "text, fragment",
    [
        (
            "a: &a [x,x,x,x,x,x,x,x,x]\n"
            + "".join(f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdef", "bcdefg", strict=True)),
            "alias",
        ),
        (TRAIN_YAML + "z: !!python/name:os.system\n", "tag"),
        (TRAIN_YAML + "#" + "x" * (17 * 2**20) + "\n", "limit"),
    ],
    ids=["alias-bomb", "python-tag", "17MiB"],
)
def test_a_train_config_bomb_is_one_line(tmp_path, text, fragment):
    (tmp_path / "t.yaml").write_text(text)
    refused_untouched(tmp_path, "train", "t.yaml", "--print-config", fragment=fragment)
