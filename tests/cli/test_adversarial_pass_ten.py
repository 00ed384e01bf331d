"""A tenth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at inputs of the classes the first nine passes tried but with values they left
alone; inputs kept as tests.

The pass threw about 300 inputs, each a call of the CLI (in-process, or a subprocess where a Hub,
a trained run or two processes at once were the question), recording exit status, stderr lines,
traceback, strict JSON and the files left:

* numeric flags at their edges (95): ``size`` ``--d-model`` 0/-1/1e308/true/2G, ``--n-layers``
  0/-0/10**26, ``--vocab`` 0/10**20, ``--seq-len`` 0/1e9, ``--batch`` 0/10**12, ``--lora-alpha``
  nan/inf, ``--lora-dropout`` nan/-0.0/1, ``--gpu-memory-utilization`` nan/1.5,
  ``--mem-fraction-static`` inf, ``--zero`` 4/-1, ``--dp`` 0, ``--tp``/``--pp`` 3, ``--ep`` 2 on a
  dense model, ``--top-k`` 0/9 of 8, ``--experts`` -1, ``--n-heads`` 0/3, ``--n-kv-heads`` 0/7/128,
  ``--timeout`` 1e308/true, ``--d-ff`` 0/-5/1e308, ``--multiplier`` 0/-1/1e308/inf/1/0,
  ``--multiple-of`` -256, ``--ratio`` 1e-320/1e308, ``--group-size`` 0, ``--recompute-every``,
  ``--grad-accum``, ``--loss-chunks`` 0, ``--prefetch`` -1, ``--lora-rank`` 0/100,000; ``fit``
  ``--gpu-memory`` 1e-300/1e308/nan/0/-80/0.001, ``--max-gpus`` 0/10**20/1, ``--reserve``
  80/-1/nan, ``--gpus`` 0/-1/AUTO/'auto '/1.5/1k/10**14, ``--gpu`` h100 and ``H100,H200``,
  ``--target-tokens-per-s`` 1e308/nan/0, ``--mfu`` nan/1.5/0, ``--tokens`` 0/-1/1e400, ``--top``
  0, ``--max-tp`` 0/3; ``generate`` ``--tokens`` 0/1e9/1m, ``--temperature`` 1e308, ``--top-k``
  10**20, ``--top-p`` (no such flag).
* ``--engine NAME@VERSION`` (16): ``hf-trainer@`` (empty), ``@99.99``, ``@-1``, ``@nan``,
  ``@1.2.3.4.5.6.7.8.9``, ``@4.0@5``, ``@v4.40``, ``@4.40.0rc1``, 29 digits, ``@4.0`` (no name),
  ``HF-TRAINER@4.40``, ``torchtitan@0``, ``vllm@`` and ``vllm@0.0.0`` (serve), ``hf-trainer`` to
  serve and ``vllm`` to train.
* launch configs (``--engine-config``, 45): torchtitan TOML with 1e308, nan, inf/-inf, 10**29,
  true, a string, 0, -1, a pipeline degree of 10**9, a scalar table, a list mode, selective options
  "0"/"-3"/10**23; TRL/axolotl YAML with an alias bomb, .nan/.inf, 1e308, 0x10/0o7, a
  ``!!python/object/apply`` tag, ``use_peft`` with lora_r -5, "yes"/"false" strings, 10**22, a
  list top level, a list value, sequence_len 1e9; TrainingArguments JSON with NaN, 1e400, 1e308,
  -8, a deepspeed stage 7, deepspeed naming /etc/passwd and /dev/zero, bf16 "true", a number dtype;
  serving lines with ``--max-num-seqs`` 0/nan, ``--block-size`` 10**23, ``--mem-fraction-static``
  inf, ``llama-server -c -5``, ``--max-model-len`` 1e308, an escape sequence, an unterminated quote,
  a 3.4 MB line.
* ``--plot`` (21): a folder (with and without ``--overwrite``), a link to a missing file, a file
  through a link to a folder elsewhere, an existing file, a FIFO (with and without
  ``--overwrite``), a link to a file elsewhere with ``--overwrite``, a dangling link, ``.txt``,
  no suffix, ``.svg`` alone, ``.SVG``, ``.png``, ``.pdf``, /dev/null, /dev/stdout, ``-``, a
  300-byte name, a 4,826-byte path, a name with a newline.
* run folders tampered between steps (31, a real 4-step run, then ``train --resume`` from its
  step 2): config.yaml with d_model changed, a second ``model:`` key, an alias; model.json a
  folder; ``checkpoints/step-4`` a link out; state.json and model.safetensors FIFOs; metrics.jsonl
  a folder; a safetensors header of a 10**12 x 10**12 tensor, of length 2**62, with a dtype
  changed; state.json with NaN, a 31-digit step, ``true``; ``--set train.max_steps``
  1e308/-1/3/6/8 and ``train.lr=nan`` on resume; an unknown checkpoint folder.
* export (8): ``--hf`` a user's folder (with and without ``--overwrite``), one holding a link out
  named config.json, an earlier export whose model.safetensors was made a link to a file
  elsewhere (``--overwrite``), a folder inside an earlier export, a FIFO, a file.
* concurrency (5): two ``export RUN --hf ex`` at once on a new folder (3 rounds), two ``export
  --overwrite`` of one earlier export at once (2 rounds).
* environment (10): FFNLAB_CACHE a file, a link loop, a folder under a link loop, empty, relative;
  XDG_CACHE_HOME a file; HOME unset and HOME empty (``train``), HOME unset with ``~/`` targets.
* sweep specs (34, ``sweep S --estimate``): 10,000 seeds, seeds 0.5/"0"/null/a mapping/a YAML
  ``!!set``, workers 10**9 and 0, threads_per_worker -1, control ``fixed-params``, an unknown
  reference, max_steps 10**12/1e308/``!!float 1e400``/a date, seq_len and batch 10**9, lr true,
  eval_every 0, checkpoint_every -1, d_model 2**40, 10**9 layers, ratio 1e308 and "1/0", corpus
  /etc/shadow, ``hf:``, facts of 10**12 subjects and ``subjects=nan``, tokenizer gpt2, an arm with
  its own model, peak_flops 1e999, a ``!!binary`` key, ratios ``0x_2``, ``1_0``, ``190:20:30``.
* corpora (9, ``train --set data.corpus=...``): facts of 10**12 and -1 subjects, 0 relations,
  values 10**8 characters long, a key twice, ``facts:`` and ``shakespeare:`` (YAML mappings),
  ``hf:org/x:y:z``, ``hf:../../etc``.
* reports (12): ``report`` every 1.5 s while a real 4-run sweep ran (8), then after it; a copy
  of it with a run's summary.json gone; a fake sweep with a summary.json gone, and one saying
  "running".
* the Hub (17, a server on 127.0.0.1 of the pass's own, ``table org/tiny --timeout 3``): a 302 to
  another host and to ``file:///etc/passwd``, a 50 MB config.json, config.json with a layer count
  "2"/true/2.5, a hidden size that is a mapping, ``text_config`` a list, model_type alone, 0 heads,
  vocabulary -1, a key given 100,000 times, an escape in model_type, a width of 2**70, 100,000
  nested lists, a byte-order mark, a 1 MB ``architectures`` string.

Root (``id -u`` 0) ran this pass, so permission-denied folders (chmod 000) were not tried: root
reads and writes through them.

Findings (10 root causes; each a strict xfail below):

1. A launch config's report comes before a later refusal: ``size --d-model 1024 --ratio 4
   --n-layers 2 --engine-config t.toml`` whose ``parallelism.pipeline_parallel_degree`` is 10**9
   prints "engine config t.toml: ...", "  used: ...", then "error: --pp 1000000000 exceeds the 2
   layers" (three lines, exit 2); a TRL YAML with ``use_peft: true`` the same before "--finetune
   needs --from MODEL" (four lines). ``cli/memory_flags.py`` ``apply_engine_config`` checks the
   settings that refuse alone (the fifth pass's mend 3) and then prints, before the command checks
   them against the model.
2. A count read with a suffix is announced before it is refused: ``generate RUN --tokens 1e9``
   (and ``1m``), ``size --d-model 2G`` print "note: --tokens 1e9 read as 1,000,000,000" then the
   error: two lines for exit 2. ``cli/app.py`` (the count parser, its ``note`` at line 194) says
   what it read before the caller's range check.
3. ``fit --gpus auto --mode serve --gpu L4 --target-tokens-per-s 1e308 llama-3-8b`` answers exit
   0 with ``"gpus"`` a 307-digit integer (5.09e306 replicas), far past ``--max-gpus`` (1,024) and
   the 2**40 every other GPU count is held to: ``cli/fit.py`` ``fit`` checks the target only as
   ``number(..., 0, None)`` (no upper bound), and ``gpus_for_target`` scales without one.
4. HOME set but empty (``HOME= ffnlab train t.yaml``, as root): the corpus cache went to
   ``/.cache/ffnlab/corpora``, the file system's root, a folder nobody named (removed by hand after).
   ``training/corpus/prepare.py`` ``default_cache_dir`` takes ``Path.home()``, which is ``/`` for
   an empty HOME (``os.path.expanduser``), where an unset HOME falls back to the password file.
5. A config.json over the 16 MiB limit is downloaded whole before it is refused: a Hub sending a
   50 MB config.json had all 50,000,174 bytes fetched into the HF cache (48 MB left there), then
   "config.json ... is 50,000,174 bytes, over the 16,777,216-byte limit for such files" (the test
   sends 20 MB). The HEAD's
   Content-Length (sent first) is not read against the limit: ``sizing/hf/hub.py``
   ``_download_unbounded`` calls ``hf_hub_download`` and ``files.py`` checks the size after.
6. ``--engine NAME@`` with an empty version is taken silently as no version: ``size ... --engine
   hf-trainer@`` and ``fit ... --mode serve --engine vllm@`` answer exit 0 with no note, where
   ``vllm@0.0.0`` is refused and ``hf-trainer@nan`` says "is not known: priced as ..."
   (``sizing/memory/engines.py`` and ``sizing/serving_engines.py``: ``spec.partition("@")`` with
   an empty version read as none given).
7. A refused ``train --resume`` rewrites the run's files and then says it wrote nothing: with
   ``model.json`` replaced by a folder, resuming from step 2 of a 4-step run ends "error: cannot
   write run/model.json (Is a directory); nothing was written", exit 2, but metrics.jsonl has lost
   its step-3 and step-4 records and config.yaml was rewritten (``ratio: 4`` became ``ratio:
   4.0``). ``training/trainer.py`` ``_write_run_files`` drops the metrics past the restored step
   and writes config.yaml before model.json, with no check that model.json can be written first;
   the "nothing was written" is ``files.py``'s default for the one failed write.
8. A ``facts:`` corpus has no bound on ``value_len``: ``train t.yaml --set
   data.corpus=facts:subjects=24,relations=2,values=4,value_len=10000000`` ran past 10 and 15 s (and
   ``value_len=100000000`` past 60 s) with no line, killed by hand (nothing left behind).
   ``training/corpus/facts.py`` ``check_spec`` computes ``len(ALPHABET) ** value_len`` (a bignum
   of millions of digits: ``parse_spec`` alone took 1.6 s at 10**6 and more than 58 s at 10**7)
   before any bound; subjects, relations and values are bounded.
9. ``report SW --out rr`` of a sweep with a run not finished (its summary.json absent, as a live
   sweep has it) is refused in one line, but leaves ``rr/`` holding ``.ffnlab-report``, a folder it
   made (each of the six tries refused so against a live 4-run sweep left one, ``rep3`` ... ``rep8``).
   ``experiments/reporting/report.py`` ``write_report`` calls ``claim_report_dir`` (folder and
   marker) before ``analyse``, which raises the "have not finished" refusal.
10. ``report`` takes a run whose summary.json says ``"status": "running"`` as finished: exit 0, a
   full report. ffnlab writes summary.json only at a run's end, so this is a tampered (or foreign)
   run folder; ``sweep`` itself reruns such a run (``experiments/sweep/run.py`` checks ``status ==
   "finished"`` and the step count), but ``experiments/sweep/runs.py`` (the analysis' loader) reads
   only that the file parses.

Per class, inputs tried / failures: numeric flags 95 / 5 (C2 4, C3 1); ``--engine`` versions 16 / 2
(C6); launch configs 45 / 2 (C1); ``--plot`` 21 / 0; tampered run folders 31 / 1 (C7); export 8 / 0;
concurrency 5 / 0; environment 10 / 1 (C4); the Hub 17 / 1 (C5); sweep specs 34 / 0 (10,000 seeds:
``--estimate`` 18 s, linear: 7 s at 2,500, 10.6 s at 5,000); corpora 9 / 1 (C8); reports of a
sweep while it ran or half-written 12 / 9 (C9 8: six live tries, the copy, the fake; C10 1).

Noted, not broken promises: YAML 1.1 reads a spec's ratio ``190:20:30`` as 685,230 (sexagesimal),
``0x_2`` as 2 and ``1_0`` as 10, each accepted (the command line refuses ``1_0``); ``hf:../../etc``
is looked for as a local folder (``/tmp/etc``: "Couldn't find any data file"), read only;
``facts:subjects=24,subjects=25`` takes the last; a checkpoint FIFO reads "state.json is missing"
(no wait, one line); ``export --hf FIFO`` says "exists and is not empty"; XDG_CACHE_HOME a file is
"Not a directory: .../ffnlab" (terse, one line); a ``--plot`` through a link to a folder writes
there (the user named that path); ``--plot`` FIFO or link with ``--overwrite`` replaces the FIFO or
link itself, not what it leads to; two exports at once: one wrote, the other refused, nothing lost;
a Hub redirect to another host or to file: is one line, not followed.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import SRC, fake_hub_process, ffnlab_process, strict_json, tiny_sweep_spec, train_run, write_corpus
from fake_hub import FakeHub
from fuzz_cli import assert_refused, cli, refused_untouched, snapshot
from hub_waits import LLAMA

SIZE = ["size", "--d-model", "1024", "--ratio", "4", "--n-layers", "2"]
FIT_H100 = ["fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100"]


# -- numeric flags at their edges: one line each -------------------------------------------------------


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["size", "--d-model", "1e308", "--ratio", "4"], "--d-model"),
        (["size", "--d-model", "true", "--ratio", "4"], "--d-model"),
        (["size", "--d-model", "4096", "--ratio", "4", "--n-layers", "-0"], "--n-layers"),
        (["size", "--d-model", "4096", "--ratio", "4", "--n-layers", "9" * 26], "--n-layers"),
        (["size", "--d-model", "4096", "--ratio", "4", "--vocab", "9" * 20], "--vocab"),
        ([*SIZE, "--gpu", "H100", "--seq-len", "1e9"], "--seq-len"),
        ([*SIZE, "--gpu", "H100", "--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
        ([*SIZE, "--gpu", "H100", "--mem-fraction-static", "inf"], "--mem-fraction-static"),
        ([*SIZE, "--zero", "-1"], "--zero"),
        ([*SIZE, "--experts", "8", "--top-k", "9"], "--top-k"),
        ([*SIZE, "--n-heads", "64", "--n-kv-heads", "128"], "n_kv_heads"),
        (["size", "--d-model", "4096", "--ratio", "4", "--timeout", "1e308"], "--timeout"),
        (["size", "--d-model", "4096", "--ratio", "4", "--timeout", "true"], "--timeout"),
        (["size", "--d-model", "4096", "--rule", "llama", "--multiplier", "1/0"], "multiplier"),
        (["size", "--d-model", "4096", "--ratio", "1e-320"], "ratio"),
        ([*SIZE, "--prefetch", "-1", "--zero", "3"], "--prefetch"),
        (["fit", "--gpus", "auto", "--gpu-memory", "1e-300", "llama-3-8b"], "--gpu-memory"),
        (["fit", "--gpus", "auto", "--gpu-memory", "nan", "llama-3-8b", "--json"], "--gpu-memory"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--max-gpus", "9" * 20, "llama-3-8b"], "--max-gpus"),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--reserve", "nan", "llama-3-8b"], "--reserve"),
        (["fit", "--gpus", "-1", "--gpu", "H100", "llama-3-8b"], "--gpus"),
        (["fit", "--gpus", "1.5", "--gpu", "H100", "llama-3-8b"], "--gpus"),
        (["fit", "--gpus", "auto", "--gpu", "H100,H200", "llama-3-8b"], "H100,H200"),
        (
            ["fit", "--gpus", "auto", "--mode", "serve", "--gpu", "L4", "--target-tokens-per-s", "nan", "llama-3-8b"],
            "--target-tokens-per-s",
        ),
        (["fit", "--gpus", "auto", "--gpu", "H100", "--mfu", "nan", "--tokens", "1T", "llama-3-8b"], "--mfu"),
        (["fit", "--gpus", "8", "--gpu", "H100", "--tokens", "1e400", "llama-3-8b"], "--tokens"),
        (["fit", "--gpus", "8", "--gpu", "H100", "--mode", "serve", "--engine", "vllm@0.0.0", "llama-3-8b"], "0.0.0"),
        (["fit", "--gpus", "8", "--gpu", "H100", "--mode", "train", "--engine", "vllm", "llama-3-8b"], "--engine"),
        ([*SIZE, "--engine", "HF-TRAINER@4.40"], "--engine"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_a_number_or_name_at_its_edge_is_one_line(tmp_path, argv, fragment):
    assert_refused(cli(*argv, where=tmp_path), fragment)


@pytest.mark.parametrize("version", ["99.99", "-1", "nan", "1.2.3.4.5.6.7.8.9", "4.0@5", "v4.40", "9" * 29])
def test_an_unknown_engine_version_is_priced_as_the_newest_and_says_so(tmp_path, version):
    r = cli(*SIZE, "--engine", f"hf-trainer@{version}", "--json", where=tmp_path)
    assert r.code == 0, r.stderr
    assert f"hf-trainer@{version} is not known" in r.stderr
    # oracle: the same sizing asked of the engine with no version (its newest known) outright
    newest = cli(*SIZE, "--engine", "hf-trainer", "--json", where=tmp_path)
    got, want = strict_json(r.stdout)["model"], strict_json(newest.stdout)["model"]
    assert got["training_memory_bytes"] == want["training_memory_bytes"]


@pytest.mark.parametrize(
    "argv",
    [
        [*SIZE, "--engine", "hf-trainer@"],
        ["fit", "--gpus", "8", "--gpu", "H100", "--mode", "serve", "--engine", "vllm@", "llama-3-8b"],
        [*SIZE, "--engine", "torchtitan@"],
        ["fit", "--gpus", "8", "--gpu", "H100", "--engine", "trl@", "llama-3-8b"],
        ["size", "--from", "llama-3-8b", "--gpu", "H100", "--engine", "sglang@"],
        ["size", "--from", "llama-3-8b", "--gpu", "H100", "--engine", "vllm@"],
    ],
    ids=["hf-trainer@", "vllm@", "torchtitan@", "fit-trl@", "size-sglang@", "size-vllm@"],
)
def test_an_empty_engine_version_is_refused_or_said(tmp_path, argv):
    r = cli(*argv, where=tmp_path)
    assert r.code == 2 or "not known" in r.stderr, (r.code, r.stderr)
    if r.code == 2:  # one line that names the engine as given
        assert argv[argv.index("--engine") + 1] in assert_refused(r, "--engine")


@pytest.mark.parametrize(
    "argv",
    [
        ["size", "--d-model", "2G", "--ratio", "4"],
        ["fit", "--gpus", "2Ti", "--gpu", "H100", "llama-3-8b"],
        ["size", "--d-model", "1024", "--ratio", "4", "--n-layers", "1G"],
        ["fit", "--gpus", "auto", "--gpu", "H100", "--max-gpus", "2Ti", "llama-3-8b"],
    ],
    ids=["d-model-2G", "gpus-2Ti", "n-layers-1G", "max-gpus-2Ti"],
)
def test_a_count_with_a_suffix_past_its_bound_is_one_line(tmp_path, argv):
    assert_refused(cli(*argv, where=tmp_path))


@pytest.mark.parametrize(
    "argv, fragment",
    [
        # "the serving engine's flags ... ignored", then the refusal of --offload
        ([*FIT_H100, "--gpu-memory-utilization", "0.8", "--offload", "optimizer"], "--offload"),
        # "--seq-len 8k read as 8,000", then the refusal of the engine
        ([*FIT_H100, "--seq-len", "8k", "--engine", "nope"], "--engine"),
    ],
    ids=["ignored-flag-then-offload", "count-then-engine"],
)
def test_a_note_said_before_a_later_refusal_is_not_printed(tmp_path, argv, fragment):
    assert_refused(cli(*argv, where=tmp_path), fragment)


def test_notes_of_an_answer_that_is_no_are_kept(tmp_path):
    # exit 1 is an answer, not a refusal: the note on how --seq-len was read is still said
    r = cli("fit", "llama-3-70b", "--gpus", "1", "--gpu", "L4", "--seq-len", "8k", "--json", where=tmp_path)
    assert r.code == 1 and strict_json(r.stdout)["verdict"] != "fits", r.stderr
    assert "note: --seq-len 8k read as 8,000" in r.stderr.splitlines()


def test_a_count_with_a_suffix_in_bounds_is_noted_once(tmp_path):
    r = cli("fit", "--gpus", "1k", "--gpu", "H100", "llama-3-8b", "--json", where=tmp_path)
    assert r.code == 0 and strict_json(r.stdout)["gpus"] == 1000, r.stderr
    assert [x for x in r.stderr.splitlines() if x.strip()] == ["note: --gpus 1k read as 1,000"]


def test_a_throughput_target_past_any_gpu_count_is_refused(tmp_path):
    r = cli(
        "fit",
        "--gpus",
        "auto",
        "--mode",
        "serve",
        "--gpu",
        "L4",
        "--target-tokens-per-s",
        "1e308",
        "llama-3-8b",
        "--json",
        where=tmp_path,
    )
    if r.code == 0:  # an answer must stay within the GPU counts ffnlab allows elsewhere (--max-gpus, 2**40)
        assert strict_json(r.stdout)["target"]["gpus"] <= 1024, "a 307-digit GPU count"
    else:
        assert_refused(r, "--target-tokens-per-s")


SERVE_L4 = ["fit", "llama-3-8b", "--gpus", "auto", "--mode", "serve", "--gpu", "L4", "--json"]


def test_a_throughput_target_past_max_gpus_is_a_no(tmp_path):
    r = cli(*SERVE_L4, "--target-tokens-per-s", "1e6", where=tmp_path)
    assert r.code == 1, r.stderr  # as --gpus auto finding nothing within --max-gpus
    t = strict_json(r.stdout)["target"]
    # oracle: the replicas are the target over one replica's speed, rounded up; past the default 1,024
    assert t["replicas"] == math.ceil(1e6 / t["tokens_per_s_per_replica"])
    assert t["gpus"] == t["replicas"] * t["gpus_per_replica"] > t["max_gpus"] == 1024
    assert t["reached"] is False
    wider = cli(*SERVE_L4, "--target-tokens-per-s", "1e6", "--max-gpus", str(t["gpus"]), where=tmp_path)
    assert wider.code == 0, wider.stderr
    w = strict_json(wider.stdout)["target"]
    assert (w["gpus"], w["reached"]) == (t["gpus"], True)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        # 1e15 tokens/s at about 219 per H100 replica: about 4.6e12 GPUs, past 2**40 whatever --max-gpus says
        ([*FIT_H100, "--mode", "serve", "--target-tokens-per-s", "1e15", "--max-gpus", str(2**40)], "--target"),
        ([*FIT_H100, "--mode", "serve", "--target-tokens-per-s", "100", "--max-gpus", "0"], "--max-gpus"),
        ([*FIT_H100, "--mode", "serve", "--target-tokens-per-s", "100", "--max-gpus", "2Ti"], "--max-gpus"),
    ],
    ids=["target-past-2**40", "max-gpus-0", "max-gpus-2Ti"],
)
def test_a_throughput_target_past_any_gpu_count_or_limit_is_one_line(tmp_path, argv, fragment):
    assert_refused(cli(*argv, where=tmp_path), fragment)


def test_a_throughput_target_within_reach_is_answered(tmp_path):
    r = cli(
        "fit",
        "--gpus",
        "auto",
        "--mode",
        "serve",
        "--gpu",
        "L4",
        "--target-tokens-per-s",
        "100",
        "llama-3-8b",
        "--json",
        where=tmp_path,
    )
    assert r.code == 0, r.stderr
    t = strict_json(r.stdout)["target"]
    # oracle: the replicas are the target over one replica's speed, rounded up
    assert t["replicas"] == math.ceil(100 / t["tokens_per_s_per_replica"])
    assert t["gpus"] == t["replicas"] * t["gpus_per_replica"]


# -- launch configs ----------------------------------------------------------------------------------

ODD_LAUNCH = {
    "t1.toml": "[training]\nlocal_batch_size = 1e308\nseq_len = 4096\n",
    "t2.toml": "[training]\nlocal_batch_size = nan\n",
    "t3.toml": "[training]\nlocal_batch_size = inf\nseq_len = -inf\n",
    "t5.toml": "[training]\nlocal_batch_size = true\n",
    "t7.toml": "[parallelism]\ntensor_parallel_degree = 0\ndata_parallel_shard_degree = -1\n",
    "t10.toml": "training = 5\n",
    "t11.toml": '[activation_checkpoint]\nmode = ["full"]\n',
    "t13.toml": '[activation_checkpoint]\nmode = "selective"\nselective_ac_option = "-3"\n',
    "y1.yaml": "per_device_train_batch_size: .nan\nmax_length: .inf\n",
    "y3.yaml": "per_device_train_batch_size: 0x10\ngradient_accumulation_steps: 0o7\n",
    "y6.yaml": 'per_device_train_batch_size: 2\nbf16: "yes"\ngradient_checkpointing: "false"\n',
    "y9.yaml": "per_device_train_batch_size: [1, 2]\n",
    "j2.json": '{"per_device_train_batch_size": 1e400}',
    "j4.json": '{"per_device_train_batch_size": -8}',
    "j5.json": '{"per_device_train_batch_size": 8, "deepspeed": {"zero_optimization": {"stage": 7}}}',
    "j7.json": '{"per_device_train_batch_size": 8, "deepspeed": "/dev/zero"}',
}


@pytest.mark.parametrize("name", sorted(ODD_LAUNCH))
def test_an_odd_launch_value_is_ignored_and_said(tmp_path, name):
    (tmp_path / name).write_text(ODD_LAUNCH[name])
    plain = cli(*SIZE, "--json", where=tmp_path)
    r = cli(*SIZE, "--engine-config", name, "--json", where=tmp_path)
    assert r.code == 0 and "Traceback" not in r.stderr, r.stderr
    assert "ignored" in r.stderr, r.stderr
    # oracle: the command line alone; a launch config prices memory, never the parameter count
    assert strict_json(r.stdout)["model"]["params"] == strict_json(plain.stdout)["model"]["params"]


@pytest.mark.parametrize(
    "name, text, fragment",
    [
        ("t4.toml", "[training]\nlocal_batch_size = 99999999999999999999999999999\n", "--batch"),
        (
            "t14.toml",
            '[activation_checkpoint]\nmode = "selective"\nselective_ac_option = "99999999999999999999999"\n',
            "--recompute-every",
        ),
        (
            "bomb.yaml",
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True))
            + "h: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n",
            "alias",
        ),
        ("y4.yaml", 'per_device_train_batch_size: !!python/object/apply:os.system ["touch PWNED"]\n', "yaml"),
        ("y7.yaml", "per_device_train_batch_size: 10000000000000000000000\n", "--batch"),
        ("y8.yaml", "- 1\n- 2\n", "mapping"),
        ("j1.json", '{"per_device_train_batch_size": NaN}', "NaN"),
    ],
)
def test_a_launch_config_refused_alone_is_one_line(tmp_path, name, text, fragment):
    (tmp_path / name).write_text(text)
    assert_refused(cli(*SIZE, "--engine-config", name, "--json", where=tmp_path), fragment)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    "name, text, fragment",
    [
        ("t8.toml", "[parallelism]\npipeline_parallel_degree = 1000000000\n", "--pp"),
        ("y5.yaml", "per_device_train_batch_size: 2\nlora_r: -5\nuse_peft: true\n", "--finetune"),
    ],
)
def test_a_launch_config_refused_against_the_model_is_one_line(tmp_path, name, text, fragment):
    (tmp_path / name).write_text(text)
    assert_refused(cli(*SIZE, "--engine-config", name, "--json", where=tmp_path), fragment)


PEFT_YAML = "per_device_train_batch_size: 2\nlora_r: 8\nuse_peft: true\n"


@pytest.mark.parametrize(
    "argv, name, text, fragment",
    [
        (["size", "--from", "llama-3-8b"], "t8.toml", "[parallelism]\npipeline_parallel_degree = 1000000000\n", "--pp"),
        ([*FIT_H100, "--mode", "serve"], "y.yaml", PEFT_YAML, "--mode serve"),
        ([*FIT_H100, "--tokens", "1T"], "y.yaml", PEFT_YAML, "--tokens"),
    ],
    ids=["size-from-pp", "fit-serve-peft", "fit-tokens-peft"],
)
def test_a_launch_config_refused_by_the_command_is_one_line(tmp_path, argv, name, text, fragment):
    (tmp_path / name).write_text(text)
    assert_refused(cli(*argv, "--engine-config", name, "--json", where=tmp_path), fragment)


def test_a_launch_config_report_still_comes_after_the_notes_before_it(tmp_path):
    (tmp_path / "t.toml").write_text("[training]\nlocal_batch_size = 2\n")
    r = cli(*SIZE, "--seq-len", "4k", "--engine-config", "t.toml", "--json", where=tmp_path)
    assert r.code == 0, r.stderr
    lines = r.stderr.splitlines()
    # in the order said: the count as the parser read it, then the file's report, its key used
    assert lines[0] == "note: --seq-len 4k read as 4,000"
    assert lines[1].startswith("engine config t.toml:") and "local_batch_size = 2" in lines[2]
    plain = cli(*SIZE, "--json", where=tmp_path)
    assert strict_json(r.stdout)["model"]["params"] == strict_json(plain.stdout)["model"]["params"]


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("vllm serve gpt2 --max-num-seqs 0\n", "--max-num-seqs"),
        ("vllm serve gpt2 --max-num-seqs nan\n", "--max-num-seqs"),
        ("vllm serve gpt2 --block-size 99999999999999999999999\n", "--block-size"),
        ('vllm serve "unterminated\n', ""),
    ],
)
def test_an_odd_serving_line_is_one_line(tmp_path, line, fragment):
    (tmp_path / "v.txt").write_text(line)
    assert_refused(
        cli(
            "fit",
            "--gpus",
            "1",
            "--gpu",
            "H100",
            "--mode",
            "serve",
            "--engine-config",
            "v.txt",
            "llama-3-8b",
            where=tmp_path,
        ),
        fragment,
    )


# -- --plot into odd places ---------------------------------------------------------------------------

PLOT = [*SIZE, "--gpu", "H100", "--plot"]


def _plot_places(tmp_path: Path) -> Path:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    (here / "dir.svg").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "keep.svg").write_text("keep")
    (here / "exist.svg").write_text("keep")
    (here / "to-missing.svg").symlink_to(elsewhere / "target.svg")
    (here / "to-keep.svg").symlink_to(elsewhere / "keep.svg")
    (here / "dangling.svg").symlink_to("/nonexistent/x.svg")
    os.mkfifo(here / "fifo.svg")
    return here


@pytest.mark.parametrize(
    "name, overwrite, fragment",
    [
        ("dir.svg", False, "folder"),
        ("dir.svg", True, "folder"),
        ("to-missing.svg", False, "exists"),
        ("exist.svg", False, "exists"),
        ("fifo.svg", False, "exists"),
        ("dangling.svg", False, "exists"),
        ("x.txt", False, ".svg"),
        (".svg", False, ".svg"),
        ("x.pdf", False, ".svg"),
        ("a" * 300 + ".svg", False, "long"),
        ("/".join(["b" * 200] * 25) + ".svg", False, "long"),
    ],
)
def test_a_plot_into_an_odd_place_is_refused_and_touches_nothing(tmp_path, name, overwrite, fragment):
    here = _plot_places(tmp_path)
    refused_untouched(tmp_path, *PLOT, f"here/{name}", *(["--overwrite"] if overwrite else []), fragment=fragment)
    assert (tmp_path / "elsewhere" / "keep.svg").read_text() == "keep"
    assert not list(here.glob(".ffnlab-tmp-*"))


@pytest.mark.parametrize("target", ["/dev/null", "/dev/stdout", "-"])
def test_a_plot_to_a_device_is_refused(tmp_path, target):
    assert_refused(cli(*PLOT, target, where=tmp_path), "--plot")


@pytest.mark.parametrize("name", ["fifo.svg", "to-keep.svg"])
def test_a_plot_over_a_fifo_or_link_replaces_the_name_not_what_it_leads_to(tmp_path, name):
    here = _plot_places(tmp_path)
    r = cli(*PLOT, f"here/{name}", "--overwrite", where=tmp_path)
    assert r.code == 0, r.stderr
    p = here / name
    assert p.is_file() and not p.is_symlink() and p.read_text().lstrip().startswith("<")
    assert (tmp_path / "elsewhere" / "keep.svg").read_text() == "keep"
    assert not list(here.glob(".ffnlab-tmp-*"))


def test_a_plot_named_with_a_newline_is_written_where_named(tmp_path):
    r = cli(*PLOT, "new\nline.svg", where=tmp_path)
    assert r.code == 0, r.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["new\nline.svg"]


# -- a trained run tampered between steps -------------------------------------------------------------

TRAIN_YAML = (
    "model: {d_model: 32, n_layers: 1, n_heads: 2}\n"
    "data: {corpus: c.txt, cache_dir: cache, tokenizer: byte}\n"
    "train: {seq_len: 32, batch_size: 4, max_steps: 4, checkpoint_every: 2, eval_every: 2, eval_tokens: 64,"
    " tensorboard: false, progress: 'off', threads: 1, warmup_steps: 0}\n"
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_run(tmp_path_factory.mktemp("trained"), TRAIN_YAML)


def _at_step_two(trained: Path, tmp_path: Path) -> Path:
    """A copy of the run as a crash after its step-2 checkpoint leaves it (step 4's checkpoint and
    the summary.json of a finished run removed)."""
    run = tmp_path / "run"
    shutil.copytree(trained / "run", run, symlinks=True)
    shutil.rmtree(run / "checkpoints" / "step-0000004")
    (run / "summary.json").unlink()
    (tmp_path / "cache").symlink_to(trained / "cache")
    (tmp_path / "c.txt").symlink_to(trained / "c.txt")
    return run


def _safetensors_header(path: Path, change) -> None:  # noqa: ANN001
    b = path.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8 : 8 + n])
    change(header)
    hb = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(hb)) + hb + b[8 + n :])


def _first_tensor(h: dict) -> dict:
    return h[next(k for k in h if k != "__metadata__")]


TAMPER = {
    "d_model-changed": (
        lambda r: (r / "config.yaml").write_text((r / "config.yaml").read_text().replace("d_model: 32", "d_model: 64")),
        "shape",
    ),
    "config-model-twice": (
        lambda r: (r / "config.yaml").open("a").write("\nmodel: {d_model: 32, n_layers: 100000, n_heads: 2}\n"),
        "duplicate",
    ),
    "model.json-a-folder": (lambda r: ((r / "model.json").unlink(), (r / "model.json").mkdir()), "model.json"),
    # the same class: a name a later file of the run goes to, refused after the earlier ones were changed
    "model.json-a-full-folder": (
        lambda r: (
            (r / "model.json").unlink(),
            (r / "model.json").mkdir(),
            (r / "model.json" / "keep").write_text("k"),
        ),
        "model.json",
    ),
    "metrics-gone-model.json-a-folder": (
        lambda r: ((r / "model.json").unlink(), (r / "model.json").mkdir(), (r / "metrics.jsonl").unlink()),
        "model.json",
    ),
    "metrics-a-folder": (lambda r: ((r / "metrics.jsonl").unlink(), (r / "metrics.jsonl").mkdir()), "metrics"),
    "state-a-fifo": (
        lambda r: (
            (r / "checkpoints/step-0000002/state.json").unlink(),
            os.mkfifo(r / "checkpoints/step-0000002/state.json"),
        ),
        "state.json",
    ),
    "weights-a-fifo": (
        lambda r: (
            (r / "checkpoints/step-0000002/model.safetensors").unlink(),
            os.mkfifo(r / "checkpoints/step-0000002/model.safetensors"),
        ),
        "model.safetensors",
    ),
    "huge-shape": (
        lambda r: _safetensors_header(
            r / "checkpoints/step-0000002/model.safetensors", lambda h: _first_tensor(h).update(shape=[10**12, 10**12])
        ),
        "unpickles",
    ),
    "header-2**62": (
        lambda r: (r / "checkpoints/step-0000002/model.safetensors").write_bytes(
            struct.pack("<Q", 2**62) + (r / "checkpoints/step-0000002/model.safetensors").read_bytes()[8:]
        ),
        "unpickles",
    ),
    "optim-dtype": (
        lambda r: _safetensors_header(
            r / "checkpoints/step-0000002/optim.safetensors", lambda h: _first_tensor(h).update(dtype="F64")
        ),
        "unpickles",
    ),
    "state-nan": (
        lambda r: (r / "checkpoints/step-0000002/state.json").write_text('{"step": 2, "format": 1, "extra": NaN}'),
        "NaN",
    ),
    "step-31-digits": (lambda r: _json_edit(r / "checkpoints/step-0000002/state.json", step=10**30), "step"),
    "step-true": (lambda r: _json_edit(r / "checkpoints/step-0000002/state.json", step=True), "step"),
}


def _json_edit(path: Path, **changes) -> None:  # noqa: ANN003
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


@pytest.mark.parametrize(
    "how", sorted(TAMPER)
)
def test_a_run_tampered_between_steps_is_refused_and_left_as_it_was(trained, tmp_path, how):
    run = _at_step_two(trained, tmp_path)
    change, fragment = TAMPER[how]
    change(run)
    before = snapshot(run)
    assert_refused(cli("train", "--out", "run", "--resume", where=tmp_path), fragment)
    assert snapshot(run) == before  # oracle: the tree before; a refusal that says "nothing was written" keeps it
    assert not list(run.rglob(".ffnlab-tmp-*"))


def test_a_write_of_several_files_says_nothing_was_written_only_when_true(tmp_path, monkeypatch):
    from ffnlab.errors import FfnlabError
    from ffnlab.files import write_all_atomic

    for name in "abc":
        (tmp_path / name).write_text("old")
    (tmp_path / "d").mkdir()
    with pytest.raises(FfnlabError, match=r"d \(.*\); nothing was written"):
        write_all_atomic({tmp_path / "a": "new", tmp_path / "d": "new"})
    assert [(tmp_path / n).read_text() for n in "abc"] == ["old"] * 3
    real, calls = os.replace, []

    def replace_then_fail(src, dst):  # noqa: ANN001, ANN202 - the second rename fails (a disk gone)
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace_then_fail)
    # oracle: the files themselves, read back after the failure
    with pytest.raises(FfnlabError, match=r"cannot write .*b \(Input/output error\); a already replaced"):
        write_all_atomic({tmp_path / "a": "new", tmp_path / "b": "new", tmp_path / "c": "new"})
    assert [(tmp_path / n).read_text() for n in "abc"] == ["new", "old", "old"]
    assert not list(tmp_path.glob(".ffnlab-tmp-*"))


def test_a_checkpoint_link_out_is_refused_and_what_it_leads_to_is_kept(trained, tmp_path):
    run = _at_step_two(trained, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (run / "checkpoints" / "step-0000004").symlink_to(outside)
    assert_refused(cli("train", "--out", "run", "--resume", where=tmp_path), "not written by ffnlab")
    assert [p.name for p in outside.iterdir()] == ["keep.txt"] and (outside / "keep.txt").read_text() == "keep"


def test_an_untampered_run_resumes_to_its_last_step(trained, tmp_path):
    run = _at_step_two(trained, tmp_path)
    r = cli("train", "--out", "run", "--resume", where=tmp_path)
    assert r.code == 0, r.stderr
    # oracle: the checkpoint written now is step 4 of the saved config's 4 steps
    assert json.loads((run / "checkpoints/step-0000004/state.json").read_text())["step"] == 4


@pytest.mark.parametrize(
    "setting, fragment",
    [
        ("train.max_steps=1e308", "max_steps"),
        ("train.max_steps=-1", "max_steps"),
        ("train.max_steps=3", "max_steps"),
        ("train.lr=nan", "lr"),
    ],
)
def test_a_resume_with_an_odd_setting_is_refused(trained, tmp_path, setting, fragment):
    run = _at_step_two(trained, tmp_path)
    before = snapshot(run)
    assert_refused(cli("train", "--out", "run", "--resume", "--set", setting, where=tmp_path), fragment)
    assert snapshot(run) == before


@pytest.mark.parametrize("argv, fragment", [(["--tokens", "0"], "--tokens"), (["--top-p", "nan"], "--top-p")])
def test_generate_past_its_bounds_is_one_line(trained, argv, fragment):
    assert_refused(cli("generate", "run", "--prompt", "hi", *argv, where=trained), fragment)


@pytest.mark.parametrize("tokens", ["1e9", "1m"])
def test_generate_tokens_with_a_suffix_past_the_bound_is_one_line(trained, tokens):
    assert_refused(cli("generate", "run", "--prompt", "hi", "--tokens", tokens, where=trained), "--tokens")


# -- export over odd folders, and two at once ---------------------------------------------------------


@pytest.mark.parametrize(
    "how, overwrite, fragment",
    [
        ("user-file", False, "not empty"),
        ("user-file", True, "not an earlier export"),
        ("link-named-config", True, "config.json"),
        ("weights-link-out", True, "model.safetensors"),
        ("fifo", False, "hf"),
        ("file", True, "not a folder"),
    ],
)
def test_export_over_an_odd_folder_is_refused_and_loses_nothing(trained, tmp_path, how, overwrite, fragment):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    hf = tmp_path / "hf"
    if how == "user-file":
        hf.mkdir()
        (hf / "notes.txt").write_text("mine")
    elif how == "link-named-config":
        hf.mkdir()
        (hf / "config.json").symlink_to(outside)
    elif how == "weights-link-out":
        assert cli("export", str(trained / "run"), "--hf", str(hf), where=tmp_path).code == 0
        (hf / "model.safetensors").unlink()
        (hf / "model.safetensors").symlink_to(outside / "keep.txt")
    elif how == "fifo":
        os.mkfifo(hf)
    else:
        hf.write_text("f")
    refused_untouched(
        tmp_path,
        "export",
        str(trained / "run"),
        "--hf",
        "hf",
        *(["--overwrite"] if overwrite else []),
        fragment=fragment,
    )
    assert (outside / "keep.txt").read_text() == "keep"


def test_two_exports_at_once_on_one_new_folder_lose_nothing(trained, tmp_path):
    argv = [sys.executable, "-m", "ffnlab", "export", str(trained / "run"), "--hf", "ex"]
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [
        subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    codes = sorted(c for c, _ in results)
    assert codes in ([0, 0], [0, 2]), results
    for _code, err in results:
        assert "Traceback" not in err, err
    # oracle: the folder holds exactly what a lone export writes
    alone = tmp_path / "alone"
    assert cli("export", str(trained / "run"), "--hf", str(alone)).code == 0
    assert sorted(p.name for p in (tmp_path / "ex").iterdir()) == sorted(p.name for p in alone.iterdir())
    assert (tmp_path / "ex" / "model.safetensors").read_bytes() == (alone / "model.safetensors").read_bytes()


# -- the environment ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "how, fragment", [("file", "not a folder"), ("loop", "symbolic link"), ("under-loop", "symbolic links")]
)
def test_an_odd_ffnlab_cache_is_one_line_and_writes_nothing(tmp_path, monkeypatch, how, fragment):
    write_corpus(tmp_path)
    (tmp_path / "t.yaml").write_text(
        TRAIN_YAML.replace(", cache_dir: cache", "").replace("max_steps: 4", "max_steps: 1")
    )
    (tmp_path / "cachefile").write_text("x")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    cache = {"file": "cachefile", "loop": "loop1", "under-loop": "loop1/sub"}[how]
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / cache))
    refused_untouched(tmp_path, "train", "t.yaml", "--out", "r", fragment=fragment)


def test_an_empty_home_does_not_put_the_cache_at_the_root(monkeypatch):
    from ffnlab.training.corpus.prepare import default_cache_dir

    monkeypatch.setenv("HOME", "")
    monkeypatch.delenv("FFNLAB_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    # oracle: os.path.expanduser("~") is "/" for an empty HOME, a folder no user named
    assert os.path.expanduser("~") == "/"
    try:
        where = default_cache_dir()
    except Exception as e:  # a refusal naming HOME would keep the promise
        assert "HOME" in str(e)
        return
    assert Path(where).parent != Path("/.cache"), where


class _NoHome:
    """The password database's entry for a user whose home is the root (or who has none)."""

    def __init__(self, home: str | None) -> None:
        self.home = home

    def __call__(self, uid: int) -> object:
        if self.home is None:
            raise KeyError(uid)
        return type("pw", (), {"pw_dir": self.home})()


