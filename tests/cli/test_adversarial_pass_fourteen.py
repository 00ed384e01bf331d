r"""A fourteenth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the thirteenth pass's mends (``files.settle``/``provisional_dir``,
``escape.shell_command``, the local ``--dataset`` rule, ``runfiles.check_run_model``, the finished
run left alone, unchanged run files keeping their bytes, "n/a" report cells), with new inputs of
those classes; inputs kept as tests.

The pass threw about 105 inputs, each a call of the CLI (in-process, or a subprocess where two
processes at once were the question), recording exit status, stderr lines, traceback and the files
left (hashed before and after):

* provisional_dir and settle (23): ``train t.yaml --out OUT`` stopped at 7 moments (``_build``
  raising Ctrl-C, a refusal, ``_restore`` ENOSPC: before the run's files; ``_peak`` Ctrl-C, ``_loop``
  Ctrl-C, a refusal, MemoryError: after them) x 3 folders (``new/deeper/run``, ``lnk/new/run`` with
  lnk a link to a folder elsewhere, ``pre/run`` inside a folder another made, holding its file);
  two ``train`` subprocesses at once on one new ``new/run``, and on ``new2/a`` and ``new2/b``.
* the Ctrl-C resume hint (30): ``escape.shell_command``'s reading by bash of 18 names (NEL U+0085,
  CSI U+009B, a newline, ``-x``, ``--help``, ``-``, a byte not UTF-8, 5,000 characters, ``it's``,
  a quote with ESC, ``\x41``, backslash-quote-ESC, U+2028, ``~/x``, ``$HOME``, U+061C, U+200E, NUL);
  ``train`` stopped in-process with ``--out`` ./~/run, ./~root/run, ./~nosuchuser/run, ./~x,
  ``r<U+0085>x``, ./-x; ``--out -x``, ``--help``, ``-``, ``--resume`` read by the CLI as values
  (4); ``export ./~x`` of an unfinished run (its "continue it with" note); ``sweep s.json --out
  ./~/sw`` with a fresh HOME and with an earlier sweep's config in ``~/sw`` (2).
* ``perplexity e1 --dataset NAME`` (15, e1 the 4-step run exported, HF_HUB_OFFLINE=1): ``my data``,
  ``x.txt `` (a trailing space), ``x.tsv``, ``mydir/``, ``data\test.txt``, ``org/name``,
  ``x.txt.gz``, ``C:\corpus``, ``wiki test``, ``-``, ``x.TXT``, ``dir/ ``, ``a:b``; ``my data`` and
  ``mydir/`` online against a fake Hub on 127.0.0.1 (no request reached it).
* a trained run's config.yaml edited after training (22; ``export --hf``, ``generate``, ``train
  --resume``): rope_theta 500000.0, 1.0e+5 and 1e4; norm_eps 0.5; train.dtype bf16; seq_len 16;
  n_heads 0x2, 2.0, '2' and (resumed, unfinished run) 1; tied_embeddings yes; CRLF line ends; a
  byte-order mark; n_heads twice; a merge key; positions null; norm null; n_kv_heads 2; head_dim 16;
  multiple_of 8; aux_loss_coef 0.5; a tab indent; and the untouched run resumed (the oracle).
* resumes of a finished run and run files' bytes (11): ``--threads 2``, ``--set train.eval_every=1``,
  ``--set train.lr=0.1``; summary.json cut to ``{``, a list, status "running", final_val_loss NaN,
  a link to a copy outside; config.yaml a link to a copy outside; an unfinished run resumed at
  ``--threads`` 1 and 2 (final losses against the uninterrupted run's).
* reports (4, ``report SW --out rr`` of fake sweeps): one of gelu-r2's two seeds set aside; three
  seeds with one set aside in each arm; arms named ``=1+2|<b>`x`[a](b)``, ESC and U+202E (refused
  by sweep.json's name check before anything is written); arms ``-1-r2``, ``...-r2``, ``1e5-r2``.

Root (``id -u`` 0) ran this pass, as the twelfth's.

Findings (6 root causes; each a strict xfail below until mended; all six mended since, each test
now a check with a second input: F1-F2 by ``runfiles.check_run_model`` on resume and a ``"build"``
record in model.json, F3-F5 by ``escape.path_arg`` and UTF-8 bytes in ``$'...'``, F6 by
``wikitext.is_hub_id``):

F1. ``train --out run --resume`` of a run whose config.yaml was edited after training, in a key its
   checkpoint's shapes cannot tell, trains the edited model from the checkpoint and rewrites
   model.json to describe it: the 4-step run with summary.json and step-0000004 removed (a kill
   after step 2) and config.yaml's ``n_heads: 2`` made ``n_heads: 1`` (d_model 32: the fused qkv
   weight is (96, 32) either way) answers exit 0, "val loss 5.2749 nats" (5.2748 unedited: another
   model was trained), and model.json's ``attn.n_heads`` becomes 1, the record of the model the
   first two steps trained overwritten. ``runfiles.check_run_model`` (runfiles.py line 142), the
   thirteenth pass's F1 mend, is called only by ``export.load_run_checkpoint`` (export.py line
   613); ``trainer._train`` restores the checkpoint (trainer.py line 276, shapes only) and
   ``_write_run_files`` writes model.json from config.yaml (lines 363, 370) without comparing the
   model.json already there. Mended: ``trainer._recorded_model`` calls ``check_run_model`` after
   the checkpoint's shapes and before any run file is written, and for a finished run before it is
   said finished.
F2. config.yaml's ``model.rope_theta`` and ``model.norm_eps`` edited after training are used as they
   say: with ``rope_theta: 1.0e+5`` (trained with 10000.0), ``export --hf`` answers exit 0 and writes
   a config.json with ``"rope_theta": 100000.0`` (and max_position_embeddings 148,997 for 19,869), a
   model whose logits are not the trained one's; ``norm_eps: 0.5`` is generated from. Both go into
   the built model (export.py lines 606-607, from ``cfg.model``), but model.json, which the trainer
   writes from ``ModelConfig`` (trainer.py line 363), records neither, so ``check_run_model``
   (which refuses an edited ``n_heads``, ``head_dim`` or ``seq_len`` as "was either file changed
   after training?") has nothing to compare them with. Mended: model.json's ``build`` records
   ``runconfig.BUILD_KEYS`` (rope_theta, norm_eps: build_model's keywords besides seq_len, which
   is the ModelConfig's max_positions), and ``check_run_model`` compares those it records (a run
   written before records none, and loads as before).
F3. The resume hint names another folder when the run folder's name starts with ``~``: ``train
   t.yaml --out ./~/run`` stopped by Ctrl-C prints "continue with: ffnlab train --out '~/run'
   --resume"; bash keeps '~/run' as written, and ffnlab's ``--out`` parser expands it to
   ``$HOME/run`` (pasted, that starts a fresh run of the default config there: ``train --out typo
   --resume --max-steps 1`` on a folder holding no run trained the defaults, exit 0); ``./~nosuchuser/run`` gives a
   hint refused as "cannot expand '~nosuchuser' ... no such user". ``export ./~x`` of an unfinished
   run prints the same "continue it with: ffnlab train --out '~x' --resume". ``cli/training.py``
   ``resume_command`` (line 153) quotes the folder for the shell only, while ``cli/app.py``
   ``user_path`` (line 139) expands a leading ``~`` of any value, quoted or not; pathlib has
   already dropped the ``./`` the user typed (``Path('./~x') == Path('~x')``).
F4. The resume hint writes a C1 control character as the byte it is not: ``--out $'r\u0085x'``
   (NEL, UTF-8 C2 85) gives "continue with: ffnlab train --out $'r\x85x' --resume", which bash reads
   as the one byte 0x85, the name ``r\x85x`` of bytes 72 85 78, not the folder (72 C2 85 78); the
   same for U+009B (CSI). ``escape.py`` ``_visible`` (line 54) writes every code below 0x100 as
   ``\xHH``, right for the terminal but, inside ``shell_word``'s ``$'...'`` (line 84), the byte
   form bash keeps for a name of bytes that are not UTF-8 (``\udc85`` is also written ``\x85``).
F5. A sweep folder whose name starts with ``~`` hands its runs paths they read as the home
   folder's: ``sweep s.json --out ./~/sw`` writes ``./~/sw/configs/a-s0.yaml`` and starts ``ffnlab
   train ~/sw/configs/a-s0.yaml --out ~/sw/runs/a-s0 --resume ...``; every run fails ("config file
   not found: no such file $HOME/sw/configs/a-s0.yaml", exit 1) and, with an earlier sweep's
   config at ``~/sw/configs/a-s0.yaml``, the run trains into ``$HOME/sw/runs/a-s0`` (outside the
   folder named) while the sweep says "1 run(s) of ~/sw have not finished" (exit 2).
   ``experiments/sweep/run.py`` ``_path_arg`` (line 218) guards a leading ``-`` (``./-sw``), not a
   leading ``~``, which the worker's ``user_path`` (cli/app.py line 139) expands.
F6. A ``--dataset`` that no Hub id can be is taken for one, after the model: ``perplexity e1
   --dataset mydir/`` (a trailing slash) and ``--dataset 'my data'`` (a space; also ``x.txt `` and
   ``dir/ ``) load the model, then say "error: Couldn't reach 'my data' on the Hub
   (OfflineModeIsEnabled)" with HF_HUB_OFFLINE=1, and "error: cannot load Hub dataset 'my data': Repo
   id must use alphanumeric chars, '-', '_' or '.' ..." online (huggingface_hub's own check: no
   request is sent), where the file is simply not here; with a model that is not here the line is
   the model's. ``training/wikitext.py`` ``is_local`` (line 118) calls a name local by its start,
   its count of ``/`` and its suffix only, so a name ending in ``/`` or holding a space, which
   huggingface_hub refuses as an id, goes the Hub's way (``cli/evaluate.py`` line 112).

Per class, inputs tried / failures: provisional_dir and settle 23 / 0; the resume hint and
folder names handed on 30 / 9 (F3 5, F4 2, F5 2); --dataset 15 / 7 (F6: 5 offline, 2 online); config.yaml
edited after training 22 / 4 (F1 1, F2 3: rope_theta 500000.0 and 1.0e+5, norm_eps); finished runs
and run files' bytes 11 / 0; reports 4 / 0.

Noted, not broken promises: ``n_kv_heads: 2`` (= n_heads) and ``head_dim: 16`` (= d_model /
n_heads) in config.yaml describe the trained model and are refused as differences from model.json
(over-strict, one line); ``rope_theta: 1e4`` (a string to YAML 1.1) is read as 10000.0 while
``n_heads: '2'`` is refused as a string; a config.yaml ``train.dtype: bf16`` edit changes nothing
``export`` writes; a summary.json with a NaN loss still counts as finished (the twelfth pass's note);
``x.tsv``, ``x.txt.gz``, ``org/name`` and ``-`` go to the Hub (``-`` cannot be an id either), and
``C:\corpus`` and ``a:b`` end, after the model, in datasets' "Couldn't find any data file at
.../C:\corpus." (one line); a sweep run's log line ``$ python -m ffnlab train ...`` is the command
joined by spaces, unquoted; the sweep spec's run names (letters, digits, ``_ . -``) keep Markdown
and HTML out of arm names, and an arm opening with ``-`` gets arms.csv's formula guard (``'-1-r2``).

Not reached before the deadline: SIGKILL between ``make_dir`` and ``settle`` in a subprocess (the
moments were taken in-process, by raising at them); two processes where one is refused after
making folders both need; the hint under a locale that is not UTF-8.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import (
    FACTS_RUN_YAML,
    copy_run,
    edit_config,
    interrupted_train,
    run_files,
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

# -- F1: a resume trains on a config.yaml edited in a way the checkpoint's shapes cannot tell -------------


@pytest.mark.parametrize(
    "old, new, key, unfinished",
    [
        ("n_heads: 2", "n_heads: 1", "n_heads", True),
        ("rope_theta: 10000.0", "rope_theta: 500000.0", "rope_theta", True),  # the second input
        ("n_heads: 2", "n_heads: 1", "n_heads", False),  # finished: no longer "already finished", exit 0
    ],
    ids=["n-heads-unfinished", "rope-theta-unfinished", "n-heads-finished"],
)
def test_a_resume_of_a_run_whose_config_yaml_was_edited_after_training_is_refused(
    trained, tmp_path, old, new, key, unfinished
):
    # config.yaml's n_heads 2 -> 1 (d_model 32: the fused qkv weight is (96, 32) either way, so the
    # step-2 checkpoint loads), or its rope_theta (no shape at all); oracle: model.json, which the
    # trainer wrote from the config it trained, and t.yaml, the config it trained
    run = copy_run(trained, tmp_path)
    if unfinished:
        unfinish(run)
    recorded = json.loads((run / "model.json").read_text())
    assert recorded["model"]["attn"]["n_heads"] == 2 and recorded["build"]["rope_theta"] == 10000.0, recorded
    edit_config(run, old, new)
    before = run_files(run)
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    after = run_files(run)
    assert after["model.json"] == before["model.json"], "model.json rewritten to the edited config"
    line = assert_refused(r, "config.yaml")
    assert "model.json" in line and key in line, line
    assert after == before


# -- F2: config.yaml's rope_theta and norm_eps, edited after training, are used unchecked -----------------


@pytest.mark.parametrize(
    "old, new, argv",
    [
        ("rope_theta: 10000.0", "rope_theta: 1.0e+5", ["export", "run", "--hf", "hf"]),
        ("norm_eps: 1.0e-05", "norm_eps: 0.5", GENERATE),
        # the second inputs: the other command for each, norm_eps by a tenth only
        ("rope_theta: 10000.0", "rope_theta: 500000.0", GENERATE),
        ("norm_eps: 1.0e-05", "norm_eps: 1.0e-06", ["export", "run", "--hf", "hf"]),
    ],
    ids=["rope-theta-export", "norm-eps-generate", "rope-theta-generate", "norm-eps-export"],
)
def test_a_config_yaml_whose_rope_or_norm_settings_were_edited_after_training_is_refused(
    trained, tmp_path, old, new, argv
):
    # oracle: the run's config as trained, its model.json (written from it) and the export of the
    # untouched run (rope_theta 10000.0); the checkpoint's shapes do not depend on either value
    run = copy_run(trained, tmp_path)
    edit_config(run, old, new)
    before = snapshot(tmp_path)
    r = cli(*argv, where=tmp_path)
    if r.code == 0 and (tmp_path / "hf" / "config.json").is_file():
        exported = json.loads((tmp_path / "hf" / "config.json").read_text())
        assert exported["rope_theta"] == 10000.0, exported["rope_theta"]  # a model the run never trained
    line = assert_refused(r, "config.yaml")
    assert old.split(":")[0] in line, line
    assert snapshot(tmp_path) == before


def _as_written_before(run: Path, keep: tuple[str, ...] | None = None) -> None:
    """model.json, and each checkpoint's state.json, as ffnlab wrote them before they recorded ``build``
    (``keep``: with only these keys of it)."""
    for path in [run / "model.json", *sorted(run.glob("checkpoints/step-*/state.json"))]:
        meta = json.loads(path.read_text())
        build = meta.pop("build")
        if keep is not None:
            meta = {**meta, "build": {k: build[k] for k in keep}}
        path.write_text(json.dumps(meta, indent=1))


def test_a_run_whose_model_json_records_no_build_settings_still_exports(trained, tmp_path):
    # a run written before model.json recorded rope_theta and norm_eps: it loads, and exports what
    # the same run with the record exports (the oracle: that export's files, byte for byte)
    (tmp_path / "new").mkdir()
    copy_run(trained, tmp_path / "new")
    assert cli("export", "run", "--hf", "hf", where=tmp_path / "new").code == 0
    run = copy_run(trained, tmp_path)
    _as_written_before(run)
    r = cli("export", "run", "--hf", "hf", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert run_files(tmp_path / "hf") == run_files(tmp_path / "new" / "hf")
    # what it does record is still compared; what it does not is config.yaml's word (not compared)
    edit_config(run, "n_heads: 2", "n_heads: 1")
    assert "n_heads" in assert_refused(cli(*GENERATE, where=tmp_path), "model.json")
    edit_config(run, "n_heads: 1", "n_heads: 2")
    edit_config(run, "rope_theta: 10000.0", "rope_theta: 500000.0")
    assert cli(*GENERATE, where=tmp_path).code == 0


def test_a_model_json_recording_some_build_settings_compares_those(trained, tmp_path):
    run = copy_run(trained, tmp_path)
    _as_written_before(run, keep=("rope_theta",))
    edit_config(run, "norm_eps: 1.0e-05", "norm_eps: 0.5")  # not recorded: not compared
    assert cli(*GENERATE, where=tmp_path).code == 0
    edit_config(run, "rope_theta: 10000.0", "rope_theta: 1.0e+5")
    before = snapshot(tmp_path)
    assert "rope_theta" in assert_refused(cli(*GENERATE, where=tmp_path), "config.yaml")
    assert snapshot(tmp_path) == before


def test_a_resume_of_a_run_whose_model_json_records_no_build_settings_keeps_it(trained, tmp_path):
    # the resumed run trains on; its model.json is not given settings the first steps' run never
    # recorded (config.yaml's word is no record of them); oracle: its bytes, and the uninterrupted
    # run's final loss (one thread, the same batches)
    run = copy_run(trained, tmp_path)
    final = json.loads((run / "summary.json").read_text())["final_val_loss"]
    unfinish(run)
    _as_written_before(run)
    model = (run / "model.json").read_bytes()
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert (run / "model.json").read_bytes() == model
    assert json.loads((run / "summary.json").read_text())["final_val_loss"] == final


def test_config_yaml_spellings_of_the_trained_values_still_export(trained, tmp_path):
    # kept: YAML's other spellings of the same values (0x2, yes, CRLF line ends, a byte-order mark)
    run = copy_run(trained, tmp_path)
    edit_config(run, "n_heads: 2", "n_heads: 0x2")
    edit_config(run, "tied_embeddings: true", "tied_embeddings: yes")
    text = (run / "config.yaml").read_text()
    (run / "config.yaml").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    r = cli("export", "run", "--hf", "hf", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["num_attention_heads"] == 2


def test_a_config_yaml_with_a_key_twice_is_one_line(trained, tmp_path):
    # kept: n_heads given twice (2, then 1) is refused, not read as its last value
    run = copy_run(trained, tmp_path)
    edit_config(run, "n_heads: 2", "n_heads: 2\n  n_heads: 1")
    before = snapshot(tmp_path)
    assert_refused(cli(*GENERATE, where=tmp_path), "duplicate key 'n_heads'")
    assert snapshot(tmp_path) == before


# -- F3, F4: the Ctrl-C resume hint for a folder named with a leading ~ or a C1 control character --------


def _hint_words(stderr: str, lead: str = "continue with: ") -> list[str]:
    """The words bash splits the hint's command into (its quoting, ``$'...'`` included)."""
    lines = [x for x in stderr.splitlines() if lead in x]
    assert len(lines) == 1, repr(stderr)
    return _bash_words(lines[0].split(lead, 1)[1])


