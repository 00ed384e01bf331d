"""An eleventh adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the flags and files added since the tenth (LoRA targets and dropout, Unsloth's
fused kernels, the launch configs' LoRA keys), at ``fit --gpus auto``, the count parser's edges,
and at the files of a run and a sweep that loaders other than ``train --resume`` read; inputs kept
as tests.

The pass threw about 2,260 inputs (673 by hand, 1,589 in two generated grids: every zoo model under
ten LoRA/QLoRA/Unsloth flag sets, and every third zoo model under nine ``fit`` layouts), each a call of
the CLI (in-process, or a subprocess where a Hub, a trained run or two processes at once were the
question), recording exit status, stderr lines, traceback, strict JSON and the files left:

* LoRA and fused-kernel flags (58): ``--lora-targets`` '', ' ', ALL-LINEAR, q, all-linear,ffn,
  qv,attention, ffn,attention, qv,qv, attention,,ffn, '*', '.*', full-width FFN, a newline, 100,000
  characters, without ``--finetune``; ``--lora-dropout`` 0.5, 1e-320, 0.9999999999999999, 1,
  -1e-320, nan, inf, 0x0, 5%, 1/2, without ``--finetune``; ``--fused-kernels`` UNSLOTH, '', liger,
  unsloth,unsloth, unsloth@2025.1.5, with dropout, eager attention, grad-accum 4, without LoRA, to
  ``fit --mode serve``; ``--engine unsloth`` with versions 2025.1.5, 2024.1, 9999, '' and
  ``Unsloth``, with ``--zero 3`` and ``--tp 2``; ``fit --gpus auto`` of each.
* launch configs (37): a digit string of 5,000 and 4,400 digits (YAML, JSON, TOML) and a
  superscript two as an integer key's value; integers of 5,000 digits; LoRA keys ``lora_r`` 10**30,
  ``lora_dropout`` .nan/-0.1/"0.5", ``lora_target_modules`` a regular expression, null, [null],
  nested lists, a mapping, [], 200,000 names, 100,000 unknown names; axolotl ``lora_target_linear``
  "yes"/1/true beside [q_proj, v_proj]/false beside [q_proj]; torchtune ``lora_attn_modules`` with
  ``apply_lora_to_mlp`` "maybe", all switches off, a string, every projection with the output;
  ``lora_dropout`` 1.0 and ``lora_rank`` -4; mappings 3,000 and 5,000 deep (YAML block and flow),
  100,000 deep (JSON), 5,000 deep (TOML); a key twice, keys 1 and true, a sequence key, a U+202E
  key.
* ``fit`` (35): ``--gpus`` of 5,000 digits, a superscript two, Arabic-Indic and full-width digits,
  0008; ``--max-gpus`` ², 1k, 1Ki, 1e3, 2 (70B: exit 1); every ``--mode`` spelling; ``--gpu-memory``
  80GB and 1e308; ``--tokens`` 1Ti, 1e30, 1G, ², Arabic-Indic ten; ``--target-tokens-per-s`` 1e-300
  and with ``--mode train``; ``--top`` of 5,000 digits and 100,000; ``--max-tp`` of 30 digits;
  ``--gpus 2**40``.
* resource bombs (21): ``fit --gpus 2**40``, ``--max-tp 2**20``, ``plan 1e30``, ``explain`` 2**40
  wide, ``size`` 100,000 layers with ``--seq-len 1Mi --batch 1Mi --recompute op-selective``, with
  ``--pp 100000``, ``--grad-accum``/``--loss-chunks``/``--recompute-every``/``--prefetch 1Gi``,
  ``--lora-rank 1Mi``, 65,536 wide with 2**20 experts, ``--max-num-seqs 2Gi``, ``--block-size 1Ti``.
* the count parser (30, ``--d-model``): 1.5k, 0.5k, 1.0001k, 1e-3k, -1k, 1kk, 1_000, ' 1k ', 1.5Ki,
  1.1, 4096.0, 4e3, 0x1000, '1k\\n', +4096, Arabic-Indic digits, a zero-width space, 1ki, 1KI, '1K
  i', inf, nan, 1e3k, 0.001M, 1.00000000000000001k, 4096.5, 1Ti, 1Pi, 1P, 8Ki.
* long values (55): 100,000 characters as every string and float option of ``size``, ``fit
  --mode/--gpus/--precision/--engine``, ``plan``, ``explain``, ``claims``, ``verify``,
  ``capacity``, ``perplexity``, ``train --set``, ``report``, ``sweep``, ``probe``, an unknown
  option and an unknown command.
* a trained run (151, a real 4-step run, one on a ``facts:`` corpus, one with a BPE tokenizer): ``generate`` and
  ``export`` ``--checkpoint`` ../.., /etc, step-2, 2, a trailing slash, a NUL, '', ., 5,000 digits,
  a superscript; ``--prompt`` '', NUL, 100,000 é; ``--top-k`` 0/1k/30 digits, ``--seed``
  -1/2**32/5,000 digits, ``--temperature`` -0.0/1e-320/nan; ``model.json``'s ``prepared_data``
  null, 5, [1], a mapping, '', /etc, /dev/zero, 5,000 characters, a run folder (``probe``,
  ``generate``, ``export``, ``train --resume``; also a BPE run: ``generate``, ``export``);
  metrics.jsonl with garbage lines and a 5,000-digit
  step; state.json with 31-digit integers and a float step; a checkpoint renamed to step-9 or
  ``latest``, two swapped, an empty newer one, a link to another in the run; ``probe`` ``--layers``
  0,0/5/-1/0-1/''/1e9/²/5,000 digits, ``--units`` 0/100,000/1e9, ``--examples`` 0/10k,
  ``--top-tokens`` 0/1G, ``--seq-len`` 0/1/1Gi, ``--tokens`` 0/1/1T, ``--split test``, ``--corpus``
  /etc/shadow, ``hf:x/y``, a missing file, /dev/zero, ``--out`` a user's folder (with and without
  ``--overwrite``), a new nested folder.
* ``train --set`` refused late (35, ``--out new/sub/run``): a missing corpus, /dev/zero, /etc, '',
  a NUL, d_model 33 and 10**9, n_heads 0, seq_len and batch 10**8-10**9, 100,000 layers, lr -1,
  max_steps 0, eval_tokens 0, threads 0/100,000, ``cache_dir`` /proc/x, a file, '', ~, ., tokenizer
  nosuch, device cuda/tpu, dtype fp8, compile maybe, an unknown FFN, checkpoint_every 10**12, an
  unknown key, ``facts:subjects=1``, seed -1 and 5,000 digits; 17 model variants (every FFN kind,
  alibi, no positions, learned positions, no norm, MoE, untied, biases, GQA) trained and exported.
* sweep specs (50, ``sweep S --estimate``): margin nan/-1/1e308/"x", tolerance 0/inf, claims
  unknown/a string/100,000, comparisons naming no arm/null/a list, a hypothesis' effect nan/"big",
  a list of strings, decide_at unknown, scales [] and 2,000, trends, maturity "x", require_mature
  "yes", exposures nan, budgets 10**30, 5,000 arms, arm names ../x, '', U+202E, 10,000 characters,
  twice, a/A, '.', an unknown arm key, the spec name ../../x, 10,000 characters, '', '..', a U+202E
  and a NUL key, seeds 2**32/-1/twice, a list top level, a BOM, ``--workers`` 0/1k/1Gi, ``--gpu``
  NOPE/h200, ``--backend`` nope/ray.
* sweep records (30, ``report SW --out rr`` of a fake sweep): sweep.json without runs, runs null,
  a run {} or a list, d_model 0/"x", an unknown FFN, a run named ../../../../etc and /etc,
  vocab_size "x"/0, spec a list, a list top level, arm 5, seed "x", train_flops_per_token 0,
  params_non_embedding 0 and 10**400; a summary.json a list, its loss "x"/null, tokens "x", no
  status; metrics.jsonl tokens "x", val_loss null, no tokens, a garbage last line, a list line,
  empty, a loss of 1e308.
* ``capacity measure`` (26, with and without ``--json``): ``params`` gone, a list, zero,
  strings; ``prepared_data`` null and 5; ``summary.json`` tokens a string, NaN, 1e308, a list,
  gone, "running", a loss a string.
* other commands that write (62): ``capacity report`` of a run, an empty folder, a file, a missing
  folder, a fake sweep, '.', '/' (with and without ``--out``); ``capacity run`` of nosuch,
  golden-quick, capacity.yaml, ../../etc/passwd, a file, a sweep, ``--workers 0``, ``--backend
  nope``, ``--out`` a file; ``capacity measure`` of a sweep and with odd checkpoints; ``verify
  --preset`` nosuch, a file, capacity, ../x, GOLDEN-QUICK, a trailing space, a sweep, an empty
  folder; ``claims --evidence`` a sweep, a run, a folder, a file, nosuch, /dev/null; ``report
  --out`` a file, of a run, of an empty folder; ``--plot`` after a later refusal (--gpu NOPE, a
  rank of 2,000,000, a missing launch config), with ``--json``, ``.svg.png``, ``.svgz``, a
  missing folder, ``fit --plot`` with nothing fitting (exit 1, no figure).
* downloads (14, a Hub of the pass's own on 127.0.0.1 counting requests): ``zoo``, ``claims``,
  ``size``/``audit``/``fit`` of zoo models, ``audit --all``, ``sweep --estimate`` and ``train
  --print-config`` of an ``hf:`` corpus, ``train`` with a BPE tokenizer: no request; ``size --from
  org/tiny``: only config.json.
* concurrency (6 pairs): two ``train`` on one new --out, two ``train --resume`` of one run, two
  ``probe --out P``, two ``export --overwrite`` to one new folder, two ``--plot`` of one file
  (with and without ``--overwrite``).
* environment (27): FFNLAB_TIMEOUT nan/0/-1/1e308/abc/''/' 5'/5s/22 digits with ``zoo``, ``size``
  and ``audit`` of a zoo model (no Hub: ignored).

Findings (6 root causes; each a strict xfail below):

D1. A launch config's digit string that Python's ``int`` cannot read ends in a traceback:
   ``size --d-model 1024 --ratio 4 --n-layers 2 --engine-config t.yaml`` with
   ``per_device_train_batch_size: "²"`` is "ValueError: invalid literal for int() with base 10:
   '²'", exit 1; with a quoted 4,400-digit string "Exceeds the limit (4300 digits) for integer
   string conversion" (YAML, JSON and TOML alike; an unquoted one is refused in one line).
   ``sizing/memory/engine_config.py`` ``_whole`` tests ``str.isdigit()`` (true for superscripts and
   for any length) and then calls ``int(value)`` unguarded.
D2. A long value is quoted whole in ffnlab's own error lines for five checks (the ninth pass's
   seventh class, mended elsewhere with ``validation.show``): ``--lora-targets``, ``--engine``,
   ``--dtype``, ``--zero3`` and ``--plot``'s suffix check each print a 100,000-character value
   whole (a 100 KB line): ``sizing/finetune.py`` (``parse_targets``, line 103),
   ``sizing/memory/engines.py`` line 159, ``sizing/memory/workload.py`` line 58,
   ``sizing/memory/sharding.py`` line 77 and ``experiments/reporting/step_figure.py`` line 128
   format ``{value!r}``.
D3. Click's own usage errors are printed whole: ``size ... --lora-alpha`` with 100,000 characters
   is "Invalid value for '--lora-alpha': 'aaaa...' is not a valid float." (100 KB); so are
   ``--timeout``, ``--lora-dropout``, ``--gpu-memory-utilization``, ``--mem-fraction-static`` (the
   options click types as floats) and ``generate --seed`` of 5,000 digits (an int); "No such
   option: --xaaaa..." and "No such command 'aaaa...'" the same.
   ``cli/__init__.py`` ``main`` prints ``e.format_message()`` of a ClickException (line 190) with
   no bound.
D4. An unknown engine version's note comes before a later refusal: ``size --d-model 1024 --ratio 4
   --n-layers 2 --engine hf-trainer@9 --tp 3`` prints "note: hf-trainer@9 is not known: priced as
   hf-trainer@5.25.0, the newest known" then "error: --tp 3 must divide n_heads=16" (two lines for
   exit 2); so do ``--zero 7``, ``audit M --engine hf-trainer@9 --tp 3``, ``audit nosuch``, ``size
   --from nosuch``, ``size --from M --gpu NOPE`` and ``--engine unsloth@9`` without LoRA.
   ``cli/sizing.py`` calls ``engine_notes`` right after ``mem.workload`` (line 173; ``audit`` line
   539), before ``mem.layout()``, the model and the accelerator are checked. (C1 and C2 are the
   launch config's report and the count parser's note; this is a third note source.)
D5. A run's ``model.json`` is read without checks outside the checkpoint loader: ``probe RUN``
   with ``"prepared_data": null`` (or 5, [1], a mapping) is "TypeError: expected str, bytes or
   os.PathLike object, not NoneType", exit 1 (``training/probe.py`` line 108: ``json.loads`` and
   ``load_prepared(prepared)``); ``generate`` and ``export`` of a BPE run the same
   (``training/generate.py`` line 36: ``Path(prepared or "")``; ``training/export.py`` line 652
   reads it and ``export_tokenizer.py`` ``tokenizer_files`` line 94 makes it a Path);
   ``capacity measure RUN`` with ``params`` gone is a KeyError, a list a TypeError, zero a
   ZeroDivisionError, strings a TypeError, ``summary.json``'s tokens a string a TypeError
   (``training/capacity.py`` ``measure_run``: ``meta["params"]``, ``params["non_embedding"]``,
   ``summary.get("tokens")`` used as read).
D6. ``report SW`` of a sweep whose sweep.json says every run has 0 non-embedding parameters ends
   in "TypeError: unsupported format string passed to NoneType.__format__", exit 1, and leaves
   ``rr/``: ``experiments/sweep/record.py`` line 71 checks ``params_non_embedding`` as an integer
   >= 0 (a model with a layer has more), ``experiments/analysis/maturity.py`` ``cell_maturity``
   then has no tokens per parameter (None) and ``immature_reason`` (line 146) formats it with
   ``:.3g``.

Per class, inputs tried / failures: LoRA and fused-kernel flags 58 / 0; launch configs 37 / 6
(D1); fit 35 / 0; the count parser 30 / 0; resource bombs 21 / 0; long values 55 / 13 (D2 5, D3 8);
engine-version notes 19 / 7 (D4); a trained run 151 / 12 (D5: probe 4, generate and export of a
BPE run 8); capacity measure 26 / 14 (D5); train --set refused late 35 / 0 and 17 variants
exported / 0; sweep specs 50 / 0; sweep records 30 / 1 (D6); other commands that write 62 / 0;
downloads 14 / 0; concurrency 6 / 0; environment 27 / 0; the grids 1,589 / 0.

Noted, not broken promises: a 1.4 MB launch config of 200,000 target names takes 13 s (PyYAML's
speed, noted by the eighth pass); ``--lora-targets attention,,ffn`` and ``'ffn\\n'`` are read as
attention,ffn and ffn; ``--fused-kernels unsloth`` with ``fit --mode serve`` is refused for its
checkpointing rather than for serving; ``--d-model 1.00000000000000001k`` is refused as "1,000.0,
not a whole number"; ``generate`` names a checkpoint renamed to step-0000009 "step-0000009 (step
4)" and uses it, and ignores one renamed ``latest``; ``report`` takes a run whose summary.json has
no ``status`` (C10's class); ``probe`` of a run trained with a relative ``cache_dir`` from another
working folder says the prepared corpus "is not complete" where it is absent, and ``prepared_data
""`` is looked for as ./tokenizer.json; ``size ... --n-layers 100000 --seq-len 1Mi --batch 1Mi
--recompute op-selective`` took 18.9 s; ``capacity run capacity --out FILE`` says "Not a directory:
.../FILE/small".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import SRC, copy_run, fake_hub_process, strict_json, tiny_sweep_spec, train_run, write_corpus
from fuzz_cli import assert_refused, cli, refused_untouched, snapshot

SIZE = ["size", "--d-model", "1024", "--ratio", "4", "--n-layers", "2"]
LORA = ["size", "--from", "llama-3-8b", "--finetune", "lora"]
LONG = "a" * 100_000


def _finetune(r) -> dict:  # noqa: ANN001
    """The LoRA step's priced parts: adapters, states and peak (what a LoRA setting changes)."""
    assert r.code == 0, r.stderr[-1500:]
    ft = strict_json(r.stdout)["finetune"]
    return {k: ft[k] for k in ("lora", "states", "peak")}


