"""An eighth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at commands and combinations the first seven passes left alone; inputs kept as tests.

The pass threw about 225 inputs, each a call of the CLI (in-process, or a subprocess where a Hub
or a trained run was the question), recording exit status, stderr lines, traceback, strict JSON,
the files left and a fake Hub's log:

* ``~`` (17): ``claims --evidence`` ``~/ev``, ``~/ev/claims.json`` and ``~nouser/ev`` (HOME a test
  folder); ``table``, ``fit``, ``audit`` and ``size --from`` given ``~/m`` and ``~/m/config.json``;
  ``fit --mode serve --engine-config ~/v.txt``, ``size --engine-config ~/e.toml``, ``sweep
  ~/s.yaml --estimate``, ``train ~/t.yaml`` and ``train --corpus ~/c.txt`` (``--print-config``),
  ``capacity report ~/missing``, ``explain --d-model ~``.
* names (27): sweep names ``.ffnlab-tmp-s-1-0123456789ab``, with a space, a tab, a newline, a
  slash, U+202E, a zero-width space, ``~``, ``-``, ``a..b``, a leading and a trailing space,
  ``CON``; arm names with ``/``, a space, a newline, U+202E, U+200B, ``..``, ``.``, ``""``, ``:``,
  ``*``, ``~a``, a backslash; ``--checkpoint`` ``../checkpoints/step-N``, ``step-N/`` and ``""``
  to ``generate``, ``export`` and ``capacity measure``.
* duplicate keys (10): a sweep spec in JSON and in TOML, ``claims --evidence`` a JSON file with a
  claim given twice and a ``verdict`` given twice, a capacity preset in JSON, a train config in TOML
  (a key twice in a sub-table), in YAML (a flow mapping, an explicit ``? key``), ``1`` beside
  ``'1'``, ``--set`` of one key twice (the last wins, as documented).
* strict JSON (38): config.json with NaN, Infinity, -Infinity or 1e308 in ten keys
  (``max_position_embeddings``, ``rope_theta``, ``rms_norm_eps``, ``sliding_window``, ``head_dim``,
  ``vocab_size``, ``tie_word_embeddings``, ``num_key_value_heads``, ``intermediate_size``, a
  fractional ``hidden_size``), each to ``table``, ``size --from`` and ``fit`` with ``--json``;
  ``zoo --json`` with ``--format csv`` and an empty ``--family``; ``claims --evidence`` a
  width-alignment file with 1e999.
* resource bombs (29): JSON 990 deep (train config), YAML 5,000 deep (train config) and 3,000
  deep (sweep spec), JSON 100,000 deep (capacity preset, claims evidence); ``--set`` values 3,000
  and 2,000 deep, a key 5,000 parts long, an alias bomb as a ``--set`` value (twice), a 5,000-digit
  integer, a 100,000-character corpus; 2,000,000 seeds in TOML, 10,001 seeds in JSON, 10,001
  scales, 100 seeds x 101 scales, 100,000 trends; seeds ``[0, 0, 0]``, ``[0, 1e300]``, ``[0,
  true]``, ``5``, ``[]``; a capacity preset of 5,001 seeds x 2 arms and one of 10**20 exposures;
  a 200,000-key TOML train config.
* depth (22): ``size --n-layers 100000 --gpu H100``, ``--recompute op-selective`` (25,000, 50,000
  and 100,000 layers), ``--pp 100000``, ``--pp 4 --zero 3 --offload-acts --recompute full
  --recompute-every 3``, ``--finetune qlora`` without ``--from``; a 100,000-layer llama config to
  ``size --from --gpu H100``, ``fit --mode serve`` (with and without ``--gpu``, ``--gpus auto
  --target-tokens-per-s 1000``), ``fit --gpus 2`` (25,000 to 100,000 layers); 20,000 layers of
  16,384 to ``fit --gpus 8 --gpu H100 --mode serve`` (exit 1); ``plan`` 1e15 at aspect
  0.001:0.002, 1e12 at 1:1, 100T at head size 8.
* a model whose weights are NaN (8): ``perplexity --json`` (documents and strided protocols),
  then without ``--json`` (answered from the cache); ``probe --json`` (default settings and
  ``--units 1 --examples 1 --top-tokens 1``); ``generate`` at temperature 1 and 0 and with
  ``--top-k 2`` (one line: "gives logits that are not finite").
* capacity budget names (2): ``capacity-preset.json`` and ``capacity-report``, each a real run.
* numbers and exit codes (47): ``size --ratio`` 1/0, 0/0, 8/3/2, 1e309, -4, nan, inf, 4/-1, 1_0,
  0x4, 4j, an Arabic-Indic digit; ``plan`` 1e400, nan, -7B, 7B7B, 0.000001, 7b, 7Bi, inf, 1e-300,
  100; ``--tolerance`` nan/-1/1e308, ``--aspect-band 160:32``, ``--kv-groups`` 10**6,
  ``--d-multiple`` 10**9; ``--multiplier`` nan/1e-320, ``--multiple-of`` 0 and 2**70; ``explain``
  2**62 wide, ``--d-ff`` 0 and 2**40; ``generate`` ``--temperature nan``, ``--top-k -1``, ``--seed
  2**32``, ``--tokens 2**63``, a 100,000-character prompt; several targets to ``fit`` (one that does
  not fit: exit 1, strict JSON), ``audit``, ``table``, ``size --from``; ``--format yaml`` and
  ``CSV``.
* Hub waits (25, a fake Hub on 127.0.0.1, ``--timeout 1``): ``table org/tiny`` against a stall, a
  500, a trickle, a body that stalls after its headers (also at ``--timeout 3``), garbage, a 429
  with Retry-After 100,000, a repo it lacks and a revision it lacks;
  ``size --from`` against a body cut short and headers that stall; ``audit`` of two ids, the first
  stalling; ``fit --mode serve`` against a redirect loop; ``probe org/tiny`` against a stall;
  ``train --corpus hf:org/data`` against a 500 and ``hf:org/nodata`` against a Hub without it;
  ``audit org/tiny --timeout 3`` against a trickle of six pieces 2 s apart; ``sweep`` and
  ``verify --preset`` of a spec whose corpus is ``hf:org/data`` (FFNLAB_TIMEOUT=1) against a
  stall, a 500 and a Hub without it; ``sweep --timeout 5``.
* data safety (23, a trained run and a real 2-arm sweep): ``report --out`` a user's folder;
  ``report`` with ``report/`` a link out, ``report/plots`` a link out, ``report/runs`` a link
  out; ``sweep`` resumed with ``logs/``, ``configs/``, ``runs/b-s0`` a link out and
  ``status.json`` a link to a file elsewhere; ``train --resume`` with ``checkpoints``,
  ``summary.json``, ``config.yaml`` and ``metrics.jsonl`` links out; ``export --hf
  run/checkpoints``; a refused ``train`` whose new folder gained another process's file;
  ``capacity run --out`` a user's folder holding a file and a link to a folder elsewhere; ``sweep
  --out`` such a link; ``capacity report --out`` a link to a folder holding a file and to an empty
  one, with ``capacity-report/`` a link out, and ``--remeasure`` with a run's ``capacity.json`` a
  link to a file elsewhere.

Findings (8 root causes; each was a strict xfail below):

1. ``claims --evidence ~/x`` reads a file or folder named ``~`` in the working folder: the
   option has no ``parser=user_path`` (``cli/sizing.py`` ``claims``), and
   ``sizing/claims.py`` ``evidence_file``/``load_evidence`` take ``Path(where)`` as given, so a
   ``~`` quoted or after ``=`` (which a shell leaves alone) is "no experiment evidence at ~/ev"
   though ``$HOME/ev/claims.json`` is there; ``~nouser/ev`` is the same line rather than "no such
   user". Every other path option and model target tried expands it.
2. ``train --corpus hf:org/nodata`` where the Hub lacks the dataset: "cannot load Hugging Face
   dataset 'org/nodata': Couldn't find any data file at /cwd/org/nodata. Couldn't find 'org/nodata'
   on the Hugging Face Hub either: LocalEntryNotFoundError: ... Please check your connection and
   try ...": not "not found", and it sends the user to their connection. The training corpus
   loader (``training/corpus/sources.py`` ``_open_hf``) prints the library's first line; only
   ``perplexity``'s loader (``training/wikitext.py`` ``load_hub_dataset``) reads the Hub's answer
   into "not found" (``_hub_dataset_error``, the seventh pass's mend). (A 500 there is one line,
   one request: the bounded wait works; only the not-found wording is missing.)
3. A transfer that stalls after the Hub sent its headers gets no progress line: ``table org/tiny
   --timeout 3`` against a body cut off mid-way was silent for 4.5 s, then "stopped sending for 3
   s" (10 s of silence at the default timeout). ``netwait.BoundedTransport.handle_request`` starts
   the "waiting for HOST" timer for the request and cancels it once the headers arrive; the body's
   wrapper (``_stall_reported``) reports the stall at the end but never announces the wait. Where
   the headers stall instead, the line comes after a tenth of the timeout, as promised. (Likewise
   a trickle of six pieces 2 s apart under ``--timeout 3``: ``audit`` ran 11 s with no stderr line;
   not cut, as promised, but not shown either.)
4. ``sweep`` and ``verify`` download a spec's Hub corpus (``data.corpus: hf:org/data``) in a
   bounded wait (FFNLAB_TIMEOUT; a stall is one line after 1 s, one request, nothing left), but
   neither takes ``--timeout`` (``cli/experiments.py``: no ``TIMEOUT_OPTION``), while the wait's
   lines end "(--timeout)" ("waiting for HOST for dataset 'org/data' (up to 1 s ...; --timeout)",
   "did not answer within 1 s (--timeout)"): ``sweep s.yaml --timeout 5`` is "No such option:
   --timeout". (The seventh pass found the same of ``perplexity``, mended by giving it the flag.)
   A dataset the Hub lacks is finding 2's line there too.
5. ``capacity run PRESET --out L`` and ``capacity report FOLDER --out L``, L a symbolic link to a
   folder elsewhere (empty, for the report): every budget's sweep (``L/small/...``: runs, configs,
   logs, sweep.json) and ``capacity-preset.json``, or the whole report (index.html, report.md,
   capacity.json, claims.json, plots/, the budgets' records), are written through the link into
   that folder (a real 1-budget run and its report here). ``sweep --out L``, ``train``, ``probe``
   and ``report --out L`` refuse such a link in one line (``files.refuse_link``); ``cli/capacity.py``
   ``run`` and ``report`` never call it, and the checks they do make resolve both sides through
   the link (``check_inside(out / budget, out)`` in ``design.run_preset``, ``check_inside(out,
   out)`` in ``claim_report_dir`` with ``base = out``), so they pass. (``capacity report`` with
   its default folder a link out is refused; a run's ``capacity.json`` a link is replaced, its
   target untouched.)
6. ``perplexity MODEL --dataset d.jsonl --json`` of an exported run whose weights are all NaN:
   "error: the result holds nan at [0].word_perplexity, which JSON cannot hold", exit 2, as the
   JSON contract says; but the result was already kept in ``$FFNLAB_CACHE/perplexity/`` as a file
   holding ``"bits_per_byte": NaN`` (not strict JSON), and every later call answers from it
   "(cached)": a refused command left a file, and ffnlab's own cache holds what its JSON may not.
   ``cli/evaluate.py`` ``measure_models`` caches each record before it is rendered, and
   ``training/perplexity.py`` ``write_cache`` dumps it with ``json.dumps`` (NaN allowed).
7. ``probe MODEL --out p --json`` of that NaN model: "error: the result holds nan at
   layers[0].summary.mean_abs_coefficient, which JSON cannot hold", exit 2 - after ``p/probe.json``
   (317 NaN in it) and ``p/index.html`` were written: a refused command leaves its output folder,
   and without ``--json`` (exit 0) the probe.json it writes is not strict JSON.
   ``cli/probe.py`` calls ``experiments/reporting/probe.py`` ``write`` (``json.dumps``, NaN
   allowed) before ``render.emit_json`` checks the result.
8. A capacity preset whose budget is named ``capacity-preset.json`` or ``capacity-report`` (names
   ``safe_name`` accepts) trains every budget, then fails on its own files: ``capacity run`` ends
   "error: Is a directory: o/.ffnlab-tmp-capacity-preset.json-PID-HEX/data" (a line naming a
   temporary, not the budget), and with ``capacity-report`` the report step refuses "o/capacity-report
   holds files that are not an ffnlab report (.lock, configs, logs)" - the budget's own sweep (real
   1-budget runs here). ``experiments/capacity/design.py`` ``load_preset`` checks budget names with
   ``safe_name`` only; ``run_preset`` writes ``out/capacity-preset.json`` and the report
   ``out/capacity-report`` beside each ``out/BUDGET``.

Mended since (plain tests now), all eight: 6. ``PerplexityRecord.not_finite`` decides whether a
result may be cached: ``write_cache`` never keeps one that is not (and writes strict JSON), and
``read_cache`` treats a kept file holding a NaN or an infinity as absent, so the model is measured
again. 7. ``experiments/reporting/probe.py`` ``write`` refuses a probe holding a figure that is not
finite in one line naming where (``render.first_non_finite``), before its folder is made, with or
without ``--json`` (as ``--json`` and ``generate`` refuse one); probe.json is written as strict
JSON. 2. a training corpus ``hf:ORG/NAME`` is downloaded by the one function ``perplexity`` uses
(``training/hub_datasets.py`` ``load_hub_dataset``, moved out of ``wikitext.py``, ``split``
optional): a dataset the Hub lacks is "dataset 'org/nodata' not found on the Hub at URL (...)",
refused and gated alike; ``_open_hf`` no longer wraps the library's call. 3. a response body is
watched as its request is: ``netwait``'s ``StallReported`` keeps one timer over each read and prints
the "waiting for HOST" line (once) when a read has had no bytes for the request's delay (a tenth of
the timeout, at most 1 s); ``test_hub_waits_third``'s trickle now checks the line too. 1. ``claims
--evidence`` takes ``parser=user_path_text`` (``~/ev`` is ``$HOME/ev``; ``~nouser/ev`` is one line,
"Invalid value for '--evidence': ~nouser/ev", as for every path option), and the sixth pass's walk
of every path option lists it. 4. ``sweep`` and ``verify`` take ``--timeout`` and apply it
(``netwait.set_timeout``) before the spec's corpus is prepared: ``--timeout 1`` bounds the wait
though FFNLAB_TIMEOUT says 30 (``capacity run`` downloads nothing: its corpus must be ``facts:``).
5. ``capacity run`` refuses its folder (``--out`` or ``sweeps/NAME``) and ``capacity report`` its
``--out`` when a symbolic link (``files.refuse_link``), before anything is written. 8.
``load_preset`` refuses a budget named as what a capacity folder holds beside its budgets
(``design.OWN_NAMES``: ``PRESET_RECORD``, which ``run_preset`` writes, and ``REPORT_DIR``, the
report's default folder, the names those writers use), case-insensitively, before any training.

Noted, not broken promises: every other refusal above was one line, exit 2, no traceback, nothing
written; every other ``--json`` answer was strict (a config.json NaN in a key ffnlab does not use, e.g.
``rope_theta``, is not echoed); each link out of a sweep, report or run folder was refused with
one line naming it, nothing written through it (``status.json`` a link: the link is replaced by a
file, its target untouched); a refused train kept another process's file and so its folder. A
sweep named ``.ffnlab-tmp-s-1-0123456789ab`` is accepted (``safe_name``); its folder would match
the temporaries' pattern, but ``clear_stale_temporaries`` removes only marked or empty ones, so a
sweep's folder with files in it is safe; by ``files.remove_stale`` (read, not thrown) an *empty*
user folder so named is removed once the PID in its name has ended (by design: a kill between
``mkdir`` and the marker leaves one). PyYAML reads
about 125 KB/s here: a 1.6 MB spec of 40,000 flow mappings takes 13 s to parse before it is
refused (linear, 100,000 trends 28 s; a 16 MiB spec, the size limit, would take about 2 minutes);
a 2,000,000-seed TOML spec is refused in 8 s. ``plan 100`` (no shape within --tolerance) exits 2,
as docs/cli.md says. ``export --checkpoint ''`` is taken as the latest checkpoint. ``capacity run
--out`` a user's folder holding a file adds its budgets' sweeps beside the file (nothing of the
user's is touched). Depth: ``fit --mode serve`` of a 100,000-layer llama config takes 11 s, ``size
--recompute op-selective`` 9.6 s (about linear from 25,000 layers); ``fit --gpus 2`` of it, which
does not fit, 23 s (the known, excluded case).

The Hub tests run subprocesses (about 2-4 s each), the report test a fake sweep; the file runs in
about 20 s here with -n 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from adversarial_cli import fake_hub_process
from adversarial_cli import strict_json as _strict
from fuzz_cli import assert_refused, cli, snapshot

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048}
SPEC = ("name: s\ncontrol: fixed-d-model\nseeds: [0]\nbase: {model: {d_model: 32, n_layers: 1, n_heads: 2}, "
        "data: {corpus: shakespeare}}\narms: [{name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}]\n")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home folder holding a model config, a claims file and a sweep spec; HOME points at it."""
    h = tmp_path / "home"
    (h / "m").mkdir(parents=True)
    (h / "m" / "config.json").write_text(json.dumps(LLAMA))
    (h / "ev").mkdir()
    verdict = {"ratio_optimal": {"verdict": "false", "evidence": "EVIDENCE-8TH"}}  # an experiment's verdict
    (h / "ev" / "claims.json").write_text(json.dumps(verdict))
    (h / "s.yaml").write_text(SPEC)
    monkeypatch.setenv("HOME", str(h))
    (tmp_path / "w").mkdir()
    return h