def _bash_words(command: str) -> list[str]:
    """The words bash splits ``command`` into."""
    p = subprocess.run(["bash", "-c", f'set -- {command}; printf "%s\\0" "$@"'], capture_output=True, check=True)
    return [w.decode("utf-8", "surrogateescape") for w in p.stdout.split(b"\0")[:-1]]


def _folder_read(word: str, where: Path) -> Path:
    """The folder ``ffnlab train --out WORD`` works in: the option's own parser (``user_path``)."""
    from ffnlab.cli.app import user_path

    with cwd(where):
        return Path(os.path.abspath(user_path(word)))


@pytest.mark.parametrize(
    "out",
    ["./~/run", "./~nosuchuser/run", "./~root/run", "./~"],
    ids=["tilde-slash", "tilde-user", "tilde-root", "tilde"],
)
def test_the_resume_hint_of_a_folder_named_with_a_leading_tilde_leads_back_to_it(tmp_path, monkeypatch, out):
    # a folder whose name starts with ~, named ./~/run (the shell leaves it alone): the hint must name
    # the same folder when ffnlab reads it back, not $HOME/run (pasted: a fresh default run there)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "w"
    work.mkdir()
    code, stderr = interrupted_train(work, out, monkeypatch)
    assert code == 130, (code, stderr)
    run = work / out
    assert (run / "config.yaml").is_file()
    words = _hint_words(stderr)
    assert words[:3] == ["ffnlab", "train", "--out"] and words[4:] == ["--resume"], words
    try:
        folder = _folder_read(words[3], work)
    except Exception as e:  # noqa: BLE001 - the parser's refusal is the answer
        pytest.fail(f"ffnlab refuses the hint's folder {words[3]!r}: {e}")
    assert folder == Path(os.path.abspath(run)), (words[3], folder)


