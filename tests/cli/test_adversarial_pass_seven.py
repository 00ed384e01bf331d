"""A seventh adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at commands and combinations the first six passes left alone; inputs kept as tests.

The pass threw about 175 inputs, each a call of the CLI (in-process, or a subprocess where a hang,
a race or a Hub was the question), recording exit status, stderr lines, traceback, strict JSON,
the files left and a fake Hub's log:

* data safety (29): two ``train`` started at once on one new folder; a ``train`` refused for a
  corpus with no validation text beside one that runs, both in one new parent folder, with the
  corpus cache inside it (twice); ``$FFNLAB_CACHE/perplexity`` a link out of the cache, a file, a
  dangling link; a dead process's marked temporary in it, beside a ``size --plot`` and a ``fit
  --plot`` figure and in a probe folder (then ``probe --overwrite``); ``capacity run`` with its
  default folder for presets named ``..``, ``.``, the empty string and null; 14 commands refused
  with an output two new folders deep (``export`` to a missing checkpoint and from a missing run,
  ``probe`` with 0 tokens, a missing corpus and an unknown flag, ``report``, ``capacity report`` and
  ``measure``, ``verify``, ``sweep``, ``train`` with a negative lr and 33-wide heads).
* train configs and sweep specs (34): an alias bomb past the limit, one under it, one inside a
  value, a self-containing alias, a merge key; duplicate keys in JSON, in a TOML table given twice,
  quoted and plain in one YAML mapping, a top-level key given twice; 100,000 layers, a seed of
  2**64; arm names near-duplicate (``gelu-r4``/``gelu_r4``, ``a``/``a.``, ``Gelu``/``gelu``,
  ``a-s1`` beside ``a`` with seeds 0 and 1), ``-a``, ``.hidden``, ``.ffnlab-tmp-x``, ``report``,
  a full-width letter, an integer, 100 and 101 characters, twice the same; 5,000 and 10,001 arms;
  seeds -1, 2**64 and ten aliases of one list.
* Hub waits (6, a fake Hub on 127.0.0.1, FFNLAB_TIMEOUT=1): ``perplexity MODEL --dataset org/data``
  against a Hub that stalls, one that answers 500 and one without the dataset (404);
  ``perplexity org/tiny`` (the model fetched) against a stall and a 500.
* depth (28): 100,000-layer config.json of llama, gemma3_text, qwen3, cohere2, qwen2_moe,
  deepseek_v3, llama4_text and an unknown model_type, each to ``audit``, ``size --from`` and
  ``fit --gpus 1``; 1,000,000 layers; 100,000 ``layer_types`` for 2 layers; ``fit --gpus auto --gpu
  H100`` at 1,250 to 12,500 deepseek_v3 layers; ``fit --gpu H100`` at 4,000 to 100,000 llama
  layers; ``size --plot`` at 10,000 and 100,000 layers.
* capacity presets (23): names ``""``, ``.``, a list, null, ``a/b``, an absolute path, a duplicate
  key; exposures 1e300, 1e-300 and a string; budgets ``small``/``SMALL``, a 100-character name, a
  list as model, 100,000 layers, 10,000 budgets; an alias bomb; a sweep with its own name, a list
  as sweep; the shakespeare corpus; facts of 10**9 subjects, 0 values, 10**8-long values; arms
  ``a`` and ``A``.
* numbers and strict JSON (39): ``fit`` with ``--tokens`` 1e30/1e300/1e-300/0.5/999999999T and
  ``--mfu`` 1e-300/1, ``--precision fp8``, ``--target-tokens-per-s`` 1e300/1e-300/1e30 (with
  ``--gpus auto``), ``--reserve`` 1e-300 and just under the card, ``--grad-accum`` 10**9 with and
  without ``--tokens``, ``--lora-rank``, ``--loss-chunks``, ``--prefetch``, ``--recompute-every``,
  ``--max-tp``, ``--top``, ``--max-num-seqs``, ``--max-num-batched-tokens``, ``--block-size`` past
  2**31, ``--gpu-memory-utilization`` and ``--mem-fraction-static`` 1e-300, ``--group-size`` 10**9;
  ``size`` with a million experts, 2**30 wide at ratio 10**6, ratio 1e-6 at width 1; ``plan`` 1e18
  and 1; ``generate`` with prompts not UTF-8 (``\\xff\\xfe``, a cut ``\\xc3``, a surrogate's bytes).

Findings (5 root causes; 4 mended since, below; the one left is a strict xfail below):

1. ``perplexity`` keeps its results under ``$FFNLAB_CACHE/perplexity`` through a plain
   ``mkdir(parents=True)`` and ``write_atomic`` with no root (``training/perplexity.py``
   ``write_cache``), none of the cache's folder helpers: where ``perplexity`` is a link out of the
   cache, the result file is written into the link's target, outside the folder the user named
   (``corpora/`` linked out is refused through ``check_inside``); a file or a dangling link there is
   "error: File exists: ...", after the whole measurement, which does not say why.
2. ``perplexity MODEL --dataset org/data`` calls ``datasets.load_dataset`` outside
   ``netwait.bounded`` (``training/wikitext.py`` ``load_documents``) and ``perplexity`` has no
   ``--timeout``: against a Hub that accepts and never answers it ran past 90 s with
   FFNLAB_TIMEOUT=1; against 500 the library retried 5 times (7 requests, "Retrying in 8s" lines on
   stderr); a dataset the Hub does not have is "Couldn't find any data file at ... Please check your
   connection", not "not found". (The model fetched by id goes through ``bounded``: one line, one
   request; its line then advises ``--timeout``, a flag perplexity lacks.)
3. ``capacity run PRESET`` writes to ``sweeps/NAME`` with the preset's name unchecked
   (``experiments/capacity/design.py`` ``load_preset`` checks the budget names with ``safe_name``,
   not the preset's): ``name: ".."`` puts every budget's sweep and capacity-preset.json in the
   working folder itself (``sweeps/..``), ``name: "."`` or ``""`` into ``sweeps/`` beside the other
   sweeps, ``name: null`` into ``sweeps/None``; the budgets' sweep names (``..-small``) pass.
4. ``fit --gpu CARD`` of a deep model that does not fit prices every layout at every GPU count from
   2x to 4,096 and every one-setting change, and each pricing walks every layer (``sizing/memory/fit.py``
   ``suggestions`` -> ``_price`` -> ``step_timeline``): 476 step timelines for a 100-layer model;
   a 25,000-layer llama config (a quarter of the 100,000 layers ``size`` and ``audit`` take, each
   in about a second) took 55 s with ``--gpus 1 --gpu H100``; a 10,000-layer deepseek_v3 config
   with ``--gpus auto --gpu H100`` ran past 400 s (3,000 layers: 1.5 s, 4,000: 5.0 s, 5,000: 13 s).
5. ``files.write_atomic`` leaves the temporaries a kill strands (``.ffnlab-tmp-NAME-PID-HEX``,
   between its temporary and the rename) to its callers, and only the trainer (on --resume),
   export, corpus preparation and report call ``remove_stale``: a dead process's temporary
   stays for good beside ``size``/``fit --plot``'s figure (``reporting/step_figure.py``), in a probe
   folder (``reporting/probe.py``) and in ``$FFNLAB_CACHE/perplexity``; in a probe folder it is worse,
   ``probe --out p --overwrite`` then refuses p for good ("p holds files that are not a probe's").
   (Planted as such a kill leaves it; each stale one survives the next write of the same file.)

Mended since (plain tests now): 1. every folder ffnlab writes under its cache is made by one
helper, ``files.writable_folder`` (the prepared corpora's folder and ``perplexity/``): a file or a
link to nothing there, or on the way, is one line naming it, a link out of the cache is refused
(``check_inside``), and ``perplexity`` checks its folder before it loads any model; the record is
written with the cache as ``write_atomic``'s root. 2. ``perplexity`` and ``table`` take
``--timeout``; a Hub dataset is fetched in one ``netwait.bounded`` wait
(``wikitext.load_hub_dataset``), the libraries' retry lines silenced: a stall is "did not answer
within 1 s", a 500 "answered 500", each after one request, and a dataset the Hub lacks "not found".
3. the preset's name goes through ``safe_name``, the rule a sweep spec's name is checked by:
``..``, ``.``, ``""`` and null are one line, nothing written. 5. ``files.new_temp_dir`` (under
``write_atomic``, ``staged_dir`` and every other temporary) first clears its folder's temporaries
whose owner process has ended (``files.clear_stale_temporaries``: ``remove_stale``'s rule, ffnlab's
marked or empty ``.ffnlab-tmp-*`` folders only, renamed-aside ones left), and ``probe`` clears them
before judging what its folder holds.

Noted, not broken promises: two trainers on one new folder: one trains, the other is one line
("another ffnlab train is running"); a refused trainer beside a running one in one new parent
(the corpus cache inside it) removed nothing of the other's; ``capacity`` exposures 1e-300 is
accepted and trains one step; arms ``a`` and ``A`` are accepted (as the fifth pass noted for sweeps);
every ``fit`` number above is an answer in strict JSON or one line, ``--mfu 1e-300`` is refused
before any pricing; ``generate`` refuses a prompt that is not UTF-8 in one line naming the byte;
every hostile train config and spec above is one line (the bomb refused in 3 s, 10,001 arms in 8 s);
near-duplicate arm names are distinct arms (their run folders differ on a case-sensitive file
system); an arm named ``.ffnlab-tmp-x`` makes a run folder ``.ffnlab-tmp-x-s0``, which the
temporary-folder pattern (``-PID-HEX`` at the end) does not match, so no cleanup takes it;
``size --n-layers 100000 --plot`` draws every layer's moment: an 84 MB SVG in 10.5 s and 650 MB of
memory (8.7 MB, 1.4 s at 10,000 layers: linear, if of little use to a reader).

Four tests (five cases) are marked slow (subprocesses, a trained and exported model): the CLI
reproduction of finding 1, finding 2 against the fake Hub (a missing dataset, a stall, a 500), and
the two trainers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import SRC, fake_hub_process
from adversarial_cli import strict_json as _strict
from adversarial_cli import write_corpus as _corpus
from fuzz_cli import assert_refused, cli, snapshot

TINY = ["--set", "train.max_steps=2", "--set", "train.seq_len=32", "--set", "model.n_layers=1",
        "--set", "model.d_model=32", "--set", "model.n_heads=2", "--set", "train.progress=off",
        "--set", "train.tensorboard=false", "--set", "train.threads=1"]
FACTS = "facts:subjects=50,relations=2,values=4,value_len=1,style=compact,seed=0"
SWEEP = ("sweep:\n  control: fixed-d-model\n  seeds: [0]\n  base:\n    model: {n_layers: 1, n_heads: 2}\n"
         f"    data: {{corpus: \"{FACTS}\", tokenizer: byte}}\n"
         "    train: {seq_len: 32, batch_size: 4, max_steps: 2, tensorboard: false, progress: 'off', threads: 1}\n"
         "  arms:\n    - {name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}\n")
BUDGET = "budgets:\n  - {name: small, model: {d_model: 32}}\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("adv7")
    _corpus(root)
    r = cli("train", "--corpus", "c.txt", "--out", "run", *TINY, "--set", "data.cache_dir=cache", where=root)
    assert r.code == 0, r.stderr[-2000:]
    return root


@pytest.fixture(scope="module")
def exported(trained) -> Path:
    if not (trained / "hf").exists():
        r = cli("export", "run", "--hf", "hf", where=trained)
        assert r.code == 0, r.stderr[-2000:]
    return trained


def _record(model: str):
    """A perplexity result to cache (the figures do not matter to where it is written)."""
    from ffnlab.training.perplexity import PerplexityRecord

    return PerplexityRecord(model=model, revision="r", dataset="d", documents=1, context=8, dtype="float32",
                            device="cpu")


def _cache_record(monkeypatch, cache: Path) -> Path:
    """Where ``perplexity`` keeps a result under FFNLAB_CACHE=``cache`` (as evaluate.measure_models names it)."""
    import ffnlab.training.perplexity as P

    monkeypatch.setenv("FFNLAB_CACHE", str(cache))
    return P.cache_path(P.cache_root(), "hf-local_0123456789abcdef", P.cache_key(revision="r", dataset="d"))


def _llama(folder: Path, layers: int, width: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "llama", "hidden_size": width, "intermediate_size": 3 * width, "num_attention_heads": 64,
         "num_key_value_heads": 8, "vocab_size": 1000, "num_hidden_layers": layers}))
    return folder


# -- findings -----------------------------------------------------------------------------------

@pytest.mark.slow  # a trained, exported model and the datasets library: ~30 s
def test_perplexity_never_writes_its_cache_through_a_link_out_of_the_cache(exported, tmp_path, monkeypatch):
    (tmp_path / "cache").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "cache" / "perplexity").symlink_to(tmp_path / "outside", target_is_directory=True)
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "d.jsonl").write_text('{"text": "ROMEO: to be or not to be"}\n{"text": "JULIET: wherefore"}\n')
    r = cli("perplexity", str(exported / "hf"), "--dataset", "d.jsonl", "--progress", "off", "--json", where=tmp_path)
    assert r.code in (0, 2) and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert os.listdir(tmp_path / "outside") == []


def test_the_perplexity_cache_writer_refuses_a_link_out_of_the_cache(tmp_path, monkeypatch):
    import ffnlab.training.perplexity as P
    from ffnlab.errors import FfnlabError

    (tmp_path / "cache").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "cache" / "perplexity").symlink_to(tmp_path / "outside", target_is_directory=True)
    path = _cache_record(monkeypatch, tmp_path / "cache")
    with pytest.raises(FfnlabError):  # the CLI's one error line; or, quietly, nothing kept
        P.write_cache(path, _record("m"))
    assert os.listdir(tmp_path / "outside") == []


@pytest.mark.parametrize("what", ["file", "dangling-link"])
def test_an_unusable_perplexity_cache_folder_is_named_as_such(tmp_path, monkeypatch, what):
    import ffnlab.training.perplexity as P
    from ffnlab.errors import FfnlabError

    (tmp_path / "cache").mkdir()
    if what == "file":
        (tmp_path / "cache" / "perplexity").write_text("MINE")
    else:
        (tmp_path / "cache" / "perplexity").symlink_to(tmp_path / "nowhere")
    path = _cache_record(monkeypatch, tmp_path / "cache")
    before = snapshot(tmp_path)
    with pytest.raises(FfnlabError) as e:  # the CLI prints it as its one error line
        P.write_cache(path, _record("m"))
    assert snapshot(tmp_path) == before
    assert "perplexity" in str(e.value) and ("link" in str(e.value) or "not a folder" in str(e.value)), e.value


def test_an_unusable_perplexity_cache_folder_is_refused_before_the_model_is_loaded(tmp_path, monkeypatch):
    import ffnlab.training.perplexity as P

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "perplexity").write_text("MINE")
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    loaded: list[str] = []
    monkeypatch.setattr(P, "load_model", lambda target, **kw: loaded.append(target))
    before = snapshot(tmp_path)
    assert_refused(cli("perplexity", "some/model", "--dataset", "d.jsonl", where=tmp_path), "perplexity cache folder")
    assert loaded == [] and snapshot(tmp_path) == before


def _dead_owners_temporary(folder: Path, name: str) -> Path:
    """What a write of ``folder/name`` killed between ``write_atomic``'s temporary and its rename
    leaves: a marked temporary of a process that has ended, named as ``files.new_temp_dir`` names it."""
    from ffnlab.files import MARK, TEMP_PREFIX

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder.mkdir(parents=True, exist_ok=True)
    stale = folder / f"{TEMP_PREFIX}{name}-{dead.pid}-0123456789ab"
    stale.mkdir()
    (stale / MARK).write_text(f"created by ffnlab, process {dead.pid}; ffnlab may remove this folder\n")
    (stale / "data").write_text("half")
    return stale


STALE = ("finding: write_atomic leaves killed temporaries to its callers; probe, the step figure (--plot) and "
         "perplexity's cache never call remove_stale")


def test_a_killed_perplexity_cache_writes_temporary_is_removed_by_the_next_write(tmp_path, monkeypatch):
    import ffnlab.training.perplexity as P

    path = _cache_record(monkeypatch, tmp_path / "cache")
    stale = _dead_owners_temporary(path.parent, path.name)
    P.write_cache(path, _record("m"))
    assert path.is_file()
    assert not stale.exists(), sorted(os.listdir(path.parent))


def test_a_killed_plot_writes_temporary_is_removed_by_the_next_plot(tmp_path):
    stale = _dead_owners_temporary(tmp_path, "x.svg")
    r = cli("size", "--d-model", "256", "--ratio", "4", "--n-layers", "2", "--plot", "x.svg", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    assert (tmp_path / "x.svg").is_file()
    assert not stale.exists(), sorted(os.listdir(tmp_path))


def test_a_killed_probe_writes_temporary_does_not_block_the_next_probe(trained, tmp_path):
    import shutil

    shutil.copytree(trained / "run", tmp_path / "run", symlinks=True)
    shutil.copytree(trained / "cache", tmp_path / "cache", symlinks=True)  # the run's prepared corpus
    shutil.copy(trained / "c.txt", tmp_path / "c.txt")
    probe = ["probe", "run", "--corpus", "c.txt", "--tokens", "256", "--seq-len", "32", "--out", "p"]
    assert cli(*probe, where=tmp_path).code == 0
    stale = _dead_owners_temporary(tmp_path / "p", "probe.json")
    r = cli(*probe, "--overwrite", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]  # now: "p holds files that are not a probe's; choose another --out"
    assert not stale.exists(), sorted(os.listdir(tmp_path / "p"))


def _fake_hub_call(tmp_path: Path, misbehave: str | None, *argv: str) -> tuple[subprocess.CompletedProcess, list]:
    return fake_hub_process(tmp_path, misbehave, *argv, FFNLAB_TIMEOUT="1")


@pytest.mark.slow  # a subprocess that imports torch and datasets: ~15-35 s
def test_perplexity_of_a_hub_dataset_the_hub_lacks_says_not_found_after_one_request(exported, tmp_path):
    p, requests = _fake_hub_call(tmp_path, None, "perplexity", str(exported / "hf"), "--dataset", "org/data",
                                 "--progress", "off")
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), p.stderr[-2000:]
    assert "not found" in lines[0].lower() or "no dataset" in lines[0].lower(), lines[0]
    assert "connection" not in lines[0].lower(), lines[0]
    assert len(requests) == 1, requests


@pytest.mark.slow  # a subprocess that imports torch and datasets: ~15-35 s each
@pytest.mark.parametrize("misbehave, said", [("stall", "did not answer within 1 s"), ("status", "answered 500")])
def test_perplexity_of_a_hub_dataset_waits_its_timeout_once_and_says_what_happened(exported, tmp_path, misbehave,
                                                                                    said):
    from hub_waits import error_line

    # a Hub that never answers, or answers 500: one request, one line (no "Retrying in 8s"), the --timeout's
    p, requests = _fake_hub_call(tmp_path, misbehave, "perplexity", str(exported / "hf"), "--dataset", "org/data",
                                 "--progress", "off", "--timeout", "1")
    line = error_line(p)  # the wait's progress line, then the one error line
    assert "dataset 'org/data'" in line and said in line, line
    assert "retry" not in p.stderr.lower(), p.stderr
    assert len(requests) == 1, requests


@pytest.mark.parametrize("command", ["perplexity", "table"])
def test_perplexity_and_table_take_a_timeout_for_their_downloads(tmp_path, monkeypatch, command):
    import ffnlab.cli.evaluate as evaluate
    from ffnlab import netwait
    from ffnlab.errors import FfnlabError

    seen: list[float] = []

    def download(*a, **k):  # where the first download would start: note the timeout it would wait
        seen.append(netwait.timeout())
        raise FfnlabError("stopped here")

    monkeypatch.delenv("FFNLAB_TIMEOUT", raising=False)
    monkeypatch.setattr(evaluate, "measure_models", download)
    monkeypatch.setattr(evaluate, "_table_row", download)
    monkeypatch.setattr(netwait, "_timeout", None)  # restored after the test: the CLI sets it for the process
    assert_refused(cli(command, "org/model", "--timeout", "0", where=tmp_path), "--timeout")
    assert seen == []
    argv = [command, "org/model", "--timeout", "2.5"] + (["--measure"] if command == "table" else [])
    assert_refused(cli(*argv, where=tmp_path), "stopped here")
    assert seen == [2.5]


@pytest.mark.parametrize("name", ['".."', '"."', '""', "null"], ids=["dotdot", "dot", "empty", "null"])
def test_capacity_run_writes_only_inside_its_own_sweeps_folder(tmp_path, monkeypatch, name):
    import ffnlab.experiments.capacity.design as design

    (tmp_path / "p.yaml").write_text(f"name: {name}\n" + BUDGET + SWEEP)
    given: list[Path] = []
    monkeypatch.setattr(design, "run_preset", lambda preset, out, **kw: given.append(out) or {})
    r = cli("capacity", "run", "p.yaml", "--workers", "1", "--no-report", where=tmp_path)
    if r.code == 2:  # refused: one line, nothing written
        assert_refused(r, "name")
        assert given == [] and sorted(os.listdir(tmp_path)) == ["p.yaml"]
        return
    assert r.code == 0, r.stderr[-2000:]
    sweeps = (tmp_path / "sweeps").resolve()
    out = (tmp_path / given[0]).resolve()
    assert out.parent == sweeps and out.name not in ("None", ""), out


def test_fit_of_a_deep_model_that_does_not_fit_builds_few_step_timelines(tmp_path, monkeypatch):
    import ffnlab.sizing.memory.parallel as parallel

    built: list[int] = []
    timeline = parallel.step_timeline
    monkeypatch.setattr(parallel, "step_timeline", lambda cfg, *a, **k: built.append(cfg.n_layers) or
                        timeline(cfg, *a, **k))
    model = _llama(tmp_path / "deep", 100, 16384)  # 100 layers of 16,384: no 8 H100s hold its step
    r = cli("fit", str(model), "--gpus", "8", "--gpu", "H100", "--json", where=tmp_path)
    assert r.code == 1, r.stderr[-2000:]  # nothing fits: the suggestions say what would
    _strict(r.stdout)
    # each timeline walks every layer: at the 100,000 layers size takes, 64 of them are ~6.4M layer steps
    assert len(built) <= 64, f"{len(built)} step timelines of {built[0]} layers each"


# -- handled right: a sample --------------------------------------------------------------------

@pytest.mark.slow  # two trainer subprocesses: ~25 s
def test_two_trainers_on_one_new_folder_one_trains_the_other_is_one_line(tmp_path):
    _corpus(tmp_path)
    env = dict(os.environ, PYTHONPATH=SRC)
    argv = [sys.executable, "-m", "ffnlab", "train", "--corpus", "c.txt", "--out", "new/run", *TINY,
            "--set", "data.cache_dir=cache"]
    procs = [subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    done = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(c for c, _, _ in done)
    assert codes in ([0, 0], [0, 2]), [(c, e[-500:]) for c, _, e in done]
    for code, _, err in done:
        if code == 2:
            lines = [x for x in err.splitlines() if x.strip()]
            assert len(lines) == 1 and "another ffnlab train" in lines[0], err
    assert {"config.yaml", "summary.json", "checkpoints"} <= set(os.listdir(tmp_path / "new" / "run"))


@pytest.mark.parametrize("prompt", ["\udcff\udcfe", "RO\udcc3", "\udced\udca0\udc80"],
                         ids=["ff-fe", "cut-c3", "surrogate-bytes"])
def test_generate_refuses_a_prompt_that_is_not_utf8_in_one_line(trained, prompt):
    # what Python makes of argv bytes that are not UTF-8 (surrogateescape)
    before = snapshot(trained / "run")
    line = assert_refused(cli("generate", "run", "--prompt", prompt, "--tokens", "2", where=trained), "--prompt")
    assert "UTF-8" in line
    assert snapshot(trained / "run") == before


def test_the_perplexity_cache_writer_keeps_one_file_in_a_plain_cache_folder(tmp_path, monkeypatch):
    import ffnlab.training.perplexity as P

    path = _cache_record(monkeypatch, tmp_path / "cache")
    P.write_cache(path, _record("m"))
    assert os.listdir(tmp_path / "cache" / "perplexity") == [path.name]
    assert _strict(path.read_text())["model"] == "m"


TRAIN_CONFIGS = {  # file name -> (text, a fragment of the one error line)
    "bomb.yaml": ("l0: &l0 [1]\n" + "".join(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n"
                                             for i in range(1, 9)) + "model: {d_model: 32}\n", "alias"),
    "recursive.yaml": ("model: &m {sub: *m}\n", "contains it"),
    "dup.json": ('{"model": {"d_model": 32, "d_model": 64}}', "duplicate key"),
    "dup-quoted.yaml": ("model: {d_model: 32, 'd_model': 64}\n", "duplicate key"),
    "dup-table.toml": ("[model]\nd_model = 32\n[model]\nn_layers = 2\n", "duplicate key"),
    "layers-1e5.yaml": ("model: {n_layers: 100000, d_model: 32, n_heads: 2}\n", "n_layers"),
    "seed-2e64.yaml": ("train: {seed: 18446744073709551616}\n", "seed"),
}


@pytest.mark.parametrize("name", sorted(TRAIN_CONFIGS))
def test_a_hostile_train_config_is_one_line_and_writes_nothing(tmp_path, name):
    text, fragment = TRAIN_CONFIGS[name]
    (tmp_path / name).write_text(text)
    line = assert_refused(cli("train", name, "--out", "run", "--print-config", where=tmp_path), fragment)
    assert len(line) < 1000
    assert os.listdir(tmp_path) == [name]


def _near_twins_spec(tmp_path, names):
    arms = ", ".join(f"{{name: '{n}', ffn: {{kind: gelu, rule: ratio, ratio: {r}}}}}"
                     for n, r in zip(names, (2, 4), strict=True))
    (tmp_path / "s.yaml").write_text("name: s\ncontrol: fixed-d-model\nseeds: [0, 1]\nbase: {model: {d_model: 32, "
                                     f"n_layers: 1, n_heads: 2}}, data: {{corpus: shakespeare}}}}\narms: [{arms}]\n")


@pytest.mark.parametrize("names", [("gelu-r4", "gelu_r4"), ("a", "a."), ("a-s1", "a")],
                         ids=["dash-underscore", "trailing-dot", "seed-suffix"])
def test_near_duplicate_arm_names_are_estimated_as_two_arms(tmp_path, names):
    _near_twins_spec(tmp_path, names)
    r = cli("sweep", "s.yaml", "--estimate", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    assert all(f"arm {n}: " in r.stdout for n in names), r.stdout[:1000]
    assert os.listdir(tmp_path) == ["s.yaml"]


def test_arm_names_that_differ_only_by_case_are_refused_naming_both(tmp_path):
    """Gelu and gelu would share one folder on a case-insensitive file system (the ninth pass's
    noticed item, refused since): one line naming both, nothing written."""
    _near_twins_spec(tmp_path, ("Gelu", "gelu"))
    line = assert_refused(cli("sweep", "s.yaml", "--estimate", where=tmp_path), "differ only by case")
    assert "'Gelu'" in line and "'gelu'" in line
    assert os.listdir(tmp_path) == ["s.yaml"]


@pytest.mark.parametrize("text, fragment", [
    ('name: [a, b]\n' + BUDGET + SWEEP, "name"),
    ('name: "a/b"\n' + BUDGET + SWEEP, "name"),
    ('name: "/tmp/ffnlab-adv7"\n' + BUDGET + SWEEP, "name"),
    ('name: x\nname: y\n' + BUDGET + SWEEP, "duplicate key"),
    ('name: x\nexposures: 1e300\n' + BUDGET + SWEEP, "exposures"),
    ('name: x\nexposures: "300"\n' + BUDGET + SWEEP, "exposures"),
    ('name: x\n' + BUDGET + SWEEP.replace("sweep:\n", "sweep:\n  name: y\n"), "sweep"),
    ('name: x\n' + BUDGET + "sweep: [1]\n", "sweep"),
], ids=["name-list", "name-slash", "name-absolute", "duplicate-key", "exposures-1e300", "exposures-string",
        "sweep-named", "sweep-list"])
def test_a_hostile_capacity_preset_is_one_line_and_writes_nothing(tmp_path, text, fragment):
    (tmp_path / "p.yaml").write_text(text)
    assert_refused(cli("capacity", "run", "p.yaml", "--workers", "1", "--no-report", where=tmp_path), fragment)
    assert sorted(os.listdir(tmp_path)) == ["p.yaml"]


@pytest.mark.parametrize("argv", [
    ["--tokens", "1e30", "--mfu", "1"], ["--tokens", "999999999T"], ["--reserve", "1e-300"],
    ["--batch", "1", "--grad-accum", "1000000000", "--tokens", "1e30"], ["--loss", "chunked", "--loss-chunks",
                                                                          "1000000000"],
    ["--recompute", "full", "--recompute-every", "1000000000"]],
    ids=["tokens-1e30-mfu-1", "tokens-999999999T", "reserve-1e-300", "grad-accum-1e9", "loss-chunks-1e9",
         "recompute-every-1e9"])
def test_fit_at_extreme_counts_is_strict_json(tmp_path, argv):
    r = cli("fit", "gpt2", "--gpus", "8", "--gpu", "H100", *argv, "--json", where=tmp_path)
    assert r.code in (0, 1), r.stderr[-2000:]
    _strict(r.stdout)


@pytest.mark.parametrize("argv, fragment", [
    (["--gpus", "8", "--gpu", "H100", "--tokens", "1e30", "--mfu", "1e-300"], "--mfu"),
    (["--gpus", "8", "--gpu", "H100", "--tokens", "1e300"], "--tokens"),
    (["--gpus", "8", "--gpu", "H100", "--tokens", "0.5"], "--tokens"),
    (["--gpus", "1", "--mode", "serve", "--target-tokens-per-s", "1e300"], "--gpu"),
    (["--gpus", "1", "--mode", "serve", "--max-num-seqs", "1000000000000"], "--max-num-seqs"),
    (["--gpus", "8", "--gpu", "H100", "--reserve", "79.99999"], "--reserve"),
], ids=["mfu-1e-300", "tokens-1e300", "tokens-half", "target-no-gpu", "max-num-seqs-1e12", "reserve-whole-card"])
def test_fit_past_its_bounds_is_one_line(tmp_path, argv, fragment):
    assert_refused(cli("fit", "gpt2", *argv, "--json", where=tmp_path), fragment)


def test_a_config_at_the_layer_bound_is_sized_and_one_past_it_refused(tmp_path):
    at = _llama(tmp_path / "at", 100_000, 64)
    r = cli("size", "--from", str(at), "--json", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    assert _strict(r.stdout)["d_ff"] == 192
    past = _llama(tmp_path / "past", 1_000_000, 64)
    assert_refused(cli("size", "--from", str(past), "--json", where=tmp_path), "100,000")
