r"""An eighteenth adversarial pass over the CLI's promises (interim: findings J1-J8 below as strict xfails)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from adversarial_cli import FACTS_RUN_YAML, strict_json, tiny_sweep_spec, write_corpus
from fake_sweeps import fake_sweep
from fuzz_cli import assert_refused, cli, snapshot

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


@pytest.mark.xfail(
    strict=True,
    reason="J1: cli/serving_engine.py line 81 keeps a launch line's knobs "
    "'not in (None, False)', and 0.0 == False: a share of 0 becomes the engine's default",
)
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
    assert_refused(_serve(tmp_path, line), "must be > 0")


# -- J2: a launch line's words printed as they are ----------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="J2: cli/serving_engine.py lines 82-83 put the launch line's words and "
    "the file's name in the line as they are, and cli/fit.py _print_lines (lines 173-186) prints "
    "them unescaped (size's table escapes the same line)",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="J3: sizing/serving_engines.py read_engine_command (lines 459-462) bounds "
    "-tp to [1, 2**40] only, and engine_estimate (line 297) takes knobs.tp as it is: no check that "
    "it divides the heads, as size's --tp has",
)
@pytest.mark.parametrize("tp", ["3", str(2**40)])
@pytest.mark.parametrize("argv", [SERVE, SIZE_SERVE], ids=["fit", "size"])
def test_a_launch_lines_tensor_parallel_size_is_checked_as_tp_is(tmp_path, argv, tp):
    # oracle: size --from llama-2-7b --gpu H100 --tp 3 is refused, "--tp 3 must divide n_heads=32"
    # (vLLM refuses such a launch); today the launch line's -tp 3 is priced, "tp 3 ... KV cache:
    # 383,616 tokens", and -tp 2**40 "model weights: 0.00 GiB ... KV cache: 4,494,128 tokens"
    assert_refused(cli(*SIZE_SERVE, "--tp", "3", where=tmp_path), "must divide n_heads=32")
    assert_refused(_serve(tmp_path, f"vllm serve m -tp {tp}", *argv), "n_heads")


# -- J4: a setting given twice, as a dotted key and nested ------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="J4: sizing/memory/engine_config.py _leaves (lines 117-127) writes a dotted "
    "key and the same path nested into one dict entry: the later wins, the other is neither used "
    "nor listed as ignored",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="J5: cli/training.py _run_config (lines 125-129) asks only that config.yaml "
    "is a file; runconfig.read_file (line 244, empty_ok) reads an empty one as {}, the defaults",
)
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
]


@pytest.mark.xfail(
    strict=True,
    reason="J6: experiments/sweep/record.py load_sweep (lines 102-149) checks spec's "
    "name, reference, control, base and scales, and sweep/spec.py saved_spec (line 236) reads the "
    "rest 'not checked again': a margin 'x' meets analyse.py line 210, a tolerance 'x' "
    "reporting/model.py line 349, claims ['nosuch'] spec.py line 403",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="J7: experiments/sweep/record.py load_sweep (line 126) checks each run "
    "entry and never that each run is listed once: the analysis counts a repeated entry again",
)
def test_report_of_a_record_listing_a_run_twice_is_refused(tmp_path):
    # oracle: the spec's seeds [0, 1, 2] and the three gelu-r4 runs in sw/runs; today exit 0 and
    # results.json says gelu-r4 "n_seeds": 4, its mean and interval drawn from four losses
    r, changed = _report_of(tmp_path, lambda rec: rec["runs"].append(dict(rec["runs"][0])))
    assert not isinstance(r, Exception), repr(r)
    assert_refused(r, "gelu-r4-s0")
    assert not changed


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
    [("description", "<img src=x onerror=alert(1)>\x1b[2J"), ("name", "</title><script>x</script>")],
    ids=["description", "name"],
)
def test_report_escapes_a_hostile_spec_text(tmp_path, key, value):
    r, _ = _report_of(tmp_path, lambda rec: rec["spec"].__setitem__(key, value))
    assert not isinstance(r, Exception) and r.code == 0, getattr(r, "stderr", r)
    for f in (tmp_path / "sw" / "report").rglob("*"):
        if f.suffix in (".md", ".html", ".csv", ".json"):  # JSON holds the text as data, escaped by json
            text = f.read_text()
            assert "\x1b" not in text, f.name
            assert f.suffix not in (".md", ".html") or ("<script>" not in text and "<img src" not in text), f.name


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


# -- J8: a launch line's number out of range said to be no number --------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="J8: sizing/serving_engines.py read_engine_command (lines 458-464): the "
    "range check's FfnlabError is a ValueError, caught by the 'except ValueError' meant for int() "
    "and said as 'needs a number'",
)
@pytest.mark.parametrize(
    "line",
    [
        "vllm serve m --block-size 0",
        "vllm serve m -tp 0",
        f"vllm serve m --max-num-seqs {2**41}",
        "python -m sglang.launch_server --model-path m --context-length 0",
    ],
    ids=["block-0", "tp-0", "seqs-2**41", "sglang-context-0"],
)
def test_a_launch_lines_number_out_of_range_is_said_as_out_of_range(tmp_path, line):
    # oracle: the check's own line, "--engine-config: FLAG must be in [1, 2**40], got N" (its text in
    # read_engine_command); today "error: --engine-config: --block-size needs a number, got '0'"
    assert "must be in [1, 2**40]" in assert_refused(_serve(tmp_path, line), "--engine-config")


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
    ("vllm serve m --max-num-seqs " + "9" * 4000, "needs a number"),
    ("vllm serve m --max-num-seqs 'abc", "No closing quotation"),
    ("vllm serve m --max-num-seqs 4\x00", "binary file"),
    ("vllm", "expected a 'vllm serve ...'"),
    ("", "expected a 'vllm serve ...'"),
    ("# nothing", "expected a 'vllm serve ...'"),
    ("llama-server -m x.gguf -c 8192 -np 4", "expected a 'vllm serve ...'"),
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