def test_exports_continue_note_for_a_run_named_with_a_leading_tilde_leads_back_to_it(trained, tmp_path, monkeypatch):
    # export ./~x of an unfinished run: its "continue it with" note, split by bash, read by --out's parser
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    run = copy_run(trained, tmp_path)
    unfinish(run)
    run.rename(tmp_path / "~x")
    r = cli("export", "./~x", "--hf", "hf", where=tmp_path)
    assert r.code == 0, r.stderr[-800:]
    words = _hint_words(r.stdout, "continue it with: ")
    assert words[:3] == ["ffnlab", "train", "--out"] and words[4:] == ["--resume"], words
    assert _folder_read(words[3], tmp_path) == tmp_path / "~x", words[3]


@pytest.mark.parametrize("out", ["r\x85x", "run\x9b2J", "r\udc85\x85x"], ids=["NEL", "CSI", "byte-85-then-NEL"])
def test_the_resume_hint_of_a_folder_named_with_a_c1_control_reads_back(tmp_path, monkeypatch, out):
    # U+0085 and U+009B are characters (UTF-8 C2 85, C2 9B), not the bytes 0x85 and 0x9B; the byte
    # 0x85 (a name not UTF-8) beside U+0085 is a third name, of bytes 72 85 C2 85 78
    code, stderr = interrupted_train(tmp_path, out, monkeypatch)
    assert code == 130, (code, stderr)
    assert "\x85" not in stderr and "\x9b" not in stderr, repr(stderr)
    words = _hint_words(stderr)
    assert words[3:] == [out, "--resume"], words
    assert (tmp_path / words[3] / "config.yaml").is_file()


