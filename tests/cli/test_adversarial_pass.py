"""A fresh adversarial pass over the CLI's promises, with inputs new to the suite (written by someone
who did not write the fixes they check), kept as tests.

The pass threw, with a driver calling the CLI (in-process and as a subprocess, each call bounded):

* counts: 3,249 mutated configs of 443 model types (keys left out, keys set to null beyond the
  four of ``hf_counts_all``, tied and untied heads, a half and an odd ``head_dim``, MQA, sliding
  windows switched on, YaRN, partial RoPE, one expert, top-k = every expert, sparse steps, all-dense
  MoE, two shared experts, a vocabulary of one, one layer; a second round over 50 VLM, seq2seq and
  MoE types), and 202 configs writing a key under the other name transformers accepts for it
  (``attribute_map``), each against transformers' own model built on the meta device. Found: 27 of
  the 202 counted the class default instead (:data:`ALIAS_CASES`, fixed). Otherwise every total
  equals transformers' or both refuse, except six configs transformers refuses and ffnlab counts
  (:data:`COUNTED_WHERE_TRANSFORMERS_REFUSES`);
* flags: 28 numeric spellings (1e308, -0, nan, inf, 10**30 as text, 2**64+1, suffixes, Arabic
  digits, underscores, hex, subnormals, ...) on every numeric option of size, plan, explain, zoo,
  audit and fit, with and without --json (4,032 calls): each answers exit 0 with strict JSON or one
  ``error:`` line with exit 2, and writes nothing; 14 odd generate inputs (temperatures 0, -0,
  1e-320, 1e308, nan; seeds 2**64, -1; empty, control-character and 100 KB prompts; top-k 0, 10**30);
* specs and train configs: 39 files (alias bombs through merge keys, in seeds and beside arms;
  duplicate keys nested, quoted, late, in JSON and TOML; 100,000 seeds, 20,000 arms; non-finite,
  boolean, huge and suffixed numbers). Found: an unknown reference arm or repeated arm names in a
  spec of thousands of arms printed every arm name (a 50-65 KB error line; fixed);
* data safety: 33 inputs (--out/--hf as links to foreign, empty and missing folders, under linked
  parents, existing files, the run itself; escaping --checkpoint names; two exports racing to one
  new folder). Found: export to a dangling link or a link to an empty folder failed with "Not a
  directory" naming ffnlab's temporary (fixed; nothing was ever written through the link);
* waits: a stalling Hub, a stalled body, 502, 503, 429 and a missing repo, for audit, size --from,
  probe, train --corpus hf:, perplexity and table with --timeout 1 (42 calls, all one line).

A small sample of each class runs here (the whole pass takes many minutes).
"""

from __future__ import annotations

import json
import math
import re

import pytest
from fuzz_cli import cli, snapshot

# -- counts: new mutations of the stored default configs, against transformers ------------------

pytest.importorskip("transformers")

from hf_counts_all import PATH as COUNTS_PATH  # noqa: E402
from hf_counts_all import check  # noqa: E402

_DEFAULTS = {r["id"].split("/")[0]: r["config"] for r in json.loads(COUNTS_PATH.read_text())["records"]
             if r["id"].endswith("/default") and r["status"] == "exact"}


def _without(key: str):
    return lambda c: {k: v for k, v in c.items() if k != key}


def _with(**changes):
    return lambda c: {**c, **changes}


