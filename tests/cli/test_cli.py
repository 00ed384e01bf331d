import csv
import io
import json
import re
import subprocess
import sys

import pytest
from cli_inproc import run_cli
from cli_run import assert_usage_error, run, run_json


def test_size_json_contract():
    out = run_json("size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama")
    assert out["d_ff"] == 11008
    assert out["ratio_raw"] == pytest.approx(2.6875)
    assert out["ratio_param_matched"] == pytest.approx(4.03125)
    assert out["ffn_params_per_layer"] == 3 * 4096 * 11008
    for rule_args, width in [
        (["--ratio", "4"], 3072), (["--rule", "param-matched", "--ratio", "4"], 2048),
        (["--rule", "golden"], 3072), (["--d-ff", "1000"], 1000),
    ]:
        kind = "swiglu" if "param-matched" in rule_args else "gelu"
        assert run_json("size", "--d-model", "768", "--ffn", kind, *rule_args)["d_ff"] == width


def test_size_whole_model():
    out = run_json("size", "--d-model", "768", "--ffn", "gelu", "--ratio", "4", "--n-layers", "12", "--n-heads",
                   "12", "--seq-len", "1024", "--bias")
    assert out["model"]["params"]["total"] == 124_439_808  # GPT-2 small's shape and count (tied head)
    assert out["model"]["flops_per_token"]["training"] == 3 * out["model"]["flops_per_token"]["forward"]


def test_audit_json_contract(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    rows = run_json("audit", "gpt2", str(path))
    assert [r["name"] for r in rows] == ["gpt2", tmp_path.name]
    keys = {"name", "model_type", "d_model", "d_ff", "ffn_kind", "gated", "n_layers", "params_total",
            "params_non_embedding", "params_ffn", "ratio_raw", "ratio_param_matched"}
    for r in rows:
        assert keys <= set(r)
    assert rows[1]["params_ffn"] == 2 * 3 * 64 * 172
    assert rows[1]["ratio_param_matched"] == pytest.approx(172 / 64 * 1.5)


def test_a_hub_cache_snapshot_is_audited_under_its_repo_name(tmp_path):
    """The Hugging Face cache keeps models--ORG--NAME/snapshots/REVISION/config.json (a link into
    blobs/): the row is named ORG/NAME@REV, not by the revision hash."""
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100}
    repo = tmp_path / "hub" / "models--acme--tiny-llama"
    blob = repo / "blobs" / "0123abcd"
    blob.parent.mkdir(parents=True)
    blob.write_text(json.dumps(cfg))
    snap = repo / "snapshots" / "9f8e7d6c5b4a39281706"
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(blob)
    for target in (snap, snap / "config.json"):
        assert [r["name"] for r in run_json("audit", str(target))] == ["acme/tiny-llama@9f8e7d6"]


def test_claims_json_contract():
    rows = run_json("claims")
    assert all({"id", "claim", "verdict", "evidence"} <= set(r) for r in rows)
    assert {r["id"]: r["verdict"] for r in rows}["golden-identity"] == "false"


def test_explain_json_contract():
    out = run_json("explain", "--d-model", "4096", "--d-ff", "11008", "--ffn", "swiglu")
    assert out["alignment"]["pow2_divisor"] == 256
    assert all({"multiplier", "multiple_of"} <= set(r) for r in out["rules"])
    llama = [r for r in out["rules"] if r["rule"] == "llama" and r["ffn_dim_multiplier"] is None]
    assert llama and 256 in llama[0]["multiples_of"]


def test_plan_json():
    out = run_json("plan", "125M", "--ffn", "swiglu")
    assert abs(out["best"]["error"]) < 0.02
    assert out["best"]["d_model"] % 64 == 0 and out["best"]["head_dim"] in (64, 128)
    keys = {"d_model", "n_layers", "n_heads", "head_dim", "d_ff", "params", "error", "trades"}
    assert all(keys <= set(c) for c in out["candidates"]) and out["best"] == out["candidates"][0]
    assert out["best"]["trades"] == [] and out["best"]["d_ff"] % 256 == 0  # the LLaMA rule by default
    assert out["tied_embeddings"] is True


@pytest.mark.parametrize("target, why", [("10K", "no shape comes within 2%"),
                                         ("1e30", "parameter count must be at most 1e+15")])
def test_plan_refuses_a_target_it_misses(target, why):
    assert_usage_error(run("plan", target), why)


def test_plan_table_names_the_trades():
    p = run("plan", "7B", "--rule", "param-matched", "--format", "markdown")
    assert p.returncode == 0, p.stderr
    assert "| trades |" in p.stdout and "d_ff%256" in p.stdout
    assert "embeddings tied (--untied" in p.stdout


def _size(*args):
    return run_json("size", "--ffn", "swiglu", *args)


def test_size_llama_multiplier_overflow_is_one_line():
    assert_usage_error(run("size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama",
                           "--multiplier", "1e308"), "multiplier must be a number > 0")