@pytest.mark.parametrize(
    "out",
    ["a\nb", "./-x", "r\udcfdx", "$HOME`id`", "q'\"\\", "\u00e9t\u00e9 " * 30, "t\tab"],
    ids=["newline", "leading-dash", "not-utf8", "dollar-backtick", "quotes", "long-utf8", "tab"],
)
def test_the_resume_hint_of_other_odd_names_reads_back(tmp_path, monkeypatch, out):
    # kept: each hint splits back, under bash, into a word that ffnlab's --out reads as the run's folder
    code, stderr = interrupted_train(tmp_path, out, monkeypatch)
    assert code == 130, (code, stderr)
    run = tmp_path / out
    assert (run / "config.yaml").is_file()
    words = _hint_words(stderr)
    assert words[:3] == ["ffnlab", "train", "--out"] and words[4:] == ["--resume"], words
    assert _folder_read(words[3], tmp_path) == Path(os.path.abspath(run)), words[3]


# -- F5: a sweep folder named with a leading ~ hands its runs a path they read as $HOME's ------------------


@pytest.mark.parametrize("sw", ["./~/sw", "./~nosuchuser"], ids=["tilde-slash", "tilde-user"])
def test_a_sweep_named_with_a_leading_tilde_trains_its_runs_in_its_own_folder(tmp_path, monkeypatch, sw):
    # the sweep's workers are ``python -m ffnlab train CONFIG --out RUN --resume ...``; the worker is
    # replaced by a recorder (no process, no training) and its arguments read by ffnlab's own parser
    from ffnlab.experiments.sweep import run as sweep_run

    home, work = tmp_path / "home", tmp_path / "w"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    write_corpus(work)
    (work / "s.json").write_text(json.dumps(tiny_sweep_spec(4)))
    commands: list[list[str]] = []

    def recorded(self, cmd, log, threads):  # noqa: ANN001, ANN202
        commands.append(cmd)
        return 0

    monkeypatch.setattr(sweep_run.Children, "run", recorded)
    monkeypatch.setattr(sweep_run, "cpu_peak", lambda threads: 1e11)
    r = cli("sweep", "s.json", "--out", sw, where=work)
    assert len(commands) == 1, (commands, r.code, r.stderr[-800:])
    argv = commands[0][commands[0].index("train") :]
    out = argv[argv.index("--out") + 1]
    assert _folder_read(out, work) == Path(os.path.abspath(work / sw / "runs" / "a-s0")), out  # not $HOME's
    r = cli(*argv, "--print-config", where=work)  # the config the worker would train
    assert r.code == 0, r.stderr[-500:]