@pytest.mark.parametrize("home_env", ["", None], ids=["HOME-empty", "HOME-unset"])
@pytest.mark.parametrize("passwd", ["/", None, "relative"], ids=["passwd-root", "passwd-none", "passwd-relative"])
def test_no_usable_home_is_refused_where_a_folder_would_come_from_it(monkeypatch, home_env, passwd):
    import pwd

    from ffnlab.errors import FfnlabError
    from ffnlab.files import check_hf_home, expand_user
    from ffnlab.training.corpus.prepare import default_cache_dir

    for name in ("FFNLAB_CACHE", "XDG_CACHE_HOME", "HF_HOME"):
        monkeypatch.setenv(name, "")  # empty: read as unset
    if home_env is None:
        monkeypatch.delenv("HOME")
    else:
        monkeypatch.setenv("HOME", home_env)
    monkeypatch.setattr(pwd, "getpwuid", _NoHome(passwd))
    # oracle: with no home folder, every folder derived from one is a folder nobody named
    with pytest.raises(FfnlabError, match="HOME.*FFNLAB_CACHE"):
        default_cache_dir()
    with pytest.raises(FfnlabError, match="HOME.*HF_HOME"):
        check_hf_home()
    with pytest.raises(FfnlabError, match="HOME"):
        expand_user("~/runs/x")