# -- LoRA and fused-kernel flags: one line each ---------------------------------------------------------


@pytest.mark.parametrize(
    "argv, fragment",
    [
        ([*LORA, "--lora-targets", ""], "--lora-targets"),
        ([*LORA, "--lora-targets", " "], "--lora-targets"),
        ([*LORA, "--lora-targets", "ALL-LINEAR"], "--lora-targets"),
        ([*LORA, "--lora-targets", "q"], "--lora-targets"),
        ([*LORA, "--lora-targets", "all-linear,ffn"], "--lora-targets"),
        ([*LORA, "--lora-targets", "qv,attention"], "--lora-targets"),
        ([*LORA, "--lora-targets", ".*"], "--lora-targets"),
        ([*LORA, "--lora-targets", "\uff26\uff26\uff2e"], "--lora-targets"),
        (["size", "--from", "llama-3-8b", "--lora-targets", "qv"], "--finetune"),
        ([*LORA, "--lora-dropout", "1"], "--lora-dropout"),
        ([*LORA, "--lora-dropout", "-1e-320"], "--lora-dropout"),
        ([*LORA, "--lora-dropout", "nan"], "--lora-dropout"),
        ([*LORA, "--lora-dropout", "inf"], "--lora-dropout"),
        ([*LORA, "--lora-dropout", "1/2"], "--lora-dropout"),
        (["size", "--from", "llama-3-8b", "--lora-dropout", "0.5"], "--finetune"),
        ([*LORA, "--fused-kernels", "UNSLOTH"], "--fused-kernels"),
        ([*LORA, "--fused-kernels", ""], "--fused-kernels"),
        ([*LORA, "--fused-kernels", "unsloth@2025.1.5"], "--fused-kernels"),
        ([*LORA, "--fused-kernels", "unsloth"], "offload"),
        ([*LORA, "--fused-kernels", "unsloth", "--lora-dropout", "0.1"], "lora_dropout 0"),
        (["size", "--from", "llama-3-8b", "--engine", "unsloth"], "lora"),
        (["size", "--from", "llama-3-8b", "--engine", "Unsloth"], "--engine"),
        (["size", "--from", "llama-3-8b", "--engine", "unsloth", "--finetune", "lora", "--tp", "2"], "--tp"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--mode", "serve", "--engine", "unsloth", "llama-3-8b"], "unsloth"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--mode", "serve", "--finetune", "lora", "llama-3-8b"], "serve"),
        (
            ["fit", "--gpus", "auto", "--gpu", "H100", "--mode", "serve", "--lora-dropout", "0.5", "llama-3-8b"],
            "--finetune",
        ),
    ],
    ids=lambda v: " ".join(v)[:80] if isinstance(v, list) else None,
)
def test_a_lora_or_fused_kernel_flag_at_its_edge_is_one_line(tmp_path, argv, fragment):
    assert_refused(cli(*argv, where=tmp_path), fragment)
    assert os.listdir(tmp_path) == []


