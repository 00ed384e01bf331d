r"""A fifteenth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the fourteenth pass's mends (model.json's ``build`` record and
``runfiles.check_run_model`` on resume, ``escape.path_arg`` and UTF-8 bytes in ``$'...'``,
``wikitext.is_hub_id``), with new inputs of those classes; inputs kept as tests.

The pass threw 267 inputs, each a call of the CLI in-process (a stand-in trainer, sweep worker
or exporter where only what is printed was the question), recording exit status, stderr lines,
traceback and the files left (hashed before and after):

* model.json's ``build`` tampered (73: 66 of 22 values x ``generate``, ``export --hf``, ``train --resume``
  of the finished 4-step run): rope_theta true, 1e400, an integer of 5,000 digits, NaN, Infinity,
  -Infinity, "10000.0", {"v": 10000.0}, 0, -0.0, 10000.000000000002, 1e300, 5e-324; build a list,
  null, {}; rope_theta 10000 and 1e4 (the same value); an unknown key seq_len; rope_theta twice; a
  key holding ESC; a key of 5,000 characters. Then ``probe`` and ``capacity measure`` (6) of a run
  with rope_theta 500000.0 recorded, of an old run (no ``build``) with config.yaml edited, and of a
  run with config.yaml's ``rope_theta: 1e4``; a resume (2 steps) of a run whose model.json is gone.
* config.yaml's numbers spelled otherwise (85: 69 of 23 spellings x ``generate``, ``export``, ``train
  --resume`` of the finished run; 5 resumes of the run stopped at step 2): rope_theta 10000, 1e4,
  1e+4, 1.0e+4, 10_000.0, 2:46:40.0 (YAML 1.1's base 60), 0x2710, 023420 (octal), '10000', !!float
  10000, +10000.0, 10000.000000000000000001, a trailing comment, absent, null; norm_eps 0.00001,
  1e-5, 1.0E-05, .00001, '1e-05', 10e-6, 1/100000, absent; model.json's build 10000 (an int); an
  explicit t2.yaml saying 1e4; a sweep spec whose base rope_theta was 10000.0, rerun with 10000, 1e4
  (as JSON a float and a string), norm_eps "0.00001" and 500000.0 (5); ``train --out run --resume
  --set`` model.rope_theta=1e4, 10000, 2:46:40, 0x2710, 1e5 and model.norm_eps=0.00001 (6).
* printed commands (17): export's ``use:`` line for --hf it's, a\nb (a backslash), back\, a tab, a
  newline, U+0085, "plain é", ~x, a byte not UTF-8; the sweep's rerun line for ``./s.json --out
  $'é\x01té'``, ``./é<U+0085>.json --out ./-sw``, ``./it's.json --out $'a\nb'``, ``--out
  $'r\xfd<U+0085>x'``, ``./~s.json --out ./~``, ``--out <U+2028>x``; bash's history expansion of
  ``!`` inside ``$'...'`` (2: interactive, ``set -H``: none).
* ``--dataset`` and corpus names (92; HF_HUB_OFFLINE=1): ``perplexity nomodel|e1 --dataset NAME``
  (e1 the run exported; 27 names x 2 models) of 96 and 97 characters, a 97-character namespace,
  96/96, 300 characters (and with ``.txt``, and under ``d/``), ``C:\corpus``, ``C:/corpus.txt``,
  ``\\server\share\x.txt``, ``CON``, ``corpus.txt:stream``, ``D:``, ``wikit<Cyrillic e>xt``,
  ``org<U+FF0F>name``, fullwidth ``wiki``, ``wiki<U+200B>text``, the default's id with U+200E, an
  existing folder ``mydir``, ``org/name`` (an existing folder and a valid id), ``org/doc.txt``, a
  folder ``x.json``, ``wikitext\n``, ``_x_``, ``x.git``, ``a--b``, ``-x``; ``perplexity e1`` with no
  --dataset beside a folder ``EleutherAI/wikitext_document_level``, without it, and with it named,
  and ``nomodel`` beside it (4); ``train --corpus`` ``hf:my data``, ``hf:mydir/``, ``hf:`` + 97 and 96 characters,
  ``hf:org/name`` (a folder), ``hf:mydir``, ``hf:wikit<Cyrillic e>xt``, ``hf:C:\corpus``,
  ``hf:a--b``, ``hf:x.git``, ``hf:-x``, ``hf:org/name:cfg``, ``my data``, ``C:\corpus`` (14); ``probe
  run --corpus`` ``org/name`` (an empty folder), ``wikit<Cyrillic e>xt``, ``hf:wikitext``, the default's
  id, ``my data``, ``C:\corpus`` (6); ``perplexity nomodel|e1 --dataset`` ``''``, ``.``, ``~``,
  ``/``, a space, ``e1`` (the model's folder), ``e1/config.json`` (14).

Root (``id -u`` 0) ran this pass, as the fourteenth's.

Findings (4 root causes; each a strict xfail below until mended; all four mended since, each test
now a check with a second input: G1 by ``escape.python_str``; G2 by a ``build`` record in each
checkpoint's state.json, compared on resume by ``runfiles.check_recorded``; G3 by reading the default
dataset as the Hub's (``hf://datasets/``), never a folder here; G4 by comparing a rerun's spec by the
run configs it resolves to):

G1. export's ``use:`` line, a line of Python to paste, names another folder or is no Python when the
   --hf folder's name holds a quote, a backslash, a tab, a newline or a byte that is not UTF-8:
   ``export run --hf "it's"`` prints ``use: transformers.pipeline('text-generation', 'it's')`` (a
   SyntaxError); ``--hf 'a\nb'`` (a backslash) prints ``'a\nb'``, which Python reads as a newline;
   ``back\`` escapes the closing quote; a tab or newline is printed as a space; the byte FD as
   ``\xfd``, which Python reads as U+00FD. ``cli/training.py`` ``export`` (line 199) puts the folder
   between single quotes as it is (then ``one_line``), not as a Python string literal. Found with
   real exports; kept here with the exporter replaced (the line is the question).
G2. A resume of a run whose model.json is gone records config.yaml's word as the model it trained:
   the 4-step run stopped after step 2 (summary.json and step-0000004 removed), model.json removed,
   config.yaml's ``rope_theta: 10000.0`` made ``500000.0``: ``train --out run --resume`` answers exit
   0, trains steps 3-4 with another rope_theta than steps 1-2 from their checkpoint, and writes a
   model.json whose ``build`` says ``rope_theta: 500000.0``, a record of the whole run that its
   first steps contradict and that every later ``export``/``generate`` then checks against.
   ``trainer._recorded_model`` (trainer.py line 362) returns None where there is no model.json, and
   ``_write_run_files`` (line 393-394) writes every build setting unless a model.json was read, while
   its own rule is that a resume "does not turn [config.yaml's word] into a record".
G3. The default dataset, not named, is read as a local path when the working folder holds a folder
   of its name: ``perplexity e1`` (no --dataset) beside a folder ``EleutherAI/wikitext_document_level``
   says "error: --dataset EleutherAI/wikitext_document_level: give a file (.raw, ...)", naming an
   option that was not given, where the same command without the folder says the dataset "is not in
   the Hugging Face cache and was not named; name it to download it: --dataset ..." (and, named so,
   it is again read as the folder). ``cli/evaluate.py`` ``_documents`` (lines 70, 76) passes
   ``wikitext.DEFAULT_DATASET`` to ``load_documents``, whose ``is_local`` (wikitext.py line 135)
   calls any name local that exists here.
G4. A sweep rerun whose spec spells a number otherwise is refused as another sweep: a YAML spec with
   ``rope_theta: 1.0e+4`` in base.model, then ``rope_theta: 1e4`` (YAML 1.1 reads it as the text
   "1e4", which every run config reads as 10000.0: ``train --resume`` takes the same edit in
   config.yaml) answers "error: sw holds a different sweep (its spec differs); use another --out";
   also norm_eps "0.00001" for 1e-05. ``experiments/sweep/run.py`` ``prepare_sweep`` (line 93)
   compares the spec as parsed (``asdict(spec)``, base kept raw), so 10000 for 10000.0 passes
   (Python's ==) and "1e4" does not.

Per class, inputs tried / failures: build tampered 73 / 1 (G2); numbers spelled otherwise 85 / 2
(G4: rope_theta "1e4" and norm_eps "0.00001" in the sweep spec); printed commands 17 / 6 (G1: it's,
a backslash before n, a trailing backslash, a tab, a newline, the byte FD); --dataset and corpus
names 92 / 1 (G3).

Noted, not broken promises: a ``build`` of null or {} reads as none recorded (as a run written
before it); ``--dataset`` of 300 characters ends in "error: File name too long: xxx..." (one line,
exit 2, not naming --dataset); ``wiki<U+200B>text`` is printed with its zero-width space as it is
(escape.py's set holds the bidi marks, not U+200B); ``--dataset ' '`` says "error: --dataset : no
such file" (the name, a space, not to be seen) and ``--dataset ''`` is read as the working folder
("give a file", after the model), where ``user_path`` refuses an empty path; ``hf:my data`` and
other names no Hub id can be go to ``datasets`` as Hub ids in ``train --corpus`` (one line, before
any folder: ``is_hub_id`` guards perplexity's --dataset only), and ``hf:C:\corpus`` is read as
dataset ``C`` with config ``\corpus``; a sweep interrupted (Ctrl-C) in its first run, before that
run wrote anything, leaves no sweep folder (it made it).

Not reached before the deadline: the Hub's answer online for ``hf:`` names no id can be (the
fourteenth saw no request sent for ``--dataset``); a locale that is not UTF-8 (this machine has only
C, C.utf8 and POSIX, which Python runs in UTF-8).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from adversarial_cli import (
    copy_run,
    edit_config,
    export_use_line,
    tiny_sweep_spec,
    train_facts_run,
    unfinish,
    write_corpus,
)
from fuzz_cli import assert_refused, cli, cwd, snapshot

GENERATE = ["generate", "run", "--prompt", "hi", "--tokens", "3", "--temperature", "0"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """The passes' 4-step facts run, trained in this process (``train t.yaml --out run``)."""
    return train_facts_run(tmp_path_factory.mktemp("trained"))


