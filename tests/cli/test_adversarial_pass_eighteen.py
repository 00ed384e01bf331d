r"""An eighteenth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the subcommands the recent passes barely touched (``fit --mode serve`` and ``size
--gpu`` with ``--engine-config`` launch lines, trainer configs given to ``fit`` and ``size``,
``report`` of hand-edited sweep records, ``zoo``, ``table``, ``claims``, ``plan``, ``explain``,
``verify``, ``capacity run``, ``sweep --estimate``, ``--plot``) and at the latest mends
(``files.unique_pairs`` in state.json and metrics.jsonl, ``escape.FORMAT_CHARACTERS``, ``train --out
X --resume`` without a config file, ``--dataset``/``hf:NAME`` name checks), with inputs none of the
seventeen passes threw.

The pass threw 763 inputs, each a call of the CLI in-process unless said (a stand-in trainer, sweep
worker or model loader where only what is refused, printed or started was the question;
HF_HUB_OFFLINE=1, no network), recording exit status, stderr lines, traceback, strict JSON (NaN and
Infinity refused) and the files left (every path's bytes before and after):

* serving launch lines (116; ``fit llama-2-7b --mode serve --gpu H100 --engine-config FILE``, and
  ``size --from llama-2-7b --gpu H100``): --gpu-memory-utilization nan, inf, 1e400, -0.5, 0, 0.0, 5,
  '', 0x1p-1, Arabic-Indic 0.9, 1e-320, twice, as --gpu_memory_utilization=; --max-num-seqs 1e3,
  U+0664, -8, +8, ' 8 ', "8", 8=9, $SEQS, `echo 8`, 2**40, 2**41, 4,000 and 5,000 nines;
  --block-size 0, 3, 2**40; --max-model-len 1, 1k, 100000, 2**40; -tp 0, 3, 16, 1024, 2**40 (fit,
  size, fit --gpus 2); --max-num-batched-tokens 1, 2**40; --enforce-eager=false, --enforce-eager 1;
  an open quote, NUL, ESC and U+2062 and U+202E in the model, a flag and the file's name, an OSC
  title sequence with --format markdown; ``vllm``, ``vllm serve``, ``vllm serve --model``,
  ``uvx``/``sudo``/``VAR=x`` before vllm, ``python -m vllm.entrypoints...``, ``llama-server`` lines
  (10: -m and -c with -np, -hf, -c alone; fit and size, with and without --engine llama.cpp), two
  commands in one file, 2,000 continuation lines, 5,000 unknown flags, a 130,000-letter word, a
  200 KiB file, an empty file, a comment, a BOM, CRLF, a trailing backslash, ``--``; SGLang's
  --mem-fraction-static nan, inf, 2, -1, 0, --context-length 0 and 1e5, --tp 2**40, ``sglang
  serve``; --engine llama.cpp, sglang and vllm@0.19.0 beside a vLLM line; the file a folder, a FIFO,
  missing, named ``l`` and ``.sh``; JSON of each answer.
* trainer configs (136; 66 files, each to ``fit llama-2-7b --gpu H100 --json`` and ``size --d-model
  4096 --n-layers 32 --ratio 4 --json``, and 4 flags compared): TRL, axolotl, torchtune YAML,
  torchtitan TOML, TrainingArguments JSON with a batch of 30 nines, 4,400 nines, -4, 4.5, .nan,
  '\u0664', [4], {a: 1}, a date; keys twice (plain, quoted, ``true``/``1``, a merge key), a complex
  key, ESC in a key and a value, an alias bomb, 100,000-deep lists and 5,000-deep maps, a python
  tag, a list, UTF-16, Latin-1, max_length 1e11, max_length beside max_seq_length, grad accum 1e12,
  lora_r 1e12, lora_dropout '1e-999', '1e40', 1e400, target lists of ESC, a map, a nested list;
  torchtune's _component_ a list and ESC; a dotted key beside its nested path (YAML, TOML both
  ways); TOML nan, inf, a date, 23 digits, a bad table, a BOM, dp 1,000,000 with tp 3,
  selective_ac_option U+0664 and 99999999999; JSON NaN, 1e400, 5,000 digits, null, trailing data,
  bf16 1, a .JSON suffix, a .yml.txt file.
* other subcommands' flags (155): ``zoo --family`` U+2062, gpt+U+200B+2, NUL, a lone surrogate,
  %s%n, ``--format`` html, CSV, ''; ``table`` --seq-len 0, 1e400, 2**40, 2**41, gpt2 twice, GPT2,
  gpt2@main, org/na+U+2062+me, 200 letters, --limit 0, --batch 0, --context -1, --timeout nan, 0,
  1e400, --dtype float8, --device cuda:99, --progress x, ``.``, /dev/null, /proc/self/environ;
  ``claims --evidence`` /dev/zero, /proc/self/mem, '', hf:x, ~nouser/x; ``plan`` 7e9, 7B, 7b,
  1e-400, U+0667e9, nan, inf, 1e30, 100, --tolerance nan, 0, 1e400, --head-dims '', 0, 64,,128, -64,
  1e400, 5,000 items, --aspect-band 160:32, nan:inf, 0:0, 1:2:3, ':', --kv-groups 0, 2**40,
  --d-multiple 0, 2**40, --multiplier nan, 1/0, --ratio 8/0, 0/0, 1e400/1, -8/-3, 8/3/1, --vocab 0;
  ``explain`` d_ff 0, d_model 2**41, d_ff 2**40, --ffn ESC; ``size --from`` nosuch, '', /dev/null,
  ., GPT2, a/b@ESC, 300 letters, --gpu nosuch, h100, H100+U+200B, '', --engine vllm@0.0.0, 400
  nines, llama.cpp, sglang --mem-fraction-static 1 and 1e-300, --gpu-memory-utilization 1e-300,
  --max-num-seqs and --block-size 2**31, --seq-len 2**40, deepseek-v3; ``fit`` --target-tokens-per-s
  1e400, nan, 1e-300, 1e30, --mode SERVE, --engine trl (serve), vllm (train), two models, gpt2
  twice, --max-gpus 0 and 2**40, --gpu-memory 1e-300 and 1e300, --reserve 1e300 and -1, --top 0 and
  2**40, --plot /dev/null, x.txt, sub/x.svg, .; ``verify`` --preset nosuch, '', /etc/passwd,
  --workers 0, --backend x, --timeout -1, --out /dev/null; ``report`` /dev/null, '', .;
  ``capacity run`` nosuch, '', /dev/null, --workers 0, --backend x, --out /dev/null.
* ``train --out run --resume`` without a config file (24, the trainer a stand-in, 3 as processes):
  run a file; config.yaml empty, ``{}``, a comment, ``---``, null, ``~``, blank lines, ``model: {}``,
  a folder, a list, ``train`` twice, a FIFO, a dangling link, a link to a file outside, with a BOM;
  only config.yml, only CONFIG.YAML, only checkpoints/; run a link to a folder; ``--set
  train.max_steps=1``; as processes an empty config.yaml with and without ``--set``.
* dataset and corpus names (49; the model loader a stand-in): ``perplexity e1 --dataset`` Parquet,
  JSON, hf://datasets/Text, org/name/extra, org//name, /text, text\x, 97 letters/b, org/name@,
  org/name@ESC, 'org/na me', org/name+LF, org/name+U+2062, .hidden/x, org/.x, org/x., org/-x,
  org/x--y, org/x..y, datasets/text, hf:text, hf://text, s3://, https://, file:///etc/passwd, gs://,
  org/name:cfg, C:\x.txt, buckets, Buckets/x/y, org/buckets; ``train --corpus`` hf:Parquet,
  hf:org/name/extra, hf:org//name, hf:org/name@, hf:org/name@ESC, hf:org/na me, hf:s3://b/x,
  hf:https://x/y, hf:file:///etc/passwd, hf:org/name:ESC, hf:org/name::, hf:org/x..y, 97 letters,
  hf:datasets/text, hf:HF:text, HF:text, hf:org/buckets, hf:text+U+0301.
* sweep records given to ``report`` (122; a finished three-seed sweep, tests/helpers/fake_sweeps.py):
  a run's summary.json with status or final_val_loss twice, NaN, 1e400, "x", a list, empty; its
  metrics.jsonl with val_loss or tokens twice, NaN, -1e300, "4", step true, 5,000 digits, a line
  100,000 deep, tokens going back, a garbage, a cut or a NUL last line; an arm named ESC, <script>,
  =HYPERLINK(...), a|b`c[d](e), with U+2062, with LF; spec description and name of HTML and ESC;
  spec fields of other types (60: margin, tolerance, maturity, seeds, comparisons, claims, control,
  reference, name, description, base, hypotheses, target_loss, arms); a run listed twice (3 ways);
  a run named ../../outside and /etc; vocab_size "x"; runs/ and a run linked outside; the report
  folder a link outside, a file, holding the user's files, its report.md, index.html, CSVs and
  JSONs links to files outside, plots/ a link or a file, its mark gone or a folder, a user's file
  in report/, plots/ and runs/ of a first report, report.md edited; ``report --out`` under a linked
  folder; ``claims --evidence`` of a report whose spec text is ESC and BEL.
* capacity presets (26; ``capacity run p.yaml``, workers a counter): exposures nan, 0, 10**30, "300",
  1e400; budgets [], a budget twice, named ../../x, ESC, with U+2062, None, d_model 10**12, model a
  list; name ../../x, None; sweep None; corpus shakespeare, facts with 10**9 subjects, nan, a key
  twice, ESC; an unknown key; seeds [0, 0]; a key twice in the text, an alias bomb, JSON NaN.
* sweep specs (55; ``sweep s.json --estimate``): margin, tolerance, maturity, comparisons, claims,
  hypotheses, target_loss, decide_at, require_mature, d_step, workers, threads_per_worker and
  description of other types and ranges (51); margin "0.01", tolerance "0.05", maturity "20",
  workers 0 swept (workers a counter) and the saved sweep.json read back (4).
* ``--plot`` (30; ``fit gpt2 --gpu H100`` and ``size``): the file a link to a file outside, a
  dangling link, a hard link to a file outside, a FIFO, the user's file, a folder, each with and
  without --overwrite; under a folder that is a link outside; x.SVG, -x.svg, x.svg.png; ``train
  --out`` and ``verify --out`` under a linked folder.
* model paths (50): a config.json in a folder named with ESC, U+2062, U+202E, BEL and LF, given to
  ``fit`` (train, serve, markdown, two models, --seq-len 1000000), ``size --from`` (plain, --gpu
  markdown), ``table`` (plain, csv) and ``audit``.

Root (``id -u`` 0) ran this pass.

Findings (10 root causes; each a strict xfail below until mended):

J1. A launch line's ``--gpu-memory-utilization 0`` (or ``=0.0``) is priced as the default 0.9 and said
   to be used: ``fit llama-2-7b --mode serve --gpu H100 --engine-config launch.sh`` with ``vllm serve
   m --gpu-memory-utilization 0`` exits 0, prints "--engine-config launch.sh: vllm; used
   --gpu-memory-utilization 0" and "total CUDA reports: 79.22 GiB x gpu_memory_utilization 0.9 =
   71.30 GiB requested", where the flag ``--gpu-memory-utilization 0`` is refused ("must be > 0");
   SGLang's ``--mem-fraction-static 0`` is refused as if none were given ("SGLang picks its default
   --mem-fraction-static by a heuristic: give --mem-fraction-static"). ``cli/serving_engine.py``
   ``EngineFlags.resolve`` line 81 keeps the line's knobs ``if v not in (None, False)``, and ``0.0 ==
   False``; the range check that refuses nan, 5 and -0.5 from the same line never sees the 0.
J2. A launch line's words and its file's name are printed as they are in ``fit --mode serve``'s
   text and Markdown output: ESC[2J (clears the screen), U+2062, U+202E, an OSC title sequence and BEL
   reach the terminal in "--engine-config launch.sh: vllm; used nothing; ignored \x1b[2Jm ...", where
   ``size --gpu``'s table shows the same line escaped. ``cli/serving_engine.py`` lines 82-83 build the
   line from the raw words and ``path.name``; ``cli/fit.py`` ``_print_lines`` (lines 173-186) prints
   it without ``escape.terminal``.
J3. A launch line's tensor-parallel size is priced unchecked: ``-tp 3`` for llama-2-7b (32 heads) gives
   "tp 3 ... model weights: 4.18 GiB ... KV cache: 383,616 tokens" (fit and size, exit 0), and ``-tp
   1099511627776`` "model weights: 0.00 GiB ... KV cache: 4,494,128 tokens", where ``size --from
   llama-2-7b --gpu H100 --tp 3`` is refused "--tp 3 must divide n_heads=32" (vLLM refuses such a
   launch too). ``sizing/serving_engines.py`` ``read_engine_command`` (lines 459-462) bounds it to [1,
   2**40] only and ``engine_estimate`` (line 297) takes ``knobs.tp or tp`` as it is.
J4. A trainer config that gives one setting as a dotted key and as its nested path is read as one of
   them without a word of the other: a torchtune YAML with ``tokenizer: {max_seq_len: 1024}`` and
   ``tokenizer.max_seq_len: 8192`` is priced at seq_len 8192 ("used: tokenizer.max_seq_len = 8192"),
   where torchtune (OmegaConf keeps "a.b" a key of its own) trains at 1024; a torchtitan TOML with
   ``"training.seq_len" = 8192`` before ``[training] seq_len = 1024`` reads 1024 and says nothing of
   8192; ``[training] seq_len = 2048`` then a ``["training.seq_len"]`` table loses 2048 to "value {}
   is not one ffnlab models". The same key twice inside one mapping is refused ("duplicate key").
   ``sizing/memory/engine_config.py`` ``_leaves`` (lines 117-127) writes both into one dict entry.
J5. ``train --out run --resume`` where run/config.yaml is empty (or only a comment, ``---``, ``null``,
   ``~``, blank lines) starts the default config: the stand-in trainer got max_steps 300, d_model 128,
   and as a process ``HF_HUB_OFFLINE=1 ffnlab train --out run --resume`` printed "[run] 821.4K params
   ...; 300 steps x 2,048 tokens" and trained (stopped at step 200 by ``timeout 40``), replacing the
   empty config.yaml by the defaults; the mend of H3 says "a run to continue, never the defaults", and
   ffnlab writes config.yaml whole. ``cli/training.py`` ``_run_config`` (lines 125-129) asks only
   that config.yaml is a file; ``runconfig.read_file`` (line 244, ``empty_ok=True``) reads a document
   with no mapping as {}.
J6. ``report`` of a sweep whose sweep.json gives a spec field of another type ends in a traceback:
   margin "x", "0.01", [1] or {} (TypeError, ``analysis/analyse.py`` line 210 ``margin_of``),
   tolerance "x" or [1] (``reporting/model.py`` line 349), maturity "x" or [1] (analyse.py line 558),
   seeds 5, comparisons "x" or [1] (AttributeError, analyse.py line 202), claims "x", [1],
   ["nosuch"], [None] or {"a": 1} (KeyError, ``sweep/spec.py`` line 403), hypotheses "x", [1], {"a":
   1} or [{"name": "x"}] (spec.py line 259); ``sweep --estimate`` refuses each of these in one line.
   ``experiments/sweep/record.py`` ``load_sweep`` (lines 102-149) checks spec's name, reference,
   control, base and scales only, and ``sweep/spec.py`` ``saved_spec`` (line 236) reads the rest "not
   checked again".
J7. ``report`` of a sweep whose sweep.json lists one run twice counts it twice: exit 0, results.json
   gives gelu-r4 "n_seeds": 4 for the spec's seeds [0, 1, 2] and three runs in sw/runs, the mean and
   interval drawn from four losses (the difference to the reference moves from 0.3500 to 0.3498
   nats). ``experiments/sweep/record.py`` ``load_sweep`` (line 126) checks each entry, never that a
   run is listed once.
J8. A launch line's number out of range is said to be no number: ``--block-size 0`` says "error:
   --engine-config: --block-size needs a number, got '0'", likewise ``-tp 0``, ``--max-num-seqs -8``,
   ``--max-num-seqs 2199023255552`` and SGLang's ``--context-length 0``.
   ``sizing/serving_engines.py`` ``read_engine_command`` (lines 458-464): the range check's
   FfnlabError is a ValueError (``errors.py`` line 13), caught by the ``except ValueError`` meant for
   ``int()``, so its own line "must be in [1, 2**40]" is never shown.
J9. A line break in a model's path is printed as it is in one-line texts: ``size --from
   $'m\nerror: disk full/config.json'`` prints "ffnlab size: m" and then a line "error: disk full";
   likewise fit's title (train and serve) and audit's verdict line, while ESC, BEL, U+2062 and
   U+202E in the same place are escapes. ``render.py`` ``print_table`` (line 266) and ``note``
   (lines 364-371) show titles and notes through ``table_cell``/``escape.terminal`` (``escape.py``
   lines 81-85), which keeps line breaks; ``escape.one_line`` ("so no line can be faked") is not used.
J10. ``--engine-config`` refuses a ``llama-server ...`` line, which ``fit --help`` and ``size --help``
   say it reads ("Any other file: a 'vllm serve ...', 'python -m sglang.launch_server ...' or
   'llama-server ...' line for the serving engine"): ``size --from llama-2-7b --gpu H100 --engine
   llama.cpp --engine-config l.sh`` with ``llama-server -m x.gguf -c 8192 -np 4`` says "error:
   --engine-config: expected a 'vllm serve ...' or 'python -m sglang.launch_server ...' command
   line", with or without --engine llama.cpp, from fit as from size (docs/serving.md names vLLM's and
   SGLang's lines only). ``cli/app.py`` ``ENGINE_CONFIG_OPTION`` (lines 161-168) and
   ``memory_flags.split_engine_config``'s docstring (line 345) promise it; ``sizing/serving_engines.py``
   ``read_engine_command`` (lines 418-428) has no llama-server branch.

Per class, inputs tried / failures: serving launch lines 116 / 30 (J1: 3; J2: 3; J3: 9, -tp 3, 1024
and 2**40 in fit, size and fit --gpus 2; J8: 5; J10: 10); trainer configs 136 / 6 (J4: 3 files x fit and
size); other subcommands' flags 155 / 0; --resume without a config file 24 / 7 (J5); dataset and
corpus names 49 / 0; sweep records 122 / 24 (J6: 21; J7: 3); capacity presets 26 / 0; sweep specs
55 / 0; --plot 30 / 0; model paths 50 / 5 (J9: size, fit, fit serve, fit --seq-len 1000000, audit).

Noted, not broken promises: a launch line's value beside the same flag on the command line is said
"used" though the flag's value is priced (the flag wins, as documented; the trainer config's note
says so, the launch line's does not); ``--enforce-eager=false`` reads as --enforce-eager;
``--max-num-seqs`` reads U+0664 as 4 (as vLLM's int() would); two commands in one file are read as
one; a trainer config given to ``fit --mode serve`` sets --batch (there the concurrent sequences)
from per_device_train_batch_size ("used: per_device_train_batch_size = 4 (batch 4)");
``corpus facts:subjects=10,subjects=20`` takes one of the two without a word (as ``--set`` twice);
``capacity run`` refusals found after the corpus is prepared (exposures 10**30, seeds [0, 0]) leave
that corpus in $FFNLAB_CACHE (ffnlab's own cache); ``hf:file:///etc/passwd``, ``hf:s3://b/x`` and
``hf:https://x/y`` pass the name check (offline: one line, "not in the HF cache"; the Hub's answer
online not tried); ``plan 100`` (no shape within --tolerance) is
refused, exit 2, as --tolerance's help says ("Refuse when no shape is this close"); ``claims
--evidence /proc/self/mem`` says "error: [Errno 5] Input/output error" without the path; ``table
gpt2 --dtype float8`` and ``--device cuda:99`` exit 0 (used only with --measure); a sweep record's
spec margin -1 and target_loss "x" are reported (exit 0) where ``sweep`` refuses them; ``report``
reads a run's metrics.jsonl whose last line is cut, garbage, NUL or 100,000 deep (the reader's
tolerance of a last line a kill cut) and tokens going back; ``--plot`` under a folder that is a link
writes through it (``files.refuse_link``: "a link higher up the path is the user's own layout and
is followed"), as ``train --out`` and ``report --out`` do; ``train --out run --resume`` with
config.yaml ``{}`` or ``model: {}`` starts the defaults (a config that says so).

The pass changed nothing in src/.

Mended (each finding's tests now pass): J1 0 and 0.0 kept by identity (``cli/serving_engine._given``), the
share's range in one home (``serving_engines.check_share``) for flag and line; J2 the lines under fit's
tables through ``escape.one_line`` / ``escape.markdown`` (``cli/fit._print_lines``); J3 the line's
tensor-parallel size through --tp's rule (``parallel.check_tp``); J4 ``engine_config._leaves`` refuses a
leaf given twice; J5 --resume refuses a config.yaml that holds no document; J6 a saved sweep spec checked
by the spec file's rules (``sweep/spec.saved_spec``, ``validation.check_fields``); J7 ``load_sweep``
refuses a run, or an arm and seed, listed twice; J8 only ``int()``'s failure read as "needs a number";
J9 titles and notes shown with breaks as escapes (``render.table_cell(one_line=True)``); J10 the help names the launch
lines the reader reads (``engine_spec.LAUNCH_LINES``). Also from its notes: ``files.read_text`` reads no
further than its limit and names a file whose read fails (``claims --evidence /proc/self/mem``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from adversarial_cli import FACTS_RUN_YAML, strict_json, tiny_sweep_spec, write_corpus
from fake_sweeps import fake_sweep
from fuzz_cli import assert_refused, cli, snapshot
from paths import ROOT

SERVE = ["fit", "llama-2-7b", "--mode", "serve", "--gpu", "H100"]
SIZE_SERVE = ["size", "--from", "llama-2-7b", "--gpu", "H100"]
SIZE = ["size", "--d-model", "4096", "--n-layers", "32", "--ratio", "4", "--json"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _with_file(tmp_path: Path, name: str, text: str | bytes, *argv: str) -> object:
    """``ffnlab ARGV --engine-config NAME`` in ``tmp_path`` with NAME holding ``text``; nothing
    else under ``tmp_path`` may change."""
    path = tmp_path / name
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    before = snapshot(tmp_path)
    r = cli(*argv, "--engine-config", name, where=tmp_path)
    assert snapshot(tmp_path) == before
    return r


def _serve(tmp_path: Path, line: str, *argv: str) -> object:
    return _with_file(tmp_path, "launch.sh", line, *(argv or SERVE))


# -- J1: a launch line's share of 0 priced as the default 0.9 ---------------------------------------------------


@pytest.mark.parametrize(
    "line, flag",
    [
        ("vllm serve m --gpu-memory-utilization 0", "--gpu-memory-utilization"),
        ("vllm serve m --gpu-memory-utilization=0.0", "--gpu-memory-utilization"),
        ("python -m sglang.launch_server --model-path m --mem-fraction-static 0", "--mem-fraction-static"),
    ],
    ids=["vllm-0", "vllm-0.0", "sglang-0"],
)
def test_a_launch_lines_share_of_zero_is_refused_as_the_flag_is(tmp_path, line, flag):
    # oracle: the same value as a flag is refused, "must be > 0"; today the vLLM line answers exit 0,
    # saying "used --gpu-memory-utilization 0" and pricing "x gpu_memory_utilization 0.9", and the
    # SGLang line is refused as if no share were given ("give --mem-fraction-static")
    assert_refused(cli(*SERVE, flag, "0", where=tmp_path), "must be > 0")
    said = assert_refused(_serve(tmp_path, line), flag)
    assert "must be > 0" in said or "must be in (0, 1]" in said, said


# -- J2: a launch line's words printed as they are ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, line, fmt",
    [
        ("launch.sh", "vllm serve \x1b[2Jm --x\u2062y 4", "table"),
        ("\x1b[2Jl\u2062.sh", "vllm serve m", "table"),
        ("launch.sh", "vllm serve m --\x1b]0;title\x07x 4", "markdown"),
    ],
    ids=["words", "file-name", "osc-markdown"],
)
def test_fit_serve_shows_a_launch_lines_words_with_escapes(tmp_path, name, line, fmt):
    r = _with_file(tmp_path, name, line, *SERVE, "--format", fmt)
    assert r.code == 0, r.stderr[-500:]
    shown = [x for x in r.stdout.splitlines() if "--engine-config" in x]
    assert shown and not any(c in r.stdout for c in "\x1b\x07\u2062"), shown


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_size_shows_the_same_words_with_escapes(tmp_path, fmt):
    # kept: the other side of J2: size --gpu's table escapes the launch line's words
    r = _with_file(tmp_path, "launch.sh", "vllm serve \x1b[2Jm --x\u2062y 4", *SIZE_SERVE, "--format", fmt)
    assert r.code == 0 and not any(c in r.stdout + r.stderr for c in "\x1b\u2062"), r.stdout[-500:]


# -- J3: a launch line's tensor parallel size not checked against the model -----------------------------------


@pytest.mark.parametrize("tp", ["3", str(2**40)])
@pytest.mark.parametrize("argv", [SERVE, SIZE_SERVE], ids=["fit", "size"])
def test_a_launch_lines_tensor_parallel_size_is_checked_as_tp_is(tmp_path, argv, tp):
    # oracle: size --from llama-2-7b --gpu H100 --tp 3 is refused, "--tp 3 must divide n_heads=32"
    # (vLLM refuses such a launch); today the launch line's -tp 3 is priced, "tp 3 ... KV cache:
    # 383,616 tokens", and -tp 2**40 "model weights: 0.00 GiB ... KV cache: 4,494,128 tokens"
    assert_refused(cli(*SIZE_SERVE, "--tp", "3", where=tmp_path), "must divide n_heads=32")
    assert_refused(_serve(tmp_path, f"vllm serve m -tp {tp}", *argv), tp)


# -- J4: a setting given twice, as a dotted key and nested ------------------------------------------------------


@pytest.mark.parametrize(
    "name, text",
    [
        ("c.yaml", "tokenizer:\n  _component_: x\n  max_seq_len: 1024\ntokenizer.max_seq_len: 8192\n"),
        ("c.toml", '"training.seq_len" = 8192\n[training]\nseq_len = 1024\n'),
        ("c.toml", '[training]\nseq_len = 2048\n["training.seq_len"]\n'),
    ],
    ids=["torchtune-yaml", "torchtitan-toml", "toml-table-over-value"],
)
def test_a_setting_given_as_a_dotted_key_and_nested_is_refused(tmp_path, name, text):
    # oracle: the same key twice in one mapping is refused, "duplicate key"; torchtune and torchtitan
    # read only the nested one (OmegaConf and tomllib keep "a.b" a key of its own); today size
    # prices seq_len 8192 for the first file with "used: tokenizer.max_seq_len = 8192" and nothing
    # said of the 1024, and the third loses 2048 to "value {} is not one ffnlab models"
    twice = "tokenizer:\n  _component_: x\n  max_seq_len: 1024\n  max_seq_len: 8192\n"
    assert_refused(_with_file(tmp_path, "twice.yaml", twice, *SIZE), "duplicate key")
    assert_refused(_with_file(tmp_path, name, text, *SIZE), "seq_len")


# -- J5: --resume of a run whose config.yaml holds nothing -------------------------------------------------------


def _resume_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, list]:
    """``train --out run --resume`` in ``tmp_path``, the trainer a stand-in recording what it was
    given (max_steps, d_model) and training nothing."""
    from ffnlab.training import trainer

    started: list = []
    monkeypatch.setattr(
        trainer, "train", lambda cfg, out_dir, *, resume=False: started.append((cfg.train.max_steps, cfg.model.d_model))
    )
    try:
        r: object = cli("train", "--out", "run", "--resume", where=tmp_path)
    except Exception as e:  # noqa: BLE001 - the traceback a user would see
        r = e
    return r, started


@pytest.mark.parametrize("text", ["", "# saved by ffnlab\n", "null\n"], ids=["empty", "comment", "null"])
def test_resume_of_a_run_whose_config_holds_nothing_is_refused(tmp_path, monkeypatch, text):
    # oracle: the mend of H3, "a run to continue, never the defaults"; ffnlab writes config.yaml as
    # the whole config (yaml.safe_dump(cfg.to_dict())), never empty. Today the default config starts
    # (300 steps, d_model 128): run as a process, "[run] 821.4K params ... 300 steps", and the empty
    # config.yaml is replaced by the defaults
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text(text)
    r, started = _resume_of(tmp_path, monkeypatch)
    assert not started, started  # today: [(300, 128)]
    assert not isinstance(r, Exception), repr(r)
    assert_refused(r, "config.yaml")


def _plant(tmp_path: Path, what: str) -> None:
    run = tmp_path / "run"
    if what == "a-file":
        run.write_text("x")
        return
    if what == "run-link-out":
        (tmp_path / "real").mkdir()
        (tmp_path / "real" / "config.yaml").write_text(FACTS_RUN_YAML)
        run.symlink_to(tmp_path / "real")
        return
    run.mkdir()
    cfg = run / "config.yaml"
    if what == "config-dir":
        cfg.mkdir()
    elif what == "config.yml-only":
        (run / "config.yml").write_text(FACTS_RUN_YAML)
    elif what == "CONFIG.YAML-only":
        (run / "CONFIG.YAML").write_text(FACTS_RUN_YAML)
    elif what == "dangling-link":
        cfg.symlink_to(tmp_path / "nowhere.yaml")
    elif what == "fifo":
        os.mkfifo(cfg)
    elif what == "checkpoints-only":
        (run / "checkpoints" / "step-0000002").mkdir(parents=True)
    elif what == "a-list":
        cfg.write_text("- 1\n")
    elif what == "train-twice":
        cfg.write_text(FACTS_RUN_YAML + "train: {max_steps: 9}\n")
    elif what == "link-out":
        (tmp_path / "outside.yaml").write_text(FACTS_RUN_YAML)
        cfg.symlink_to(tmp_path / "outside.yaml")
    elif what == "bom":
        cfg.write_text("\ufeff" + FACTS_RUN_YAML)


@pytest.mark.parametrize(
    "what, said",
    [
        ("a-file", "holds no run to continue"),
        ("config-dir", "holds no run to continue"),
        ("config.yml-only", "holds no run to continue"),
        ("CONFIG.YAML-only", "holds no run to continue"),
        ("dangling-link", "holds no run to continue"),
        ("fifo", "holds no run to continue"),
        ("checkpoints-only", "holds no run to continue"),
        ("a-list", "must be a mapping"),
        ("train-twice", "duplicate key 'train'"),
        ("run-link-out", "is a symbolic link"),
        ("link-out", None),
        ("bom", None),
    ],
)
def test_resume_without_a_config_file_starts_only_the_saved_run(tmp_path, monkeypatch, what, said):
    # kept: H3's mend, new folders: a saved config read (through a link it is only read), else one line
    write_corpus(tmp_path)
    _plant(tmp_path, what)
    before = snapshot(tmp_path)
    r, started = _resume_of(tmp_path, monkeypatch)
    assert not isinstance(r, Exception), repr(r)
    if said is None:
        assert started == [(4, 32)], (started, r.stderr[-500:])
    else:
        assert not started, started
        assert_refused(r, said)
    assert snapshot(tmp_path) == before


# -- J6, J7: a sweep record's spec and runs as report reads them -------------------------------------------------

ARMS = {"gelu-r4": (0.0, 1.0), "swiglu-r2.67": (-0.05, 1.1)}


def _report_of(tmp_path: Path, edit: object) -> tuple[object, bool]:
    """``report sw`` of a finished three-seed sweep (tests/helpers/fake_sweeps.py) whose sweep.json
    ``edit`` changed: its result (or what escaped) and whether anything under ``tmp_path`` changed."""
    fake_sweep(tmp_path / "sw", ARMS, 3, 0.01)
    path = tmp_path / "sw" / "sweep.json"
    record = json.loads(path.read_text())
    edit(record)  # type: ignore[operator]
    path.write_text(json.dumps(record))
    before = snapshot(tmp_path)
    try:
        r: object = cli("report", "sw", where=tmp_path)
    except Exception as e:  # noqa: BLE001 - the traceback a user would see
        r = e
    return r, snapshot(tmp_path) != before


SPEC_TYPES = [
    ("margin", "x"),
    ("margin", "0.01"),
    ("margin", {}),
    ("tolerance", "x"),
    ("tolerance", [1]),
    ("maturity", "x"),
    ("maturity", [1]),
    ("seeds", 5),
    ("comparisons", "x"),
    ("comparisons", [1]),
    ("claims", "x"),
    ("claims", ["nosuch"]),
    ("claims", [None]),
    ("hypotheses", "x"),
    ("hypotheses", [1]),
    ("hypotheses", [{"name": "x"}]),
    # added with J6's mend: more of the docstring's inputs, and the rules across fields a spec file meets
    ("margin", [1]),
    ("claims", {"a": 1}),
    ("hypotheses", {"a": 1}),
    ("seeds", [0, 0]),
    ("trends", "x"),
    ("comparisons", {"ratio_optimal": ["nosuch"]}),
    ("comparisons", {"glu_vs_plain": ["gelu-r4"]}),
]


@pytest.mark.parametrize("key, value", SPEC_TYPES, ids=[f"{k}-{json.dumps(v)}" for k, v in SPEC_TYPES])
def test_report_of_a_record_whose_spec_field_has_another_type_is_one_line(tmp_path, key, value):
    # oracle: the promise (no traceback) and the spec's own checks, which refuse each of these in one
    # line ("sweep spec: margin must be a finite number, got 'x'"; test below); today a TypeError,
    # ValueError, AttributeError or KeyError escapes (margin "x": "can't multiply sequence by
    # non-int of type 'float'")
    r, changed = _report_of(tmp_path, lambda rec: rec["spec"].__setitem__(key, value))
    assert not isinstance(r, Exception), repr(r)
    assert_refused(r, key)
    assert not changed


def test_report_of_a_record_listing_a_run_twice_is_refused(tmp_path):
    # oracle: the spec's seeds [0, 1, 2] and the three gelu-r4 runs in sw/runs; today exit 0 and
    # results.json says gelu-r4 "n_seeds": 4, its mean and interval drawn from four losses
    r, changed = _report_of(tmp_path, lambda rec: rec["runs"].append(dict(rec["runs"][0])))
    assert not isinstance(r, Exception), repr(r)
    assert_refused(r, "gelu-r4-s0")
    assert not changed


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda rec: rec["runs"].append({**rec["runs"][0], "run": "other"}), "seed 0"),
        (lambda rec: rec["runs"].append({**rec["runs"][0], "run": "GELU-R4-S0", "seed": 9}), "differ only by case"),
    ],
    ids=["arm-seed-twice", "run-case-twin"],
)
def test_report_of_a_record_listing_an_arms_seed_twice_is_refused(tmp_path, edit, said):
    # added with J7's mend: another run name for gelu-r4's seed 0 would count that seed twice as well, and
    # runs A-s0 and a-s0 share one folder on macOS and Windows; oracle: the spec's seeds, one run each
    r, changed = _report_of(tmp_path, edit)
    assert not isinstance(r, Exception), repr(r)
    assert "sweep.json" in assert_refused(r, said)
    assert not changed


def _capacity_of(tmp_path: Path, edit: object) -> tuple[object, bool]:
    """``capacity report cap --out rep`` of the kept capacity sweeps (docs/results/capacity: two budgets,
    each run's summary and measure kept) with ``edit`` applied to each budget's sweep.json."""
    kept = ROOT / "docs" / "results" / "capacity"
    for budget in ("small", "large"):
        shutil.copytree(kept / budget, tmp_path / "cap" / budget)
        path = tmp_path / "cap" / budget / "sweep.json"
        record = json.loads(path.read_text())
        edit(record)  # type: ignore[operator]
        path.write_text(json.dumps(record))
    before = snapshot(tmp_path / "cap")
    try:
        r: object = cli("capacity", "report", "cap", "--out", "rep", where=tmp_path)
    except Exception as e:  # noqa: BLE001 - the traceback a user would see
        r = e
    return r, snapshot(tmp_path / "cap") != before


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda rec: rec["spec"].__setitem__("margin", "x"), "margin"),
        (lambda rec: rec["spec"].__setitem__("claims", ["nosuch"]), "claims"),
        (lambda rec: rec["spec"].__setitem__("seeds", 5), "seeds"),
        (lambda rec: rec["runs"].append(dict(rec["runs"][0])), "gelu-r1-s0"),
    ],
    ids=["margin-x", "claims-nosuch", "seeds-5", "run-twice"],
)
def test_capacity_report_of_an_edited_record_is_one_line(tmp_path, edit, said):
    # added with J6's and J7's mends: capacity report reads each budget through load_sweep; oracle: the
    # same records unedited report (exit 0, below)
    r, changed = _capacity_of(tmp_path, edit)
    assert not isinstance(r, Exception), repr(r)
    assert "sweep.json" in assert_refused(r, said)
    assert not changed and not (tmp_path / "rep").exists()


def test_capacity_report_of_a_record_without_seeds_names_its_runs_seeds(tmp_path):
    # oracle: the kept report's capacity.json (seeds [0, 1, 2], each arm's bits per parameter) from the
    # same records; a record without spec.seeds ended in KeyError: 'seeds' (capacity/analysis.py)
    kept = json.loads((ROOT / "docs" / "results" / "capacity" / "capacity.json").read_text())
    for edit in (lambda rec: None, lambda rec: rec["spec"].pop("seeds")):
        r, _ = _capacity_of(tmp_path, edit)
        assert not isinstance(r, Exception) and r.code == 0, getattr(r, "stderr", r)
        again = json.loads((tmp_path / "rep" / "capacity.json").read_text())
        assert again["seeds"] == kept["seeds"] == [0, 1, 2]
        assert [a["bits_per_param"] for a in again["arms"]] == [a["bits_per_param"] for a in kept["arms"]]
        shutil.rmtree(tmp_path / "cap")
        shutil.rmtree(tmp_path / "rep")


@pytest.mark.parametrize(
    "edit",
    [
        lambda rec: rec["spec"].__setitem__("margin", "x"),
        lambda rec: rec["spec"].__setitem__("claims", ["nosuch"]),
        lambda rec: rec["runs"].append(dict(rec["runs"][0])),
    ],
    ids=["margin-x", "claims-nosuch", "run-twice"],
)
def test_verify_over_an_edited_record_is_one_line_and_starts_nothing(tmp_path, monkeypatch, edit):
    # added with J6's and J7's mends: verify resumes its sweep folder, whose edited record is another
    # sweep to it; oracle: the stand-in workers (none started) and every file of v/ as it was
    from ffnlab.experiments.sweep import run as sweep_run

    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    started: list = []
    monkeypatch.setattr(sweep_run.Children, "run", lambda self, cmd, log, threads: started.append(cmd) or 0)
    monkeypatch.setattr(sweep_run, "cpu_peak", lambda threads: 1e11)
    monkeypatch.setattr(sweep_run, "POLL_S", 0.01)  # the stand-in workers finish at once (and write nothing)
    write_corpus(tmp_path)
    (tmp_path / "s.json").write_text(json.dumps(tiny_sweep_spec(4, 2)))
    argv = ("verify", "--preset", "s.json", "--workers", "1", "--out", "v")
    assert_refused(cli(*argv, where=tmp_path), "have not finished")  # the stand-ins trained nothing
    path = tmp_path / "v" / "sweep" / "sweep.json"
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    before, n = snapshot(tmp_path / "v"), len(started)
    assert_refused(cli(*argv, where=tmp_path), "holds a different sweep")
    assert len(started) == n and snapshot(tmp_path / "v") == before


@pytest.mark.parametrize(
    "key, value",
    [kv for kv in SPEC_TYPES if kv != ("margin", "0.01")],
    ids=[f"{k}-{json.dumps(v)}" for k, v in SPEC_TYPES if (k, v) != ("margin", "0.01")],
)
def test_the_spec_checks_refuse_the_same_values(tmp_path, key, value):
    # kept: J6's oracle: sweep --estimate of a spec holding the value, one line
    write_corpus(tmp_path)
    spec = tiny_sweep_spec(4, 2)
    spec[key] = value
    (tmp_path / "s.json").write_text(json.dumps(spec))
    assert_refused(cli("sweep", "s.json", "--estimate", where=tmp_path), key)


def _set_arm(name: str) -> object:
    return lambda rec: [r.__setitem__("arm", name) for r in rec["runs"] if r["arm"] == "gelu-r4"]


def _edit_run_file(tmp_path: Path, rel: str, old: str, new: str) -> None:
    path = tmp_path / "sw" / "runs" / "gelu-r4-s0" / rel
    text = path.read_text()
    assert old in text, (old, text[:200])
    path.write_text(text.replace(old, new, 1))


RUN_FILES = [
    ("summary.json", '"status": "finished"', '"status": "finished", "status": "finished"', "duplicate key 'status'"),
    ("summary.json", '"steps"', '"final_val_loss": 0.1, "steps"', "duplicate key 'final_val_loss'"),
    ("summary.json", '"wall_s": 1.0', '"wall_s": NaN', "NaN"),
    ("summary.json", '"wall_s": 1.0', '"wall_s": 1e400', "wall_s must be a finite number"),
    ("metrics.jsonl", '"val_loss":', '"val_loss": 0.5, "val_loss":', "duplicate key 'val_loss'"),
    ("metrics.jsonl", '"tokens":', '"tokens": 5, "tokens":', "duplicate key 'tokens'"),
    ("metrics.jsonl", '"val_loss": ', '"val_loss": "4", "x": ', "val_loss must be a finite number"),
    ("metrics.jsonl", '"val_loss": ', '"val_loss": -1e300, "x": ', "val_loss -1e+300 < 0"),
    ("metrics.jsonl", '"step": 0', '"step": true', "step must be an integer"),
    ("metrics.jsonl", '"step": 0', '"step": ' + "9" * 5000, "is not a JSON record"),
]


@pytest.mark.parametrize("rel, old, new, said", RUN_FILES, ids=[f"{r[0]}-{i}" for i, r in enumerate(RUN_FILES)])
def test_report_refuses_a_run_file_with_a_key_twice_or_a_bad_value(tmp_path, rel, old, new, said):
    # kept: files.unique_pairs in summary.json and metrics.jsonl as report reads them; nothing written
    fake_sweep(tmp_path / "sw", ARMS, 3, 0.01)
    _edit_run_file(tmp_path, rel, old, new)
    before = snapshot(tmp_path)
    assert_refused(cli("report", "sw", where=tmp_path), said)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "name",
    ["\x1b[2Jgelu", "<script>alert(1)</script>", '=HYPERLINK("http://x")', "a|b`c[d](e)", "gelu\u2062r4", "gelu\n# hi"],
    ids=["esc", "script", "formula", "markdown", "invisible-times", "newline"],
)
def test_report_refuses_a_hostile_arm_name(tmp_path, name):
    r, changed = _report_of(tmp_path, _set_arm(name))
    assert not isinstance(r, Exception), repr(r)
    assert_refused(r, "arm must be a name")
    assert not changed


@pytest.mark.parametrize(
    "key, value",
    [("description", "<img src=x onerror=alert(1)>\x1b[2J")],
    ids=["description"],
)
def test_report_escapes_a_hostile_spec_text(tmp_path, key, value):
    r, _ = _report_of(tmp_path, lambda rec: rec["spec"].__setitem__(key, value))
    assert not isinstance(r, Exception) and r.code == 0, getattr(r, "stderr", r)
    for f in (tmp_path / "sw" / "report").rglob("*"):
        if f.suffix in (".md", ".html", ".csv", ".json"):  # JSON holds the text as data, escaped by json
            text = f.read_text()
            assert "\x1b" not in text, f.name
            assert f.suffix not in (".md", ".html") or ("<script>" not in text and "<img src" not in text), f.name


@pytest.mark.parametrize("name", ["</title><script>x</script>", "../../x", "a b"], ids=["html", "path", "space"])
def test_report_refuses_a_spec_name_a_spec_file_refuses(tmp_path, name):
    # J6's mend: a saved spec meets the spec file's rules, and its name is a name, as an arm's is (above);
    # oracle: sweep --estimate of a spec with that name, refused in one line naming the key
    write_corpus(tmp_path)
    spec = tiny_sweep_spec(4, 2)
    spec["name"] = name
    (tmp_path / "s.json").write_text(json.dumps(spec))
    assert_refused(cli("sweep", "s.json", "--estimate", where=tmp_path), "name")
    r, changed = _report_of(tmp_path, lambda rec: rec["spec"].__setitem__("name", name))
    assert not isinstance(r, Exception), repr(r)
    assert "sweep.json" in assert_refused(r, "name")
    assert not changed


def _report_folder(tmp_path: Path, what: str) -> None:
    sw, rep = tmp_path / "sw", tmp_path / "sw" / "report"
    if what == "link-out":
        (tmp_path / "elsewhere").mkdir()
        rep.symlink_to(tmp_path / "elsewhere")
        return
    if what == "a-file":
        rep.write_text("mine")
        return
    rep.mkdir()
    names = {
        "md": ["report.md"],
        "html": ["index.html"],
        "csv": ["arms.csv", "runs.csv"],
        "json": ["results.json", "claims.json"],
        "mine": ["notes.txt"],
    }[what]
    for n in names:
        victim = tmp_path / f"victim-{n}"
        victim.write_text("victim")
        (rep / n).symlink_to(victim) if what != "mine" else (rep / n).write_text("mine")
    assert sw.is_dir()


@pytest.mark.parametrize(
    "what, said",
    [
        ("link-out", "leads outside"),
        ("a-file", "is a file"),
        ("md", "not an ffnlab report"),
        ("html", "not an ffnlab report"),
        ("csv", "not an ffnlab report"),
        ("json", "not an ffnlab report"),
        ("mine", "not an ffnlab report"),
    ],
)
def test_report_never_writes_through_or_over_what_it_did_not_make(tmp_path, what, said):
    fake_sweep(tmp_path / "sw", ARMS, 3, 0.01)
    _report_folder(tmp_path, what)
    before = snapshot(tmp_path)
    assert_refused(cli("report", "sw", where=tmp_path), said)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("where", ["plots", "runs", "."])
def test_a_second_report_keeps_a_users_file_inside_the_first(tmp_path, where):
    # report replaces its own report in place: a file the user put inside it stays, byte for byte
    fake_sweep(tmp_path / "sw", ARMS, 3, 0.01)
    assert cli("report", "sw", where=tmp_path).code == 0
    mine = tmp_path / "sw" / "report" / where / "mine.txt"
    mine.write_text("mine")
    r = cli("report", "sw", where=tmp_path)
    assert r.code == 0 and mine.read_text() == "mine", r.stderr[-500:]


# -- J8: a launch line's number out of range said to be no number --------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "vllm serve m --block-size 0",
        "vllm serve m -tp 0",
        f"vllm serve m --max-num-seqs {2**41}",
        "python -m sglang.launch_server --model-path m --context-length 0",
        "vllm serve m --max-num-seqs -8",
    ],
    ids=["block-0", "tp-0", "seqs-2**41", "sglang-context-0", "seqs-minus-8"],
)
def test_a_launch_lines_number_out_of_range_is_said_as_out_of_range(tmp_path, line):
    # oracle: the check's own line, "--engine-config: FLAG must be in [1, 2**40], got N" (its text in
    # read_engine_command); today "error: --engine-config: --block-size needs a number, got '0'"
    assert "needs a number" not in assert_refused(_serve(tmp_path, line), "--engine-config")


# -- J10: a llama-server line, which --help says is read ----------------------------------------------------------


@pytest.mark.parametrize("argv", [SIZE_SERVE, SERVE], ids=["size", "fit"])
@pytest.mark.parametrize(
    "line", ["llama-server -m x.gguf -c 8192 -np 4", "./llama-server -hf org/x-GGUF:Q4_K_M -c 8192"]
)
def test_help_names_the_launch_lines_the_reader_reads(tmp_path, argv, line):
    # oracle: the reader's refusal of a llama-server line names the lines it reads (read_engine_command
    # has no llama-server branch, and docs/serving.md names vLLM's and SGLang's lines only); fit
    # --help and size --help, --engine-config, must promise those and no other. Before the mend the
    # help said "Any other file: a 'vllm serve ...', 'python -m sglang.launch_server ...' or
    # 'llama-server ...' line for the serving engine"
    from ffnlab.cli.app import ENGINE_CONFIG_OPTION

    said = assert_refused(_serve(tmp_path, line, *argv, "--engine", "llama.cpp"), "--engine-config: expected")
    promised = str(ENGINE_CONFIG_OPTION.help)
    assert "llama-server" not in promised, promised
    for form in ("'vllm serve ...'", "'python -m sglang.launch_server ...'"):
        assert form in said and form in promised, (form, said, promised)


# -- kept: launch lines and trainer configs ---------------------------------------------------------------------

LAUNCH_REFUSED = [
    ("vllm serve m --gpu-memory-utilization nan", "must be in (0, 1]"),
    ("vllm serve m --gpu-memory-utilization inf", "must be in (0, 1]"),
    ("vllm serve m --gpu-memory-utilization 1e400", "must be in (0, 1]"),
    ("vllm serve m --gpu-memory-utilization -0.5", "must be in (0, 1]"),
    ("vllm serve m --gpu-memory-utilization 5", "must be in (0, 1]"),
    ("vllm serve m --gpu-memory-utilization=", "needs a number, got ''"),
    ("vllm serve m --gpu-memory-utilization 0x1p-1", "needs a number"),
    ("vllm serve m --max-num-seqs 1e3", "needs a number"),
    ("vllm serve m --max-model-len 1k", "needs a number"),
    ("vllm serve m --max-num-seqs " + "9" * 5000, "a word of 5,000 characters"),
    ("vllm serve m --max-num-seqs " + "9" * 4000, "must be in [1, 2**40]"),
    ("vllm serve m --max-num-seqs 'abc", "No closing quotation"),
    ("vllm serve m --max-num-seqs 4\x00", "binary file"),
    ("vllm", "expected a 'vllm serve ...'"),
    ("", "expected a 'vllm serve ...'"),
    ("# nothing", "expected a 'vllm serve ...'"),
    ("python -m vllm.entrypoints.openai.api_server --model m", "expected a 'vllm serve ...'"),
    ("python -m sglang.launch_server --model-path m --mem-fraction-static nan", "must be in (0, 1]"),
    ("python -m sglang.launch_server --model-path m --mem-fraction-static 2", "must be in (0, 1]"),
    ("python -m sglang.launch_server --model-path m --mem-fraction-static -1", "must be in (0, 1]"),
    ("python -m sglang.launch_server --model-path m --mem-fraction-static inf", "must be in (0, 1]"),
    ("sglang serve --model-path m --tp 2", "give --mem-fraction-static"),
]


@pytest.mark.parametrize("line, said", LAUNCH_REFUSED, ids=[f"refused-{i}" for i in range(len(LAUNCH_REFUSED))])
def test_a_bad_launch_line_is_one_line(tmp_path, line, said):
    assert_refused(_serve(tmp_path, line), said)


LAUNCH_READ = [
    ("vllm serve m --gpu-memory-utilization 0.5 --gpu-memory-utilization 0.95", "gpu_memory_utilization 0.95 "),
    ("vllm serve m --gpu_memory_utilization=0.5", "gpu_memory_utilization 0.5 "),
    ("vllm serve m --gpu-memory-utilization 1e-320", "KV cache: 0 tokens"),
    (f"vllm serve m --max-num-seqs {2**40}", "KV cache: 0 tokens"),
    (f"vllm serve m --block-size {2**40}", "KV cache: 0 tokens"),
    (f"vllm serve m --max-model-len {2**40}", "KV cache: 118,512 tokens"),
    ("CUDA_VISIBLE_DEVICES=0 vllm serve m --max-num-seqs 8", "KV cache:"),
    ("\ufeffvllm serve m --max-num-seqs 8", "KV cache:"),
    ("vllm serve m \\\r\n --max-num-seqs 8\r\n", "KV cache:"),
    ("vllm serve m --max-num-seqs 8 \\", "KV cache:"),
    ("vllm serve --model", "KV cache:"),
    ("uvx vllm serve m --max-num-seqs 8", "KV cache:"),
]


@pytest.mark.parametrize("line, said", LAUNCH_READ, ids=[f"read-{i}" for i in range(len(LAUNCH_READ))])
def test_an_odd_but_readable_launch_line_is_priced(tmp_path, line, said):
    r = _serve(tmp_path, line)
    assert r.code == 0 and said in r.stdout, (r.code, r.stderr[-500:])
    assert "Traceback" not in r.stderr


BOMB = "".join(
    f"{a}: &{a} [{', '.join([f'*{p}' if p else 'x'] * 9)}]\n"
    for a, p in zip("abcdefg", ["", "a", "b", "c", "d", "e", "f"], strict=True)
)
TRAINER_REFUSED = [
    ("c.yaml", "per_device_train_batch_size: " + "9" * 30, "--batch must be an integer in [1, 2**40]"),
    ("c.yaml", "per_device_train_batch_size: " + "9" * 4400, "more than 4,300 digits"),
    ("c.yaml", "per_device_train_batch_size: '\u0664'", "in at most 30 ASCII digits"),
    ("c.yaml", "per_device_train_batch_size: 4\nper_device_train_batch_size: 8", "duplicate key"),
    ("c.yaml", "per_device_train_batch_size: 4\n'per_device_train_batch_size': 4", "duplicate key"),
    ("c.yaml", "true: 1\n1: 2\n", "duplicate key 1"),
    ("c.yaml", "? [a, b]\n: 1", "not valid YAML"),
    ("c.yaml", "max_length: 100000000000", "seq_len must be at most 2,147,483,647"),
    ("c.yaml", "use_peft: true\nlora_dropout: '1e-999'", "exponents within +-30"),
    ("c.yaml", "use_peft: true\nlora_target_modules: ['\x1b[2Jq_proj']", "not valid YAML"),
    ("c.yaml", BOMB, "alias bomb"),
    ("c.yaml", "a: " + "[" * 100000 + "]" * 100000, "nested too deeply"),
    ("c.yaml", "a: " + "{b: " * 5000 + "1" + "}" * 5000, "nested too deeply"),
    ("c.yaml", "x: !!python/object/apply:os.system ['touch pwned']", "could not determine a constructor"),
    ("c.yaml", "- 1\n- 2", "must be a mapping, got list"),
    ("c.yaml", "per_device_train_batch_size: 4".encode("utf-16"), "binary file"),
    ("c.yaml", b"optim: caf\xe9", "not UTF-8"),
    ("c.yaml", "tokenizer:\n  _component_: x\n  max_seq_len: 99999999999999\n", "--seq-len must be an integer"),
    ("c.yaml", "base_model: x\nsequence_len: '\uff18192'", "in at most 30 ASCII digits"),
    ("c.toml", "[training]\nseq_len = 2048\nseq_len = 4096\n", "duplicate key 'seq_len'"),
    ("c.toml", "[training]\nseq_len = 99999999999999999999999\n", "--seq-len must be an integer"),
    ("c.toml", "[training\nseq_len = 1", "not valid TOML"),
    ("c.toml", "[activation_checkpoint]\nmode = 'selective'\nselective_ac_option = '\u0664'\n", "ASCII digits"),
    ("c.json", '{"per_device_train_batch_size": 4, "per_device_train_batch_size": 8}', "duplicate key"),
    ("c.json", '{"per_device_train_batch_size": NaN}', "NaN is not a number JSON allows"),
    ("c.json", '{"per_device_train_batch_size": ' + "9" * 5000 + "}", "more than 4,300 digits"),
    ("c.json", '{"a": ' + "[" * 100000 + "]" * 100000 + "}", "nested too deeply"),
    ("c.json", "[1]", "must be a mapping, got list"),
    ("c.json", '{"a": 1} x', "Extra data"),
]


@pytest.mark.parametrize("name, text, said", TRAINER_REFUSED, ids=[f"refused-{i}" for i in range(len(TRAINER_REFUSED))])
def test_a_bad_trainer_config_is_one_line(tmp_path, name, text, said):
    assert_refused(_with_file(tmp_path, name, text, *SIZE), said)


TRAINER_READ = [
    ("c.yaml", "per_device_train_batch_size: -4", "value -4 is not one ffnlab models"),
    ("c.yaml", "per_device_train_batch_size: 4.5", "value 4.5 is not one"),
    ("c.yaml", "per_device_train_batch_size: .nan", "value nan is not one"),
    ("c.yaml", "per_device_train_batch_size: [4]", "value [4] is not one"),
    ("c.yaml", "per_device_train_batch_size: 2024-01-01", "is not one ffnlab models"),
    ("c.yaml", "max_length: 1024\nmax_seq_length: 4096", "max_seq_length = 4096 (seq_len 4096)"),
    ("c.yaml", "gradient_accumulation_steps: 1000000000000", "grad_accum 1000000000000"),
    ("c.yaml", '"\\e[2Jkey\\u202e": 1', "\\x1b[2Jkey\\u202e"),
    ("c.yaml", 'optim: "\\e[31madamw"', "\\x1b[31madamw"),
    ("c.yaml", "bf16: 'True'", "value 'True' is not one"),
    ("c.yaml", "", "no key ffnlab reads"),
    (
        "c.yaml",
        "base: &b {per_device_train_batch_size: 4}\nx:\n  <<: *b\n  per_device_train_batch_size: 8",
        "not a memory setting (2)",
    ),
    ("c.yaml", "base_model: x\nsequence_len: true", "value True is not one"),
    ("c.yaml", "base_model: x\nmicro_batch_size: 0", "value 0 is not one"),
    ("c.toml", "[training]\nseq_len = nan\nlocal_batch_size = inf\n", "value inf is not one"),
    ("c.toml", "[training]\nseq_len = 1979-05-27\n", "is not one ffnlab models"),
    ("c.toml", "\ufeff[training]\nseq_len = 1024\n", "seq_len 1024"),
    (
        "c.toml",
        "[activation_checkpoint]\nmode = 'selective'\nselective_ac_option = 99999999999\n",
        "recompute_every 99999999999",
    ),
    ("c.json", '{"per_device_train_batch_size": 1e400}', "value inf is not one"),
    ("c.json", "null", "no key ffnlab reads"),
    ("c.json", '{"bf16": 1, "gradient_checkpointing": 0}', "value 1 is not one"),
    ("c.JSON", '{"per_device_train_batch_size": 4}', "batch 4"),
]


@pytest.mark.parametrize("name, text, said", TRAINER_READ, ids=[f"read-{i}" for i in range(len(TRAINER_READ))])
def test_an_odd_trainer_config_is_read_and_said(tmp_path, name, text, said):
    r = _with_file(tmp_path, name, text, *SIZE)
    assert r.code == 0 and said in r.stderr and "\x1b" not in r.stderr, (r.code, r.stderr[-800:])
    strict_json(r.stdout)


# -- kept: the other subcommands' flags -------------------------------------------------------------------------

ARGV_REFUSED = [
    (["zoo", "--family", "\u2062"], "no family matches '\\u2062'"),
    (["zoo", "--family", "gpt\u200b2", "--json"], "no family matches"),
    (["zoo", "--family", "\x00"], "'\\x00'"),
    (["zoo", "--family", "\ud800"], "no family matches"),
    (["zoo", "--family", "%s%n"], "no family matches"),
    (["zoo", "--format", "html"], "--format must be one of"),
    (["zoo", "--format", "CSV"], "--format must be one of"),
    (["table", "gpt2", "--seq-len", "0"], "--seq-len"),
    (["table", "gpt2", "--seq-len", "1e400"], "cannot read '1e400'"),
    (["table", "gpt2", "--json", "--seq-len", str(2**40)], "[1, 2**24]"),
    (["table", "gpt2@main"], "unknown model"),
    (["table", "org/na\u2062me"], "org/na\\u2062me"),
    (["table", "gpt2", "--limit", "0"], "--limit"),
    (["table", "gpt2", "--batch", "0"], "--batch"),
    (["table", "gpt2", "--context", "-1"], "--context"),
    (["table", "gpt2", "--timeout", "nan"], "--timeout"),
    (["table", "gpt2", "--timeout", "1e400"], "--timeout"),
    (["table", "gpt2", "--progress", "x"], "--progress"),
    (["table", "/proc/self/environ"], "binary file"),
    (["claims", "--evidence", "/dev/zero"], "no experiment evidence"),
    (["claims", "--evidence", ""], "the path is empty"),
    (["claims", "--evidence", "~nouser/x"], "no such user"),
    (["plan", "1e-400"], "cannot read '1e-400'"),
    (["plan", "\u0667e9"], "cannot read"),
    (["plan", "nan"], "finite"),
    (["plan", "1e30", "--json"], "at most 1e+15"),
    (["plan", "7e9", "--tolerance", "nan"], "tolerance"),
    (["plan", "7e9", "--head-dims", "64,,128"], "--head-dims"),
    (["plan", "7e9", "--head-dims", "-64"], "--head-dims must be positive"),
    (["plan", "7e9", "--head-dims", "64," * 5000], "--head-dims"),
    (["plan", "7e9", "--aspect-band", "160:32"], "aspect_lo <= aspect_hi"),
    (["plan", "7e9", "--aspect-band", "nan:inf"], "--aspect-band"),
    (["plan", "7e9", "--aspect-band", "1:2:3"], "--aspect-band"),
    (["plan", "7e9", "--kv-groups", str(2**40)], "--kv-groups"),
    (["plan", "7e9", "--multiplier", "1/0"], "multiplier"),
    (["plan", "7e9", "--ratio", "0/0"], "ratio"),
    (["plan", "7e9", "--ratio", "1e400/1"], "exponents within +-30"),
    (["plan", "7e9", "--ratio", "8/3/1"], "ratio"),
    (["explain", "--d-model", "4096", "--d-ff", "0"], "--d-ff"),
    (["explain", "--d-model", str(2**41), "--d-ff", "1"], "--d-model"),
    (["explain", "--d-model", "1", "--d-ff", str(2**40), "--json"], "d_ff must be at most"),
    (["explain", "--d-model", "4096", "--d-ff", "11008", "--ffn", "\x1b[31mswiglu"], "'\\x1b[31mswiglu'"),
    (["size", "--from", "nosuch-model"], "unknown model"),
    (["size", "--from", ""], "is empty"),
    (["size", "--from", "/dev/null"], "no such file"),
    (["size", "--from", "a/b@\x1b[2J"], "a/b@\\x1b[2J"),
    (["size", "--from", "gpt2", "--gpu", "H100\u200b"], "unknown accelerator 'H100\\u200b'"),
    (["size", "--from", "gpt2", "--gpu", ""], "unknown accelerator ''"),
    (["size", "--from", "gpt2", "--gpu", "H100", "--engine", "vllm@0.0.0"], "has no profile '0.0.0'"),
    (["size", "--from", "gpt2", "--gpu", "H100", "--engine", "vllm@" + "9" * 400], "(400 characters)"),
    (["fit", "gpt2", "--mode", "serve", "--gpu", "H100", "--target-tokens-per-s", "1e400"], "finite"),
    (["fit", "gpt2", "--mode", "serve", "--gpu", "H100", "--target-tokens-per-s", "1e30", "--json"], "2**40 GPUs"),
    (["fit", "gpt2", "--mode", "SERVE"], "--mode must be one of"),
    (["fit", "gpt2", "--mode", "serve", "--engine", "trl"], "unknown serving engine"),
    (["fit", "gpt2", "--mode", "train", "--engine", "vllm"], "--engine must be one of"),
    (["fit", "gpt2", "--gpu-memory", "1e-300", "--json"], "at least 1 MiB"),
    (["fit", "gpt2", "--gpu", "H100", "--reserve", "1e300"], "--reserve"),
    (["fit", "gpt2", "--gpu", "H100", "--top", str(2**40)], "--top"),
    (["fit", "gpt2", "--gpu", "H100", "--plot", "/dev/null"], ".svg or .png"),
    (["fit", "gpt2", "--gpu", "H100", "--plot", "sub/x.svg"], "does not exist"),
    (["verify", "--preset", ""], "the path is empty"),
    (["verify", "--preset", "/etc/passwd"], "must end in .json"),
    (["verify", "--workers", "0"], "--workers"),
    (["verify", "--timeout", "-1"], "--timeout"),
    (["verify", "--out", "/dev/null"], "is a file"),
    (["report", "/dev/null"], "not a sweep folder"),
    (["report", ""], "the path is empty"),
    (["capacity", "run", "nosuch"], "no capacity preset"),
    (["capacity", "run", "/dev/null"], "no capacity preset"),
    (["capacity", "run", "--backend", "x"], "--backend"),
]


@pytest.mark.parametrize("argv, said", ARGV_REFUSED, ids=[f"refused-{i}" for i in range(len(ARGV_REFUSED))])
def test_a_bad_flag_of_the_other_subcommands_is_one_line(tmp_path, argv, said):
    before = snapshot(tmp_path)
    assert_refused(cli(*argv, where=tmp_path), said)
    assert snapshot(tmp_path) == before


ARGV_ANSWERED = [
    ["zoo", "--family", "GPT", "--format", "csv"],
    ["table", "gpt2", "GPT2", "--json"],
    ["table", "--json", "gpt2", "llama-2-7b", "falcon-7b"],
    ["claims", "--json", "--wide"],
    ["plan", "7B", "--json"],
    ["explain", "--d-model", "4096", "--d-ff", "11008", "--json"],
    ["size", "--from", "GPT2", "--json"],
    ["size", "--from", "gpt2", "--gpu", "h100", "--json"],
    ["size", "--from", "gpt2", "--gpu", "H100", "--engine", "llama.cpp", "--json"],
    ["size", "--from", "gpt2", "--gpu", "H100", "--engine", "sglang", "--mem-fraction-static", "1e-300", "--json"],
    ["size", "--from", "gpt2", "--gpu", "H100", "--gpu-memory-utilization", "1e-300", "--json"],
    ["size", "--from", "gpt2", "--gpu", "H100", "--max-num-seqs", str(2**31), "--json"],
    ["size", "--from", "gpt2", "--gpu", "H100", "--seq-len", str(2**40), "--json"],
    ["size", "--from", "deepseek-v3", "--gpu", "H100", "--json"],
    ["fit", "gpt2", "--mode", "serve", "--gpu", "H100", "--target-tokens-per-s", "1e-300", "--json"],
    ["fit", "gpt2", "llama-2-7b", "--mode", "serve", "--gpu", "H100", "--json"],
]


@pytest.mark.parametrize("argv", ARGV_ANSWERED, ids=[f"answered-{i}" for i in range(len(ARGV_ANSWERED))])
def test_an_odd_but_good_flag_answers_strict_json(tmp_path, argv):
    r = cli(*argv, where=tmp_path)
    assert r.code == 0 and "Traceback" not in r.stderr, (r.code, r.stderr[-500:])
    if "--json" in argv:
        strict_json(r.stdout)


# -- kept: names of Hub datasets and corpora ------------------------------------------------------------------------

DATASETS = [
    ("Parquet", "not in the HF cache"),
    ("JSON", "Couldn't find cache for JSON"),
    ("hf://datasets/Text", "no such file"),
    ("org/name/extra", "no such file"),
    ("org//name", "no such file"),
    ("a" * 97 + "/b", "no such file"),
    ("org/name@\x1b[2J", "'org/name@\\x1b[2J'"),
    ("org/name\n", "'org/name\\n'"),
    ("org/name\u2062", "'org/name\\u2062'"),
    ("org/x..y", "no such file"),
    ("datasets/text", "not in the HF cache"),
    ("hf:text", "no such file"),
    ("s3://bucket/x", "no such file"),
    ("file:///etc/passwd", "no such file"),
    ("Buckets/x/y", "no such file"),
    ("org/buckets", "not in the HF cache"),
]


@pytest.mark.parametrize("name, said", DATASETS, ids=[f"dataset-{i}" for i in range(len(DATASETS))])
def test_a_dataset_name_is_one_line_offline(tmp_path, monkeypatch, name, said):
    from ffnlab.training import perplexity as P

    monkeypatch.setattr(
        P,
        "load_model",
        lambda target, **kw: SimpleNamespace(context=32, revision="local", dtype="float32", device="cpu"),
    )
    before = snapshot(tmp_path)
    argv = ["perplexity", "e1", "--dataset", name, "--no-cache", "--progress", "off"]
    assert_refused(cli(*argv, where=tmp_path), said)
    assert snapshot(tmp_path) == before


TINY_TRAIN_YAML = (
    "model: {d_model: 32, n_layers: 1, n_heads: 2}\n"
    "data: {corpus: c.txt, tokenizer: byte, cache_dir: cache}\n"
    "train: {seq_len: 32, batch_size: 4, max_steps: 1, tensorboard: false, progress: 'off', threads: 1}\n"
)
CORPORA = [
    ("hf:Parquet", "not in the HF cache"),
    ("hf:org/name/extra", "no Hub dataset id can be that"),
    ("hf:org//name", "no Hub dataset id can be that"),
    ("hf:org/name@", "no Hub dataset id can be that"),
    ("hf:org/name@\x1b[2J", "'hf:org/name@\\x1b[2J'"),
    ("hf:org/na me", "no Hub dataset id can be that"),
    ("hf:org/name:\x1b[2J", "'org/name:\\x1b[2J'"),
    ("hf:org/x..y", "no Hub dataset id can be that"),
    ("hf:" + "a" * 97 + "/b", "(102 characters)"),
    ("hf:text\u0301", "no Hub dataset id can be that"),
    ("HF:text", "is not 'shakespeare'"),
    ("hf:datasets/text", "not in the HF cache"),
]


@pytest.mark.parametrize("corpus, said", CORPORA, ids=[f"corpus-{i}" for i in range(len(CORPORA))])
def test_a_corpus_name_is_one_line_and_no_run(tmp_path, corpus, said):
    write_corpus(tmp_path)
    (tmp_path / "t.yaml").write_text(TINY_TRAIN_YAML)
    before = snapshot(tmp_path)
    assert_refused(cli("train", "t.yaml", "--corpus", corpus, "--out", "run", where=tmp_path), said)
    assert snapshot(tmp_path) == before


# -- kept: capacity presets ----------------------------------------------------------------------------------------

CAPACITY = [
    ("exposures", float("nan"), "exposures must be a positive number"),
    ("exposures", 0, "exposures must be a positive number"),
    ("exposures", "300", "exposures must be a positive number"),
    ("exposures", 10**30, "train.max_steps must be an integer"),
    ("budgets", [], "budgets must be a list"),
    ("budget-twice", None, "budget names must be unique"),
    ("budget-name", "../../x", "budgets[0].name must be a name"),
    ("budget-name", "\x1b[2J", "'\\x1b[2J'"),
    ("budget-name", "sm\u2062all", "'sm\\u2062all'"),
    ("budget-d-model", 10**12, "model.d_model must be an integer"),
    ("name", "../../x", "name must be a name"),
    ("sweep", None, "sweep must be a mapping"),
    ("corpus", "shakespeare", "must use a 'facts:...' corpus"),
    ("corpus", "facts:subjects=1000000000,relations=8,values=32", "subjects must be 10..1000000"),
    ("corpus", "facts:subjects=nan", "subjects must be an integer"),
    ("corpus", "facts:subj\x1bects=10", "'subj\\x1bects=10'"),
    ("nosuch", 1, "unknown key(s) nosuch"),
    ("seeds", [0, 0], "seeds must be a list of unique values"),
]


@pytest.mark.parametrize("key, value, said", CAPACITY, ids=[f"capacity-{i}" for i in range(len(CAPACITY))])
def test_a_bad_capacity_preset_is_one_line_and_starts_nothing(tmp_path, monkeypatch, key, value, said):
    import yaml

    from ffnlab.experiments.sweep import run as sweep_run

    started: list = []
    monkeypatch.setattr(sweep_run.Children, "run", lambda self, cmd, log, threads: started.append(cmd) or 0)
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))  # a prepared corpus may stay there: ffnlab's own
    preset = yaml.safe_load((Path(sweep_run.__file__).parents[1] / "presets" / "capacity.yaml").read_text())
    if key == "budget-twice":
        preset["budgets"].append(dict(preset["budgets"][0]))
    elif key == "budget-name":
        preset["budgets"][0]["name"] = value
    elif key == "budget-d-model":
        preset["budgets"][0]["model"]["d_model"] = value
    elif key == "corpus":
        preset["sweep"]["base"]["data"]["corpus"] = value
    elif key == "seeds":
        preset["sweep"]["seeds"] = value
    else:
        preset[key] = value
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "p.yaml").write_text(yaml.safe_dump(preset))
    before = snapshot(tmp_path / "here")
    assert_refused(cli("capacity", "run", "p.yaml", "--out", "out", "--no-report", where=tmp_path / "here"), said)
    assert snapshot(tmp_path / "here") == before and not started


# -- J9: a line break in a model's path printed as it is in a title ----------------------------------------------

TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
    "architectures": ["LlamaForCausalLM"],
}
TITLED = [
    ["size", "--from", "{}/config.json"],
    ["fit", "{}/config.json", "--gpu", "H100"],
    ["fit", "{}/config.json", "--mode", "serve", "--gpu", "H100"],
    ["audit", "{}/config.json"],
]


def _titled(tmp_path: Path, folder: str, argv: list[str]) -> object:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(TINY_LLAMA))
    return cli(*[a.format(folder) for a in argv], where=tmp_path)


@pytest.mark.parametrize("argv", TITLED, ids=["size", "fit", "fit-serve", "audit"])
def test_a_line_break_in_a_models_path_never_starts_a_line_of_its_own(tmp_path, argv):
    # oracle: escape.one_line's rule, and ESC in the same folder name shown as \x1b (test below);
    # today `size --from $'m\nerror: disk full/config.json'` prints a line "error: disk full/config.json"
    r = _titled(tmp_path, "m\nerror: disk full", argv)
    assert r.code == 0, r.stderr[-500:]
    assert not any(x.startswith("error: disk full") for x in (r.stdout + r.stderr).splitlines()), r.stdout[:300]


@pytest.mark.parametrize("ch", ["\x1b", "\u2062", "\u202e", "\x07"], ids=["esc", "invisible-times", "rlo", "bel"])
@pytest.mark.parametrize("argv", TITLED, ids=["size", "fit", "fit-serve", "audit"])
def test_a_control_in_a_models_path_is_an_escape(tmp_path, argv, ch):
    # kept: the other side of J9: every other control in the same place is shown as an escape
    r = _titled(tmp_path, f"m{ch}x", argv)
    assert r.code == 0 and ch not in r.stdout + r.stderr, r.stdout[:300]


# -- kept: --plot's file ------------------------------------------------------------------------------------------


def _plot_target(tmp_path: Path, what: str) -> str:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.svg").write_text("victim")
    here = tmp_path / "here"
    here.mkdir()
    if what == "link-to-file":
        (here / "x.svg").symlink_to(outside / "victim.svg")
    elif what == "dangling-link":
        (here / "x.svg").symlink_to(outside / "new.svg")
    elif what == "hard-link":
        os.link(outside / "victim.svg", here / "x.svg")
    elif what == "fifo":
        os.mkfifo(here / "x.svg")
    elif what == "mine":
        (here / "x.svg").write_text("mine")
    return "x.svg"


@pytest.mark.parametrize(
    "argv",
    [["fit", "gpt2", "--gpu", "H100"], ["size", "--d-model", "512", "--n-layers", "4", "--ratio", "4"]],
    ids=["fit", "size"],
)
@pytest.mark.parametrize("what", ["link-to-file", "dangling-link", "hard-link", "fifo", "mine"])
def test_plot_replaces_only_the_name_it_was_given(tmp_path, argv, what):
    # without --overwrite: one line, nothing changed; with it: the name in the folder replaced by
    # the figure, never the file a link or a second name leads to outside
    name = _plot_target(tmp_path, what)
    before = snapshot(tmp_path)
    assert_refused(cli(*argv, "--plot", name, where=tmp_path / "here"), "already exists")  # a FIFO too, unopened
    assert snapshot(tmp_path) == before
    r = cli(*argv, "--plot", name, "--overwrite", where=tmp_path / "here")
    assert r.code == 0 and "wrote the step figure to x.svg" in r.stderr, r.stderr[-500:]
    assert (tmp_path / "outside" / "victim.svg").read_text() == "victim"
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["victim.svg"]
    path = tmp_path / "here" / "x.svg"
    assert not path.is_symlink() and path.read_text().lstrip().startswith(("<?xml", "<svg"))