# llama-3-8b's projections (d_model 4096, 8 KV heads of 128, d_ff 14336, 32 layers): LoRA of rank r on a
# d_in x d_out matrix trains r * (d_in + d_out) parameters (the LoRA paper's A and B)
_Q = _O = 4096 + 4096
_K = _V = 4096 + 1024
_FFN = 3 * (4096 + 14336)


@pytest.mark.parametrize(
    "given, sums",
    [
        ("ffn,attention", _Q + _K + _V + _O + _FFN),
        ("attention,ffn", _Q + _K + _V + _O + _FFN),
        ("qv,qv", _Q + _V),
        ("ffn,qv", _Q + _V + _FFN),
        ("attention", _Q + _K + _V + _O),
    ],
)
def test_lora_targets_in_any_order_train_the_adapters_they_name(given, sums):
    ft = _finetune(cli(*LORA, "--lora-targets", given, "--json"))
    assert ft["lora"]["trainable"] == 32 * 16 * sums, ft["lora"]


# -- launch configs: LoRA keys with odd values are ignored and said ---------------------------------------

TRL_PEFT = "use_peft: true\n"
AXOLOTL = "base_model: x\nadapter: lora\n"
TORCHTUNE = "model:\n  _component_: torchtune.models.llama3.lora_llama3_8b\n"


@pytest.mark.parametrize(
    "base, odd, key",
    [
        (TRL_PEFT, "lora_dropout: .nan\n", "lora_dropout"),
        (TRL_PEFT, "lora_dropout: -0.1\n", "lora_dropout"),
        (TRL_PEFT, 'lora_target_modules: ".*(q|v)_proj"\n', "lora_target_modules"),
        (TRL_PEFT, "lora_target_modules: null\n", "lora_target_modules"),
        (TRL_PEFT, "lora_target_modules: [null]\n", "lora_target_modules"),
        (TRL_PEFT, "lora_target_modules: [[q_proj], {a: 1}]\n", "lora_target_modules"),
        (AXOLOTL, 'lora_target_linear: "yes"\n', "lora_target_linear"),
        (AXOLOTL, "lora_target_linear: 1\n", "lora_target_linear"),
        (AXOLOTL, "lora_target_linear: false\nlora_target_modules: [q_proj]\n", "lora_target_modules"),
        (TORCHTUNE, '  lora_attn_modules: ["q_proj", "v_proj"]\n  apply_lora_to_mlp: "maybe"\n', "apply_lora_to_mlp"),
        (TORCHTUNE, "  lora_dropout: 1.0\n  lora_rank: -4\n", "model.lora_rank"),
    ],
)
def test_an_odd_lora_key_in_a_launch_config_is_ignored_and_said(tmp_path, base, odd, key):
    (tmp_path / "odd.yaml").write_text(base + odd)
    (tmp_path / "plain.yaml").write_text(base)
    r = cli(*LORA, "--engine-config", "odd.yaml", "--json", where=tmp_path)
    ignored = [x for x in r.stderr.splitlines() if "ignored, a value ffnlab does not model" in x]
    assert ignored and key in ignored[0], r.stderr
    # oracle: the file without the odd key prices the same (an ignored key changes nothing)
    plain = cli(*LORA, "--engine-config", "plain.yaml", "--json", where=tmp_path)
    assert _finetune(r) == _finetune(plain)


def test_a_lora_target_list_and_lora_target_linear_read_as_every_linear_layer(tmp_path):
    (tmp_path / "a.yaml").write_text(AXOLOTL + "lora_target_linear: true\nlora_target_modules: [q_proj, v_proj]\n")
    r = cli(*LORA, "--engine-config", "a.yaml", "--json", where=tmp_path)
    assert "lora_targets all-linear" in r.stderr, r.stderr
    flag = cli(*LORA, "--engine", "hf-trainer", "--lora-targets", "all-linear", "--json", where=tmp_path)
    narrow = cli(*LORA, "--engine", "hf-trainer", "--lora-targets", "qv", "--json", where=tmp_path)
    assert _finetune(r) == _finetune(flag) != _finetune(narrow)