def _bash_words(command: str) -> list[str]:
    """The words bash splits ``command`` into."""
    p = subprocess.run(["bash", "-c", f'set -- {command}; printf "%s\\0" "$@"'], capture_output=True, check=True)
    return [w.decode("utf-8", "surrogateescape") for w in p.stdout.split(b"\0")[:-1]]


# -- G1: export's "use:" line is no Python string literal of the folder -----------------------------------


def _use_line(tmp_path: Path, hf: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Export's ``use:`` line for ``--hf HF`` (found with real exports, as the docstring says)."""
    return export_use_line(tmp_path, hf, monkeypatch)


def _python_reads(snippet: str) -> object:
    """The folder Python hands ``transformers.pipeline`` when ``snippet`` is pasted (its 2nd argument)."""
    call = ast.parse(snippet, mode="eval").body
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "transformers.pipeline", snippet
    return ast.literal_eval(call.args[1])


@pytest.mark.parametrize(
    "hf",
    [
        "it's",
        "a\\nb",
        "back\\",
        "t\tx",
        "new\nline",
        "r\udcfdx",
        # second inputs (the mend's): both quotes and a backslash before the closing one; a bidi
        # override (Trojan Source) and U+2028; the byte 85 alone (not UTF-8) beside U+0085's C2 85
        "q'\"\\'",
        "rtl\u202eexe\u2028x",
        "b\udc85\x85",
    ],
    ids=[
        "quote",
        "backslash-n",
        "trailing-backslash",
        "tab",
        "newline",
        "not-utf8",
        "quotes-backslash",
        "bidi-separator",
        "byte-85",
    ],
)
def test_exports_use_line_names_the_folder_it_wrote_to_python(tmp_path, monkeypatch, hf):
    # oracle: Python's own parser of the line (ast.literal_eval and compile), and the folder written,
    # compared as the bytes the file system holds (os.fsencode) and found by os.path.isdir
    snippet = _use_line(tmp_path, hf, monkeypatch)
    assert (tmp_path / hf).is_dir()
    compile(snippet, "<use: line>", "eval")
    folder = _python_reads(snippet)
    assert isinstance(folder, str) and folder == hf, (snippet, folder)
    assert os.fsencode(folder) == os.fsencode(hf) and os.path.isdir(os.path.join(tmp_path, folder))
    assert not any(c in snippet for c in "\t\n\r\x85\u2028\u202e") and snippet.isprintable(), snippet


@pytest.mark.parametrize("hf", ["plain \u00e9", "r\x85x", "~x"], ids=["utf8", "NEL", "tilde"])
def test_exports_use_line_of_other_names_reads_back(tmp_path, monkeypatch, hf):
    # kept: a UTF-8 letter, U+0085 (shown \x85, which Python reads as U+0085), a folder named ~x
    # (given as ./~x; Python does not expand ~)
    snippet = _use_line(tmp_path, "./" + hf, monkeypatch)
    assert os.path.abspath(os.path.join(tmp_path, str(_python_reads(snippet)))) == str(tmp_path / hf), snippet


# -- G2: a resume of a run whose model.json is gone writes config.yaml's word as its record -----------------


@pytest.mark.parametrize(
    "key, trained_with, edited",
    [("rope_theta", "10000.0", "500000.0"), ("norm_eps", "1.0e-05", "0.001")],
    ids=["rope-theta", "norm-eps"],
)
def test_a_resume_of_a_run_without_model_json_does_not_record_an_edited_build_setting(
    trained, tmp_path, key, trained_with, edited
):
    # steps 1-2 were trained with rope_theta 10000.0 and norm_eps 1e-05 (t.yaml and the defaults, the
    # oracle); config.yaml now says otherwise. Mended (G2): a resumed run records no build setting
    # its own model.json did not (trainer._write_run_files), and a checkpoint recording its build
    # settings refuses the resume (the test below)
    run = copy_run(trained, tmp_path)
    unfinish(run)
    (run / "model.json").unlink()
    edit_config(run, f"{key}: {trained_with}", f"{key}: {edited}")
    before = snapshot(tmp_path)
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    if r.code == 2:  # refused: one line, nothing changed
        assert_refused(r)
        assert snapshot(tmp_path) == before
        return
    assert r.code == 0, r.stderr[-500:]
    build = json.loads((run / "model.json").read_text()).get("build") or {}
    assert build.get(key) in (None, float(trained_with)), build  # never a record of what steps 1-2 did not use


def test_a_resume_of_a_run_without_model_json_and_config_as_trained_keeps_training(trained, tmp_path):
    # kept: the same run, config.yaml untouched: it trains on, bit-exact (the uninterrupted run's loss)
    run = copy_run(trained, tmp_path)
    final = json.loads((run / "summary.json").read_text())["final_val_loss"]
    unfinish(run)
    (run / "model.json").unlink()
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert json.loads((run / "summary.json").read_text())["final_val_loss"] == final


@pytest.mark.parametrize(
    "key, trained_with, edited",
    [("rope_theta", "10000.0", "500000.0"), ("norm_eps", "1.0e-05", "0.001")],
    ids=["rope-theta", "norm-eps"],
)
def test_a_resume_of_a_run_without_model_json_refuses_an_edited_build_setting(
    trained, tmp_path, key, trained_with, edited
):
    # the step-2 checkpoint's state.json records the settings steps 1-2 were built with (the oracle:
    # t.yaml and the defaults, 10000.0 and 1e-05); config.yaml now says otherwise and model.json is
    # gone. Mended (G2): refused in one line, no step trained, every file as it was
    run = copy_run(trained, tmp_path)
    unfinish(run)
    state = json.loads((run / "checkpoints" / "step-0000002" / "state.json").read_text())
    assert state["build"][key] == float(trained_with), state.get("build")
    (run / "model.json").unlink()
    edit_config(run, f"{key}: {trained_with}", f"{key}: {edited}")
    before = snapshot(tmp_path)
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert_refused(r)
    assert "step-0000002/state.json describes another model than" in r.stderr, r.stderr
    assert f"{key} {float(trained_with)!r} vs {float(edited)!r}" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "build, said",
    [
        ('"10000.0"', "must be a mapping"),
        ('{"rope_theta": "10000.0"}', "build.rope_theta"),
        ('{"seq_len": 32}', "unknown key"),
        ('{"norm_eps": 0}', "build.norm_eps"),
    ],
    ids=["text", "text-value", "unknown-key", "zero"],
)
def test_a_checkpoint_whose_build_record_is_tampered_is_refused(trained, tmp_path, build, said):
    # the checkpoint's build is checked as model.json's is (runfiles.build_record): one line naming
    # state.json and the key, every file as it was
    run = copy_run(trained, tmp_path)
    unfinish(run)
    path = run / "checkpoints" / "step-0000002" / "state.json"
    state = json.loads(path.read_text())
    state["build"] = json.loads(build)
    path.write_text(json.dumps(state, indent=1))
    before = snapshot(tmp_path)
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert_refused(r)
    assert "state.json" in r.stderr and said in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["export", "generate"])
