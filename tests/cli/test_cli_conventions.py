"""The CLI's conventions: --version, completion, help as prose, 80-column tables, machine CSV.

Oracles: the package's own version string and pyproject, typer's completion protocol, each
command's docstring, the same table rendered without a width limit, and each command's --json
(a second rendering path) for the CSV.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_inproc import run_cli
from paths import ROOT

TABLE_COMMANDS = [  # every command that prints a table, with arguments that make its widest cases
    ["size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--n-layers", "32"],
    ["size", "--d-model", "768", "--ratio", "4", "--experts", "8", "--top-k", "2"],
    ["plan", "7B"],
    ["explain", "--d-model", "4096", "--d-ff", "11008", "--ffn", "swiglu"],
    ["audit", "llama-7b", "gpt2", "mistral-7b", "granite-3.1-3b-a800m", "qwen1.5-moe-a2.7b"],
    ["audit", "--all"],
    ["zoo"],
    ["claims"],
    ["fit", "llama-7b", "--tokens", "2T"],
    ["fit", "llama-7b", "--gpu", "H100", "--tokens", "2T"],
    ["fit", "llama-2-70b", "--gpu", "H100", "--mode", "serve"],
]


def ids(args: list[str]) -> str:
    return " ".join(args)


def cli(capsys, monkeypatch, columns: int, *args: str):  # noqa: ANN001, ANN201 - pytest fixtures
    monkeypatch.setenv("COLUMNS", str(columns))
    r = run_cli(capsys, *args)
    assert r.returncode == 0, r.stderr
    return r


# ---------------------------------------------------------------- --version, completion


def test_version_is_the_package_version(capsys):
    import ffnlab

    (want,) = re.findall(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert ffnlab.__version__ == want  # the two places that say it agree
    for argv in (["--version"], ["-V"], ["version"]):
        r = run_cli(capsys, *argv)
        assert (r.returncode, r.stdout, r.stderr) == (0, f"ffnlab {want}\n", ""), argv


def test_shell_completion_answers_through_the_entry_point():
    env = {**os.environ, "_FFNLAB_COMPLETE": "complete_bash", "COMP_WORDS": "ffnlab si", "COMP_CWORD": "1"}
    p = subprocess.run([sys.executable, "-m", "ffnlab"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.split() == ["size"], (p.stdout, p.stderr)
    env.update(COMP_WORDS="ffnlab size --d-", COMP_CWORD="2")
    p = subprocess.run([sys.executable, "-m", "ffnlab"], capture_output=True, text=True, env=env)
    assert {"--d-model", "--d-ff"} <= set(p.stdout.split()), p.stdout
    # typer finds the shell by walking up the process tree (shellingham); a test run detached from
    # any shell (CI, a background job) has none, so name the shell as typer's own tests do
    p = subprocess.run([sys.executable, "-m", "ffnlab", "--show-completion", "bash"], capture_output=True, text=True,
                       env={**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert p.returncode == 0 and "_FFNLAB_COMPLETE" in p.stdout and "complete" in p.stdout


def test_the_command_table_names_every_command_and_its_group():
    """COMMAND_GROUPS (which group a command line imports) matches what the groups register."""
    import typer

    from ffnlab.cli import COMMAND_GROUPS, GROUPS, app, register

    register(["--help"])
    where = {(c.name or c.callback.__name__): c.callback.__module__.rsplit(".", 1)[-1] for c in app.registered_commands}
    where |= {g.name: g.typer_instance.registered_commands[0].callback.__module__.rsplit(".", 1)[-1]
              for g in app.registered_groups}
    where["version"] = "app"  # registered by ffnlab.cli itself, imports nothing more
    assert where == COMMAND_GROUPS
    assert set(COMMAND_GROUPS.values()) - {"app"} == set(GROUPS)
    assert set(typer.main.get_command(app).commands) == set(COMMAND_GROUPS)


# ---------------------------------------------------------------- help


def _commands() -> list[list[str]]:
    from ffnlab.cli import COMMAND_GROUPS

    return [[c] for c in COMMAND_GROUPS if c not in ("version", "capacity")] + [
        ["capacity", sub] for sub in ("run", "report", "measure")]


@pytest.mark.parametrize("command", _commands(), ids=ids)
def test_help_is_prose_without_type_noise(capsys, monkeypatch, command):
    """Each paragraph of the docstring is one line at a wide terminal (no hard breaks mid-sentence),
    and no flag shows <bool> or a repeatable one <list[str]>."""
    import typer

    from ffnlab.cli import app, register

    register(command)
    r = cli(capsys, monkeypatch, 1000, *command, "--help")
    assert "<bool>" not in r.stdout and "<list[" not in r.stdout, r.stdout
    click_cmd = typer.main.get_command(app)
    for name in command:
        click_cmd = click_cmd.commands[name]
    doc = click_cmd.callback.__doc__
    lines = [" ".join(line.split()) for line in r.stdout.splitlines()]
    for paragraph in re.split(r"\n\s*\n", doc.strip()):
        one_line = " ".join(paragraph.split())
        assert any(one_line in line for line in lines), (one_line, r.stdout)
    r80 = cli(capsys, monkeypatch, 80, *command, "--help")
    assert max(len(line) for line in r80.stdout.splitlines()) <= 80


@pytest.mark.parametrize("command", ["fit", "size", "audit"])
def test_help_text_keeps_a_readable_width_at_100_columns(capsys, monkeypatch, command):
    """The widest flag sets the flags' column for every option: with
    --reshard-after-forward/--no-reshard-after-forward the help text had 28 of 100 columns; with
    --reshard/--no-reshard (the old spelling hidden, still accepted) it has 48."""
    r = cli(capsys, monkeypatch, 100, command, "--help")
    line = next(x for x in r.stdout.splitlines() if x.startswith("│ --batch "))
    help_width = len(line.rstrip()) - 2 - line.index("Sequences per micro-batch")
    assert help_width >= 45, r.stdout
    assert "--no-reshard" in r.stdout and "reshard-after-forward" not in r.stdout


def test_fit_help_lists_every_listed_card(capsys, monkeypatch):
    """--gpu's help is written from data/accelerators.json: it listed 10 of the 14 cards while the
    workstation and GeForce cards were added to the data."""
    from ffnlab.sizing.memory.hardware import load_accelerators

    r = cli(capsys, monkeypatch, 1000, "fit", "--help")
    text = " ".join(r.stdout.replace("│", " ").split())
    names = [a.name for a in load_accelerators()]
    assert len(names) == 14 and f"Accelerator: {' '.join(names)} (" in text, text


def test_root_help_lists_version_and_completion_without_noise(capsys, monkeypatch):
    r = cli(capsys, monkeypatch, 100, "--help")
    for option in ("--version", "--install-completion", "--show-completion"):
        assert option in r.stdout
    assert "<bool>" not in r.stdout


# ---------------------------------------------------------------- 80-column tables

NUMBER = re.compile(r"^[-+]?[\d.,]+(%|[KMBT]|x| GiB)?$|^-$|^(yes|no)$")


def parse_tables(text: str) -> list[dict[str, Any]]:
    """Every rich table in ``text``: header cells and, per column, the body cell of each line."""
    tables: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("┏"):
            current = {"header": [], "body": []}
        elif current is not None and line.startswith("┃"):
            current["header"].append([c.strip() for c in line.strip("┃").split("┃")])
        elif current is not None and line.startswith("│"):
            current["body"].append([c.strip() for c in line.strip("│").split("│")])
        elif current is not None and line.startswith("└"):
            tables.append(current)
            current = None
    return tables


def _squashed(cells: list[str]) -> str:
    return "".join("".join(cells).split())


@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=ids)
def test_tables_fit_80_columns_with_every_cell_whole(capsys, monkeypatch, command):
    """At COLUMNS=80 no line is wider than 80, no cell is cut (the text equals the same table drawn
    with no width limit), and a number is never broken over two lines."""
    narrow = cli(capsys, monkeypatch, 80, *command).stdout
    free = cli(capsys, monkeypatch, 1000, *command).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    assert "…" not in narrow
    t80, tfree = parse_tables(narrow), parse_tables(free)
    assert t80 and len(t80) == len(tfree)
    for a, b in zip(t80, tfree, strict=True):
        n_cols = len(b["body"][0])
        for j in range(n_cols):
            assert _squashed([h[j] for h in a["header"]]) == _squashed([h[j] for h in b["header"]])
            assert _squashed([r[j] for r in a["body"]]) == _squashed([r[j] for r in b["body"]]), j
            cells = [r[j] for r in b["body"] if r[j]]
            if all(NUMBER.match(c) for c in cells):  # a number column: one line per row, whole
                assert [r[j] for r in a["body"] if r[j]] == cells


def test_wide_adds_the_hidden_columns(capsys, monkeypatch):
    compact = cli(capsys, monkeypatch, 80, "audit", "llama-7b").stdout
    wide = cli(capsys, monkeypatch, 80, "audit", "llama-7b", "--wide").stdout
    assert "--wide adds: type, d_model" in compact and "--wide adds" not in wide
    head = parse_tables(wide)[0]["header"]
    assert {"type", "d_model", "pow2"} <= {c for line in head for c in line}
    assert parse_tables(wide)[0]["body"][0][2] == "4096"  # whole cells even beyond 80 columns


def test_a_table_title_is_one_paragraph_above_the_table_not_centred_lines(capsys, monkeypatch):
    """A long title over a narrow table (fit --mode serve: two columns) wrapped to the table's
    width, centred, in six lines at 120 columns; it is a paragraph as wide as the terminal."""
    from rich.console import Console

    from ffnlab.render import Column, print_table

    title = ("llama-3-8b, serve, 8 GPUs, batch 1 x 2048, KV bf16 on H100 (79.65 GiB reported by the device - "
             "7.96 GiB reserve = 71.68 GiB usable): layouts that fit, smallest first")
    console = Console(width=120, record=True, file=io.StringIO(), color_system=None)
    print_table(console, [{"layout": "dp 8, tp 1, pp 1", "gib": "15.21 GiB"}],
                [Column("layout", "layout", justify="left"), Column("gib", "per GPU")], title)
    lines = console.export_text().splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    assert top == 2, lines  # 147 characters: two lines at 120 columns, then the table
    assert lines[0].startswith("llama-3-8b, serve") and len(lines[0].rstrip()) > 100
    assert " ".join(" ".join(lines[:top]).split()) == title
    narrow = cli(capsys, monkeypatch, 120, "fit", "llama-3-8b", "--mode", "serve", "--gpu", "H100").stdout
    head = narrow.splitlines()[:3]
    assert head[0].startswith("llama-3-8b, serve") and head[2].startswith("┏"), narrow


# ---------------------------------------------------------------- CSV

def _json_rows(command: list[str], obj: Any) -> list[dict[str, Any]]:
    """The rows a command's --json holds, in the CSV's order."""
    from ffnlab.render import flatten

    if command[0] == "size":
        return [flatten(obj)]
    if command[0] == "plan":
        obj = obj["candidates"]
    elif command[0] == "explain":
        obj = obj["rules"]
    elif command[0] == "fit":
        obj = obj["accelerators"] if "--gpu" not in command else [
            {"describe": c["describe"], "per_gpu_bytes": c["per_gpu_bytes"], **c["terms"]} for c in obj["candidates"]]
    return [flatten(r) for r in obj]


@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=ids)
def test_csv_is_one_table_of_raw_values(capsys, monkeypatch, command):
    """--format csv parses as one table; numbers are the --json numbers (no units, separators or
    Python reprs); the columns that hold numbers in the JSON parse as numbers."""
    out = cli(capsys, monkeypatch, 80, *command, "--format", "csv").stdout
    rows = list(csv.reader(io.StringIO(out)))
    header, body = rows[0], rows[1:]
    assert body and all(len(r) == len(header) for r in body), out
    assert header not in body and "" not in header
    for r in body:
        for cell in r:
            assert not cell.startswith(("{'", "['", "{\"", "(")), cell  # no Python reprs
    expected = _json_rows(command, json.loads(cli(capsys, monkeypatch, 80, *command, "--json").stdout))
    if command[0] == "fit" and "--gpu" in command:
        expected = expected[: len(body)]
    assert len(expected) == len(body)
    compared = 0
    for r, want in zip(body, expected, strict=True):
        for key, cell in zip(header, r, strict=True):
            value = want.get(key)
            if isinstance(value, bool):
                assert cell == str(value).lower(), key
            elif isinstance(value, (int, float)):
                assert float(cell) == pytest.approx(value, rel=1e-15, abs=0), key
                compared += 1
    assert compared >= len(body) or command[0] == "claims"  # every row had numbers to compare (claims: prose)


def test_audit_csv_has_the_alignment_as_a_number(capsys, monkeypatch):
    out = cli(capsys, monkeypatch, 80, "audit", "llama-7b", "--format", "csv").stdout
    (row,) = csv.DictReader(io.StringIO(out))
    assert row["pow2_divisor"] == "256"  # 11008 = 2^8 x 43
    assert "alignment" not in row


# ---------------------------------------------------------------- names from files


def _config(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 100}))
    return folder / "config.json"


def test_names_from_files_cannot_act_on_any_format(capsys, monkeypatch, tmp_path):
    """A config folder named with rich markup, an OSC 8 link, a pipe, raw HTML and a formula."""
    name = "[link=mailto:a@b.c]x[bold]y\x1b]8;;http:e.vil\x07z|<img src=x onerror=alert(1)>"
    path = _config(tmp_path / name)
    table = cli(capsys, monkeypatch, 200, "audit", str(path), "--wide").stdout
    assert "\x1b" not in table and "\x07" not in table
    assert "[link=mailto:a@b.c]x[bold]y" in table  # shown, not read as markup
    assert "\\x1b" in table  # the escape byte is shown as text
    md = cli(capsys, monkeypatch, 200, "audit", str(path), "--format", "markdown").stdout
    row = next(line for line in md.splitlines() if "mailto" in line)
    assert "<img" not in md and "\x1b" not in md
    n_cols = md.splitlines()[2].count("|") - 1
    assert len(re.findall(r"(?<!\\)\|", row)) == n_cols + 1  # the pipe in the name is escaped
    formula = _config(tmp_path / "=HYPERLINK(1)")
    out = cli(capsys, monkeypatch, 200, "audit", str(formula), "--format", "csv").stdout
    (r,) = csv.DictReader(io.StringIO(out))
    assert r["name"] == "'=HYPERLINK(1)"


def test_escape_helpers():
    from ffnlab import escape

    assert escape.terminal("a\x1b[31mb\rc\td\ne\u202e") == "a\\x1b[31mb\\x0dc\td\ne\\u202e"
    assert escape.one_line("a\nb\r\nc") == "a b c"
    assert escape.markdown("a|b\nc<d>&[e](f)`g`\\") == "a\\|b c&lt;d&gt;&amp;\\[e\\](f)\\`g\\`\\\\"
    for text, want in [("=1+1", "'=1+1"), ("+x", "'+x"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"),
                       ("\t=1", "'\t=1"), ("-0.5", "-0.5"), ("+3e-4", "+3e-4"), ("plain", "plain")]:
        assert escape.csv_cell(text) == want, text
    assert escape.html("<a href='x'>&</a>") == "&lt;a href=&#x27;x&#x27;&gt;&amp;&lt;/a&gt;"


def test_render_csv_values():
    from fractions import Fraction

    from ffnlab.render import csv_value

    assert [csv_value(v) for v in (None, True, 3, 0.5, Fraction(8, 3), ["a", 1], {"b": 2})] == [
        "", "true", 3, 0.5, 8 / 3, "a;1", '{"b": 2}']


def test_evidence_text_is_never_markup(capsys, monkeypatch, tmp_path):
    """An evidence string with '[/nope]' once raised rich's MarkupError."""
    (tmp_path / "claims.json").write_text(json.dumps({"ratio_optimal": {
        "verdict": "false", "evidence": "closing tag [/nope] and [link=mailto:a@b.c]mail\x1b[2J"}}))
    r = cli(capsys, monkeypatch, 200, "claims", "--evidence", str(tmp_path))
    assert "[/nope]" in r.stdout and "[link=mailto:a@b.c]mail" in r.stdout and "\x1b" not in r.stdout