def _hub_process(tmp_path: Path, misbehave: str | None, *argv: str,
                 **extra: str) -> tuple[subprocess.CompletedProcess, list]:
    return fake_hub_process(tmp_path, misbehave, *argv,
                            repos={"org/tiny": {"main": {"config.json": json.dumps(LLAMA).encode()}}}, **extra)


# -- findings -----------------------------------------------------------------------------------

@pytest.mark.parametrize("given", ["~/ev", "~/ev/claims.json"], ids=["folder", "file"])
def test_claims_evidence_expands_a_leading_tilde(home, given):
    r = cli("claims", "--evidence", given, "--json", where=home.parent / "w")
    assert r.code == 0, r.stderr[-2000:]  # was: "no experiment evidence at ~/ev (no claims.json there ...)"
    assert "EVIDENCE-8TH" in json.dumps(_strict(r.stdout))  # the verdict of $HOME/ev/claims.json


def test_claims_evidence_at_the_home_folders_absolute_path_is_read(home):
    r = cli("claims", "--evidence", str(home / "ev"), "--json", where=home.parent / "w")
    assert r.code == 0, r.stderr[-2000:]
    assert "EVIDENCE-8TH" in json.dumps(_strict(r.stdout))


def test_train_on_a_hub_dataset_the_hub_lacks_says_not_found(tmp_path):
    p, requests = _hub_process(tmp_path, None, "train", "--corpus", "hf:org/nodata", "--timeout", "1",
                               "--out", "run", "--set", "train.max_steps=1")
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr[-2000:]
    assert len(requests) == 1, requests  # one request, no retries: this part holds
    assert not (tmp_path / "run").exists()
    assert "not found" in lines[0].lower() and "connection" not in lines[0].lower(), lines[0]


