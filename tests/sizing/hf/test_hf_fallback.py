"""The transformers fallback of ``audit``: model types without a translator, counted on the meta device."""

import copy
import json
import subprocess
import sys

import pytest
from cli_run import run
from hf_counts_all import check
from paths import DATA

from ffnlab.errors import FfnlabError
from ffnlab.sizing.audit import audit as sizing_audit
from ffnlab.sizing.hf import HF_TRANSLATORS
from ffnlab.training.hf_count import count_with_transformers


def audit(target: str) -> dict:
    """The audit as the command runs it: with the transformers counter."""
    return sizing_audit(target, count_with_transformers)

D, L, V, POS = 64, 2, 100, 128
IDS = {"pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}


def _persimmon(ff: int) -> dict:
    """Persimmon: fused qkv with biases, per-head q/k LayerNorms, plain MLP with biases, untied head."""
    return {"model_type": "persimmon", "hidden_size": D, "intermediate_size": ff, "num_hidden_layers": L,
            "num_attention_heads": 4, "vocab_size": V, "max_position_embeddings": POS, **IDS}


def _biogpt(ff: int) -> dict:
    """BioGPT: fc1/fc2 directly under each layer (no 'mlp' module), learned positions (+2 rows), tied head."""
    return {"model_type": "biogpt", "hidden_size": D, "intermediate_size": ff, "num_hidden_layers": L,
            "num_attention_heads": 4, "vocab_size": V, "max_position_embeddings": POS, **IDS}


# the split worked out by hand from each family's modeling file (weights + biases)
CASES = {
    "persimmon": (_persimmon, lambda ff: {
        "ffn": L * (D * ff + ff + ff * D + D),
        "attention": L * (D * 3 * D + 3 * D + D * D + D + 2 * 2 * (D // 4)),
        "embedding": 2 * V * D,
        "norms": (2 * L + 1) * 2 * D}),
    "biogpt": (_biogpt, lambda ff: {
        "ffn": L * (D * ff + ff + ff * D + D),
        "attention": L * 4 * (D * D + D),
        "embedding": V * D + (POS + 2) * D,
        "norms": (2 * L + 1) * 2 * D}),
}


def _transformers_total(config: dict) -> int:
    """transformers' own count, built independently of ffnlab (AutoConfig.for_model)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    d = dict(config)
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    return sum(p.numel() for p in model.parameters())


def _write(tmp_path, config: dict, name: str = "m") -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


@pytest.mark.parametrize("family", sorted(CASES))
@pytest.mark.parametrize("ff", [96, 256])
def test_untranslated_type_counted_exactly(tmp_path, family, ff):
    pytest.importorskip("transformers")
    make, split = CASES[family]
    assert family not in HF_TRANSLATORS  # otherwise this test no longer tests the fallback
    config = make(ff)
    row = audit(_write(tmp_path, config)).as_dict()
    assert row["counted_by"] == "transformers" and "counted by transformers" in row["verdict"]
    assert row["params_total"] == _transformers_total(config)
    want = split(ff)
    got = {k: row[f"params_{k}"] for k in want}
    assert got == want
    assert row["params_other"] == 0
    assert row["params_total"] == sum(want.values())
    assert row["params_non_embedding"] == row["params_total"] - want["embedding"]
    assert (row["d_model"], row["d_ff"], row["n_layers"]) == (D, ff, L)
    assert row["ratio_raw"] == ff / D


def test_fallback_row_is_labelled_in_the_table(tmp_path):
    pytest.importorskip("transformers")
    p = run("audit", "gpt2", _write(tmp_path, _persimmon(256), "pers"))
    assert p.returncode == 0, p.stderr
    assert "pers: " in p.stdout and "counted by transformers" in p.stdout


def _cli_code(args: list[str], block_transformers: bool) -> str:
    block = "sys.modules['transformers'] = None\n" if block_transformers else ""
    return ("import sys, ffnlab.cli\n" + block
            + f"sys.argv = ['ffnlab', *{args!r}]\n"
            "try:\n    ffnlab.cli.main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
            "loaded = [m for m in ('torch', 'transformers') if sys.modules.get(m) is not None]\n"
            "print('LOADED', loaded, 'CODE', code)\n")


def test_known_type_stays_on_the_fast_path(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100}
    p = subprocess.run([sys.executable, "-c", _cli_code(["audit", _write(tmp_path, cfg)], False)],
                       capture_output=True, text=True)
    assert "LOADED [] CODE 0" in p.stdout, (p.stdout, p.stderr)


def test_without_transformers_one_line_names_types_and_fallback(tmp_path):
    code = _cli_code(["audit", _write(tmp_path, _persimmon(256))], True)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert "CODE 2" in p.stdout and len(lines) == 1, (p.stdout, p.stderr)
    assert lines[0].startswith("error: ") and "'persimmon' is not supported" in lines[0]
    assert "llama" in lines[0] and "ffnlab[hf]" in lines[0] and "meta device" in lines[0]


def test_type_unknown_to_transformers_too(tmp_path):
    pytest.importorskip("transformers")
    with pytest.raises(FfnlabError, match="'no_such_model' is not supported by ffnlab"):
        audit(_write(tmp_path, {"model_type": "no_such_model"}))


def test_transformers_refusing_the_config_is_one_line(tmp_path):
    pytest.importorskip("transformers")
    bad = dict(_persimmon(256), hidden_size=66)  # 66 is not divisible by 4 heads
    with pytest.raises(FfnlabError, match="could not build model_type 'persimmon'") as e:
        audit(_write(tmp_path, bad))
    assert "\n" not in str(e.value)


def test_library_audit_without_a_counter_names_the_fallback(tmp_path):
    with pytest.raises(FfnlabError, match="'persimmon' is not supported; supported: .*ffnlab audit"):
        sizing_audit(_write(tmp_path, _persimmon(256)))


def _cli(args: list[str], **kw) -> subprocess.CompletedProcess:
    code = ("import sys, ffnlab.cli\n"
            f"sys.argv = ['ffnlab', *{args!r}]\n"
            "try:\n    ffnlab.cli.main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
            "print('LOADED', [m for m in ('torch', 'transformers') if m in sys.modules], 'CODE', code)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, **kw)


@pytest.mark.slow
def test_transformers_warnings_never_reach_stderr(tmp_path):
    """Token ids outside the vocabulary make transformers log warnings while it builds: a counted
    config prints none, a refused one prints exactly one error line."""
    pytest.importorskip("transformers")
    noisy = dict(_persimmon(256), bos_token_id=5000, eos_token_id=5001)
    ok = _cli(["audit", _write(tmp_path, noisy, "noisy")])
    assert "CODE 0" in ok.stdout and ok.stderr == "", ok.stderr
    bad = _cli(["audit", _write(tmp_path, dict(noisy, hidden_size=66), "bad")])
    lines = [x for x in bad.stderr.splitlines() if x.strip()]
    assert "CODE 2" in bad.stdout and len(lines) == 1 and lines[0].startswith("error: "), bad.stderr


def test_a_huge_layer_count_is_refused_before_building(tmp_path, capsys, monkeypatch):
    """A BERT config with 100,000 layers: refused in one line, exit status 2, from two trial builds at 1
    and 2 layers that show transformers' model grows with num_hidden_layers, never the model as written.
    Oracle: transformers' own BertLayer constructor, counted while audit runs (3 layers in all for the
    two trials, 2 more for the build-cost estimate's one small build; the model as written would construct
    100,000)."""
    pytest.importorskip("transformers")
    from cli_inproc import run_cli
    from transformers.models.bert import modeling_bert

    built = []
    real_init = modeling_bert.BertLayer.__init__

    def counting_init(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003 - transformers' signature
        built.append(1)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(modeling_bert.BertLayer, "__init__", counting_init)
    cfg = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 100_000, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100}
    p = run_cli(capsys, "audit", _write(tmp_path, cfg))
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "100,000 layers" in lines[0], (p.stdout, p.stderr)
    # the trials' layers only: 2 for the build-cost estimate's small build, 1 and 2 for the probe's trials
    assert 0 < len(built) <= 5, len(built)


def test_several_untranslated_files_in_one_audit(tmp_path, capsys):
    pytest.importorskip("transformers")
    from cli_inproc import run_cli

    a, b = _write(tmp_path, _persimmon(96), "a"), _write(tmp_path, _biogpt(128), "b")
    p = run_cli(capsys, "audit", a, b, "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["d_ff"] for r in rows] == [96, 128] and all(r["memory"]["kv_cache_bytes"] > 0 for r in rows)
    # no activation model for these layers: no training total at all, rather than one without them
    for r in rows:
        mem = r["memory"]
        assert mem["training_total_bytes"] is None and mem["peak_bytes"] is None and mem["terms_sum_bytes"] is None
        assert mem["states_bytes"] > 0 and "no training peak" in mem["note"]


def test_the_fallback_says_so_on_a_terminal(tmp_path):
    """On a terminal the audit says it is building with transformers before the wait (and
    erases the note); piped, it prints nothing (above)."""
    pytest.importorskip("transformers")
    import os
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ffnlab", "audit", _write(tmp_path, _persimmon(96))],
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    out, _ = proc.communicate()
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    seen = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "building it with transformers on the meta device" in seen and "\x1b[K" in seen


# -- keys named like a layer count: which size the model is transformers' to say --------------------
# (oracle: transformers' own build of the config, or its refusal, hf_counts_all.check)

_ELEVENTH = {r["id"]: r["config"] for r in json.loads((DATA / "hf_counts_eleventh_pass.json").read_text())["records"]}


def _set(config: dict, path: str, value: int) -> dict:
    config = copy.deepcopy(config)
    target = config
    *outer, last = path.split(".")
    for key in outer:
        target = target[key]
    target[last] = value
    return config


# (finding input, the key's path, the value): a threshold, an interval or an index, built at once
NOT_LAYER_COUNTS = {
    f"{base.split('/')[1]}/{path}={value}": (base, path, value)
    for base, path in (
        ("U3/afmoe/global_attn_every_n_layers=10001", "global_attn_every_n_layers"),
        ("U3/ergo/global_attention_every_n_layers=10001", "global_attention_every_n_layers"),
        ("U3/llava/vision_feature_layer=10001", "vision_feature_layer"),
        ("U3/aria/vision_feature_layer=10001", "vision_feature_layer"),
        ("U3/qwen3_next/max_window_layers=10001", "max_window_layers"),
        ("U3/qwen2_vl/text_config.max_window_layers=10001", "text_config.max_window_layers"),
    )
    for value in (10**6, 2**40)
}


@pytest.mark.parametrize("name", sorted(NOT_LAYER_COUNTS))
def test_a_key_named_like_layers_that_sizes_nothing_is_counted(tmp_path, name):
    base, path, value = NOT_LAYER_COUNTS[name]
    rec = check(_set(_ELEVENTH[base], path, value), tmp_path)
    assert rec["status"] == "exact", (rec["reason"], rec["audit"], rec["reference"])


_BAILING = {"model_type": "bailing_hybrid", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64,
            **IDS}


def test_a_key_that_sizes_what_transformers_builds_is_a_layer_count(tmp_path):
    """Bailing's num_nextn_predict_layers: its model keeps one entry per MTP layer (a regex each), so
    above 10,000 it is refused as a layer count; at 10,000 it is built and counted exactly."""
    refused = _audit_or_error(tmp_path, {**_BAILING, "num_nextn_predict_layers": 10_001})
    assert isinstance(refused, FfnlabError) and "10,001 layers: ffnlab builds at most" in str(refused)
    rec = check({**_BAILING, "num_nextn_predict_layers": 10_000}, tmp_path)
    assert rec["status"] == "exact", (rec["reason"], rec["audit"], rec["reference"])


def _audit_or_error(tmp_path, config: dict):  # noqa: ANN202
    try:
        return sizing_audit(_write(tmp_path, config), count_with_transformers)
    except FfnlabError as e:
        return e


def _depth_key_cases() -> list[tuple[str, str]]:
    from hf_cases import MODEL_TYPES, case

    from ffnlab.sizing.hf.fallback import DEPTH_KEYS

    return [(mt, key) for mt in MODEL_TYPES for key in sorted(DEPTH_KEYS)
            if isinstance(case(mt, 1).get(key), int) and not isinstance(case(mt, 1).get(key), bool)]


@pytest.mark.parametrize(("model_type", "key"), _depth_key_cases())
def test_each_depth_key_sizes_the_model_transformers_builds(model_type, key):
    """fallback.DEPTH_KEYS size the model transformers builds on every type of the test cases that has
    one (it holds more with the key at 2 than at 1), as the probe finds before refusing one above 10,000
    layers."""
    from hf_cases import case
    from transformers import CONFIG_MAPPING

    from ffnlab.training.hf_count import _built_size, _libraries, auto_kind

    torch, transformers = _libraries()
    auto, _ = auto_kind(transformers, model_type)
    fields = {k: v for k, v in case(model_type, 1).items() if k != "model_type"}
    sizes = [_built_size(torch, CONFIG_MAPPING[model_type], auto, {**fields, key: n}) for n in (1, 2)]
    if None in sizes:
        pytest.skip(f"{model_type} with {key} 1 or 2 is not built (another key must agree with it)")
    assert sizes[1] > sizes[0], sizes


@pytest.mark.parametrize("model_type", ["qwen2", "qwen2_moe", "qwen3"])
@pytest.mark.parametrize("value", [-(2**60), -1, 2**53 + 1, 10**30])
@pytest.mark.parametrize("usw", [True, False])
def test_qwen_max_window_layers_is_any_integer_as_transformers_builds_it(tmp_path, model_type, value, usw):
    """A threshold the config compares each layer index with: the translator counts any integer,
    as transformers builds it (no fallback)."""
    from hf_cases import case

    config = {**case(model_type, 1), "max_window_layers": value, "use_sliding_window": usw, "sliding_window": 16}
    rec = check(config, tmp_path)
    assert rec["status"] == "exact", (rec["reason"], rec["audit"], rec["reference"])
    assert rec["audit"]["by"] == "translator", rec["audit"]