@pytest.mark.parametrize(
    "name, text, fragment",
    [
        ("deep.yaml", "a: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "deeply"),
        ("deep.json", '{"a": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}", "deeply"),
        ("deep.toml", "a = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n", "deeply"),
        ("twice.yaml", "lora_r: 4\nlora_r: 8\nuse_peft: true\n", "duplicate key"),
        ("seqkey.yaml", "? [a, b]\n: 3\n", "yaml"),
        ("bigint.yaml", "per_device_train_batch_size: " + "9" * 5000 + "\n", "4,300 digits"),
        ("bigint.toml", "[training]\nlocal_batch_size = " + "9" * 5000 + "\n", "4,300 digits"),
    ],
)
def test_a_launch_config_refused_alone_is_one_line(tmp_path, name, text, fragment):
    (tmp_path / name).write_text(text)
    refused_untouched(tmp_path, *SIZE, "--engine-config", name, fragment=fragment)


@pytest.mark.parametrize(
    "name, text",
    [
        ("sup.yaml", 'per_device_train_batch_size: "\u00b2"\n'),
        ("long.yaml", f'per_device_train_batch_size: "{"7" * 4400}"\n'),
        ("long.json", f'{{"per_device_train_batch_size": "{"9" * 5000}"}}'),
        ("long.toml", f'[training]\nseq_len = "{"7" * 4400}"\n'),
        ("rank.yaml", 'use_peft: true\nlora_r: "\u00b2"\n'),
    ],
    ids=["superscript", "yaml-4400", "json-5000", "toml-4400", "lora_r-superscript"],
)
def test_a_digit_string_int_cannot_read_is_one_line(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    try:
        r = cli(*SIZE, "--engine-config", name, where=tmp_path)
    except ValueError as e:  # what a user sees as a traceback
        pytest.fail(f"traceback: {e}")
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.code == 0 or (r.code == 2 and len(lines) == 1), r.stderr


# D1's class, more inputs: a number written as a string in digits int reads as another number
# (Arabic-Indic, full-width), in digits it cannot read (circled), longer than any setting needs
# (31 digits, under Python's limit), a fraction in another script's digits or with an exponent
# past +-30: each refused in one line naming the file and the key (mended with one strict reader)
@pytest.mark.parametrize(
    "name, text, key",
    [
        ("arabic.yaml", 'per_device_train_batch_size: "\u0661\u0662"\n', "per_device_train_batch_size"),
        ("wide.json", '{"gradient_accumulation_steps": "\uff18"}', "gradient_accumulation_steps"),
        ("circled.yaml", 'micro_batch_size: "\u2460"\nsequence_len: 512\n', "micro_batch_size"),
        ("long31.toml", f'[training]\nseq_len = "{"1" * 31}"\n', "training.seq_len"),
        ("drop.yaml", 'use_peft: true\nlora_dropout: "\u0660.\u0665"\n', "lora_dropout"),
        ("tiny.yaml", 'use_peft: true\nlora_dropout: "1e-400"\n', "lora_dropout"),
    ],
    ids=["arabic-indic", "full-width", "circled", "31-digits", "dropout-arabic-indic", "dropout-exponent"],
)
def test_a_number_string_not_in_bounded_ascii_is_refused_naming_file_and_key(tmp_path, name, text, key):
    (tmp_path / name).write_text(text, encoding="utf-8")
    line = refused_untouched(tmp_path, *LORA, "--engine-config", name, fragment=key)
    assert line.startswith(f"error: {name}: {key} must be"), line


def test_a_number_string_in_ascii_digits_reads_as_the_number_itself(tmp_path):
    # oracle: the same file with the numbers unquoted (YAML's own integers and floats)
    (tmp_path / "quoted.yaml").write_text(
        'use_peft: true\nlora_r: " 8 "\nlora_dropout: "0.05"\nper_device_train_batch_size: "2"\n'
    )
    (tmp_path / "plain.yaml").write_text(
        "use_peft: true\nlora_r: 8\nlora_dropout: 0.05\nper_device_train_batch_size: 2\n"
    )
    quoted = cli(*LORA, "--engine-config", "quoted.yaml", "--json", where=tmp_path)
    plain = cli(*LORA, "--engine-config", "plain.yaml", "--json", where=tmp_path)
    (tmp_path / "none.yaml").write_text("use_peft: true\n")
    default = cli(*LORA, "--engine-config", "none.yaml", "--json", where=tmp_path)
    read = {k: strict_json(quoted.stdout)["finetune"][k] for k in ("batch", "options")}
    assert read == {k: strict_json(plain.stdout)["finetune"][k] for k in ("batch", "options")}
    assert _finetune(quoted) == _finetune(plain) != _finetune(default)  # the numbers were read, not ignored
    assert read["batch"] == 2 and read["options"]["rank"] == 8 and read["options"]["lora_dropout"] == 0.05


# -- long values in error lines ------------------------------------------------------------------------


def _short_line(r) -> str:  # noqa: ANN001
    line = assert_refused(r)
    assert len(line) < 2000, (len(line), line[:200])
    assert "100,000 characters" in line or "100,001 characters" in line, line[:300]
    return line


@pytest.mark.parametrize(
    "argv",
    [
        ["size", "--from", "llama-3-8b", "--fused-kernels", LONG],
        ["size", "--from", "llama-3-8b", "--weights-dtype", LONG],
        ["size", "--from", "llama-3-8b", "--optimizer", LONG],
        ["size", "--from", "llama-3-8b", "--finetune", "qlora", "--qlora-base", LONG],
        ["fit", "--gpus", LONG, "--gpu", "H100", "llama-3-8b"],
        ["fit", "--gpus", "8", "--gpu", "H100", "--mode", "serve", "--engine", "vllm@" + LONG, "llama-3-8b"],
    ],
    ids=["fused-kernels", "weights-dtype", "optimizer", "qlora-base", "gpus", "vllm-profile"],
)
def test_a_long_value_of_a_new_flag_is_a_short_line(tmp_path, argv):
    _short_line(cli(*argv, where=tmp_path))


@pytest.mark.parametrize(
    "argv",
    [
        [*LORA, "--lora-targets", LONG],
        ["size", "--from", "llama-3-8b", "--engine", LONG],
        ["size", "--from", "llama-3-8b", "--dtype", LONG],
        ["size", "--from", "llama-3-8b", "--zero3", LONG],
        ["size", "--from", "llama-3-8b", "--plot", LONG],
        # D2's class, more inputs: other checks that quoted the value whole (mended with validation.show)
        [*SIZE, "--norm", LONG],
        [*SIZE, "--positions", LONG],
        ["size", "--d-model", "1024", "--ratio", "4", "--rounding", LONG],
        ["train", "--print-config", "--set", LONG],
        ["size", "--from", "llama-3-8b", "--gpu", "H100", "--engine-config", LONG],
        ["perplexity", "gpt2", "--dtype", LONG],
        ["train", LONG, "--print-config"],
    ],
    ids=[
        "lora-targets",
        "engine",
        "dtype",
        "zero3",
        "plot",
        "norm",
        "positions",
        "rounding",
        "train-set",
        "serving-engine-config",
        "perplexity-dtype",
        "train-config-suffix",
    ],
)
def test_a_long_value_in_an_ffnlab_check_is_a_short_line(tmp_path, argv):
    _short_line(cli(*argv, where=tmp_path))


def test_a_long_unknown_engine_version_is_a_short_note(tmp_path):
    r = cli("size", "--from", "llama-3-8b", "--engine", "hf-trainer@" + LONG, where=tmp_path)
    assert r.code == 0, r.stderr[-300:]
    (note,) = [x for x in r.stderr.splitlines() if "is not known" in x]
    assert len(note) < 2000 and "100,011 characters" in note, note[:300]  # "hf-trainer@" + the version


# Every option that takes a value, of every command that needs no run, model download or corpus:
# 100,000 characters, then whatever the command says. A refusal is one line of under 2,000
# characters (the value clipped, with its length: validation.show / clip); a value the command
# takes (a folder name for --print-config, say) is no refusal. Options that reach a check only
# after another flag get the base that reaches it.
def _value_options() -> list[tuple[str, str]]:
    import typer

    from ffnlab.cli import app, register, tidy_help

    register(["--help"])
    root = tidy_help(typer.main.get_command(app))
    found = []
    for name in ("size", "plan", "explain", "audit", "zoo", "claims", "fit", "train"):
        for param in root.commands[name].params:
            if getattr(param, "is_flag", False) or not param.opts or not param.opts[0].startswith("--"):
                continue
            found.append((name, param.opts[0]))
    return found


BASES = {
    "size": ["size", "--from", "llama-3-8b"],
    "plan": ["plan", "7B"],
    "explain": ["explain", "--d-model", "1024", "--d-ff", "4096"],
    "audit": ["audit", "llama-3-8b"],
    "zoo": ["zoo"],
    "claims": ["claims"],
    "fit": ["fit", "llama-3-8b", "--gpu", "H100", "--gpus", "8"],
    "train": ["train", "--print-config"],
}
OPTION_BASES = {  # a check reached only beside another flag
    ("size", "--norm"): SIZE,
    ("size", "--positions"): SIZE,
    ("size", "--rounding"): ["size", "--d-model", "1024", "--ratio", "4"],
    ("size", "--lora-targets"): LORA,
    ("audit", "--lora-targets"): ["audit", "llama-3-8b", "--finetune", "lora"],
    ("fit", "--lora-targets"): ["fit", "llama-3-8b", "--gpu", "H100", "--gpus", "8", "--finetune", "lora"],
    ("size", "--qlora-base"): LORA[:-1] + ["qlora"],
    ("audit", "--qlora-base"): ["audit", "llama-3-8b", "--finetune", "qlora"],
    ("fit", "--qlora-base"): ["fit", "llama-3-8b", "--gpu", "H100", "--gpus", "8", "--finetune", "qlora"],
    ("size", "--engine-config"): ["size", "--from", "llama-3-8b", "--gpu", "H100"],
    ("fit", "--engine-config"): ["fit", "llama-3-8b", "--gpu", "H100", "--gpus", "8", "--mode", "serve"],
}


@pytest.mark.parametrize("command, option", _value_options(), ids=lambda x: x)
def test_every_option_given_a_long_value_says_at_most_a_short_line(tmp_path, command, option):
    r = cli(*OPTION_BASES.get((command, option), BASES[command]), option, LONG, where=tmp_path)
    assert "Traceback" not in r.stderr
    if r.code == 0:
        return
    line = assert_refused(r)
    assert len(line) < 2000, (len(line), line[:300])
    if LONG[:100] in line:  # the value is quoted: clipped, with its length
        assert "100,000 characters" in line, line[:300]


@pytest.mark.parametrize(
    "argv",
    [
        [*LORA, "--lora-alpha", LONG],
        [*LORA, "--lora-dropout", LONG],
        ["size", "--from", "llama-3-8b", "--timeout", LONG],
        ["size", "--from", "llama-3-8b", "--gpu", "H100", "--gpu-memory-utilization", LONG],
        ["zoo", "--x" + LONG],
        [LONG],
        ["capacity", LONG],
        # D3's class, more inputs: a value with spaces, one holding an apostrophe (click quotes it
        # with double quotes), an int option click reads (5,000 digits), an unexpected extra argument
        [*LORA, "--lora-alpha", "a b " * 25_000],
        [*LORA, "--lora-alpha", "it's" + LONG],
        ["generate", "run", "--prompt", "x", "--seed", "9" * 5000],
        ["size", "--from", "llama-3-8b", LONG],
    ],
    ids=[
        "lora-alpha",
        "lora-dropout",
        "timeout",
        "gpu-memory-utilization",
        "no-such-option",
        "no-such-command",
        "no-such-subcommand",
        "spaces",
        "apostrophe",
        "seed-digits",
        "extra-argument",
    ],
)
def test_a_long_value_in_a_usage_error_is_a_short_line(tmp_path, argv):
    line = assert_refused(cli(*argv, where=tmp_path))
    assert len(line) < 2000, (len(line), line[:200])


@pytest.mark.parametrize(
    "argv, head, tail",
    [
        ([*LORA, "--lora-alpha", LONG], "error: Invalid value for '--lora-alpha': 'aaa", "' is not a valid float."),
        (["zoo", "--x" + LONG], "error: No such option: --xaaa", ""),
        ([LONG], "error: No such command 'aaa", "'."),
    ],
    ids=["invalid-value", "no-such-option", "no-such-command"],
)
def test_a_usage_error_keeps_its_words_and_says_the_value_length(tmp_path, argv, head, tail):
    # oracle: click's own message for a short value has the same words around the value
    line = assert_refused(cli(*argv, where=tmp_path))
    assert line.startswith(head) and line.endswith(tail), line[:300]
    assert "characters)" in line and line.count("a") < 300, line[:300]


def test_a_long_run_in_a_message_is_cut_and_the_rest_kept():
    from ffnlab.validation import CLIP, clip_values

    prose = "the engine's flag and ffnlab's default"  # apostrophes of prose: no quoted value
    assert clip_values(prose, quoted=True) == prose
    assert clip_values("x " * 300) == "x " * 300  # a long line of short words is not a value
    cut = clip_values("bad (" + "b" * 5000 + "), see --help")
    assert cut.startswith("bad (bbb") and cut.endswith("... (5,000 characters)), see --help"), cut
    assert len(cut) < CLIP + 60


# -- an unknown engine version's note and a later refusal --------------------------------------------------


@pytest.mark.parametrize(
    "argv, fragment",
    [
        ([*SIZE, "--engine", "hf-trainer@9", "--tp", "3"], "--tp"),
        # D4's class, more inputs (mended by the held notes, ffnlab.cli.notes.say): fit's accelerator,
        # a pipeline deeper than the layers, adapters without --from, audit's --zero
        (["fit", "llama-3-8b", "--gpus", "8", "--gpu", "NOPE", "--engine", "hf-trainer@9"], "accelerator"),
        ([*SIZE, "--engine", "hf-trainer@9", "--pp", "3"], "--pp"),
        ([*SIZE, "--engine", "hf-trainer@9", "--finetune", "lora"], "--from"),
        (["audit", "llama-3-8b", "--engine", "hf-trainer@9", "--zero", "7"], "--zero"),
        ([*SIZE, "--engine", "hf-trainer@9", "--zero", "7"], "--zero"),
        (["audit", "llama-3-8b", "--engine", "hf-trainer@9", "--tp", "3"], "--tp"),
        (["audit", "nosuchmodel-xyz", "--engine", "hf-trainer@9"], "unknown model"),
        (["size", "--from", "nosuchmodel-xyz", "--engine", "hf-trainer@9"], "unknown model"),
        (["size", "--from", "llama-3-8b", "--engine", "hf-trainer@9", "--gpu", "NOPE"], "accelerator"),
        (["size", "--from", "llama-3-8b", "--engine", "unsloth@9"], "lora"),
    ],
    ids=[
        "size-tp",
        "fit-gpu",
        "size-pp",
        "size-lora-no-from",
        "audit-zero",
        "size-zero",
        "audit-tp",
        "audit-unknown",
        "size-from-unknown",
        "gpu",
        "unsloth",
    ],
)
def test_an_unknown_engine_version_refused_later_is_one_line(tmp_path, argv, fragment):
    assert_refused(cli(*argv, where=tmp_path), fragment)


@pytest.mark.parametrize(
    "argv",
    [
        [*SIZE, "--engine", "hf-trainer@9"],
        ["fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", "--engine", "torchtune@9"],
    ],
    ids=["size", "fit"],
)
def test_an_unknown_engine_version_answered_is_said_once(tmp_path, argv):
    # the other side of the held note: a command that answers says it, once
    r = cli(*argv, where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert [x for x in r.stderr.splitlines() if "is not known: priced as" in x and "@9" in x] != []
    assert sum("is not known" in x for x in r.stderr.splitlines()) == 1, r.stderr


# -- fit and the count parser ---------------------------------------------------------------------------

FIT = ["fit", "--gpu", "H100", "llama-3-8b"]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["fit", "--gpus", "9" * 5000, "--gpu", "H100", "llama-3-8b"], "5,000 characters"),
        (["fit", "--gpus", "\u00b2", "--gpu", "H100", "llama-3-8b"], "--gpus"),
        (["fit", "--gpus", "\u0663", "--gpu", "H100", "llama-3-8b"], "--gpus"),
        (["fit", "--gpus", "\uff18", "--gpu", "H100", "llama-3-8b"], "--gpus"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--max-gpus", "\u00b2", "llama-3-8b"], "--max-gpus"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--max-gpus", "1e3", "llama-3-8b"], "--max-gpus"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--mode", "finetune", "llama-3-8b"], "--mode"),
        (["fit", "--gpus", "auto", "--gpu-memory", "80GB", "llama-3-8b"], "--gpu-memory"),
        (["fit", "--gpus", "8", "--gpu", "H100", "--tokens", "1Ti", "llama-3-8b"], "--tokens"),
        (["fit", "--gpus", "8", "--gpu", "H100", "--tokens", "\u0661\u0660", "llama-3-8b"], "--tokens"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--target-tokens-per-s", "100", "llama-3-8b"], "--mode serve"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--top", "9" * 5000, "llama-3-8b"], "--top"),
        (["fit", "--gpus", "16", "--gpu", "H100", "--top", "100000", "llama-3-8b"], "--top"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--max-tp", "9" * 30, "llama-3-8b"], "--max-tp"),
    ],
    ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else None,
)
def test_fit_at_its_edges_is_one_line(tmp_path, argv, fragment):
    assert_refused(cli(*argv, where=tmp_path), fragment)


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "--gpus", "auto", "--gpu", "H100", "--max-gpus", "1", "llama-3-70b"],
        [
            "fit",
            "--gpus",
            "auto",
            "--gpu",
            "H100",
            "--engine",
            "unsloth",
            "--finetune",
            "lora",
            "--fused-kernels",
            "unsloth",
            "llama-3-70b",
        ],
    ],
    ids=["max-gpus-1", "unsloth-70b"],
)
def test_fit_that_does_not_fit_answers_no_in_strict_json(tmp_path, argv):
    r = cli(*argv, "--json", where=tmp_path)
    assert r.code == 1 and r.stderr.strip() == "", (r.code, r.stderr)
    assert strict_json(r.stdout)["model"] == "llama-3-70b"