def test_a_sweep_named_with_a_leading_tilde_is_told_to_rerun_with_its_own_folder(tmp_path, monkeypatch):
    # the Ctrl-C line's "rerun `ffnlab sweep SPEC --out OUT`", split by bash, read by --out's parser
    from ffnlab.experiments.sweep import run as sweep_run

    home, work = tmp_path / "home", tmp_path / "w"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    write_corpus(work)
    (work / "s.json").write_text(json.dumps(tiny_sweep_spec(4)))

    def stopped(self, cmd, log, threads):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run.Children, "run", stopped)
    monkeypatch.setattr(sweep_run, "cpu_peak", lambda threads: 1e11)
    r = cli("sweep", "s.json", "--out", "./~/sw", where=work)
    assert r.code == 130, (r.code, r.stderr[-800:])
    line = next(x for x in r.stderr.splitlines() if "rerun `" in x)
    words = _bash_words(line.split("rerun `", 1)[1].split("`", 1)[0])
    assert words[:3] == ["ffnlab", "sweep", "s.json"] and words[3] == "--out", words
    assert _folder_read(words[4], work) == work / "~" / "sw", words[4]


# -- F6: a --dataset no Hub id can be, taken for one ------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["held-out/", "my data", "x.txt ", "a:b", "-"],
    ids=["trailing-slash", "space", "trailing-space", "colon", "dash"],
)
def test_a_missing_dataset_no_hub_id_can_name_is_no_such_file(tmp_path, monkeypatch, name):
    # a Hub id is org/name of letters, digits, - _ . (huggingface_hub's own check refuses both);
    # with a model that is not here, the line should still be the missing file's
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = assert_refused(cli("perplexity", "nomodel", "--dataset", name, where=tmp_path))
    assert "no such file" in line and name in line, line