def test_an_empty_home_reads_as_unset_for_tilde_and_the_caches(monkeypatch):
    import pwd

    from ffnlab.files import check_hf_home, expand_user
    from ffnlab.training.corpus.prepare import default_cache_dir

    monkeypatch.setattr(pwd, "getpwuid", _NoHome("/home/someone"))
    monkeypatch.setenv("HOME", "")
    monkeypatch.setenv("FFNLAB_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", "rel")  # relative: ignored (the XDG rule)
    monkeypatch.setenv("HF_HOME", "")
    # oracle: the XDG rule (empty = unset) and the password database's home
    assert expand_user("~/a/b") == Path("/home/someone/a/b")
    assert expand_user("~//a") == Path("/home/someone/a")
    assert default_cache_dir() == Path("/home/someone/.cache/ffnlab")
    check_hf_home()
    assert "HF_HOME" not in os.environ and "XDG_CACHE_HOME" not in os.environ and "HOME" not in os.environ


def test_train_with_no_usable_home_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    import pwd

    write_corpus(tmp_path)
    text = TRAIN_YAML.replace(", cache_dir: cache", "").replace("max_steps: 4", "max_steps: 1")
    (tmp_path / "t.yaml").write_text(text)
    for name in ("HOME", "FFNLAB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, "")
    monkeypatch.setattr(pwd, "getpwuid", _NoHome("/"))
    root_cache = Path("/.cache").exists()
    refused_untouched(tmp_path, "train", "t.yaml", "--out", "r", fragment="FFNLAB_CACHE")
    assert Path("/.cache").exists() == root_cache


# -- the Hub -----------------------------------------------------------------------------------------



def _hub(tmp_path: Path, hub: FakeHub, *argv: str, config: bytes = b"") -> subprocess.CompletedProcess:
    """``ffnlab ARGV`` against ``hub`` on 127.0.0.1 serving ``config`` as org/tiny's config.json."""
    p, _ = fake_hub_process(tmp_path, hub.misbehave, *argv, "--timeout", "3",
                            repos={"org/tiny": {"main": {"config.json": config}}}, hub=hub)
    return p


def _one_line(p: subprocess.CompletedProcess, fragment: str) -> str:
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-2000:])
    errors = [x for x in lines if x.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], p.stderr[-2000:]
    assert fragment in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize("location", ["http://localhost:1/elsewhere/config.json", "file:///etc/passwd"])