@pytest.mark.parametrize("rounding, d_ff", [("up", 11008), ("down", 10752), ("nearest", 11008)])
def test_size_llama_rule_honours_rounding(rounding, d_ff):
    # int(8 * 4096 / 3) = 10922 = 42.66 x 256
    out = _size("--d-model", "4096", "--rule", "llama", "--rounding", rounding, "--multiple-of", "256")
    assert out["d_ff"] == d_ff and f"({rounding})" in out["rule"]


@pytest.mark.parametrize("name, args", [
    ("mistral-7b", ["--d-model", "4096", "--d-ff", "14336", "--n-heads", "32", "--n-kv-heads", "8",
                    "--vocab", "32000"]),
    ("llama-3-8b", ["--d-model", "4096", "--d-ff", "14336", "--n-heads", "32", "--n-kv-heads", "8",
                    "--vocab", "128256"]),
])
def test_size_untied_matches_the_real_model(name, args):
    (real,) = run_json("audit", name)
    untied = _size(*args, "--n-layers", "32", "--untied")["model"]
    tied = _size(*args, "--n-layers", "32")["model"]
    assert untied["params"]["total"] == real["params_total"]
    vocab = int(args[args.index("--vocab") + 1])
    assert untied["params"]["total"] - tied["params"]["total"] == vocab * 4096
    assert tied["tied_embeddings"] and not untied["tied_embeddings"]
    assert any("--untied" in a for a in tied["assumed"])


def test_size_states_what_it_assumed():
    m = run_json("size", "--d-model", "768", "--ffn", "gelu", "--ratio", "4", "--n-layers", "12", "--bias")["model"]
    assumed = " ".join(m["assumed"])
    assert m["n_heads"] == 12 and "n_heads = d_model/64 = 12" in assumed
    assert (m["norm"], m["positions"]) == ("layernorm", "learned") and "--norm, --positions" in assumed
    assert m["position_table_rows"] == 2048 and "--seq-len 2048 rows" in assumed
    longer = run_json("size", "--d-model", "768", "--ffn", "gelu", "--ratio", "4", "--n-layers", "12", "--bias",
                      "--seq-len", "4096")["model"]
    assert longer["params"]["total"] - m["params"]["total"] == 2048 * 768  # the table grows with --seq-len
    given = run_json("size", "--d-model", "768", "--ffn", "gelu", "--ratio", "4", "--n-layers", "12", "--n-heads", "6",
                     "--norm", "rmsnorm", "--positions", "rope")["model"]
    assert given["position_table_rows"] == 0 and given["norm"] == "rmsnorm"
    assert not any("n_heads" in a or "--norm" in a for a in given["assumed"])
    p = run("size", "--d-model", "768", "--ffn", "gelu", "--ratio", "4", "--n-layers", "12", "--format", "markdown")
    assert "| assumed | n_heads = d_model/64" in p.stdout and "learned positions (2048 rows)" in p.stdout


# published shapes and transformers' own parameter counts (tied GPT-2 head, untied LLaMA head)
AUDIT_WANT = {"gpt2": {"d_model": "768", "d_ff": "3072", "total": 124_439_808},
              "llama-7b": {"d_model": "4096", "d_ff": "11008", "total": 6_738_415_616}}


def _cells(fmt: str, stdout: str) -> list[dict[str, str]]:
    """The rows of a rendered table as {header: cell}, parsed per format."""
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(stdout)))
    sep = "|" if fmt == "markdown" else "\u2502"  # rich draws body cells between box verticals
    head_sep = "|" if fmt == "markdown" else "\u2503"
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.count(head_sep) > 3)
    header = lines[start]
    names = [c.strip() for c in header.strip().strip(head_sep).split(head_sep)]
    body = []
    for line in lines[start + 1:]:  # the first table only (a memory section may follow)
        if line.count(sep) <= 3 and "---" not in line and "━" not in line and "─" not in line:
            break
        if line.count(sep) > 3 and "---" not in line:
            body.append(line)
    return [dict(zip(names, (c.strip() for c in line.strip().strip(sep).split(sep)), strict=True)) for line in body]