def test_a_missing_dataset_with_an_upper_case_file_type_is_no_such_file(tmp_path, monkeypatch):
    # kept: the file type is read case-blind (x.TXT) and a Windows-style path with one is a file
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("x.TXT", "data\\test.txt"):
        line = assert_refused(cli("perplexity", "nomodel", "--dataset", name, where=tmp_path))
        assert "no such file" in line, line


# -- kept: provisional_dir and settle at different moments of a run ---------------------------------------


@pytest.mark.parametrize(
    "moment, error, code, kept",
    [
        ("_build", KeyboardInterrupt, 130, False),  # before the run's files: it goes, with what it made
        ("_build", OSError, 2, False),
        ("_loop", KeyboardInterrupt, 130, True),  # after them: the run is kept to be resumed
        ("_loop", MemoryError, 2, True),
    ],
    ids=["ctrl-c-before", "refused-before", "ctrl-c-after", "oom-after"],
)
def test_a_run_stopped_before_or_after_it_began_through_a_link_and_beside_another_file(
    trained, tmp_path, monkeypatch, moment, error, code, kept
):
    from ffnlab.training import trainer

    def stop(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise error(28, "No space left on device") if error is OSError else error()

    monkeypatch.setattr(trainer, moment, stop)
    elsewhere = tmp_path / "else"
    (elsewhere / "pre").mkdir(parents=True)
    (elsewhere / "pre" / "theirs.txt").write_text("another's")
    work = tmp_path / "w"
    work.mkdir()
    (work / "lnk").symlink_to(elsewhere)
    (work / "t.yaml").write_text(FACTS_RUN_YAML)
    (work / "cache").symlink_to(trained / "cache")
    for out in ("lnk/new/run", "lnk/pre/run"):
        r = cli("train", "t.yaml", "--out", out, where=work)
        assert r.code == code and "Traceback" not in r.stderr, (r.code, r.stderr[-800:])
    left = sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*"))
    runs = [f"{top}/run/{f}" for top in ("new", "pre") for f in ("config.yaml", "model.json")]
    assert left == sorted(["pre", "pre/theirs.txt"] + (["new", "new/run", "pre/run"] + runs if kept else [])), left


# -- kept: a finished run resumed with changes that do not change it -------------------------------------


@pytest.mark.parametrize("flags", [["--threads", "2"], ["--set", "train.eval_every=1"]], ids=["threads", "eval-every"])
def test_a_finished_run_resumed_with_cadence_or_thread_changes_keeps_every_byte(trained, tmp_path, flags):
    run = copy_run(trained, tmp_path)
    before = run_files(run)
    r = cli("train", "--out", "run", "--resume", *flags, where=tmp_path)
    assert r.code == 0 and "already finished its 4 steps" in r.stderr, r.stderr[-500:]
    assert run_files(run) == before


# -- kept: a report whose arms are partly set aside, one arm named like a formula -------------------------


def test_a_report_of_partly_set_aside_arms_and_a_dash_named_arm(tmp_path):
    from fake_sweeps import fake_sweep

    fake_sweep(
        tmp_path / "sw", {"gelu-r4": (0.0, 1.0), "-1-r2": (0.01, 1.0)}, seeds=2, noise=0.01, final={"-1-r2-s0": 10.0}
    )  # one of its two seeds ends worse than chance (ln 256 = 5.55)
    r = cli("report", "sw", "--out", "rr", where=tmp_path)
    assert r.code == 0 and not r.stderr.strip(), r.stderr[-500:]
    with open(tmp_path / "rr" / "arms.csv", newline="") as fh:
        rows = {row["arm"]: row for row in csv.DictReader(fh)}
    assert set(rows) == {"gelu-r4", "'-1-r2"}, set(rows)  # the formula guard on a name opening with -
    row = rows["'-1-r2"]
    assert (row["n_seeds"], row["n_excluded"], row["val_ppl_lo"]) == ("1", "1", ""), row  # one seed: no interval
    report = (tmp_path / "rr" / "report.md").read_text()
    assert not re.search(r"\bnan\b", report, re.I), [x for x in report.splitlines() if re.search(r"\bnan\b", x, re.I)]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-n", "0"]))
