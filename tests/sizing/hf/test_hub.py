"""Hub ids (``org/name[@rev]``) for audit, fit, size --from and probe, through the real
``huggingface_hub`` download path against a fake Hub on 127.0.0.1 (tests/helpers/fake_hub.py).

Oracles: the same config.json audited as a local file (whose counts tests/sizing/hf/test_hf_parity.py checks
against transformers), the requests the server saw, and the HF cache on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import assert_usage_error
from fake_hub import FakeHub

LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}
OLD = {**LLAMA, "intermediate_size": 256}  # the v1 tag's config: another width


def blob(obj: object) -> bytes:
    return json.dumps(obj).encode()


@pytest.fixture(scope="module")
def hub():
    fake = FakeHub()
    fake.add("org/tiny", {"main": {"config.json": blob(LLAMA)}, "v1": {"config.json": blob(OLD)}})
    fake.add("org/private", {"main": {"config.json": blob(LLAMA)}}, access="private", token="hf_secret")
    fake.add("org/gated", {"main": {"config.json": blob(LLAMA)}}, access="gated", token="hf_granted")
    fake.add("org/forbidden", {"main": {"config.json": blob(LLAMA)}}, access="forbidden")
    fake.add("org/no-config", {"main": {"README.md": b"# nothing here\n"}})
    server, url = fake.serve()
    yield fake, url
    server.shutdown()


def ffnlab(url: str, home: Path, *args: str, offline: bool = False, token: str | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env |= {"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1" if offline else "0",
            "TRANSFORMERS_OFFLINE": "1" if offline else "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "ffnlab", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=cwd)


def audit_json(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    return row


def seen(fake: FakeHub, since: int) -> list[tuple[str, str, str | None]]:
    return fake.requests[since:]


def test_audit_fetches_config_json_only_then_answers_offline_from_the_cache(hub, tmp_path):
    fake, url = hub
    local = tmp_path / "tiny" / "config.json"
    local.parent.mkdir()
    local.write_text(json.dumps(LLAMA))
    want = audit_json(ffnlab(url, tmp_path / "hf", "audit", str(local), "--json"))
    n = len(fake.requests)
    row = audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json"))
    assert row["name"] == "org/tiny" and row["source"] == "Hugging Face Hub: org/tiny"
    assert {k: v for k, v in row.items() if k not in ("name", "source")} == \
        {k: v for k, v in want.items() if k not in ("name", "source")}
    assert {path for _, path, _ in seen(fake, n)} == {"/org/tiny/resolve/main/config.json"}  # nothing else
    snapshots = list((tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots").glob("*/config.json"))
    assert len(snapshots) == 1 and json.loads(snapshots[0].read_text()) == LLAMA  # kept in the HF cache
    n = len(fake.requests)
    again = audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json", offline=True))
    assert again == row and seen(fake, n) == []  # HF_HUB_OFFLINE: the cache answers, the server is not asked


def test_offline_without_a_cached_config_says_so(hub, tmp_path):
    _, url = hub
    p = ffnlab(url, tmp_path / "empty", "audit", "org/tiny", offline=True)
    assert_usage_error(p, "HF_HUB_OFFLINE is set")
    assert "has no config.json of org/tiny" in p.stderr


def test_a_revision_pins_the_config(hub, tmp_path):
    fake, url = hub
    n = len(fake.requests)
    assert audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/tiny@v1", "--json"))["d_ff"] == 256
    assert audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json"))["d_ff"] == 172
    commit = fake.repos["org/tiny"].refs["v1"]
    row = audit_json(ffnlab(url, tmp_path / "hf", "audit", f"org/tiny@{commit}", "--json"))
    assert row["d_ff"] == 256 and row["name"] == f"org/tiny@{commit}"
    assert "/org/tiny/resolve/v1/config.json" in {path for _, path, _ in seen(fake, n)}
    assert_usage_error(ffnlab(url, tmp_path / "hf", "audit", "org/tiny@v9"), "has no revision 'v9'")


def test_private_repo_needs_a_token(hub, tmp_path):
    fake, url = hub
    p = ffnlab(url, tmp_path / "hf", "audit", "org/private")
    assert_usage_error(p, "private")
    assert "hf auth login" in p.stderr and "HF_TOKEN" in p.stderr
    n = len(fake.requests)
    assert audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/private", "--json", token="hf_secret"))["d_ff"] == 172
    assert {tok for _, _, tok in seen(fake, n)} == {"hf_secret"}  # HF_TOKEN was sent


@pytest.mark.parametrize("token, status", [(None, 401), ("hf_other", 403)])
def test_gated_repo_says_how_to_get_access(hub, tmp_path, token, status):
    fake, url = hub
    n = len(fake.requests)
    p = ffnlab(url, tmp_path / "hf", "audit", "org/gated", token=token)
    assert_usage_error(p, "org/gated is gated: accept its terms")
    assert "HF_TOKEN" in p.stderr
    assert seen(fake, n)[0][2] == token


def test_gated_repo_with_a_granted_token_works_and_a_bare_403_is_reported(hub, tmp_path):
    _, url = hub
    assert audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/gated", "--json", token="hf_granted"))["d_ff"] == 172
    assert_usage_error(ffnlab(url, tmp_path / "hf", "audit", "org/forbidden", token="hf_x"),
                       "refused org/forbidden (403)")


def test_unknown_repo_and_missing_config_are_one_line(hub, tmp_path):
    _, url = hub
    assert_usage_error(ffnlab(url, tmp_path / "hf", "audit", "org/nothing"), "org/nothing is not on the Hub")
    assert_usage_error(ffnlab(url, tmp_path / "hf", "audit", "org/no-config"), "org/no-config has no config.json")


def test_zoo_names_and_local_paths_never_download(hub, tmp_path):
    fake, url = hub
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "tiny").mkdir()  # a local folder named like the Hub id wins
    (tmp_path / "org" / "tiny" / "config.json").write_text(json.dumps(OLD))
    n = len(fake.requests)
    assert audit_json(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json", cwd=tmp_path))["d_ff"] == 256
    assert ffnlab(url, tmp_path / "hf", "audit", "gpt2", "openai-community/gpt2", "--json").returncode == 0
    assert_usage_error(ffnlab(url, tmp_path / "hf", "audit", "missing/config.json"), "no such file")
    assert_usage_error(ffnlab(url, tmp_path / "hf", "audit", "org/typo", cwd=tmp_path), "no such file")  # org/ is here
    assert seen(fake, n) == []


def test_fit_and_size_from_take_hub_ids(hub, tmp_path):
    _, url = hub
    p = ffnlab(url, tmp_path / "hf", "fit", "org/tiny@v1", "--gpus", "1", "--gpu", "H100", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["model"] == "org/tiny@v1"
    local = tmp_path / "cfg" / "config.json"
    local.parent.mkdir()
    local.write_text(json.dumps(OLD))
    hub_size = ffnlab(url, tmp_path / "hf", "size", "--from", "org/tiny@v1", "--json")
    local_size = ffnlab(url, tmp_path / "hf", "size", "--from", str(local), "--json")
    assert hub_size.returncode == 0 and local_size.returncode == 0, hub_size.stderr + local_size.stderr
    a, b = json.loads(hub_size.stdout), json.loads(local_size.stdout)
    assert a["from"] == "org/tiny@v1" and a["d_ff"] == 256 and a["model"]["params"] == b["model"]["params"]


def test_sizing_without_a_hub_id_never_imports_huggingface_hub():
    code = ("import sys\nfrom ffnlab.cli import main\n"
            "for argv in (['audit', 'llama-2-7b'], ['size', '--from', 'gpt2'], ['fit', 'gpt2', '--gpus', '1']):\n"
            "    try:\n        main(argv)\n    except SystemExit as e:\n        assert e.code == 0, (argv, e.code)\n"
            "print('huggingface_hub' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "False"


def _tiny_export(folder: Path) -> dict[str, bytes]:
    """A 2-layer byte-level model exported by ``export_model`` into ``folder``: its files' bytes by name."""
    from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
    from ffnlab.training.export import export_model
    from ffnlab.training.export_tokenizer import generation_config, tokenizer_files
    from ffnlab.training.nn import build_model

    cfg = validate(ModelConfig(d_model=32, n_layers=2, vocab_size=256, ffn=FFNSpec("swiglu", 24),
                               attn=AttentionSpec(n_heads=4, n_kv_heads=2), norm="rmsnorm", positions="rope",
                               max_positions=32))
    export_model(build_model(cfg, seed=0, max_seq_len=32), folder, tokenizer_files("byte", None, 256, 64),
                 generation_config())
    return {f.name: f.read_bytes() for f in folder.iterdir()}