def test_a_transfer_that_stalls_after_its_headers_shows_the_wait(tmp_path):
    from hub_waits import error_line

    p, requests = _hub_process(tmp_path, "stall-body", "table", "org/tiny", "--timeout", "1")
    line = error_line(p)  # this holds: one error line after one GET, exit 2
    assert "stopped sending for 1 s" in line, line
    assert len(requests) == 2, requests  # the HEAD, then the GET whose body stalls
    # a request still unanswered after a tenth of the timeout prints "waiting for HOST ..." (netwait's
    # progress promise); a body stalled for the whole timeout is a wait as long, and gets no such line
    assert any(x.startswith("waiting for ") for x in p.stderr.splitlines()), p.stderr


HUB_SPEC = ("name: s\ncontrol: fixed-d-model\nseeds: [0]\nbase: {model: {d_model: 32, n_layers: 1, n_heads: 2}, "
            "data: {corpus: 'hf:org/data'}, train: {seq_len: 32, batch_size: 4, max_steps: 2, tensorboard: false, "
            "progress: 'off', threads: 1}}\narms: [{name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}]\n")


@pytest.mark.parametrize("command", [["sweep", "s.yaml", "--workers", "1", "--out", "sw"],
                                     ["verify", "--preset", "s.yaml", "--workers", "1", "--out", "v"]],
                         ids=["sweep", "verify"])