def test_export_and_generate_refuse_a_checkpoint_trained_with_other_build_settings(trained, tmp_path, command):
    # G2's class after training: config.yaml and model.json both edited to rope_theta 500000.0 (they
    # agree), while step-0000004's state.json records the 10000.0 its weights were trained with (the
    # oracle: t.yaml and the default). Refused in one line naming state.json, nothing written
    run = copy_run(trained, tmp_path)
    edit_config(run, "rope_theta: 10000.0", "rope_theta: 500000.0")
    meta = json.loads((run / "model.json").read_text())
    meta["build"]["rope_theta"] = 500000.0
    (run / "model.json").write_text(json.dumps(meta, indent=1))
    assert json.loads((run / "checkpoints" / "step-0000004" / "state.json").read_text())["build"]["rope_theta"] == 1e4
    before = snapshot(tmp_path)
    r = cli(*(["export", "run", "--hf", "hf"] if command == "export" else GENERATE), where=tmp_path)
    assert_refused(r)
    assert "step-0000004/state.json describes another model than" in r.stderr, r.stderr
    assert "rope_theta 10000.0 vs 500000.0" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


def test_a_resume_from_a_checkpoint_written_before_it_kept_build_settings_trains_on(trained, tmp_path):
    # kept: a checkpoint with no ``build`` in its state.json (as every one written before it was kept),
    # model.json gone, config.yaml as trained: compared on nothing, it resumes bit-exact (the
    # uninterrupted run's loss, the oracle)
    run = copy_run(trained, tmp_path)
    final = json.loads((run / "summary.json").read_text())["final_val_loss"]
    unfinish(run)
    path = run / "checkpoints" / "step-0000002" / "state.json"
    state = json.loads(path.read_text())
    del state["build"]
    path.write_text(json.dumps(state, indent=1))
    (run / "model.json").unlink()
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert json.loads((run / "summary.json").read_text())["final_val_loss"] == final