def test_fit_gpus_with_leading_zeros_is_the_number(tmp_path):
    got = cli("fit", "--gpus", "0008", "--gpu", "H100", "llama-3-8b", "--json", where=tmp_path)
    want = cli("fit", "--gpus", "8", "--gpu", "H100", "llama-3-8b", "--json", where=tmp_path)
    assert got.code == want.code == 0 and strict_json(got.stdout) == strict_json(want.stdout)


@pytest.mark.parametrize(
    "value",
    [
        "1.0001k",
        "1e-3k",
        "-1k",
        "1kk",
        "1_000",
        "1.1",
        "4096.0",
        "4e3",
        "0x1000",
        "\u0664\u0660\u0669\u0666",
        "4096\u200b",
        "1ki",
        "1KI",
        "1K i",
        "inf",
        "nan",
        "1e3k",
        "0.001M",
        "4096.5",
        "1Pi",
        "1P",
    ],
)
def test_a_count_the_parser_does_not_read_is_one_line(tmp_path, value):
    assert_refused(cli("size", "--d-model", value, "--ratio", "4", where=tmp_path), "--d-model")


@pytest.mark.parametrize(
    "value, number", [("1.5k", 1500), ("0.5k", 500), ("1.5Ki", 1536), ("8Ki", 8192), ("+4096", 4096)]
)
def test_a_count_with_a_suffix_is_the_number_it_names(tmp_path, value, number):
    # oracle: the same sizing asked with the plain integer (1.5Ki = 1.5 * 1024, as vLLM reads it)
    got = cli("size", "--d-model", value, "--ratio", "4", "--json", where=tmp_path)
    want = cli("size", "--d-model", str(number), "--ratio", "4", "--json", where=tmp_path)
    assert got.code == want.code == 0 and strict_json(got.stdout) == strict_json(want.stdout)