def test_a_hub_redirect_to_another_host_is_one_line_and_not_followed(tmp_path, location):
    _one_line(_hub(tmp_path, FakeHub(misbehave="redirect", location=location), "table", "org/tiny"), "302")


@pytest.mark.parametrize(
    "config, fragment",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested"),
        (b"\xef\xbb\xbf" + json.dumps(LLAMA).encode(), "byte-order mark"),
        (json.dumps({**LLAMA, "intermediate_size": 2**70}).encode(), "intermediate_size"),
        (json.dumps({**LLAMA, "model_type": "\x1bred"}).encode(), "model_type"),
    ],
)
def test_an_odd_hub_config_is_one_line(tmp_path, config, fragment):
    _one_line(_hub(tmp_path, FakeHub(), "table", "org/tiny", config=config), fragment)


def test_a_hub_config_over_the_limit_is_refused_before_it_is_downloaded(tmp_path):
    hub = FakeHub()
    _one_line(_hub(tmp_path, hub, "table", "org/tiny", config=json.dumps({**LLAMA, "pad": "x" * 20_000_000}).encode()),
              "limit")
    # oracle: the limit the refusal names; what was fetched past it is disk the user did not ask for
    assert hub.sent < 16 * 2**20, f"{hub.sent:,} bytes fetched"