def test_a_wait_line_names_only_a_flag_its_command_takes(tmp_path, command):
    from hub_waits import error_line

    (tmp_path / "s.yaml").write_text(HUB_SPEC)
    p, requests = _hub_process(tmp_path, "stall", *command, FFNLAB_TIMEOUT="1")
    line = error_line(p)  # this holds: bounded by FFNLAB_TIMEOUT, one request, one line, nothing left
    assert "did not answer within 1 s" in line and len(requests) == 1, (line, requests)
    assert not {"sw", "v"} & set(os.listdir(tmp_path)), os.listdir(tmp_path)  # no output folder left
    takes_timeout = "--timeout" in cli(command[0], "--help").stdout
    assert takes_timeout or "--timeout" not in p.stderr, (takes_timeout, p.stderr)  # was: advised, not taken


@pytest.mark.parametrize("command", [["sweep", "s.yaml", "--workers", "1", "--out", "sw"],
                                     ["verify", "--preset", "s.yaml", "--workers", "1", "--out", "v"]],
                         ids=["sweep", "verify"])
def test_the_timeout_flag_bounds_the_wait_for_a_specs_hub_corpus(tmp_path, command):
    from hub_waits import error_line

    (tmp_path / "s.yaml").write_text(HUB_SPEC)
    # FFNLAB_TIMEOUT says 30 s: only the flag, applied, makes the wait end after 1 s
    p, requests = _hub_process(tmp_path, "stall", *command, "--timeout", "1", FFNLAB_TIMEOUT="30")
    line = error_line(p)
    assert "did not answer within 1 s" in line and len(requests) == 1, (line, requests)
    assert not {"sw", "v"} & set(os.listdir(tmp_path)), os.listdir(tmp_path)