# -- G3: the default dataset, not named, read as a local folder of its name ---------------------------------


@pytest.mark.parametrize("beside", ["folder", "file"])
def test_the_default_dataset_is_not_read_from_a_folder_of_its_name(tmp_path, monkeypatch, beside):
    # the model loader is replaced by a stand-in (the dataset is the question) and the measure stopped
    # once the documents are read; oracle: the same command in a folder without the folder of that name
    from ffnlab.training import perplexity as P

    def stand_in(target, **kw):  # noqa: ANN001, ANN003, ANN202
        return SimpleNamespace(context=32, revision="local", dtype="float32", device="cpu")

    def documents_read(**kw):  # noqa: ANN003, ANN202
        raise SystemExit(3)

    monkeypatch.setattr(P, "load_model", stand_in)
    monkeypatch.setattr(P, "cache_key", documents_read)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "plain").mkdir()
    # the first input: an empty folder of the default's name; the second (the mend's): a file of that
    # name holding a WikiText article
    default = tmp_path / "beside" / "EleutherAI" / "wikitext_document_level"
    if beside == "folder":
        default.mkdir(parents=True)
    else:
        default.parent.mkdir(parents=True)
        default.write_text(" = Local = \n\n a page read from the working folder \n")
    want = cli("perplexity", "e1", "--no-cache", "--progress", "off", where=tmp_path / "plain")
    assert want.code in (2, 3) and "Traceback" not in want.stderr, (want.code, want.stderr[-500:])
    r = cli("perplexity", "e1", "--no-cache", "--progress", "off", where=tmp_path / "beside")
    assert "--dataset EleutherAI/wikitext_document_level: give a file" not in r.stderr, r.stderr
    assert (r.code, r.stderr) == (want.code, want.stderr)
    # kept: named, the same name is the local folder or file (read here: refused as no file, or as a
    # file of no known type, naming the --dataset given)
    named = cli(
        "perplexity",
        "e1",
        "--dataset",
        "EleutherAI/wikitext_document_level",
        "--no-cache",
        "--progress",
        "off",
        where=tmp_path / "beside",
    )
    assert_refused(named)
    assert named.stderr.startswith("error: --dataset EleutherAI/wikitext_document_level: "), named.stderr
    assert ("give a file" if beside == "folder" else "unknown file type") in named.stderr, named.stderr


