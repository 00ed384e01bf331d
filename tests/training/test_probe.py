"""ffnlab probe on a tiny trained ffnlab run and on tiny transformers models saved to a local folder;
coefficients, fire rates and value projections checked against values computed here independently."""

from __future__ import annotations

import json

import pytest
import torch

from ffnlab.cli import main

TEXT = "<script>alert('x')</script> & the king's \"men\"\n" * 40


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI in this process (transformers is imported once for the whole module)."""
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def probe_json(capsys, *args: str) -> dict:
    code, out, err = cli(capsys, "probe", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def usage_error(capsys, fragment: str, *args: str) -> None:
    code, _, err = cli(capsys, *args)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "text.txt"
    path.write_text(TEXT)
    return path


def save_hf(kind: str, folder, vocab: int = 256):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if kind == "llama":
        model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=48,
                                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                             max_position_embeddings=128, tie_word_embeddings=False))
    else:
        model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_inner=64,
                                           n_positions=128))
    model.save_pretrained(folder)
    return model.eval()


def mlp_inputs(model, mlps, text: str, seq: int):
    """Each MLP's input over the windows the probe uses, captured at the MLP module itself."""
    ids = list(text.encode())[: (len(text) // seq) * seq]
    seen: dict[int, list[torch.Tensor]] = {}
    hooks = [m.register_forward_pre_hook(lambda _m, a, i=i: seen.setdefault(i, []).append(a[0]))
             for i, m in enumerate(mlps)]
    with torch.no_grad():
        model(input_ids=torch.tensor(ids).view(-1, seq))
    for h in hooks:
        h.remove()
    return {i: torch.cat(v).reshape(-1, v[0].shape[-1]) for i, v in seen.items()}


def test_probe_llama_folder_gated_coefficients_and_value_tokens(tmp_path, corpus_file, capsys):
    model = save_hf("llama", tmp_path / "llama")
    r = probe_json(capsys, str(tmp_path / "llama"), "--corpus", str(corpus_file), "--split", "train", "--tokens", "512",
                   "--seq-len", "64", "--units", "3", "--examples", "2", "--top-tokens", "4",
                   "--out", str(tmp_path / "p"))
    assert r["tokenizer"] == "byte" and r["n_layers"] == 2 and r["tokens"] == 512
    mlps = [layer.mlp for layer in model.model.layers]
    train_text = corpus_file.read_text()[: int(len(TEXT) * 0.9)]
    x = mlp_inputs(model, mlps, train_text[:600], 64)
    for ly in r["layers"]:
        mlp = mlps[ly["layer"]]
        with torch.no_grad():
            gate = mlp.act_fn(mlp.gate_proj(x[ly["layer"]][:512]))
            coef = gate * mlp.up_proj(x[ly["layer"]][:512])
        assert ly["summary"]["gated"] and ly["summary"]["d_ff"] == 48
        assert ly["summary"]["mean_fire_rate"] == pytest.approx(float((gate > 0).float().mean()), abs=1e-6)
        for u in ly["units"]:
            assert u["max_coefficient"] == pytest.approx(float(coef[:, u["unit"]].max()), rel=1e-4, abs=1e-6)
            for e in u["examples"]:
                assert e["coefficient"] == pytest.approx(e["gate_act"] * e["up"], rel=1e-4, abs=1e-6)
                assert e["trigger"] == train_text[e["position"]]
                assert train_text[: e["position"]].endswith(e["before"])
            projection = model.lm_head.weight @ mlp.down_proj.weight[:, u["unit"]]
            assert [t["id"] for t in u["promotes"]] == projection.topk(4).indices.tolist()
            assert [t["id"] for t in u["suppresses"]] == (-projection).topk(4).indices.tolist()
    page = (tmp_path / "p" / "index.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert json.loads((tmp_path / "p" / "probe.json").read_text())["layers"][0]["units"]


def test_probe_gpt2_folder_plain_mlp(tmp_path, corpus_file, capsys):
    model = save_hf("gpt2", tmp_path / "gpt2")
    r = probe_json(capsys, str(tmp_path / "gpt2"), "--corpus", str(corpus_file), "--split", "train", "--tokens", "256",
                   "--seq-len", "64", "--layers", "1", "--units", "2", "--out", str(tmp_path / "p"))
    (ly,) = r["layers"]
    assert ly["layer"] == 1 and not ly["summary"]["gated"] and ly["summary"]["d_ff"] == 64
    mlp = model.transformer.h[1].mlp
    train_text = corpus_file.read_text()[:256]
    x = mlp_inputs(model, [h.mlp for h in model.transformer.h], train_text, 64)[1]
    with torch.no_grad():
        coef = mlp.act(mlp.c_fc(x))
    assert ly["summary"]["mean_fire_rate"] == pytest.approx(float((coef > 0).float().mean()), abs=1e-6)
    for u in ly["units"]:
        assert "up" not in u["examples"][0]
        assert u["max_coefficient"] == pytest.approx(float(coef[:, u["unit"]].max()), rel=1e-4, abs=1e-6)
        projection = model.lm_head.weight @ mlp.c_proj.weight[u["unit"]]  # Conv1D: (d_ff, d)
        assert [t["id"] for t in u["promotes"]] == projection.topk(10).indices.tolist()


def test_probe_a_trained_ffnlab_run(tmp_path, capsys):
    out = tmp_path / "run"
    sets = ["model.d_model=32", "model.n_layers=2", "model.n_heads=2", "train.seq_len=32", "train.batch_size=8",
            "train.max_steps=6", "train.eval_every=6", "train.eval_tokens=512", "train.progress=off",
            "train.tensorboard=false", "train.threads=1", "train.peak_flops=1e11",
            f"data.cache_dir={tmp_path / 'cache'}"]
    code, _, err = cli(capsys, "train", "--out", str(out), *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    r = probe_json(capsys, str(out), "--tokens", "1024", "--units", "2", "--examples", "3",
                   "--out", str(tmp_path / "p"))
    assert r["kind"].startswith("ffnlab run (swiglu") and [ly["layer"] for ly in r["layers"]] == [0, 1]
    from ffnlab.training.export import load_run_model

    model = load_run_model(out)
    for ly in r["layers"]:
        s = ly["summary"]
        assert s["gated"] and 0 < s["mean_fire_rate"] < 1 and s["d_ff"] == model.cfg.ffn.d_ff
        assert s["value_entropy_bits_mean"] <= s["value_entropy_bits_max"] == 8.0
        w_out = model.blocks[ly["layer"]].ffn.w_out.weight
        for u in ly["units"]:
            assert [e["coefficient"] for e in u["examples"]] == sorted((e["coefficient"] for e in u["examples"]),
                                                                       reverse=True)
            for e in u["examples"]:
                assert e["coefficient"] == pytest.approx(e["gate_act"] * e["up"], rel=1e-4, abs=1e-6)
            projection = model.lm_head.weight @ w_out[:, u["unit"]]
            assert [t["id"] for t in u["promotes"]] == projection.topk(10).indices.tolist()
    # the same weights exported to a transformers folder give the same keys and values
    code, _, err = cli(capsys, "export", str(out), "--hf", str(tmp_path / "hf"))
    assert code == 0, err
    # the exported config admits RoPE contexts past training (max_position_embeddings): probe both
    # at the 32-token training context
    h = probe_json(capsys, str(tmp_path / "hf"), "--tokens", "1024", "--units", "2", "--examples", "3",
                   "--seq-len", "32", "--out", str(tmp_path / "p2"))
    assert h["tokenizer"] == "hf" and h["tokens"] == r["tokens"]  # the exported byte-level tokenizer: same ids
    for a, b in zip(r["layers"], h["layers"], strict=True):
        assert a["summary"]["mean_fire_rate"] == pytest.approx(b["summary"]["mean_fire_rate"], abs=1e-3)
        assert [u["unit"] for u in a["units"]] == [u["unit"] for u in b["units"]]
        for ua, ub in zip(a["units"], b["units"], strict=True):
            assert ua["max_coefficient"] == pytest.approx(ub["max_coefficient"], rel=1e-3)
            assert [t["id"] for t in ua["promotes"]] == [t["id"] for t in ub["promotes"]]


def test_probe_errors(tmp_path, corpus_file, capsys):
    usage_error(capsys, "neither an ffnlab run", "probe", str(tmp_path))
    usage_error(capsys, "not a folder", "probe", str(tmp_path / "missing"))
    save_hf("gpt2", tmp_path / "g")
    usage_error(capsys, "does not exist", "probe", str(tmp_path / "g"), "--corpus", str(corpus_file), "--layers", "5")
    usage_error(capsys, "--layers", "probe", str(tmp_path / "g"), "--corpus", str(corpus_file), "--layers", "x")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{}")
    usage_error(capsys, "cannot load a causal LM", "probe", str(tmp_path / "bad"))


@pytest.mark.parametrize("as_json", [True, False])
def test_a_probe_that_is_not_finite_is_refused_before_anything_is_written(tmp_path, corpus_file, capsys, as_json):
    """A model whose weights are all NaN: one error line naming where the probe was not finite, exit 2,
    with or without --json, and no output folder left."""
    from safetensors.torch import load_file, save_file

    save_hf("llama", tmp_path / "nan")
    weights = load_file(str(tmp_path / "nan" / "model.safetensors"))
    save_file({k: torch.full_like(v, float("nan")) for k, v in weights.items()},
              str(tmp_path / "nan" / "model.safetensors"), metadata={"format": "pt"})
    capsys.readouterr()  # transformers' saving bar
    args = ["probe", str(tmp_path / "nan"), "--corpus", str(corpus_file), "--tokens", "128", "--seq-len", "32",
            "--units", "1", "--examples", "1", "--top-tokens", "1", "--out", str(tmp_path / "p"),
            *(["--json"] if as_json else [])]
    usage_error(capsys, "nan at layers[0]", *args)
    assert not (tmp_path / "p").exists()
    (tmp_path / "p").mkdir()  # an earlier probe, which --overwrite would replace: left as it was
    (tmp_path / "p" / "probe.json").write_text("{}")
    (tmp_path / "p" / "index.html").write_text("earlier")
    usage_error(capsys, "nan at layers[0]", *args, "--overwrite")
    assert {f.name: f.read_text() for f in (tmp_path / "p").iterdir()} == {"probe.json": "{}", "index.html": "earlier"}


def test_probe_reads_text_with_the_folders_own_tokenizer(tmp_path, corpus_file, capsys):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    inner = Tokenizer(models.BPE())
    inner.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    inner.train_from_iterator([TEXT], trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=inner)
    tok.save_pretrained(tmp_path / "m")
    save_hf("gpt2", tmp_path / "m", vocab=inner.get_vocab_size())
    r = probe_json(capsys, str(tmp_path / "m"), "--corpus", str(corpus_file), "--split", "train",
                   "--tokens", "128", "--seq-len", "32", "--units", "2", "--out", str(tmp_path / "p"))
    assert r["tokenizer"] == "hf" and r["tokens"] == 128
    ids = tok(corpus_file.read_text(), add_special_tokens=False)["input_ids"]
    for u in r["layers"][0]["units"]:
        for e in u["examples"]:
            assert e["trigger"] == tok.decode([ids[e["position"]]])
        assert all(t["token"] == tok.decode([t["id"]]) for t in u["promotes"])