CAPACITY = ("name: p\nbudgets:\n  - {name: small, model: {d_model: 32}}\nsweep:\n  control: fixed-d-model\n"
            "  seeds: [0]\n  base:\n    model: {n_layers: 1, n_heads: 2}\n    data: {corpus: \"facts:subjects=50,"
            "relations=2,values=4,value_len=1,style=compact,seed=0\", tokenizer: byte}\n    train: {seq_len: 32, "
            "batch_size: 4, max_steps: 2, tensorboard: false, progress: 'off', threads: 1}\n"
            "  arms:\n    - {name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}\n")


def test_capacity_run_never_writes_through_a_link_given_as_out(tmp_path, monkeypatch):
    import ffnlab.experiments.sweep.run as sweep_run

    (tmp_path / "p.yaml").write_text(CAPACITY)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "theirs.txt").write_text("THEIRS")
    (tmp_path / "lnk").symlink_to(tmp_path / "outside", target_is_directory=True)
    given: list[Path] = []
    # each budget's sweep, as sweep --out refuses a link of its own; here only where it would go is noted
    monkeypatch.setattr(sweep_run, "execute", lambda spec, out, **kw: given.append(out) or {})
    r = cli("capacity", "run", "p.yaml", "--out", "lnk", "--workers", "1", "--no-report", where=tmp_path)
    assert r.code in (0, 2) and "Traceback" not in r.stderr, r.stderr[-2000:]
    # was: outside/ gained capacity-preset.json (and, in a real run, the budget's sweep outside/small)
    assert sorted(os.listdir(tmp_path / "outside")) == ["theirs.txt"]
    assert given == [] or all(not str(g).startswith(str(tmp_path / "lnk")) for g in given), given


@pytest.mark.filterwarnings("ignore:No artists with labels")  # the figure of no arms: the stub's, not ffnlab's
def test_capacity_report_never_writes_through_a_link_given_as_out(tmp_path, monkeypatch):
    import ffnlab.experiments.capacity.report as capacity_report
    from ffnlab.experiments.capacity.analysis import CapacityResult

    (tmp_path / "cap" / "small").mkdir(parents=True)
    (tmp_path / "cap" / "small" / "sweep.json").write_text("{}")  # a capacity folder of one budget's sweep
    (tmp_path / "outside").mkdir()
    (tmp_path / "lnk").symlink_to(tmp_path / "outside", target_is_directory=True)
    # the measuring is not the question (it needs trained runs): an analysis of no arms, then the writes
    monkeypatch.setattr(capacity_report, "analyse", lambda root, remeasure=False: CapacityResult(
        root=str(root), corpus="facts", seeds=[0], arms=[], claims={}, reference_bits_per_param=2.0))
    r = cli("capacity", "report", "cap", "--out", "lnk", where=tmp_path)
    assert r.code in (0, 2) and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert os.listdir(tmp_path / "outside") == []  # was: index.html, report.md, capacity.json, ... there


@pytest.mark.parametrize("budget", ["capacity-preset.json", "capacity-report"])
def test_a_budget_named_as_capacitys_own_files_is_refused_before_training(tmp_path, monkeypatch, budget):
    import ffnlab.experiments.sweep.run as sweep_run

    (tmp_path / "p.yaml").write_text(CAPACITY.replace("{name: small,", f"{{name: {budget},"))
    trained: list[Path] = []
    monkeypatch.setattr(sweep_run, "execute", lambda spec, out, **kw: trained.append(out) or out.mkdir(parents=True)
                        or {})  # each budget's sweep makes its folder; nothing is trained here
    r = cli("capacity", "run", "p.yaml", "--out", "o", "--workers", "1", "--no-report", where=tmp_path)
    # was: capacity-preset.json: every budget trained, then "error: Is a directory: o/.ffnlab-tmp-capacity-preset
    # .json-PID-HEX/data"; capacity-report: exit 0, and 'capacity report o' then refuses the budget's own sweep
    assert trained == [], (r.code, r.stderr[-500:])
    assert_refused(r, "budget")