@pytest.mark.parametrize("fmt", ["markdown", "csv", "table"])
def test_formats(fmt):
    p = run("audit", "gpt2", "llama-7b", "--format", fmt, "--wide")  # --wide: every column in the table too
    assert p.returncode == 0, p.stderr
    if fmt == "markdown":
        assert p.stdout.count("| llama-7b |") == 2  # the audit table and the memory section
    rows = _cells(fmt, p.stdout)
    name, d_model, total = ("name", "d_model", "params_total") if fmt == "csv" else ("model", "d_model", "total")
    assert [r[name] for r in rows] == list(AUDIT_WANT)
    for r in rows:
        want = AUDIT_WANT[r[name]]
        assert (r[d_model], r["d_ff"]) == (want["d_model"], want["d_ff"])
        if fmt == "csv":
            assert int(r[total]) == want["total"]
        else:  # human-readable: 124.4M, 6.74B
            assert float(r[total][:-1]) * {"M": 1e6, "B": 1e9}[r[total][-1]] == pytest.approx(want["total"], rel=5e-3)
    if fmt == "csv":  # every CSV cell is the JSON contract's value (a second rendering path)
        for r, j in zip(rows, run_json("audit", "gpt2", "llama-7b"), strict=True):
            for key in ("model_type", "d_model", "d_ff", "ffn_kind", "params_total", "params_non_embedding"):
                assert r[key] == str(j[key]), key


@pytest.mark.parametrize("args, fragment", [
    (["size", "--d-model", "-8", "--ratio", "4"], "d_model"),
    (["size", "--d-model", "768", "--ratio", "0"], "ratio"),
    (["size", "--d-model", "768", "--ratio", "-1"], "ratio"),
    (["size", "--d-model", "768", "--d-ff", "0"], "d_ff"),
    (["size", "--d-model", "768", "--d-ff", "2.5"], "d-ff"),
    (["size", "--d-model", "768"], "give a width"),
    (["size", "--d-model", "100", "--ratio", "4", "--n-layers", "2", "--n-heads", "3"], "does not divide"),
    (["size", "--d-model", "768", "--ratio", "4", "--ffn", "tanh"], "unknown FFN kind"),
    (["audit", "llam-7b"], "did you mean"),
    (["audit"], "at least one"),
    (["plan", "lots"], "parameter count"),
    (["size", "--d-model", "768", "--ratio", "1e308"], "ratio must be a number > 0 and <= 1000000"),
    (["size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--norm", "batchnorm"], "--norm"),
    (["size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--positions", "sinusoid"], "--positions"),
    (["plan", "125M", "--tolerance", "2"], "tolerance"),
    (["explain", "--d-model", "0", "--d-ff", "4"], "d_model"),
    (["audit", "gpt2", "--format", "xml"], "--format"),
    (["claims", "--evidence", "/nonexistent/report"], "no experiment evidence"),
])
def test_bad_input_one_line_exit_2(args, fragment):
    assert_usage_error(run(*args), fragment)


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"hidden_size": 8}', "model_type"),
    ('{"model_type": "no_such_model"}', "not supported"),
    ('{"model_type": ["llama"]}', "must be a string"),
    ('{"model_type": "llama", "hidden_size": "big"}', "hidden_size"),
    ('{"model_type": "llama", "hidden_size": 100, "num_attention_heads": 3}', "does not divide"),
    # (tanh, which transformers builds, is counted through it; no_such_act neither builds)
    ('{"model_type": "gpt2", "n_embd": 64, "n_head": 4, "activation_function": "no_such_act"}', "activation_function"),
    ('{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": -3}',
     "intermediate_size"),
])
def test_malformed_config_json(tmp_path, capsys, content, fragment):
    path = tmp_path / "config.json"
    path.write_text(content)
    before = path.read_bytes()
    assert_usage_error(run_cli(capsys, "audit", str(path)), fragment)  # in-process: no transformers import each
    assert path.read_bytes() == before  # nothing the user had is touched


def test_missing_config_file(tmp_path):
    assert_usage_error(run("audit", str(tmp_path / "nope" / "config.json")), "no such file")


@pytest.mark.parametrize("command", [
    ["size", "--d-model", "768", "--ratio", "4"], ["audit", "--all"], ["claims"],
    ["explain", "--d-model", "768", "--d-ff", "3072"], ["plan", "125M"], ["zoo"],
])
def test_sizing_commands_never_import_torch(command):
    code = ("import sys, ffnlab.cli\n"
            f"sys.argv = ['ffnlab', *{command!r}]\n"
            "try:\n    ffnlab.cli.main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "bad = [m for m in ('torch', 'transformers', 'numpy') if m in sys.modules]\n"
            "assert not bad, bad\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_help_fits_one_screen():
    p = run("--help")
    assert p.returncode == 0
    # 55: the 15 commands (with perplexity and table) on one 80x55 screen; 'perplexity' widens the name column
    assert len(p.stdout.splitlines()) <= 55
    import typer

    from ffnlab.cli import app, register

    register(["--help"])  # every group, as for 'ffnlab --help'
    commands = typer.main.get_command(app).commands  # click's registry, not the help text
    registered = {name for name, c in commands.items() if not c.hidden}
    assert {"size", "plan", "explain", "audit", "zoo", "claims", "train", "export", "sweep", "report",
            "verify"} <= registered
    listed = {m.group(1) for m in re.finditer(r"^\W ([a-z][a-z-]*)\s{2,}\S", p.stdout, re.MULTILINE)}
    assert listed == registered  # every command is on the one screen, and nothing else is