# -- G4: a sweep spec's number spelled otherwise, refused as another sweep ----------------------------------


def _sweep_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str, second: str) -> tuple[int, str, int]:
    """``sweep s.yaml --out sw`` with base.model's ``first`` line, then with ``second``; the workers are
    replaced by a counter (no training). The second call's exit status, stderr and workers started."""
    import yaml

    from ffnlab.experiments.sweep import run as sweep_run

    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    started: list[list[str]] = []

    def counted(self, cmd, log, threads):  # noqa: ANN001, ANN202
        started.append(cmd)
        return 0

    monkeypatch.setattr(sweep_run.Children, "run", counted)
    monkeypatch.setattr(sweep_run, "cpu_peak", lambda threads: 1e11)
    write_corpus(tmp_path)
    spec = yaml.safe_dump(tiny_sweep_spec(4), sort_keys=False)
    assert "  model:\n" in spec, spec
    (tmp_path / "s.yaml").write_text(spec.replace("  model:\n", f"  model:\n    {first}\n", 1))
    cli("sweep", "s.yaml", "--out", "sw", "--no-report", where=tmp_path)
    assert (tmp_path / "sw" / "sweep.json").is_file() and len(started) == 1, started
    (tmp_path / "s.yaml").write_text(spec.replace("  model:\n", f"  model:\n    {second}\n", 1))
    r = cli("sweep", "s.yaml", "--out", "sw", "--no-report", where=tmp_path)
    return r.code, r.stderr, len(started) - 1