def test_sweep_refuses_a_link_given_as_out(tmp_path):
    (tmp_path / "s.yaml").write_text(SPEC)
    (tmp_path / "outside").mkdir()
    (tmp_path / "lnk").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert_refused(cli("sweep", "s.yaml", "--out", "lnk", "--workers", "1", where=tmp_path), "symbolic link")
    assert os.listdir(tmp_path / "outside") == []


def test_the_perplexity_cache_keeps_only_strict_json(tmp_path, monkeypatch):
    import ffnlab.training.perplexity as P
    from ffnlab.errors import FfnlabError

    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    path = P.cache_path(P.cache_root(), "hf-local_0123456789abcdef", P.cache_key(revision="r", dataset="d"))
    nan = float("nan")  # what a model with NaN weights measures (perplexity --json then refuses it: one line)
    record = P.PerplexityRecord(model="m", revision="r", dataset="d", documents=2, context=8, dtype="float32",
                                device="cpu", word_perplexity=nan, byte_perplexity=nan, bits_per_byte=nan)
    with contextlib.suppress(FfnlabError):  # refused to keep it: also a mend
        P.write_cache(path, record)
    if path.exists():
        _strict(path.read_text())  # was: ValueError NaN: the file held "bits_per_byte": NaN


NAN = float("nan")
NAN_LAYER = {  # what probe measured of layer 0 of an exported run whose weights are all NaN (--units 1 --examples 1
    # --top-tokens 1), as its probe.json held it
    "layer": 0,
    "summary": {"d_ff": 86, "gated": True, "positions": 64, "mean_fire_rate": 0.0, "median_fire_rate": 0.0,
                "dead_units": 86, "always_on_units": 0, "mean_abs_coefficient": NAN, "value_entropy_bits_mean": NAN,
                "value_entropy_bits_max": 8.0, "value_top_mass_mean": NAN, "value_top_k": 1,
                "top_examples_up_negative_share": 0.0, "top_examples_mean_gate_act": NAN, "top_examples_mean_up": NAN},
    "units": [{"unit": 0, "max_coefficient": NAN, "fire_rate": 0.0, "mean_abs_coefficient": NAN,
               "examples": [{"position": 0, "coefficient": NAN, "before": "", "trigger": "R", "after": "OMEO",
                             "gate_act": NAN, "up": NAN}],
               "promotes": [{"token": "\u0000", "id": 0, "logit": NAN}],
               "suppresses": [{"token": "\u0000", "id": 0, "logit": NAN}],
               "value_entropy_bits": NAN, "value_top_mass": NAN}],
    "fire_rate_histogram": [86, 0, 0, 0, 0, 0, 0, 0, 0, 0],
}


def test_probe_writes_only_strict_json(tmp_path):
    from ffnlab.errors import FfnlabError
    from ffnlab.experiments.reporting.probe import write
    from ffnlab.training.probe import ProbeResult

    result = ProbeResult(model="hfnan", kind="LlamaForCausalLM (llama-style MLP)", tokenizer="hf", tokens=64,
                         windows=2, seq_len=32, n_layers=1, layers=[NAN_LAYER], method="m", corpus="c.txt (val)")
    with contextlib.suppress(FfnlabError):  # refused in one line, nothing written: also a mend
        write(result, tmp_path / "p")
    if (tmp_path / "p" / "probe.json").exists():
        _strict((tmp_path / "p" / "probe.json").read_text())  # was: ValueError NaN
    assert not (tmp_path / "p").exists()  # refused before the folder was made


# -- handled right: a sample --------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["table", "~/m/config.json"], ["table", "~/m"], ["audit", "~/m"], ["size", "--from", "~/m"],
    ["fit", "~/m/config.json", "--gpus", "1"]], ids=["table-file", "table-folder", "audit", "size-from", "fit"])
def test_a_model_target_with_a_tilde_is_read_from_home(home, argv):
    r = cli(*argv, "--json", where=home.parent / "w")
    assert r.code == 0, r.stderr[-2000:]
    text = json.dumps(_strict(r.stdout))
    # the config under HOME: width 256, ratio 688/256 (fit names the model by its folder, m)
    assert "256" in text or "2.6875" in text or '"model": "m"' in text, text[:500]


def test_a_sweep_spec_with_a_tilde_is_read_from_home(home):
    r = cli("sweep", "~/s.yaml", "--estimate", where=home.parent / "w")
    assert r.code == 0, r.stderr[-2000:]
    assert "arm a: " in r.stdout
    assert os.listdir(home.parent / "w") == []


@pytest.mark.parametrize("name", ["'a b'", "'a\\tb'", "'\\u202egnp'", "'a\\u200bb'", "'~'", "' a'", "'a '"],
                         ids=["space", "tab", "rtl", "zero-width", "tilde", "leading-space", "trailing-space"])
def test_a_sweep_name_of_odd_characters_is_one_line(tmp_path, name):
    (tmp_path / "sp.yaml").write_text(SPEC.replace("name: s", f"name: {name}"))
    assert_refused(cli("sweep", "sp.yaml", "--estimate", where=tmp_path), "name")
    assert os.listdir(tmp_path) == ["sp.yaml"]