# -- sweep specs and corpora -------------------------------------------------------------------------

SPEC = tiny_sweep_spec(2)


@pytest.mark.parametrize(
    "where, key, value, fragment",
    [
        ((), "seeds", [0.5], "seeds[0]"),
        ((), "seeds", ["0"], "seeds[0]"),
        ((), "seeds", [None], "seeds[0]"),
        ((), "seeds", {"a": 1}, "seeds"),
        ((), "workers", 10**9, "workers"),
        ((), "threads_per_worker", -1, "threads_per_worker"),
        ((), "control", "fixed-params", "iso-params"),
        ((), "reference", "nope", "nope"),
        (("base", "train"), "max_steps", 10**12, "max_steps"),
        (("base", "train"), "max_steps", 1e308, "max_steps"),
        (("base", "train"), "seq_len", 10**9, "seq_len"),
        (("base", "train"), "lr", True, "lr"),
        (("base", "train"), "eval_every", 0, "eval_every"),
        (("base", "train"), "checkpoint_every", -1, "checkpoint_every"),
        (("base", "model"), "d_model", 2**40, "d_model"),
        (("base", "model"), "n_layers", 10**9, "n_layers"),
        (("base", "data"), "tokenizer", "gpt2", "tokenizer"),
        (("base", "data"), "corpus", "facts:value_len=10000000", "value_len"),  # C8's class, in a spec
    ],
)
def test_a_sweep_spec_at_its_edges_is_one_line(tmp_path, where, key, value, fragment):
    import copy

    spec = copy.deepcopy(SPEC)
    d = spec
    for k in where:
        d = d[k]
    d[key] = value
    (tmp_path / "s.json").write_text(json.dumps(spec))
    refused_untouched(tmp_path, "sweep", "s.json", "--estimate", fragment=fragment)


