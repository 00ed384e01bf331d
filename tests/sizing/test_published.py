"""The kept table of published WikiText-103 perplexities: sources, protocols, and `ffnlab table`."""

from __future__ import annotations

import json

from cli_inproc import run_cli

from ffnlab.sizing import published as P
from ffnlab.sizing.zoo import find

GPT2 = {"gpt2": ("117M", 37.50), "gpt2-medium": ("345M", 26.37), "gpt2-large": ("762M", 22.05),
        "gpt2-xl": ("1542M", 17.48)}  # Radford et al. 2019, Table 3, WikiText103 column


def test_every_published_figure_has_a_source_table_page_and_protocol():
    assert P.check_data() == []
    figures = {p.model: p for p in P.published()}
    assert {m: (p.paper_name, p.perplexity) for m, p in figures.items() if m in GPT2} == GPT2
    for p in figures.values():
        find(p.model)  # a zoo model
        assert p.source in P.sources() and p.protocol in P.protocols()
        assert P.sources()[p.source]["url"].startswith("https://") and P.sources()[p.source]["short"]
        assert "Table" in p.where and "p. " in p.where and p.metric == "word perplexity"
        assert p.model not in GPT2 or p.sizes.startswith("Table 2 (p. 4)")
    text = P.protocols()["gpt2-zero-shot"]
    assert "de-tokenizers" in text and "per word" in text and "WikiText-103" in text


def test_models_without_a_published_figure_say_where_their_paper_is_silent():
    for family in ("GPT-3", "LLaMA", "Mistral"):
        none = P.none_published(family)
        assert none is not None and none["source"] in P.sources() and "Sec." in none["where"]
        assert P.organisation(family)
    assert P.organisation("GPT-2") == "OpenAI"


def test_table_prints_the_four_gpt2_rows_offline(capsys):
    p = run_cli(capsys, "table", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(r["name"], r["ppl_published"]) for r in rows] == [(m, v[1]) for m, v in GPT2.items()]
    for r, (paper, _) in zip(rows, GPT2.values(), strict=True):
        assert r["organisation"] == "OpenAI" and r["ppl_published_protocol"] == "gpt2-zero-shot"
        assert r["ppl_published_source"] == f"Radford et al. 2019, Table 3 (p. 5), {paper}"
        assert r["ratio_raw"] == 4 and r["ratio_param_matched"] == 4 and r["flops_context"] == 1024
        assert r["ppl_measured"] is None and r["train_flops_per_token"] > 0
    text = run_cli(capsys, "table", "gpt2-xl").stdout  # the terminal table: source and protocol as notes
    assert " ".join(text.split()).count(
        "published 17.48 by gpt2-zero-shot, Radford et al. 2019, Table 3 (p. 5), 1542M") == 1
    md = run_cli(capsys, "table", "gpt2", "gpt-3-175b", "--format", "markdown").stdout
    assert "| OpenAI | GPT-2 small (124M) |" in md and "37.50" in md and "gpt2-zero-shot: GPT-2 paper" in md
    assert "GPT-3 175B: no published WikiText-103 perplexity: Brown et al. 2020" in md
    csv = run_cli(capsys, "table", "openai-community/gpt2-xl", "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("organisation,model,ratio_raw") and ",17.48,gpt2-zero-shot," in csv[1]


def test_table_without_measure_never_imports_torch():
    import subprocess
    import sys

    code = ("import sys, ffnlab.cli\nsys.argv = ['ffnlab', 'table', 'gpt2', 'llama-7b', '--json']\n"
            "try:\n    ffnlab.cli.main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "bad = [m for m in ('torch', 'transformers', 'numpy') if m in sys.modules]\nassert not bad, bad\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