@pytest.mark.parametrize("name", ["'a:b'", "'a*b'", "'~a'", "'a\\\\b'", "\"a\\nb\""],
                         ids=["colon", "star", "tilde", "backslash", "newline"])
def test_an_arm_name_of_odd_characters_is_one_line(tmp_path, name):
    (tmp_path / "sp.yaml").write_text(SPEC.replace("{name: a,", f"{{name: {name},"))
    assert_refused(cli("sweep", "sp.yaml", "--estimate", where=tmp_path), "arm name")
    assert os.listdir(tmp_path) == ["sp.yaml"]


DUPLICATES = {  # file -> (command, text)
    "sp.json": (["sweep", "sp.json", "--estimate"], '{"name": "s", "name": "t"}'),
    "sp.toml": (["sweep", "sp.toml", "--estimate"], 'name = "s"\nname = "t"\n'),
    "ev.json": (["claims", "--evidence", "ev.json"], '{"x": {"verdict": "true", "evidence": "e"}, '
                                                     '"x": {"verdict": "false", "evidence": "f"}}'),
    "ev-inner.json": (["claims", "--evidence", "ev-inner.json", "--json"],
                      '{"x": {"verdict": "true", "evidence": "e", "verdict": "false"}}'),
    "p.json": (["capacity", "run", "p.json", "--workers", "1", "--no-report"], '{"name": "p", "name": "q"}'),
    "t.toml": (["train", "t.toml", "--print-config"], '[model]\nd_model = 32\n[model.ffn]\nkind = "gelu"\n'
                                                      'kind = "relu"\n'),
    "t.yaml": (["train", "t.yaml", "--print-config"], "model:\n  d_model: 32\n  ? d_model\n  : 64\n"),
}


@pytest.mark.parametrize("name", sorted(DUPLICATES))
def test_a_key_given_twice_is_one_line(tmp_path, name):
    argv, text = DUPLICATES[name]
    (tmp_path / name).write_text(text)
    assert_refused(cli(*argv, where=tmp_path), "duplicate key")
    assert os.listdir(tmp_path) == [name]


def _config_with(tmp_path: Path, key: str, value: str, model_type: str | None = None) -> str:
    base = {k: v for k, v in LLAMA.items() if k != key} | ({"model_type": model_type} if model_type else {})
    text = json.dumps(base)[:-1] + f', "{key}": {value}}}'
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text(text)
    return "c"


@pytest.mark.parametrize("argv", [["table"], ["size", "--from"], ["fit", "--gpus", "1"]],
                         ids=["table", "size-from", "fit"])