@pytest.mark.parametrize(
    "value, fragment",
    [("!!float 1e400", "max_steps"), ("2001-01-01", "max_steps")],
    ids=["float-1e400", "a-date"],
)
def test_a_yaml_typed_value_in_a_spec_is_one_line(tmp_path, value, fragment):
    text = json.dumps(SPEC).replace('"max_steps": 1', f'"max_steps": {value}')
    (tmp_path / "s.yaml").write_text(text)
    refused_untouched(tmp_path, "sweep", "s.yaml", "--estimate", fragment=fragment)


@pytest.mark.parametrize(
    "corpus, fragment",
    [
        ("facts:subjects=1000000000000,relations=2,values=4,value_len=1", "subjects"),
        ("facts:subjects=24,relations=0,values=4,value_len=1", "relations"),
        ("facts:subjects=-1", "subjects"),
        # the same class, each parameter at its edge: refused by check_spec at once
        ("facts:value_len=0", "value_len"),
        ("facts:value_len=33", "value_len"),
        ("facts:value_len=" + "9" * 4000, "value_len"),
        ("facts:values=1000001,value_len=5", "values"),
        ("facts:values=37,value_len=1", "values"),
        ("facts:seed=-1", "seed"),
        ("facts:seed=" + "9" * 30, "seed"),
        ("facts:holdout=" + "9" * 30, "holdout"),
        ("facts:subjects=1000000,relations=9", "8,000,000 facts"),
        ("facts:relations=9,style=bio", "relations"),
    ],
)
def test_a_facts_corpus_past_its_bounds_is_refused(tmp_path, corpus, fragment):
    import time

    from ffnlab.errors import FfnlabError
    from ffnlab.training.corpus.facts import parse_spec

    t0 = time.perf_counter()
    with pytest.raises(FfnlabError, match=fragment):
        parse_spec(corpus)
    assert time.perf_counter() - t0 < 0.5  # oracle: no bank built, no big integer computed