def test_probe_takes_a_hub_id(hub, tmp_path):
    """probe downloads config, safetensors weights and tokenizer files (never a .bin) and runs."""
    pytest.importorskip("transformers")
    fake, url = hub
    files = _tiny_export(tmp_path / "exported")
    fake.add("org/probe-me", {"main": {**files, "pytorch_model.bin": b"a pickle ffnlab must not fetch"}})
    corpus = tmp_path / "text.txt"
    corpus.write_text("".join(f"line {i}: to be or not to be, that is the question\n" for i in range(300)))
    n = len(fake.requests)
    p = ffnlab(url, tmp_path / "hf", "probe", "org/probe-me", "--corpus", str(corpus), "--tokens", "512",
               "--seq-len", "32", "--units", "2", "--examples", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "probes" / "probe-me" / "probe.json").is_file()
    fetched = {path.rsplit("/", 1)[1] for method, path, _ in seen(fake, n) if method == "GET"}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= fetched and "pytorch_model.bin" not in fetched


def test_a_zoo_entrys_hub_id_loads_its_weights_from_the_hub(hub, tmp_path):
    """A zoo entry's org/name alias is a Hub id to perplexity and probe (the zoo holds a shape, never
    weights), as any org/name is; audit and size still read the zoo's config and ask the Hub nothing.
    Oracle: the requests the fake Hub saw, and the same files measured as a local folder."""
    pytest.importorskip("transformers")
    fake, url = hub
    files = _tiny_export(tmp_path / "exported")  # served as openai-community/gpt2 by this fake Hub only
    fake.add("openai-community/gpt2", {"main": {**files, "pytorch_model.bin": b"a pickle ffnlab must not fetch"}})
    (tmp_path / "d.txt").write_text(" = A = \n\n to be or not to be, that is the question \n\n = B = \n\n more \n")
    n = len(fake.requests)
    assert ffnlab(url, tmp_path / "hf", "audit", "openai-community/gpt2", "--json").returncode == 0
    assert seen(fake, n) == []  # the zoo's config: nothing asked
    env = ("--dataset", "d.txt", "--json", "--progress", "off", "--no-cache")
    hub_run = ffnlab(url, tmp_path / "hf", "perplexity", "openai-community/gpt2", *env, cwd=tmp_path)
    assert hub_run.returncode == 0, hub_run.stderr  # was: "not a transformers folder (no config.json) nor a Hub id"
    fetched = {path.rsplit("/", 1)[1] for method, path, _ in seen(fake, n) if method == "GET"}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= fetched and "pytorch_model.bin" not in fetched
    local = ffnlab(url, tmp_path / "hf", "perplexity", "exported", *env, cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    (a,), (b,) = json.loads(hub_run.stdout), json.loads(local.stdout)
    assert a["model"] == "openai-community/gpt2" and a["word_perplexity"] == b["word_perplexity"]
    p = ffnlab(url, tmp_path / "hf", "probe", "openai-community/gpt2", "--corpus", "d.txt", "--tokens", "64",
               "--seq-len", "16", "--units", "1", "--examples", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr  # was: "openai-community/gpt2 is not a folder"
    assert (tmp_path / "probes" / "gpt2" / "probe.json").is_file()


# -- a config.json over files.read_text's limit (16 MiB): never fetched whole -------------------------

LIMIT = 16 * 2**20  # ffnlab.files.MAX_TEXT_BYTES, the limit the refusal names


@pytest.mark.parametrize("misbehave", [None, "no-length", "false-length"])
def test_a_config_json_over_the_limit_is_refused_and_not_fetched_whole(tmp_path, misbehave):
    big = blob({**LLAMA, "pad": "x" * 40_000_000})  # 40 MB
    fake = FakeHub(misbehave=misbehave)
    fake.add("org/big", {"main": {"config.json": big}})
    server, url = fake.serve()
    try:
        p = ffnlab(url, tmp_path / "hf", "audit", "org/big", "--json", "--timeout", "5")
    finally:
        server.shutdown()
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(lines) == 1, p.stderr[-2000:]
    assert f"{LIMIT:,}-byte limit" in lines[0], lines[0]
    # oracle: the bytes the server wrote; announced, none; unannounced, the limit and what the
    # sockets' buffers took before the client closed, far short of the 40 MB file
    if misbehave is None:
        assert fake.sent == 0 and "announces" in lines[0]
    else:
        assert fake.sent < 32 * 2**20 and "stopped" in lines[0], fake.sent
    # and the partial body is gone from the HF cache (the library removes it); its refs and lock,
    # a few bytes, stay: ffnlab deletes nothing in a shared cache that another process may be using
    left = [p for p in (tmp_path / "hf").rglob("*") if not p.is_dir()] if (tmp_path / "hf").exists() else []
    assert not any("blobs" in p.parts or "snapshots" in p.parts for p in left), left
    assert sum(p.stat().st_size for p in left) < 1024, [(p, p.stat().st_size) for p in left]


def test_a_config_json_at_the_limit_is_read(tmp_path):
    text = json.dumps({**LLAMA, "pad": ""})
    padded = blob({**LLAMA, "pad": "x" * (LIMIT - len(text))})
    assert len(padded) == LIMIT
    fake = FakeHub(misbehave="no-length")
    fake.add("org/edge", {"main": {"config.json": padded}})
    server, url = fake.serve()
    try:
        p = ffnlab(url, tmp_path / "hf", "audit", "org/edge", "--json")
    finally:
        server.shutdown()
    assert audit_json(p)["name"] == "org/edge"