@pytest.mark.parametrize(
    "first, second",
    [
        ("rope_theta: 1.0e+4", "rope_theta: 1e4"),
        ("norm_eps: 1.0e-05", "norm_eps: '0.00001'"),
        ("rope_theta: 10000.0", "rope_theta: 1e+4"),
        ("norm_eps: 1.0e-05", "norm_eps: 1e-5"),
    ],
    ids=["rope-theta-1e4", "norm-eps-text", "rope-theta-1e+4", "norm-eps-1e-5"],
)
def test_a_sweep_spec_with_a_number_spelled_otherwise_is_the_same_sweep(tmp_path, monkeypatch, first, second):
    # oracle: the run config each spelling resolves to (equal), and train --resume, which takes the
    # same edit in a run's config.yaml (test_config_yaml_numbers_spelled_otherwise_are_the_trained_model)
    import yaml

    from ffnlab.training import runconfig

    def resolved(line: str) -> dict:
        key, value = line.split(": ")
        return runconfig.from_dict({"model": {key: yaml.safe_load(value)}}).to_dict()

    assert resolved(first) == resolved(second)
    code, stderr, started = _sweep_twice(tmp_path, monkeypatch, first, second)
    assert "holds a different sweep" not in stderr, stderr
    assert started == 1, (code, stderr[-500:])


def test_a_sweep_spec_with_an_integer_for_a_float_is_the_same_sweep(tmp_path, monkeypatch):
    # kept: 10000 for 10000.0 (Python's == of the parsed specs); and 500000.0 is another sweep
    code, stderr, started = _sweep_twice(tmp_path, monkeypatch, "rope_theta: 10000.0", "rope_theta: 10000")
    assert started == 1 and "different sweep" not in stderr, (code, stderr[-500:])
    shutil.rmtree(tmp_path / "sw")
    code, stderr, started = _sweep_twice(tmp_path, monkeypatch, "rope_theta: 10000.0", "rope_theta: 500000.0")
    assert code == 2 and "holds a different sweep" in stderr and started == 0, (code, stderr[-500:])


@pytest.mark.parametrize(
    "first, second",
    [("rope_theta: 1.0e+4", "rope_theta: 5e5"), ("norm_eps: 1.0e-05", "norm_eps: '0.0001'")],
    ids=["rope-theta-5e5-text", "norm-eps-text-other"],
)
def test_a_sweep_spec_with_another_number_spelled_as_text_is_another_sweep(tmp_path, monkeypatch, first, second):
    # a real difference, spelled as YAML 1.1 text ("5e5" is read as a string, resolved to 500000.0),
    # is still refused before any work: oracle, the run configs the two lines resolve to differ
    import yaml

    from ffnlab.training import runconfig

    def resolved(line: str) -> dict:
        key, value = line.split(": ")
        return runconfig.from_dict({"model": {key: yaml.safe_load(value)}}).to_dict()

    assert isinstance(yaml.safe_load(second.split(": ")[1]), str)
    assert resolved(first) != resolved(second)
    code, stderr, started = _sweep_twice(tmp_path, monkeypatch, first, second)
    assert code == 2 and "holds a different sweep (its spec differs)" in stderr and started == 0, (code, stderr)
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr


# -- kept: model.json's build tampered --------------------------------------------------------------------


def _with_build(run: Path, raw: str) -> None:
    """model.json with ``"build": RAW`` (JSON text, written as it is) in place of the trainer's."""
    meta = json.loads((run / "model.json").read_text())
    del meta["build"]
    text = json.dumps(meta, indent=1)
    (run / "model.json").write_text(text.replace("{\n", '{\n "build": ' + raw + ",\n", 1))


@pytest.mark.parametrize(
    "raw, said",
    [
        ('{"rope_theta": true, "norm_eps": 1e-05}', "build.rope_theta must be a finite number > 0, got True"),
        ('{"rope_theta": 1e400, "norm_eps": 1e-05}', "build.rope_theta must be a finite number > 0, got inf"),
        ('{"rope_theta": NaN, "norm_eps": 1e-05}', "NaN is not a number JSON allows"),
        ('{"rope_theta": -Infinity}', "-Infinity is not a number JSON allows"),
        ('{"rope_theta": "10000.0"}', "build.rope_theta must be a finite number > 0, got '10000.0'"),
        ('{"rope_theta": {"v": 10000.0}}', "build.rope_theta must be a finite number > 0"),
        ("[10000.0, 1e-05]", "build must be a mapping"),
        ('{"rope_theta": -0.0}', "build.rope_theta must be a finite number > 0, got -0.0"),
        ('{"rope_theta": 10000.000000000002}', "rope_theta 10000.000000000002 vs 10000.0"),
        ('{"rope_theta": 500000.0, "rope_theta": 10000.0}', "duplicate key 'rope_theta'"),
        ('{"rope\\u001b[31m_theta": 10000.0}', "unknown key 'rope\\x1b[31m_theta'"),
        ('{"rope_theta": 1' + "0" * 5000 + "}", "more than 4,300 digits"),
    ],
    ids=[
        "bool",
        "1e400",
        "nan",
        "minus-infinity",
        "text",
        "nested",
        "list",
        "minus-zero",
        "one-ulp",
        "twice",
        "esc-key",
        "5000-digits",
    ],
)
def test_a_tampered_build_record_is_one_line_and_no_change(trained, tmp_path, raw, said):
    run = copy_run(trained, tmp_path)
    _with_build(run, raw)
    before = snapshot(tmp_path)
    for argv in (GENERATE, ["train", "--out", "run", "--resume"]):
        line = assert_refused(cli(*argv, where=tmp_path), "model.json")
        assert said in line and "\x1b" not in line, line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "raw",
    ["null", "{}", '{"rope_theta": 10000, "norm_eps": 0.00001}', '{"norm_eps": 1e-5, "rope_theta": 1e4}'],
    ids=["null", "empty", "int", "1e4"],
)
def test_a_build_record_of_the_trained_values_or_of_none_still_generates(trained, tmp_path, raw):
    # null and {} record nothing (as a run written before build): config.yaml's word; 10000 and 1e4 are
    # the value trained; oracle: the untouched run's tokens
    run = copy_run(trained, tmp_path)
    want = cli(*GENERATE, where=tmp_path)
    assert want.code == 0, want.stderr[-500:]
    _with_build(run, raw)
    r = cli(*GENERATE, where=tmp_path)
    assert (r.code, r.stdout) == (0, want.stdout), r.stderr[-500:]