def test_a_nan_in_a_config_key_ffnlab_does_not_use_keeps_json_strict(tmp_path, argv):
    model = _config_with(tmp_path, "rope_theta", "NaN")
    args = [*argv[:1], model, *argv[1:]] if argv[0] != "size" else [*argv, model]
    r = cli(*args, "--json", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    _strict(r.stdout)


# sliding_window on mistral, which slides every layer by it (llama's 5.25 classes never read it:
# tests/sizing/hf/test_hf_sliding.py)
@pytest.mark.parametrize("key, value, model_type", [("max_position_embeddings", "Infinity", None),
                                                    ("sliding_window", "Infinity", "mistral"),
                                                    ("num_key_value_heads", "-Infinity", None),
                                                    ("tie_word_embeddings", "NaN", None)])
def test_a_non_finite_config_value_ffnlab_uses_is_one_line(tmp_path, key, value, model_type):
    model = _config_with(tmp_path, key, value, model_type)
    assert_refused(cli("size", "--from", model, "--json", where=tmp_path), key)


def test_a_non_finite_window_a_llama_never_reads_is_counted_with_strict_json(tmp_path):
    """transformers' LlamaConfig keeps an unknown sliding_window as an attribute and builds the model,
    which never reads it; ffnlab counts it too, and its JSON stays strict."""
    model = _config_with(tmp_path, "sliding_window", "Infinity")
    r = cli("size", "--from", model, "--json", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    _strict(r.stdout)


NESTED = {  # file -> (command, text, fragment)
    "d.json": (["train", "d.json", "--print-config"], '{"model": ' + '{"a": ' * 990 + "1" + "}" * 990 + "}",
               "nested too deeply"),
    "d.yaml": (["sweep", "d.yaml", "--estimate"], SPEC + "extra: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
               "nested too deeply"),
    "p.json": (["capacity", "run", "p.json", "--no-report", "--workers", "1"],
               '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    "ev.json": (["claims", "--evidence", "ev.json"], '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                "nested too deeply"),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_a_deeply_nested_file_is_one_line(tmp_path, name):
    argv, text, fragment = NESTED[name]
    (tmp_path / name).write_text(text)
    assert_refused(cli(*argv, where=tmp_path), fragment)
    assert os.listdir(tmp_path) == [name]


BOMB = "[" + ",".join(["&a0 [1,1,1,1,1,1,1,1,1,1]"] + [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]"
                                                       for i in range(1, 8)]) + "]"


@pytest.mark.parametrize("setting, fragment", [
    ("train.lr=" + BOMB, "alias"), ("model.ffn=" + BOMB, "alias"),
    ("model.d_model=" + "[" * 3000 + "]" * 3000, "model.d_model"),
    ("model." + ".".join(["a"] * 5000) + "=1", "unknown key"), ("model.d_model=" + "9" * 5000, "model.d_model")],
    ids=["bomb-lr", "bomb-ffn", "deep-value", "long-key", "5000-digits"])
def test_a_hostile_set_is_one_line(tmp_path, setting, fragment):
    assert_refused(cli("train", "--set", setting, "--print-config", where=tmp_path), fragment)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("seeds, scales, fragment", [
    ("[" + ",".join(map(str, range(100))) + "]", 101, "10,100 runs"), ("[0, 0, 0]", 0, "unique"),
    ("[0, 1e300]", 0, "integer"), ("[0, true]", 0, "integer"), ("5", 0, "list"), ("[]", 0, "non-empty")],
    ids=["100-seeds-101-scales", "repeated", "1e300", "bool", "scalar", "empty"])
def test_a_hostile_seed_list_is_one_line(tmp_path, seeds, scales, fragment):
    text = SPEC.replace("seeds: [0]", f"seeds: {seeds}")
    if scales:
        text += "scales: [" + ",".join(f"{{name: c{i}, model: {{d_model: 32}}}}" for i in range(scales)) + "]\n"
    (tmp_path / "s.yaml").write_text(text)
    assert_refused(cli("sweep", "s.yaml", "--estimate", where=tmp_path), fragment)


@pytest.mark.parametrize("ratio", ["1/0", "0/0", "8/3/2", "4/-1", "1_0", "0x4", "4j", "\u0664"])
def test_an_odd_ratio_is_one_line(tmp_path, ratio):
    assert_refused(cli("size", "--d-model", "256", "--ratio", ratio, "--json", where=tmp_path), "ratio")


@pytest.mark.parametrize("target", ["7B7B", "7Bi", "1e-300", "0.000001", "1e400"])
def test_an_odd_plan_target_is_one_line(tmp_path, target):
    assert_refused(cli("plan", target, "--json", where=tmp_path), "")


def test_fit_of_several_models_one_too_big_exits_1_with_strict_json(tmp_path):
    r = cli("fit", "gpt2", "llama-3.1-405b", "--gpus", "1", "--gpu", "H100", "--json", where=tmp_path)
    assert r.code == 1, r.stderr[-2000:]
    rows = _strict(r.stdout)
    assert [row["model"] for row in rows][0] == "gpt2" and len(rows) == 2


@pytest.mark.parametrize("misbehave, argv, said", [
    ("stall", ["table", "org/tiny"], "did not answer within 1 s"),
    (None, ["table", "org/tiny@v9"], "no revision 'v9'"),
    ("close-body", ["size", "--from", "org/tiny"], "broke during a transfer"),
], ids=["table-stall", "table-revision", "size-close-body"])
def test_a_hub_that_misbehaves_is_one_line_after_one_request(tmp_path, misbehave, argv, said):
    from hub_waits import error_line

    p, requests = _hub_process(tmp_path, misbehave, *argv, "--timeout", "1")
    line = error_line(p)
    assert said in line, line
    assert len({(m, path) for m, path, _ in requests}) == len(requests), requests  # nothing asked twice


def _sweep_with_report(root: Path) -> Path:
    from fake_sweeps import fake_sweep

    sw = root / "sw"
    fake_sweep(sw, {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)
    r = cli("report", "sw", where=root)
    assert r.code == 0, r.stderr[-2000:]
    return sw


def test_report_into_a_users_folder_or_through_a_link_out_is_one_line(tmp_path):
    sw = _sweep_with_report(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("MINE")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET")
    before = snapshot(tmp_path)
    assert_refused(cli("report", "sw", "--out", "mine", where=tmp_path), "not an ffnlab report")
    assert snapshot(tmp_path) == before
    plots = sw / "report" / "plots"
    if plots.exists():
        import shutil

        shutil.rmtree(plots)
    plots.symlink_to(tmp_path / "outside", target_is_directory=True)
    assert_refused(cli("report", "sw", where=tmp_path), "through a symlink")
    assert os.listdir(tmp_path / "outside") == ["secret.txt"]


def test_a_refused_train_keeps_the_file_another_process_put_in_its_new_folder(tmp_path, monkeypatch):
    import ffnlab.training.trainer as trainer
    from ffnlab.errors import FfnlabError

    (tmp_path / "c.txt").write_text("".join(f"ROMEO: to be or not, line {i}\n" for i in range(400)))

    def build(cfg, vocab, device):  # another process writes into the run folder, then the run is refused
        (tmp_path / "new" / "run" / "theirs.txt").write_text("THEIRS")
        raise FfnlabError("refused after the folder was made")

    monkeypatch.setattr(trainer, "_build", build)
    r = cli("train", "--corpus", "c.txt", "--out", "new/run", "--set", "model.d_model=32", "--set",
            "model.n_layers=1", "--set", "model.n_heads=2", "--set", "train.seq_len=32", "--set",
            "train.max_steps=1", "--set", "train.progress=off", "--set", "train.threads=1", "--set",
            "train.tensorboard=false", "--set", "data.cache_dir=cache", where=tmp_path)
    assert_refused(r, "refused after the folder was made")
    assert (tmp_path / "new" / "run" / "theirs.txt").read_text() == "THEIRS"
