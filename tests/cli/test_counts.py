"""One parser for every count on the command line (``ffnlab.validation.count``): sizes by vLLM's
``--max-model-len`` convention (lower case decimal, upper case binary, ``Ki``/``Mi`` too), token
and parameter totals in decimal as before (``15T`` = 15e12); a suffix is echoed, a bad value is
one error line naming the flag and the forms (exit 2).

Oracle: vLLM's ``human_readable_int`` (``8k`` = 8,000, ``8K`` = 8,192) and the decimal totals
``plan`` and ``fit --tokens`` read before (tests/sizing/test_zoo_explain_plan.py)."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest
import yaml
from cli_inproc import run_cli

from ffnlab.errors import FfnlabError
from ffnlab.validation import count


@pytest.mark.parametrize(("text", "value"), [
    ("8k", 8000), ("8K", 8192), ("8Ki", 8192), ("1.5k", 1500), ("4Mi", 4 * 2**20), ("2m", 2_000_000),
    ("2048", 2048), (" 12 ", 12), ("-1", -1), ("0", 0), (4096, 4096),
])
def test_sizes_read_suffixes_as_vllm_does(text, value):
    assert count(text, "--seq-len")[0] == value
    assert count(text, "--seq-len")[1] == (isinstance(text, str) and not text.strip().lstrip("-").isdigit())


@pytest.mark.parametrize(("text", "value"), [
    ("15T", 15 * 10**12), ("15t", 15 * 10**12), ("7B", 7 * 10**9), ("125M", 125 * 10**6), ("1.3e9", 1_300_000_000),
    ("2K", 2000), ("1e30", 10**30),
])
def test_totals_keep_their_decimal_suffixes(text, value):
    assert count(text, "--tokens", total=True) == (value, True)


@pytest.mark.parametrize("text", ["8kb", "8ki", "1.1K", "1e3", "k", "8 k", "", "1" * 70])
def test_a_size_that_cannot_be_read_names_the_flag_and_the_forms(text):
    with pytest.raises(FfnlabError, match=r"^--seq-len: .*8K = 8Ki = 8,192"):
        count(text, "--seq-len")


@pytest.mark.parametrize("text", ["15Ki", "x", "1e500"])
def test_a_total_that_cannot_be_read_names_the_forms(text):
    with pytest.raises(FfnlabError, match=r"^--tokens: cannot read .*15T"):
        count(text, "--tokens", total=True)


def test_size_takes_suffixes_on_every_count_flag_and_echoes_them(capsys):
    p = run_cli(capsys, "size", "--d-model", "4K", "--ffn", "swiglu", "--d-ff", "11008", "--n-layers", "2",
                "--seq-len", "8k", "--batch", "2Ki", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["d_model"] == 4096
    assert (out["model"]["seq_len"], out["model"]["memory"]["batch"]) == (8000, 2048)
    assert p.stderr.splitlines() == ["note: --d-model 4K read as 4,096", "note: --seq-len 8k read as 8,000",
                                     "note: --batch 2Ki read as 2,048"]


def test_train_takes_suffixes(capsys):
    p = run_cli(capsys, "train", "--out", "/nonexistent/never-written", "--seq-len", "1K", "--max-steps", "2k",
                "--print-config")
    assert p.returncode == 0, p.stderr
    train = yaml.safe_load(p.stdout)["train"]
    assert (train["seq_len"], train["max_steps"]) == (1024, 2000)
    assert "note: --seq-len 1K read as 1,024" in p.stderr


def test_plain_integers_are_not_echoed(capsys):
    p = run_cli(capsys, "size", "--d-model", "4096", "--ffn", "swiglu", "--d-ff", "11008", "--json")
    assert p.returncode == 0 and p.stderr == ""


@pytest.mark.parametrize(("args", "flag"), [
    (("size", "--d-model", "4kb", "--ffn", "swiglu", "--d-ff", "11008"), "--d-model"),
    (("size", "--d-model", "4096", "--ffn", "swiglu", "--d-ff", "11008", "--n-layers", "2", "--seq-len", "1.1K"),
     "--seq-len"),
    (("fit", "llama-3-8b", "--gpus", "8k8"), "--gpus"),
])
def test_a_bad_count_is_one_line_naming_the_flag_and_the_forms(capsys, args, flag):
    p = run_cli(capsys, *args)
    assert p.returncode == 2
    assert len(p.stderr.splitlines()) == 1
    assert flag in p.stderr and "8K = 8Ki = 8,192" in p.stderr


def test_tokens_stay_decimal_and_are_echoed(capsys):
    p = run_cli(capsys, "fit", "llama-3-8b", "--gpus", "8", "--tokens", "15T", "--json")
    assert p.returncode == 0, p.stderr
    assert "note: --tokens 15T read as 15,000,000,000,000" in p.stderr
    bad = run_cli(capsys, "fit", "llama-3-8b", "--gpus", "8", "--tokens", "15Ki")
    assert bad.returncode == 2 and "--tokens" in bad.stderr and "15T" in bad.stderr


NOT_COUNTS = {"--seed"}  # a number that names a stream, not a count of anything: typer's int


def _options(command, path=()):
    for param in command.params:
        if param.param_type_name == "option" and not param.is_flag:
            yield path, param
    for name, sub in getattr(command, "commands", {}).items():
        yield from _options(sub, (*path, name))


def _count_options():
    """Every option of every command that takes a count, found by what it accepts rather than by
    how it is declared: typer's own int type, or a parser that reads ``8K`` as 8,192 or 8,000
    (``fit --tokens``, a total kept as written, by name)."""
    import typer

    from ffnlab.cli import app, register

    register([])
    found = []
    for path, param in _options(typer.main.get_command(app)):
        flag = param.opts[0]
        if flag in NOT_COUNTS:
            continue
        if type(param.type).__name__ == "IntParamType" or (path, flag) == (("fit",), "--tokens"):  # typer's int
            found.append((path, flag))
            continue
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # the echo of the value read
                read = param.type.convert("8K", param, None)
        except Exception:  # noqa: BLE001 - not a count: a choice, a path, a float that refuses "8K"...
            continue
        if str(read) in ("8192", "8000"):  # a size (binary upper case) or a total (decimal)
            found.append((path, flag))
    return found


def test_every_count_option_is_found():
    found = {(" ".join(path), flag) for path, flag in _count_options()}
    assert len(found) > 80  # 90 when written
    assert {("size", "--seq-len"), ("fit", "--tokens"), ("fit", "--gpus"), ("fit", "--max-num-seqs"),
            ("train", "--threads"), ("generate", "--tokens"), ("capacity run", "--workers")} <= found


@pytest.mark.parametrize(("path", "flag"), _count_options(), ids=lambda x: " ".join(x) if isinstance(x, tuple) else x)
def test_every_count_option_refuses_a_bad_value_in_one_shape(capsys, path, flag):
    """The same line for every count flag, whoever reads it (typer's parser or the command):
    ``error: FLAG: cannot read 'VALUE'; expected FORMS``, exit 2; no "Invalid value for"."""
    p = run_cli(capsys, *path, flag, "8kb")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"error: {flag}: cannot read '8kb'; expected "), p.stderr
    assert ("8K = 8Ki = 8,192" in p.stderr) != ("15T" in p.stderr), p.stderr  # the forms: sizes or totals


def test_every_count_option_shows_a_count_in_its_help(capsys, monkeypatch):
    """``--help`` names the type of every count flag ``<count>`` (``--gpus`` too: its text says "or
    auto"), never ``<int>``, ``<str>`` or ``N``: they take ``8k`` and ``8K`` too."""
    monkeypatch.setenv("COLUMNS", "400")  # one row per option, the flag and its type on one line
    by_command: dict[tuple[str, ...], list[str]] = {}
    for path, flag in _count_options():
        by_command.setdefault(path, []).append(flag)
    shown = {}
    for path, flags in by_command.items():
        p = run_cli(capsys, *path, "--help")
        assert p.returncode == 0, p.stderr
        for flag in flags:
            row = re.search(rf"^│\s+(?:\*\s+)?{re.escape(flag)}([ ,].*)$", p.stdout, re.M)  # * : required
            assert row is not None, (path, flag, p.stdout)
            metavar = re.search(r"<[^>\s]+>|(?<=\s)[A-Z]\b", row.group(1))
            shown[(" ".join(path), flag)] = metavar.group(0) if metavar else None
    wrong = {k: v for k, v in shown.items() if v != "<count>"}
    assert wrong == {}