def test_capacity_measure_of_a_run_whose_build_record_differs_is_refused(trained, tmp_path):
    run = copy_run(trained, tmp_path)
    meta = json.loads((run / "model.json").read_text())
    meta["build"]["rope_theta"] = 500000.0
    (run / "model.json").write_text(json.dumps(meta, indent=1))
    before = snapshot(tmp_path)
    line = assert_refused(cli("capacity", "measure", "run", where=tmp_path), "describes another model")
    assert "rope_theta 500000.0 vs 10000.0" in line, line
    assert snapshot(tmp_path) == before  # no capacity.json


# -- kept: config.yaml's numbers spelled otherwise, the same model -------------------------------------------


@pytest.mark.parametrize(
    "old, new",
    [
        ("rope_theta: 10000.0", "rope_theta: 10000"),
        ("rope_theta: 10000.0", "rope_theta: 1e4"),  # YAML 1.1: the text "1e4"
        ("rope_theta: 10000.0", "rope_theta: 2:46:40.0"),  # YAML 1.1: base 60
        ("rope_theta: 10000.0", "rope_theta: 0x2710"),
        ("rope_theta: 10000.0", "rope_theta: '10000'"),
        ("rope_theta: 10000.0", "rope_theta: 10_000.0"),
        ("  rope_theta: 10000.0\n", ""),  # absent: the default, which it was
        ("norm_eps: 1.0e-05", "norm_eps: .00001"),
        ("norm_eps: 1.0e-05", "norm_eps: 10e-6"),
    ],
    ids=["int", "1e4", "base-60", "hex", "quoted", "underscore", "absent", "eps-dot", "eps-10e-6"],
)
def test_config_yaml_numbers_spelled_otherwise_are_the_trained_model(trained, tmp_path, old, new):
    # oracle: the untouched run's generated tokens; a finished run's resume says so and changes nothing
    run = copy_run(trained, tmp_path)
    want = cli(*GENERATE, where=tmp_path).stdout
    edit_config(run, old, new)
    before = snapshot(tmp_path)
    r = cli(*GENERATE, where=tmp_path)
    assert (r.code, r.stdout) == (0, want), r.stderr[-500:]
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0 and "already finished its 4 steps" in r.stderr, r.stderr[-500:]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("value", ["1e4", "10000", "2:46:40", "0x2710"], ids=["1e4", "int", "base-60", "hex"])
def test_a_finished_run_resumed_with_its_rope_theta_set_otherwise_keeps_every_byte(trained, tmp_path, value):
    # --set's text read as YAML: the value trained, so nothing to train; 1e5 is another model (refused)
    run = copy_run(trained, tmp_path)
    before = snapshot(tmp_path)
    r = cli("train", "--out", "run", "--resume", "--set", f"model.rope_theta={value}", where=tmp_path)
    assert r.code == 0 and "already finished its 4 steps" in r.stderr, r.stderr[-500:]
    assert snapshot(tmp_path) == before
    line = assert_refused(cli("train", "--out", "run", "--resume", "--set", "model.rope_theta=1e5", where=tmp_path))
    assert "model.rope_theta 10000.0 -> 100000.0" in line, line
    assert snapshot(tmp_path) == before and run.is_dir()


