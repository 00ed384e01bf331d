"""Fuzzing every CLI command with bad input: one ``error:`` line, exit 2, nothing written.

Hypothesis draws numbers (out of range, non-finite, thousands of digits, not numbers at all),
strings, paths and file contents (binary, empty, BOM, deeply nested, huge, truncated, Latin-1,
UTF-16, NaN, 5,000-digit integers) for size, plan, explain, audit, zoo, claims, train, export,
sweep, report and verify. Each example runs in a fresh folder that must look exactly as before
afterwards. The CLI runs in-process (``ffnlab.cli.main``) so the suite stays fast; examples are
derandomised so CI sees the same inputs every time.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from fuzz_cli import cli, refused_untouched
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ffnlab.sizing.kinds import FFN_KINDS as KINDS

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- strategies ---------------------------------------------------------------------------------

NASTY_NUMBER_TEXT = ["1e5000", "-1e5000", "1e-5000", "1.0e5000", "nan", "inf", "-inf", "1/0", "0/0", "8/3/2",
                     "9" * 5000, "", " ", "0x10", "1e", "--4", "٣", "4" * 40, "1e31", "+-1"]
NOT_A_NUMBER = st.text(alphabet=st.characters(blacklist_categories=("Nd", "Cs"), blacklist_characters="\x00"),
                       max_size=12)
BAD_NUMBER_TEXT = st.sampled_from(NASTY_NUMBER_TEXT) | NOT_A_NUMBER


def bad_int(lo: int, hi: int) -> st.SearchStrategy[str]:
    """Integers outside [lo, hi] (as the shell passes them) and text that is no integer."""
    return (st.integers(max_value=lo - 1) | st.integers(min_value=hi + 1, max_value=10**40)).map(str) \
        | st.sampled_from(["1.5", "1e3", "", "ten", "9" * 5000, "0x"])


def unlike(*valid: str) -> st.SearchStrategy[str]:
    """Text that is none of ``valid`` (YAML reads the rest as a different value or a string)."""
    return NOT_A_NUMBER.filter(lambda s: s.strip().lower() not in valid and s.strip() not in ("", "~", "null"))


def nasty_files() -> dict[str, bytes]:
    """Contents no command may accept as a config, spec, config.json, evidence or sweep record."""
    return {
        "binary": bytes(range(256)) * 4, "bom-truncated": b"\xef\xbb\xbf[1, 2",
        "deep": b"[" * 5_000 + b"]" * 5_000, "deep-open": b"{\"a\": " * 5_000,
        "huge": b"#" + b" " * (17 * 2**20), "truncated": b'{"model": {"d_model": 6',
        "latin1": "caf\xe9: 1\n".encode("latin-1"), "utf16": '{"a": 1}'.encode("utf-16"),
        "nan": b'{"a": NaN}', "bigint": b'{"hidden_size": 1' + b"0" * 5000 + b"}",
        "bigint-4000": b'{"model_type": "llama", "hidden_size": 1' + b"0" * 4000 + b"}",
        "list": b"[1, 2, 3]", "scalar": b"42", "nul": b"model:\x00 1",
    }


NASTY = nasty_files()
GENERATED_CONTENT = (st.binary(max_size=300).map(lambda b: b"\xff" + b)  # never UTF-8
                     | st.text(max_size=200).map(lambda t: ("[" + t).encode("utf-8")))  # never a mapping
CONTENT = st.sampled_from(sorted(NASTY)).map(NASTY.get) | GENERATED_CONTENT


def sandbox() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="ffnlab-fuzz-")


# -- sizing commands ----------------------------------------------------------------------------

SIZE_OPTIONS = {
    "--d-model": bad_int(1, 2**30), "--n-heads": bad_int(1, 2**20), "--seq-len": bad_int(1, 2**40),
    "--n-layers": bad_int(1, 10**5), "--vocab": bad_int(1, 2**32), "--d-ff": bad_int(1, 2**40),
    "--multiple-of": bad_int(1, 2**20), "--experts": bad_int(0, 2**16), "--ratio": BAD_NUMBER_TEXT,
    "--multiplier": BAD_NUMBER_TEXT, "--rule": NOT_A_NUMBER, "--ffn": NOT_A_NUMBER, "--format": NOT_A_NUMBER,
    "--rounding": NOT_A_NUMBER, "--dtype": NOT_A_NUMBER,
}
SIZE_BASE = {"--d-model": "4096", "--ratio": "4", "--n-layers": "2"}


@FUZZ
@given(st.data())
def test_size_refuses_every_bad_option(data):
    option = data.draw(st.sampled_from(sorted(SIZE_OPTIONS)), "option")
    value = data.draw(SIZE_OPTIONS[option], "value")
    args = {**SIZE_BASE, option: value}
    if option == "--d-ff":
        args.pop("--ratio")
    if option == "--multiplier":
        args["--rule"] = "llama"
    if option == "--rule":
        args.pop("--ratio")
    argv = ["size", *[x for kv in args.items() for x in kv]]
    with sandbox() as d:
        refused_untouched(Path(d), *argv)


@FUZZ
@given(st.data())
def test_plan_and_explain_refuse_bad_input(data):
    case = data.draw(st.sampled_from(["target", "rule", "ratio", "head-dims", "aspect", "top", "explain"]))
    if case == "target":
        argv = ["plan", data.draw(st.sampled_from(["1e400", "-5", "0", "1e16", "nan", "inf", "9" * 5000, "7Q"])
                                  | NOT_A_NUMBER)]
    elif case == "rule":
        argv = ["plan", "7B", "--rule", data.draw(NOT_A_NUMBER)]
    elif case == "ratio":
        argv = ["plan", "7B", "--ratio", data.draw(BAD_NUMBER_TEXT)]
    elif case == "head-dims":
        argv = ["plan", "7B", "--head-dims", data.draw(st.sampled_from(["0", "-64", "a,b", ",", "1e400"]))]
    elif case == "aspect":
        argv = ["plan", "7B", "--aspect-band", data.draw(st.sampled_from(["1", "a:b", "1:2:3", ""]))]
    elif case == "top":
        argv = ["plan", "7B", "--top", data.draw(bad_int(1, 1000))]
    else:
        argv = ["explain", "--d-model", data.draw(bad_int(1, 2**30)), "--d-ff", "4096"]
    with sandbox() as d:
        refused_untouched(Path(d), *argv)


@FUZZ
@given(st.data())
def test_audit_zoo_and_claims_refuse_nasty_files_and_names(data):
    content = data.draw(CONTENT, "content")
    which = data.draw(st.sampled_from(["audit", "audit-dir", "claims", "claims-dir", "zoo"]))
    with sandbox() as d:
        root = Path(d)
        if which == "zoo":
            refused_untouched(root, "zoo", "--format", data.draw(NOT_A_NUMBER))
            return
        folder = root / "in"
        folder.mkdir()
        name = "config.json" if which.startswith("audit") else "claims.json"
        (folder / name).write_bytes(content)
        target = str(folder if which.endswith("-dir") else folder / name)
        argv = ["audit", target] if which.startswith("audit") else ["claims", "--evidence", target]
        refused_untouched(root, *argv)


LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
         "num_attention_heads": 4, "vocab_size": 100}
JSON_BAD = (st.integers(max_value=0) | st.integers(min_value=2**53 + 1, max_value=10**4000) | st.booleans()
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
            | st.lists(st.integers(), max_size=2))


@FUZZ
@given(st.sampled_from(sorted(set(LLAMA) - {"model_type"})), JSON_BAD)
def test_audit_refuses_bad_numbers_in_config_json(key, value):
    """Refused in one line naming the key, unless transformers builds the model (a 0-wide FFN, 0
    layers, a boolean read as 1): then it is counted through transformers, the note naming the key
    the translator refused."""
    with sandbox() as d:
        (Path(d) / "config.json").write_text(json.dumps({**LLAMA, key: value}))
        r = cli("audit", "config.json", "--json", where=Path(d))
        if r.code == 0:
            (row,) = json.loads(r.stdout)
            assert row["counted_by"] == "transformers" and key in row["note"] and not r.stderr.strip(), r
            return
        refused_untouched(Path(d), "audit", "config.json", fragment=key)


# -- training -----------------------------------------------------------------------------------

TRAIN_BAD = {  # key -> values its type or range excludes (bounds from docs/training.md)
    "model.d_model": bad_int(1, 2**20), "model.n_layers": bad_int(1, 10_000), "model.n_heads": bad_int(1, 2**16),
    "model.ffn.n_experts": bad_int(0, 4096), "model.ffn.ratio": BAD_NUMBER_TEXT,
    "model.ffn.multiple_of": bad_int(1, 2**16), "model.rope_theta": st.sampled_from(["-1", "0", ".inf", "1e13"]),
    "model.norm_eps": st.sampled_from(["-1e-5", "0", "2", ".nan"]), "train.seed": bad_int(0, 2**32 - 1),
    "train.batch_size": bad_int(1, 2**20), "train.grad_accum": bad_int(1, 2**20),
    "train.seq_len": bad_int(1, 2**20), "train.max_steps": bad_int(1, 10**9),
    "train.lr": st.sampled_from([".inf", "-.inf", ".nan", "-1", "0", "fast", "1e5000"]),
    "train.beta1": st.sampled_from(["1", "1.5", "-0.1", ".nan"]), "train.device": unlike("auto", "cpu", "cuda"),
    "train.dtype": unlike("auto", "fp32", "bf16"), "data.tokenizer": unlike("byte", "bpe"),
    "train.progress": st.sampled_from(["loud", "3"]), "model.ffn.kind": unlike(*KINDS),
    "model.ffn.rule": unlike("explicit", "ratio", "param-matched", "llama", "golden"),
}
SAFETY = ["--set", "train.max_steps=1", "--set", "train.peak_flops=1", "--set", "train.progress=off"]


@FUZZ
@given(st.data())
def test_train_refuses_bad_values_before_touching_anything(data):
    key = data.draw(st.sampled_from(sorted(TRAIN_BAD)), "key")
    value = data.draw(TRAIN_BAD[key], "value")
    extra = ["--set", "model.ffn.rule=ratio"] if key == "model.ffn.ratio" else []
    with sandbox() as d:
        refused_untouched(Path(d), "train", "--out", "run", *SAFETY, "--set", f"{key}={value}", *extra)


@FUZZ
@given(CONTENT, st.sampled_from([".yaml", ".json", ".toml"]))
def test_train_refuses_nasty_config_files(content, suffix):
    if content.strip(b" #") == b"":
        content = b"\x00"  # an empty config (or a comment) is the valid default config
    with sandbox() as d:
        (Path(d) / f"cfg{suffix}").write_bytes(content)
        refused_untouched(Path(d), "train", f"cfg{suffix}", "--out", "run", *SAFETY)


@FUZZ
@given(st.sampled_from(["../../x", "..", ".", "/etc", "a/b", "../run/checkpoints/step-0000001"]) | NOT_A_NUMBER)
def test_export_refuses_checkpoint_names_outside_checkpoints(name):
    with sandbox() as d:
        root = Path(d)
        run = root / "run"
        (run / "checkpoints").mkdir(parents=True)
        (run / "config.yaml").write_text(yaml.safe_dump({"model": {"d_model": 32, "n_heads": 2, "n_layers": 1}}))
        model = {"d_model": 32, "n_layers": 1, "vocab_size": 256, "attn": {"n_heads": 2},
                 "ffn": {"kind": "swiglu", "d_ff": 88}, "norm": "rmsnorm", "positions": "rope"}
        (run / "model.json").write_text(json.dumps({"model": model}))
        refused_untouched(root, "export", "run", "--hf", "hf", "--checkpoint", name or "..")


# -- experiments --------------------------------------------------------------------------------

MICRO = {
    "name": "micro", "seeds": [0], "control": "fixed-d-model",
    "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2}, "train": {"max_steps": 2}},
    "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}}],
}
SPEC_BAD = {
    "name": st.sampled_from(["..", ".", "a/b", "/tmp", "", "x" * 101]) | st.integers().map(str).map(lambda s: s + "/"),
    "seeds": st.sampled_from([[-1], [2**64], [10**20], [], [0, 0], [1.5], ["a"], "0", [True]]),
    "tolerance": st.sampled_from([0, -1, 2, "two", float("inf"), None]),
    "control": NOT_A_NUMBER, "d_step": st.sampled_from([0, -4, 10**9, 1.5]),
    "workers": st.sampled_from([-1, 10**9, "many"]), "claims": st.sampled_from([["nope"], "ratio_optimal", [1]]),
    "arms": st.sampled_from([[], [{"name": "a b"}], [{"ffn": {}}], [{"name": "a", "ffn": {"kind": "tanh"}}],
                             [{"name": "a", "ffn": {"ratio": "1e5000"}}], [{"name": "..", "ffn": {}}],
                             [{"name": "a"}, {"name": "a"}], "arm", [{"name": "a", "ffn": []}]]),
    "base": st.sampled_from([[1], "x", {"model": {"d_model": 10**12}}, {"train": {"lr": "fast"}},
                             {"model": {"d_model": "1e12"}}, {"model": {"ffn": {"n_experts": -4}}}]),
    "reference": st.sampled_from(["nope", 3]),
    "colour": st.just(1),
}


@FUZZ
@given(st.data())
def test_sweep_and_verify_refuse_bad_specs_before_any_folder(data):
    key = data.draw(st.sampled_from(sorted(SPEC_BAD)), "key")
    spec = {**MICRO, key: data.draw(SPEC_BAD[key], "value")}
    command = data.draw(st.sampled_from(["sweep", "verify"]))
    with sandbox() as d:
        root = Path(d)
        (root / "spec.json").write_text(json.dumps(spec))
        argv = ["sweep", "spec.json"] if command == "sweep" else ["verify", "--preset", "spec.json", "--out", "o"]
        refused_untouched(root, *argv)


@FUZZ
@given(CONTENT, st.sampled_from(["sweep", "verify", "report"]))
def test_sweep_verify_report_refuse_nasty_files(content, command):
    with sandbox() as d:
        root = Path(d)
        if command == "report":
            (root / "s").mkdir()
            (root / "s" / "sweep.json").write_bytes(content)
            argv = ["report", "s"]
        else:
            (root / "spec.yaml").write_bytes(content)
            argv = ["sweep", "spec.yaml"] if command == "sweep" else ["verify", "--preset", "spec.yaml", "--out", "v"]
        refused_untouched(root, *argv)


@FUZZ
@given(st.data())
def test_run_options_are_checked_before_any_folder(data):
    option = data.draw(st.sampled_from(["--workers", "--backend"]))
    value = data.draw(bad_int(1, 4096) if option == "--workers" else NOT_A_NUMBER.filter(lambda s: s not in
                                                                                        ("local", "ray")))
    command = data.draw(st.sampled_from(["sweep", "verify"]))
    with sandbox() as d:
        argv = ["sweep", "golden-quick", "--out", "s"] if command == "sweep" else ["verify", "--out", "v"]
        refused_untouched(Path(d), *argv, option, value)


def test_report_of_a_missing_folder_creates_nothing(tmp_path):
    refused_untouched(tmp_path, "report", "nonexistent", fragment="not a sweep folder")
    assert not (tmp_path / "nonexistent").exists()


def test_help_is_not_an_error():
    for argv in (["--help"], ["size", "--help"], ["train", "--help"]):
        r = cli(*argv)
        assert r.code == 0 and "Usage" in r.stdout and r.stderr == ""


@pytest.mark.parametrize("name", sorted(set(NASTY) - {"bigint-4000"}))  # parses; commands refuse it
def test_every_nasty_file_is_refused_by_the_one_reader(tmp_path, name):
    from ffnlab.errors import FfnlabError
    from ffnlab.files import read_mapping

    path = tmp_path / "x.json"
    path.write_bytes(NASTY[name])
    with pytest.raises(FfnlabError) as e:
        read_mapping(path, "test file")
    assert "\n" not in str(e.value) and str(path) in str(e.value)