# -- a trained run (facts corpus, byte level): checkpoints, model.json, capacity ---------------------------

TRAIN_YAML = (
    "model: {d_model: 32, n_layers: 1, n_heads: 2}\n"
    "data: {corpus: 'facts:subjects=24,relations=2,values=4', cache_dir: cache, tokenizer: byte}\n"
    "train: {seq_len: 32, batch_size: 4, max_steps: 4, checkpoint_every: 2, eval_every: 2, eval_tokens: 64,"
    " tensorboard: false, progress: 'off', threads: 1, warmup_steps: 0}\n"
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_run(tmp_path_factory.mktemp("trained"), TRAIN_YAML)


_copy = copy_run


@pytest.mark.parametrize(
    "checkpoint, fragment",
    [
        ("../..", "--checkpoint"),
        ("/etc", "--checkpoint"),
        ("step-2", "no checkpoint"),
        ("step-0000002/", "--checkpoint"),
        ("step-0000002\x00", "--checkpoint"),
        (".", "--checkpoint"),
        ("step-" + "9" * 5000, "5,005 characters"),
        ("step-\u00b2", "--checkpoint"),
    ],
)
def test_an_odd_checkpoint_name_is_one_line_and_touches_nothing(trained, tmp_path, checkpoint, fragment):
    _copy(trained, tmp_path)
    refused_untouched(
        tmp_path, "generate", "run", "--prompt", "hi", "--tokens", "3", "--checkpoint", checkpoint, fragment=fragment
    )
    refused_untouched(tmp_path, "export", "run", "--hf", "hf", "--checkpoint", checkpoint, fragment=fragment)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--prompt", ""], "--prompt"),
        (["--top-k", "0"], "--top-k"),
        (["--seed", "-1"], "--seed"),
        (["--seed", "4294967296"], "--seed"),
        (["--temperature", "nan"], "--temperature"),
        (["--tokens", "1Ki"], "--tokens"),
    ],
)
def test_generate_at_its_edges_is_one_line(trained, argv, fragment):
    assert_refused(
        cli(
            "generate",
            "run",
            "--tokens",
            "3",
            *(["--prompt", "hi"] if "--prompt" not in argv else []),
            *argv,
            where=trained,
        ),
        fragment,
    )


def _edit_json(path: Path, change) -> None:  # noqa: ANN001
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _state(change):  # noqa: ANN001, ANN202
    return lambda run: _edit_json(run / "checkpoints" / "step-0000004" / "state.json", change)


@pytest.mark.parametrize(
    "how, fragment",
    [
        ("state-huge", "state.json"),
        ("state-float-step", "4.0"),
        ("empty-newer-checkpoint", "step-0000006"),
    ],
)
@pytest.mark.parametrize("command", ["generate", "export", "probe"])
def test_a_tampered_checkpoint_is_refused_by_every_reader(trained, tmp_path, how, fragment, command):
    run = _copy(trained, tmp_path)
    if how == "state-huge":
        _state(lambda s: s.update({k: 10**30 for k, v in s.items() if type(v) is int}))(run)
    elif how == "state-float-step":
        _state(lambda s: s.update(step=4.0))(run)
    else:
        (run / "checkpoints" / "step-0000006").mkdir()
    argv = {
        "generate": ["generate", "run", "--prompt", "hi", "--tokens", "3"],
        "export": ["export", "run", "--hf", "hf"],
        "probe": ["probe", "run", "--out", "p", "--tokens", "256", "--corpus", "c.txt"],
    }[command]
    refused_untouched(tmp_path, *argv, fragment=fragment)


def test_a_resume_over_garbage_metrics_is_refused_and_changes_nothing(trained, tmp_path):
    run = _copy(trained, tmp_path)
    with (run / "metrics.jsonl").open("a") as f:
        f.write('garbage\n{"step": NaN}\n\x00\x00\n')
    refused_untouched(tmp_path, "train", "--out", "run", "--resume", fragment="metrics.jsonl")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--layers", "0,0"], "--layers"),
        (["--layers", "0-1"], "--layers"),
        (["--layers", "\u00b2"], "--layers"),
        (["--units", "1e9"], "--units"),
        (["--seq-len", "0"], "--seq-len"),
        (["--tokens", "1"], "--tokens"),
    ],
)
def test_probe_at_its_edges_is_one_line_and_leaves_nothing(trained, tmp_path, argv, fragment):
    _copy(trained, tmp_path)
    refused_untouched(
        tmp_path, "probe", "run", "--out", "new/p", "--tokens", "256", "--corpus", "c.txt", *argv, fragment=fragment
    )