def test_an_unfinished_run_with_numbers_spelled_otherwise_resumes_bit_exact(trained, tmp_path):
    # rope_theta in base 60 and norm_eps as 0.00001 in config.yaml: the run trains on, its files' bytes
    # kept; oracle: the uninterrupted run's final loss (one thread, the same batches)
    run = copy_run(trained, tmp_path)
    final = json.loads((run / "summary.json").read_text())["final_val_loss"]
    unfinish(run)
    edit_config(run, "rope_theta: 10000.0", "rope_theta: 2:46:40")
    edit_config(run, "norm_eps: 1.0e-05", "norm_eps: 0.00001")
    kept = {f: (run / f).read_bytes() for f in ("config.yaml", "model.json")}
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert json.loads((run / "summary.json").read_text())["final_val_loss"] == final
    assert {f: (run / f).read_bytes() for f in kept} == kept


# -- kept: the sweep's rerun line for names of UTF-8 letters, C1 controls and bytes ---------------------------


@pytest.mark.parametrize(
    "spec, out",
    [
        ("s.json", "\u00e9\x01t\u00e9"),
        ("\u00e9\x85.json", "-sw"),
        ("s.json", "r\udcfd\x85x"),
        ("~s.json", "~"),
        ("s.json", "\u2028x"),
    ],
    ids=["utf8-and-C0", "NEL-spec", "byte-and-NEL", "tildes", "line-separator"],
)
def test_the_sweep_rerun_line_reads_back_as_its_spec_and_folder(tmp_path, monkeypatch, spec, out):
    from ffnlab.cli.app import user_path
    from ffnlab.experiments.sweep import run as sweep_run

    def stopped(self, cmd, log, threads):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sweep_run.Children, "run", stopped)
    monkeypatch.setattr(sweep_run, "cpu_peak", lambda threads: 1e11)
    write_corpus(tmp_path)
    (tmp_path / spec).write_text(json.dumps(tiny_sweep_spec(4)))
    r = cli("sweep", "./" + spec, "--out", "./" + out, where=tmp_path)
    assert r.code == 130, (r.code, r.stderr[-800:])
    line = next(x for x in r.stderr.splitlines() if "rerun `" in x)
    assert not any(c in line for c in "\x01\x85\u2028"), repr(line)
    words = _bash_words(line.split("rerun `", 1)[1].rsplit("` to continue", 1)[0])
    assert words[:2] == ["ffnlab", "sweep"] and words[3] == "--out", words
    with cwd(tmp_path):
        assert [os.path.abspath(user_path(w)) for w in (words[2], words[4])] == [
            str(tmp_path / spec),
            str(tmp_path / out),
        ], words


# -- kept: --dataset names no Hub id can be, and one that is a folder here ----------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "a" * 97,
        "o" * 97 + "/x",
        "C:/corpus.txt",
        "\\\\server\\share\\x.txt",
        "D:",
        "wikit\u0435xt",
        "org\uff0fname",
        "\uff57\uff49\uff4b\uff49",
        "x.git",
        "a--b",
        "corpus.txt:stream",
        "wikitext\n",
    ],
    ids=[
        "97-chars",
        "97-char-namespace",
        "drive-slash",
        "unc",
        "drive",
        "cyrillic-e",
        "fullwidth-slash",
        "fullwidth",
        "dot-git",
        "double-dash",
        "stream",
        "newline",
    ],
)
def test_a_missing_dataset_no_hub_id_can_name_is_no_such_file_before_the_model(tmp_path, monkeypatch, name):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = assert_refused(cli("perplexity", "nomodel", "--dataset", name, where=tmp_path), "no such file")
    assert "nomodel" not in line and "\n" not in line, line


@pytest.mark.parametrize(
    "name, said",
    [("", "the path is empty"), (" ", "--dataset ' ': no such file"), ("\t", "--dataset '\\t': no such file")],
    ids=["empty", "space", "tab"],
)
def test_an_empty_or_blank_dataset_name_is_refused_and_shown_before_the_model(tmp_path, monkeypatch, name, said):
    # noted by the fifteenth pass: '' was read as the working folder ("give a file", after the model),
    # ' ' was shown as nothing; now refused as every empty path is (user_path), and quoted
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = assert_refused(cli("perplexity", "nomodel", "--dataset", name, where=tmp_path), said)
    assert "nomodel" not in line, line


def test_a_96_character_dataset_name_is_a_hub_id_and_a_folder_here_is_local(tmp_path, monkeypatch):
    # 96 characters (and 96/96) can be Hub ids: the model is named first; org/name, a folder here, is local
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("a" * 96, "o" * 96 + "/" + "n" * 96):
        assert_refused(cli("perplexity", "nomodel", "--dataset", name, where=tmp_path), "nomodel")
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert_refused(cli("perplexity", "nomodel", "--dataset", "org/name", where=tmp_path), "give a file")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-n", "0"]))