MUTATIONS = {
    "missing-hidden_size": _without("hidden_size"),
    "missing-num_key_value_heads": _without("num_key_value_heads"),
    "missing-intermediate_size": _without("intermediate_size"),
    "null-tie_word_embeddings": _with(tie_word_embeddings=None),
    "null-rope_scaling": _with(rope_scaling=None),
    "null-num_experts_per_tok": _with(num_experts_per_tok=None),
    "untied": _with(tie_word_embeddings=False),
    "tied": _with(tie_word_embeddings=True),
    "head-dim-6": _with(head_dim=6),
    "mqa": _with(num_key_value_heads=1),
    "sliding-on": _with(sliding_window=16, use_sliding_window=True, max_window_layers=1),
    "yarn": _with(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
    "partial-rope": _with(partial_rotary_factor=0.5),
    "odd-ffn": _with(intermediate_size=37),
    "vocab-1": _with(vocab_size=1),
    "one-layer": _with(num_hidden_layers=1),
    "one-expert": _with(num_experts=1, num_experts_per_tok=1),
    "all-dense": _with(first_k_dense_replace=99),
    "sparse-step": _with(decoder_sparse_step=2, mlp_only_layers=[0]),
}
COUNT_CASES = [  # (model type, mutation): a sample over dense, MoE, hybrid, VLM and seq2seq types
    ("qwen2", "missing-num_key_value_heads"), ("llama", "yarn"), ("mistral", "sliding-on"), ("qwen2", "head-dim-6"),
    ("qwen2_moe", "sparse-step"), ("qwen3_moe", "one-expert"), ("mixtral", "null-num_experts_per_tok"),
    ("deepseek_v3", "all-dense"), ("phi", "partial-rope"), ("gemma2", "untied"), ("gpt_neox", "mqa"),
    ("olmoe", "missing-intermediate_size"), ("granitemoe", "null-tie_word_embeddings"), ("jamba", "one-layer"),
    ("falcon", "vocab-1"), ("starcoder2", "odd-ffn"), ("t5", "tied"), ("bart", "null-rope_scaling"),
    ("llava", "missing-num_key_value_heads"), ("mllama", "untied"),
]
# ffnlab's translators count these; transformers refuses them (its config validators, or a None it
# cannot build with): recorded, not promised either way
COUNTED_WHERE_TRANSFORMERS_REFUSES = [
    ("dbrx", _with(tie_word_embeddings=True)),  # "tie_word_embeddings is not supported for DBRX models"
    ("gpt_oss", _with(num_experts=None)),  # an alias of num_local_experts: zeros() gets None
    ("deepseek_v2", _without("num_attention_heads")),  # default 32 heads do not divide hidden_size 8
    ("glm4_moe", _with(num_local_experts=None)),  # an alias of n_routed_experts: empty() gets None
    ("t5", _with(num_hidden_layers=None)),  # an alias of num_layers
    ("t5", _with(rope_scaling={"rope_type": "yarn", "factor": 4.0})),  # T5Config has no max_position_embeddings
]


@pytest.mark.parametrize("model_type, mutation", COUNT_CASES, ids=[f"{t}-{m}" for t, m in COUNT_CASES])
def test_a_mutated_config_counts_as_transformers_builds_it(tmp_path, model_type, mutation):
    if model_type not in _DEFAULTS:
        pytest.skip(f"{model_type} has no stored default config")
    rec = check(MUTATIONS[mutation](_DEFAULTS[model_type]), tmp_path)
    assert rec["status"] in ("exact", "refused"), rec["reason"]


@pytest.mark.parametrize("model_type, mutate", COUNTED_WHERE_TRANSFORMERS_REFUSES,
                         ids=[t for t, _ in COUNTED_WHERE_TRANSFORMERS_REFUSES])
def test_configs_transformers_refuses_are_counted_without_a_traceback(tmp_path, model_type, mutate):
    rec = check(mutate(_DEFAULTS[model_type]), tmp_path)
    assert "traceback" not in rec["audit"], rec["audit"]
    assert "refused" in rec["reference"], rec["reference"]  # when transformers builds it, it must be exact
    assert "total" in rec["audit"] or "refused" in rec["audit"]


# -- numbers on numeric flags --------------------------------------------------------------------

NASTY = ["1e308", "-1e308", "-0", "-0.0", "nan", "NaN", "inf", "-Infinity", str(10**30), "1" + "0" * 30 + ".0",
         "4k", "2M", "1G", "7B", "1_000", "0x10", "1e-320", "+3", "\u0663", "", " 2", "1e3", "0", "-1", "3.5",
         "1e19", str(2**63), str(2**64 + 1)]
FLAG_CASES = [
    (["size", "--d-model", "512", "--ratio", "4", "--n-layers", "2"], "--lora-alpha"),
    (["size", "--d-model", "512", "--ratio", "4", "--n-layers", "2"], "--loss-chunks"),
    (["size", "--d-model", "512", "--ratio", "4", "--n-layers", "2"], "--timeout"),
    (["plan", "125M"], "--tolerance"),
    (["fit", "gpt2", "--gpus", "8"], "--gpu-memory"),
    (["fit", "gpt2", "--gpus", "8"], "--mfu"),
    (["fit", "gpt2", "--gpus", "8"], "--reserve"),
    (["fit", "gpt2", "--gpus", "8"], "--tokens"),
    (["audit", "gpt2"], "--prefetch"),
    (["audit", "gpt2"], "--recompute-every"),
]


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> float:
        raise ValueError(f"non-JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("base, flag", FLAG_CASES, ids=[f"{b[0]}{f}" for b, f in FLAG_CASES])
def test_every_spelling_of_a_number_is_an_answer_or_one_error_line(tmp_path, base, flag):
    (tmp_path / "user.txt").write_text("mine")
    before = snapshot(tmp_path)
    for i, value in enumerate(NASTY):
        for as_json in ((False, True) if i % 4 == 0 else (i % 2 == 1,)):  # the pass tried both for all
            r = cli(*base, flag, value, *(["--json"] if as_json else []), where=tmp_path)
            assert r.code in (0, 1, 2) and "Traceback" not in r.stderr, (flag, value, r.stderr[-500:])
            # a count written with a suffix is echoed first ("note: --prefetch 4k read as 4,000"): what
            # was read, then its one error line
            lines = [x for x in r.stderr.splitlines() if x.strip() and not re.match(r"note: \S+ \S+ read as ", x)]
            if r.code == 2:
                assert len(lines) == 1 and lines[0].startswith("error: "), (flag, value, r.stderr[-500:])
                assert len(lines[0]) < 1000
            elif r.code == 0 and as_json:
                _strict_json(r.stdout)
    assert snapshot(tmp_path) == before


# -- specs: huge designs, duplicate keys, bombs --------------------------------------------------

BASE_SPEC = {
    "name": "adv", "control": "fixed-d-model", "seeds": [0],
    "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2},
             "train": {"seq_len": 16, "batch_size": 4, "max_steps": 2}},
}


def _arms(names: list[str], ratio=lambda i: 2) -> list[dict]:
    return [{"name": n, "ffn": {"kind": "gelu", "rule": "ratio", "ratio": ratio(i)}} for i, n in enumerate(names)]


SPECS = {
    # a reference naming no arm of 3,000: the line once listed all 3,000 names (50 KB)
    "reference-among-3000": (json.dumps({**BASE_SPEC, "reference": "gone",
                                         "arms": _arms([f"arm-number-{i}" for i in range(3000)])}), "gone"),
    # 2,000 names each given twice (different arms): the line once listed all 4,000
    "names-twice": (json.dumps({**BASE_SPEC, "arms": _arms([f"arm-number-{i % 2000}" for i in range(4000)],
                                                             lambda i: 1 + i // 2000)}), "given more than once"),
    "runs-over-limit": (json.dumps({**BASE_SPEC, "seeds": list(range(5001)), "arms": _arms(["a", "b"])}), "10,000"),
    "seeds-2**64+1": (json.dumps({**BASE_SPEC, "seeds": [2**64 + 1], "arms": _arms(["a"])}), "seeds[0]"),
    "seeds-negative-zero": (json.dumps({**BASE_SPEC, "seeds": [-0.0], "arms": _arms(["a"])}), "seeds[0]"),
    "ratio-suffix": (json.dumps({**BASE_SPEC, "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio",
                                                                              "ratio": "2k"}}]}), "ratio"),
    "json-duplicate-nested": ('{"name": "x", "base": {"model": {"d_model": 32, "d_model": 64}}}', "d_model"),
}
YAML_SPECS = {
    "bomb-through-merge-keys": "a: &a {x: 1, y: 1, z: 1, w: 1}\n" + "".join(
        f"{c}: &{c} {{<<: *{p}, k{c}: [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]}}\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + "name: x\n",
    "bomb-in-seeds": "s0: &s0 [0,0,0,0,0,0,0,0,0,0]\n" + "".join(
        f"s{i}: &s{i} [{','.join([f'*s{i - 1}'] * 10)}]\n" for i in range(1, 9)) + "name: x\nseeds: *s8\n",
    "duplicate-quoted-key": "name: x\ncontrol: iso-params\n\"control\": iso-flops\n",
    "duplicate-late-key": "name: x\nseeds: [0]\narms: []\nseeds: [5]\n",
    "lr-nan": "name: x\nbase: {train: {lr: .nan}}\narms: [{name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}]\n",
    "seeds-inf": "name: x\nseeds: [.inf]\narms: [{name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}]\n",
    "seeds-bool": "name: x\nseeds: [yes]\narms: [{name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}]\n",
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_bad_spec_is_one_short_error_line(tmp_path, name):
    text, fragment = SPECS[name]
    (tmp_path / "spec.json").write_text(text)
    before = snapshot(tmp_path)
    r = cli("sweep", "spec.json", "--out", "out", where=tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    assert len(lines[0]) < 1000, f"{len(lines[0]):,} characters"
    assert fragment in lines[0], lines[0]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", sorted(YAML_SPECS))
@pytest.mark.parametrize("command", ["sweep", "train"])
def test_a_bad_yaml_spec_or_config_is_refused_before_anything_runs(tmp_path, name, command):
    (tmp_path / "in.yaml").write_text(YAML_SPECS[name])
    before = snapshot(tmp_path)
    r = cli(command, "in.yaml", "--out", "out", where=tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    assert snapshot(tmp_path) == before


# -- waits: server errors the suite had not used -------------------------------------------------


@pytest.mark.parametrize("status", [502, 503, 429])
def test_a_hub_answering_an_error_is_one_line_after_one_try(tmp_path, status):
    import os
    import subprocess
    import sys

    from fake_hub import FakeHub

    fake = FakeHub()
    fake.add("org/tiny", {"main": {"config.json": json.dumps({"model_type": "llama", "hidden_size": 64}).encode()}})
    fake.misbehave, fake.status = "status", status
    server, url = fake.serve()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "FFNLAB_TIMEOUT"))}
        env |= {"HF_ENDPOINT": url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
                "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
        p = subprocess.run([sys.executable, "-m", "ffnlab", "audit", "org/tiny", "gpt2", "--timeout", "1"],
                           capture_output=True, text=True, env=env, timeout=120)
    finally:
        fake.release()
        server.shutdown()
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert lines[-1].startswith("error: ") and f"answered {status}" in lines[-1], p.stderr
    assert all(x.startswith("waiting for ") for x in lines[:-1]), p.stderr
    assert len({(m, path) for m, path, _ in fake.requests}) == len(fake.requests)  # no retries


def test_nasty_numbers_are_not_finite_json_anywhere():
    """The pass's own check of the JSON reader it relies on."""
    with pytest.raises(ValueError):
        _strict_json('{"a": NaN}')
    assert _strict_json('{"a": 1e308}') == {"a": 1e308} and not math.isinf(1e308)


# -- data safety: a link where a new folder is to be written ------------------------------------


@pytest.mark.parametrize("target", ["dangling", "empty-folder"])
def test_a_folder_staged_over_a_link_is_one_clear_refusal(tmp_path, target):
    """export --hf LINK (a link to nowhere, or to an empty folder) once failed with "Not a directory"
    naming ffnlab's own temporary; now the link is named, and it and its target stay as they were."""
    from ffnlab.errors import FfnlabError
    from ffnlab.files import staged_dir

    (tmp_path / "empty-folder").mkdir()
    link = tmp_path / "out"
    link.symlink_to(tmp_path / target)
    before = snapshot(tmp_path)
    with pytest.raises(FfnlabError) as e, staged_dir(link) as tmp:
        (tmp / "config.json").write_text("{}")
    assert "symbolic link" in str(e.value) and str(link) in str(e.value) and "\n" not in str(e.value)
    assert snapshot(tmp_path) == before


# -- counts: keys written under the other names transformers accepts ------------------------------

ALIAS_CASES = [  # (type, key as written, its own name): 27 of the pass's 202 such configs were off
    ("gpt2", "num_hidden_layers", "n_layer"), ("gpt2", "max_position_embeddings", "n_positions"),
    ("t5", "hidden_size", "d_model"), ("t5", "head_dim", "d_kv"), ("t5", "num_hidden_layers", "num_layers"),
    ("gpt_oss", "num_experts", "num_local_experts"), ("glm4_moe", "num_local_experts", "n_routed_experts"),
    ("mpt", "num_hidden_layers", "n_layers"), ("dbrx", "num_attention_heads", "n_heads"),
    ("hunyuan_v1_moe", "num_local_experts", "num_experts"), ("gpt_bigcode", "num_attention_heads", "n_head"),
]


@pytest.mark.parametrize("model_type, alias, real", ALIAS_CASES, ids=[f"{t}-{a}" for t, a, _ in ALIAS_CASES])
def test_a_key_under_its_other_name_counts_as_transformers_reads_it(tmp_path, model_type, alias, real):
    """GPT-2's config.json with num_hidden_layers (not n_layer): transformers builds that many
    layers; ffnlab's translator once ignored the key and counted the class default."""
    config = {k: v for k, v in _DEFAULTS[model_type].items() if k != real}
    config[alias] = _DEFAULTS[model_type][real] + 1
    rec = check(config, tmp_path)
    assert rec["status"] in ("exact", "refused"), rec["reason"]


def test_the_alias_table_is_transformers_own():
    from transformers import CONFIG_MAPPING

    from ffnlab.sizing.hf import HF_TRANSLATORS
    from ffnlab.sizing.hf.aliases import ALIASES

    theirs = {t: dict(getattr(CONFIG_MAPPING[t], "attribute_map", {}) or {}) for t in HF_TRANSLATORS}
    assert {t: m for t, m in theirs.items() if m} == ALIASES


def test_which_of_two_given_names_wins_is_transformers_own():
    """Both names in one config.json, with different values: the config transformers builds keeps
    the one that is not a declared field (set after them), the table says which that is."""
    from transformers import CONFIG_MAPPING

    from ffnlab.sizing.hf.aliases import ALIASES, DECLARED_UNDER_OTHER_NAME, real_keys

    for model_type, aliases in ALIASES.items():
        cls = CONFIG_MAPPING[model_type]
        for alias, real in aliases.items():
            base = cls().to_dict()
            if not isinstance(base.get(real), int) or isinstance(base.get(real), bool):
                continue
            given = {**base, real: 1, alias: 2}
            try:
                built = getattr(cls.from_dict({k: v for k, v in given.items() if k != "model_type"}), real)
            except Exception:  # noqa: BLE001 - a value the class refuses says nothing of precedence
                continue
            assert real_keys(given, model_type)[real] == built, (model_type, alias, real, built)
            assert ((model_type, alias) in DECLARED_UNDER_OTHER_NAME) == (built == 1), (model_type, alias)