def test_a_facts_corpus_at_its_bounds_is_accepted():
    from ffnlab.training.corpus.facts import MAX_FACTS, MAX_VALUE_LEN, parse_spec

    # oracle: the documented limits (docs/capacity.md) are inclusive
    assert parse_spec(f"facts:value_len={MAX_VALUE_LEN},values=1000000").value_len == 32
    assert parse_spec("facts:subjects=1000000,relations=8").subjects * 8 == MAX_FACTS
    assert parse_spec(f"facts:seed={2**63 - 1}").seed == 2**63 - 1


def test_a_facts_corpus_with_ten_million_character_values_is_refused_fast(tmp_path):
    (tmp_path / "t.yaml").write_text(TRAIN_YAML.replace("max_steps: 4", "max_steps: 1"))
    corpus = "data.corpus=facts:subjects=24,relations=2,values=4,value_len=10000000"
    try:
        p = ffnlab_process(["train", "t.yaml", "--out", "r", "--set", corpus], tmp_path, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("no answer within 10 s (facts.check_spec computes 26 ** value_len)")
    one = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and len(one) == 1 and "value_len" in one[0], p.stderr[-1000:]


def test_a_facts_corpus_past_its_bounds_is_refused_before_torch_loads(tmp_path):
    # oracle: sys.modules; the spec is checked with the run config, before any heavy import
    (tmp_path / "t.yaml").write_text(TRAIN_YAML.replace("max_steps: 4", "max_steps: 1"))
    code = (
        "import sys\nfrom ffnlab.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
        "    print('torch' in sys.modules, e.code, file=sys.stderr)\n"
    )
    argv = ["train", "t.yaml", "--out", "r", "--set", "data.corpus=facts:value_len=33"]
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": SRC})
    assert p.stderr.splitlines()[-1] == "False 2", p.stderr[-1000:]
    assert not (tmp_path / "r").exists()


# -- a report of a half-written sweep ----------------------------------------------------------------


@pytest.mark.parametrize(
    "how", ["summary-gone", "status-running", "steps-short", "steps-a-string", "status-absent"]
)
def test_a_report_of_a_half_written_sweep_is_refused(tmp_path, how):
    from fake_sweeps import fake_sweep

    fake_sweep(tmp_path / "sw", {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)
    summary = tmp_path / "sw" / "runs" / "gelu-r2-s1" / "summary.json"
    if how == "summary-gone":
        summary.unlink()
    else:  # oracle: the trainer writes summary.json once, at the end: status "finished", steps == max_steps
        saved = json.loads(summary.read_text())
        changed = {"status-running": {"status": "running"}, "steps-short": {"steps": saved["steps"] - 1},
                   "steps-a-string": {"steps": str(saved["steps"])}, "status-absent": {}}[how]
        summary.write_text(json.dumps({k: v for k, v in {**saved, **changed}.items()
                                       if not (how == "status-absent" and k == "status")}))
    assert_refused(cli("report", "sw", "--out", "rr", where=tmp_path), "not finished")


@pytest.mark.parametrize("out", ["new", "default", "empty", "nested"])
def test_a_refused_report_of_a_half_written_sweep_leaves_no_folder(tmp_path, out):
    from fake_sweeps import fake_sweep

    fake_sweep(tmp_path / "sw", {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)
    (tmp_path / "sw" / "runs" / "gelu-r2-s1" / "summary.json").unlink()
    (tmp_path / "empty").mkdir()
    argv = {"new": ["--out", "rr"], "default": [], "empty": ["--out", "empty"], "nested": ["--out", "a/b/rr"]}[out]
    # oracle: the tree before the call; a refusal adds no folder (rr, sw/report, a/) and no marker
    refused_untouched(tmp_path, "report", "sw", *argv, fragment="not finished")