def test_probe_into_a_users_folder_is_refused_even_with_overwrite(trained, tmp_path):
    _copy(trained, tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("k")
    for extra in ([], ["--overwrite"]):
        refused_untouched(
            tmp_path,
            "probe",
            "run",
            "--out",
            "mine",
            "--tokens",
            "256",
            "--corpus",
            "c.txt",
            *extra,
            fragment="not a probe's",
        )


@pytest.mark.parametrize("value", [None, 5, [1], {"a": 1}], ids=["null", "int", "list", "mapping"])
def test_probe_of_a_run_whose_prepared_data_is_not_a_path_is_one_line(trained, tmp_path, value):
    run = _copy(trained, tmp_path)
    _edit_json(run / "model.json", lambda m: m.update(prepared_data=value))
    try:
        r = cli("probe", "run", "--out", "p", "--tokens", "256", "--corpus", "c.txt", where=tmp_path)
    except TypeError as e:
        pytest.fail(f"traceback: {e}")
    assert_refused(r, "model.json")


_READERS = {
    "generate": ["generate", "run", "--prompt", "hi", "--tokens", "3"],
    "export": ["export", "run", "--hf", "hf"],
    "probe": ["probe", "run", "--out", "p", "--tokens", "256", "--corpus", "c.txt"],
    "capacity": ["capacity", "measure", "run"],
}


@pytest.mark.parametrize(
    "change, fragment",
    [
        (lambda m: m.update(prepared_data=None), "prepared_data"),
        (lambda m: m.update(prepared_data=""), "prepared_data"),
        (lambda m: m.update(prepared_data="cache\x00x"), "prepared_data"),
        (lambda m: m.pop("prepared_data"), "prepared_data"),
        (lambda m: m.update(params={"total": 10, "non_embedding": 0}), "params.non_embedding"),
        (lambda m: m.update(params={"total": 10, "non_embedding": 11}), "params.non_embedding"),
        (lambda m: m.update(params={"total": True, "non_embedding": 1}), "params.total"),
        (lambda m: m.update(params="many"), "params"),
        (lambda m: m.update(model=[1]), "model"),
        (lambda m: m.update(model={**m["model"], "d_model": "x"}), "model"),
    ],
    ids=[
        "prepared-null",
        "prepared-empty",
        "prepared-nul",
        "prepared-gone",
        "params-zero",
        "params-above-total",
        "params-bool",
        "params-string",
        "model-list",
        "model-d_model-string",
    ],
)
@pytest.mark.parametrize("command", ["generate", "export", "probe", "capacity"])
def test_every_reader_of_a_tampered_model_json_refuses_it_in_one_line(trained, tmp_path, change, fragment, command):
    # the same model.json reader behind every command: the file and the key named, nothing written
    run = _copy(trained, tmp_path)
    (run / "capacity.json").unlink(missing_ok=True)
    _edit_json(run / "model.json", change)
    line = refused_untouched(tmp_path, *_READERS[command], fragment=fragment)
    assert "model.json" in line


@pytest.mark.parametrize(
    "change, fragment",
    [
        (lambda s: s.update(tokens=1e308), "tokens"),
        (lambda s: s.update(tokens=-1), "tokens"),
        (lambda s: s.update(tokens=[4]), "tokens"),
        (lambda s: s.update(final_val_loss="x"), "final_val_loss"),
        (lambda s: s.update(final_train_loss=-1.0), "final_train_loss"),
        (lambda s: s.update(params={"total": 5, "non_embedding": "5"}), "params.non_embedding"),
        (lambda s: s.update(status=5), "status"),
    ],
    ids=[
        "tokens-float",
        "tokens-negative",
        "tokens-list",
        "loss-string",
        "loss-negative",
        "params-string",
        "status-int",
    ],
)
def test_capacity_measure_of_a_tampered_summary_is_one_line(trained, tmp_path, change, fragment):
    run = _copy(trained, tmp_path)
    (run / "capacity.json").unlink(missing_ok=True)
    _edit_json(run / "summary.json", change)
    line = refused_untouched(tmp_path, "capacity", "measure", "run", fragment=fragment)
    assert "summary.json" in line


def _params(value):  # noqa: ANN001, ANN202
    return lambda run: _edit_json(run / "model.json", lambda m: m.update(params=value))


@pytest.mark.parametrize(
    "how",
    [
        lambda run: _edit_json(run / "model.json", lambda m: m.pop("params")),
        _params([]),
        _params({"total": 0, "non_embedding": 0}),
        _params({"total": "a", "non_embedding": "b"}),
        lambda run: _edit_json(run / "summary.json", lambda s: s.update(tokens="x")),
    ],
    ids=["params-gone", "params-list", "params-zero", "params-strings", "tokens-string"],
)
def test_capacity_measure_of_a_tampered_run_is_one_line(trained, tmp_path, how):
    run = _copy(trained, tmp_path)
    (run / "capacity.json").unlink(missing_ok=True)
    how(run)
    try:
        r = cli("capacity", "measure", "run", where=tmp_path)
    except (KeyError, TypeError, ZeroDivisionError) as e:
        pytest.fail(f"traceback: {type(e).__name__}: {e}")
    assert_refused(r)


@pytest.mark.parametrize(
    "how, fragment",
    [
        (lambda run: (run / "summary.json").write_text("[1, 2]"), "mapping"),
        (lambda run: (run / "summary.json").write_text('{"status": "finished", "tokens": NaN}'), "NaN"),
    ],
    ids=["summary-list", "summary-nan"],
)
def test_capacity_measure_of_an_unreadable_summary_is_one_line(trained, tmp_path, how, fragment):
    run = _copy(trained, tmp_path)
    (run / "capacity.json").unlink(missing_ok=True)
    how(run)
    assert_refused(cli("capacity", "measure", "run", where=tmp_path), fragment)
    assert not (run / "capacity.json").exists()


def test_capacity_measure_of_an_untampered_run_answers(trained, tmp_path):
    run = _copy(trained, tmp_path)
    (run / "capacity.json").unlink(missing_ok=True)
    r = cli("capacity", "measure", "run", "--json", where=tmp_path)
    assert r.code == 0, r.stderr
    got = strict_json(r.stdout)
    # oracle: the run's own files (model.json's parameter counts, summary.json's tokens)
    meta = json.loads((run / "model.json").read_text())
    assert got["params_non_embedding"] == meta["params"]["non_embedding"]
    assert got["tokens"] == json.loads((run / "summary.json").read_text())["tokens"]


# -- train --set refused late, and commands that write: nothing left ----------------------------------------


@pytest.mark.parametrize(
    "setting, fragment",
    [
        ("data.corpus=nosuch.txt", "nosuch.txt"),
        ("data.corpus=/dev/zero", "no *.txt"),
        ("model.d_model=33", "divide"),
        ("data.cache_dir=c.txt", "not a folder"),
        ("data.corpus=facts:subjects=1", "subjects"),
        ("train.device=tpu", "train.device"),
        ("train.seed=" + "9" * 5000, "5,000 characters"),
    ],
)
def test_a_train_refused_late_leaves_no_folder(tmp_path, setting, fragment):
    write_corpus(tmp_path)
    (tmp_path / "t.yaml").write_text(TRAIN_YAML.replace("'facts:subjects=24,relations=2,values=4'", "c.txt"))
    refused_untouched(tmp_path, "train", "t.yaml", "--out", "new/sub/run", "--set", setting, fragment=fragment)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["capacity", "report", "empty", "--out", "newrep/x"], "no sweep.json"),
        (["capacity", "report", "file.txt", "--out", "newrep/x"], "no sweep.json"),
        (["capacity", "run", "golden-quick", "--out", "newcap/y"], "unknown key"),
        (["capacity", "run", "capacity", "--out", "newcap/y", "--workers", "0"], "--workers"),
        (["verify", "--preset", "capacity", "--out", "newver/z"], "capacity run"),
        (["verify", "--preset", "golden-quick ", "--out", "newver/z"], "no sweep spec"),
        (["claims", "--evidence", "file.txt"], "file.txt"),
        (["report", "empty", "--out", "newrep3"], "not a sweep folder"),
        (["size", "--from", "llama-3-8b", "--plot", "a.svg", "--gpu", "NOPE"], "accelerator"),
        (
            ["size", "--from", "llama-3-8b", "--plot", "b.svg", "--finetune", "lora", "--lora-rank", "2000000"],
            "--lora-rank",
        ),
        (["size", "--from", "llama-3-8b", "--plot", "c.svg", "--engine-config", "nosuch.yaml"], "nosuch.yaml"),
        (["size", "--from", "llama-3-8b", "--plot", "g.svgz"], "--plot"),
    ],
    ids=lambda v: " ".join(v)[:50] if isinstance(v, list) else None,
)
def test_a_refused_writer_leaves_nothing(tmp_path, argv, fragment):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    refused_untouched(tmp_path, *argv, fragment=fragment)


def test_fit_plot_with_nothing_fitting_writes_no_figure(tmp_path):
    r = cli("fit", "--gpus", "1", "--gpu", "H100", "--plot", "j.svg", "llama-3-70b", where=tmp_path)
    assert r.code == 1 and "no figure was written" in r.stderr, (r.code, r.stderr)
    assert os.listdir(tmp_path) == []


# -- sweep specs and sweep records -----------------------------------------------------------------------

SPEC = tiny_sweep_spec(2, 4)
HYP = {"id": "x", "sentence": "s", "comparison": "ratio_optimal", "claimed_effect": "big", "effect_source": "y"}


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"margin": -1}, "margin"),
        ({"margin": "x"}, "margin"),
        ({"control": "iso-params", "reference": "a", "tolerance": 0}, "tolerance"),
        ({"claims": ["nope"]}, "claims[0]"),
        ({"claims": "ratio_optimal"}, "claims"),
        ({"reference": "a", "claims": ["ratio_optimal"], "comparisons": {"ratio_optimal": ["zzz"]}}, "comparisons"),
        ({"comparisons": [1]}, "comparisons"),
        (
            {
                "reference": "a",
                "claims": ["ratio_optimal"],
                "comparisons": {"ratio_optimal": ["b"]},
                "hypotheses": [HYP],
            },
            "claimed_effect",
        ),
        ({"decide_at": "zz"}, "decide_at"),
        ({"maturity": "x"}, "maturity"),
        ({"require_mature": "yes"}, "require_mature"),
        ({"arms": [{"name": "a\u202eb", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 2}}]}, "arm name"),
        ({"arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 2}, "lora": {"r": 4}}]}, "lora"),
        ({"name": "n" * 10_000}, "10,000 characters"),
        ({"na\x00me": "x"}, "unknown key"),
        ({"seeds": [0, 0]}, "unique"),
    ],
    ids=lambda v: None if isinstance(v, dict) else v,
)
def test_a_sweep_spec_at_its_edges_is_one_line(tmp_path, changes, fragment):
    (tmp_path / "s.json").write_text(json.dumps({**SPEC, **changes}))
    refused_untouched(tmp_path, "sweep", "s.json", "--estimate", fragment=fragment)


def _fake(tmp_path: Path) -> Path:
    from fake_sweeps import fake_sweep

    fake_sweep(tmp_path / "sw", {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)
    return tmp_path / "sw"


def _record(change):  # noqa: ANN001, ANN202
    return lambda sw: _edit_json(sw / "sweep.json", change)


def _each_run(key, value):  # noqa: ANN001, ANN202
    return _record(lambda r: [x.update({key: value}) for x in r["runs"]])


@pytest.mark.parametrize(
    "how, fragment",
    [
        (_record(lambda r: r.update(runs=None)), "runs"),
        (_record(lambda r: r["runs"].__setitem__(0, {})), "runs[0]"),
        (_each_run("d_model", 0), "d_model"),
        (_record(lambda r: r["runs"][0].update(run="../../../../etc")), "runs[0].run"),
        (_record(lambda r: r.update(vocab_size="x")), "vocab_size"),
        (_record(lambda r: r["runs"][0].update(seed="x")), "seed"),
        (_each_run("train_flops_per_token", 0), "train_flops_per_token"),
        (
            lambda sw: _edit_json(sw / "runs" / "gelu-r4-s0" / "summary.json", lambda s: s.update(final_val_loss="x")),
            "final_val_loss",
        ),
        (lambda sw: (sw / "runs" / "gelu-r4-s0" / "metrics.jsonl").write_text(""), "no eval record"),
    ],
    ids=[
        "runs-null",
        "run-empty",
        "d_model-0",
        "run-dotdot",
        "vocab-str",
        "seed-str",
        "flops-0",
        "loss-str",
        "metrics-empty",
    ],
)
def test_a_tampered_sweep_record_is_one_line(tmp_path, how, fragment):
    how(_fake(tmp_path))
    refused_untouched(tmp_path, "report", "sw", "--out", "rr", fragment=fragment)


def test_a_sweep_record_of_runs_without_parameters_is_one_line(tmp_path):
    _each_run("params_non_embedding", 0)(_fake(tmp_path))
    try:
        r = cli("report", "sw", "--out", "rr", where=tmp_path)
    except TypeError as e:
        pytest.fail(f"traceback: {e}")
    assert_refused(r, "params_non_embedding")


@pytest.mark.parametrize(
    "how",
    [
        _record(lambda r: r["runs"][0].update(params_non_embedding=0)),
        _record(lambda r: r["runs"][-1].update(params_non_embedding=-5)),
        _each_run("params_non_embedding", 0.5),
        _each_run("params_non_embedding", True),
        _each_run("params_non_embedding", None),
    ],
    ids=["first-zero", "last-negative", "all-half", "all-true", "all-null"],
)
def test_a_sweep_record_with_any_run_without_parameters_is_one_line(tmp_path, how):
    # one run of none is enough: its tokens per parameter would be undefined in the maturity and the trends
    how(_fake(tmp_path))
    refused_untouched(tmp_path, "report", "sw", "--out", "rr", fragment="params_non_embedding")


@pytest.mark.parametrize("params", [[], "many", {"total": 0, "non_embedding": 0}, {"total": 9, "non_embedding": 10}])
def test_a_report_over_runs_whose_model_json_has_no_counts_is_made_without_them(tmp_path, params):
    # the maturity warning reads model.json's counts; a run without usable counts is not judged there,
    # so the report is the one made when no run folder has a model.json (the oracle: the same command)
    sw = _fake(tmp_path)
    # the planned steps, which the maturity warning needs before it reads a run folder (kept if recorded)
    _record(lambda r: [x["config"].setdefault("train", {"max_steps": 5}) for x in r["runs"]])(sw)
    want = cli("report", "sw", "--out", "want", where=tmp_path)
    assert want.code == 0, want.stderr[-1500:]
    for run in (sw / "runs").iterdir():
        (run / "model.json").write_text(json.dumps({"params": params}))
    got = cli("report", "sw", "--out", "got", where=tmp_path)
    assert got.code == 0 and "Traceback" not in got.stderr, got.stderr[-1500:]
    assert json.loads((tmp_path / "got" / "claims.json").read_text()) == json.loads(
        (tmp_path / "want" / "claims.json").read_text()
    )


# -- downloads, and two processes at once ----------------------------------------------------------------


def test_nothing_is_downloaded_for_an_estimate_of_a_hub_corpus(tmp_path):
    spec = {**SPEC, "base": {**SPEC["base"], "data": {"corpus": "hf:org/data", "tokenizer": "byte"}}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    p, requests = fake_hub_process(tmp_path, None, "sweep", "s.json", "--estimate")
    assert p.returncode == 0, p.stderr[-1500:]
    assert requests == []


def test_nothing_is_downloaded_to_price_a_zoo_model_under_unsloth(tmp_path):
    p, requests = fake_hub_process(
        tmp_path,
        None,
        "size",
        "--from",
        "llama-3-8b",
        "--finetune",
        "qlora",
        "--engine",
        "unsloth",
        "--fused-kernels",
        "unsloth",
        "--recompute",
        "full",
        "--offload-acts",
    )
    assert p.returncode == 0, p.stderr[-1500:]
    assert requests == []


@pytest.mark.slow  # two subprocesses that import torch and train at once: ~18 s on 2 shared cores
def test_two_trains_on_one_new_folder_one_refused_one_whole(tmp_path):
    write_corpus(tmp_path)
    (tmp_path / "t.yaml").write_text(TRAIN_YAML.replace("'facts:subjects=24,relations=2,values=4'", "c.txt"))
    argv = [sys.executable, "-m", "ffnlab", "train", "t.yaml", "--out", "R"]
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [
        subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    refused = [e for (_, e), p in zip(outs, procs, strict=True) if p.returncode == 2]
    assert codes in ([0, 0], [0, 2]), (codes, [e[-500:] for _, e in outs])
    for e in refused:
        lines = [x for x in e.splitlines() if x.strip()]
        assert len(lines) == 1 and "another ffnlab train is running" in lines[0], e
    # oracle: the finished run's own summary says all 4 steps ran, and its checkpoints load
    assert json.loads((tmp_path / "R" / "summary.json").read_text())["steps"] == 4
    assert cli("generate", "R", "--prompt", "hi", "--tokens", "2", where=tmp_path).code == 0
    assert snapshot(tmp_path / "R")  # the run folder is whole
