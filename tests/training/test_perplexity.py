"""ffnlab perplexity on an exported ffnlab model and a WikiText-format fixture, offline.

Oracles: a direct transformers computation written here (each token's log-probability from its
own forward pass over exactly the context the harness's rolling rule gives it; the transformers
docs' strided loop with ``labels``), and, where lm-evaluation-harness is installed, the harness's
own rolling windows, de-tokenizer, counts and ``HFLM.loglikelihood_rolling``.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
import torch
from cli_inproc import run_cli

transformers = pytest.importorskip("transformers")
pytest.importorskip("datasets")

TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=32", "train.batch_size=4",
        "train.max_steps=8", "train.eval_tokens=256", "train.progress=off", "train.tensorboard=false",
        "train.threads=1", "train.peak_flops=1e11", "train.lr=0.02", "train.warmup_steps=0",
        "data.tokenizer=byte"]
CONTEXT = 24  # much shorter than the articles: many windows each

ARTICLES = [
    " = Robert Boulter = \n \n Robert Boulter is an English film , television and theatre actor . He had a "
    "guest @-@ starring role on the television series The Bill in 2000 . \n \n = = Career = = \n \n In 2006 , "
    "Boulter starred alongside Whishaw in the play Citizenship written by Mark Ravenhill ( 2006 ) . \n \n",
    " = Du Fu = \n \n Du Fu ( 712 – 770 ) was a prominent Chinese poet of the Tang dynasty . Along with Li Bai , "
    "he is frequently called the greatest of the Chinese poets ' . His greatest ambition was to serve his "
    "country as a successful civil servant , \" but he proved unable \" to make the necessary accommodations "
    ". \n \n",
    " = Kiss You ( One Direction song ) = \n \n \" Kiss You \" is a song recorded by English @-@ Irish boy band "
    "One Direction ; it sold 1 @,@ 000 copies at 3 @.@ 5 ° C . \n \n = = = Reception = = = \n \n Critics ' "
    "reviews were mixed : some were positive ! \n \n",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """A tiny byte-level model trained on the fixture's own text and exported to transformers."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("ppl")
    corpus = root / "corpus.txt"
    corpus.write_text("".join(ARTICLES) * 20, encoding="utf-8")
    run, hf = root / "run", root / "hf"
    sets = [*TINY, f"data.corpus={corpus}", f"data.cache_dir={root / 'cache'}"]

    class _Capsys:  # run_cli's capsys, for a module fixture
        def readouterr(self):
            return type("O", (), {"out": "", "err": ""})()

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert run_cli(_Capsys(), "train", "--out", str(run), *[a for s in sets for a in ("--set", s)]).returncode == 0
        assert run_cli(_Capsys(), "export", str(run), "--hf", str(hf)).returncode == 0
    return hf


@pytest.fixture(scope="module")
def raw_fixture(tmp_path_factory) -> Path:
    """The articles in WikiText's own file format (wiki.test.raw)."""
    path = tmp_path_factory.mktemp("wikitext") / "wiki.test.raw"
    path.write_text("".join(ARTICLES), encoding="utf-8")
    return path


def direct_token_lls(model, tokens: list[int], prefix: int | None, context: int) -> list[float]:
    """Each target's log-probability with the context the harness's rolling rule gives it:
    targets in disjoint blocks of ``context``; a block's inputs are the ``context`` tokens before
    its last target (the first block: the prefix, then the block). One unpadded forward pass per
    block (a causal model's logit at j sees tokens up to j only)."""
    seq = ([prefix] if prefix is not None else []) + tokens
    n = len(seq) - 1  # targets: seq[1:]
    out: list[float] = []
    for block_start in range(0, n, context):
        block_end = min(block_start + context, n)  # targets seq[1 + block_start : 1 + block_end]
        start = 0 if block_start == 0 else block_end - context
        inp = seq[start:block_end]  # ends one before the block's last target
        assert len(inp) <= context
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([inp])).logits[0].double(), -1)
        for k in range(block_start, block_end):
            out.append(float(logp[k - start, seq[k + 1]]))
    return out


def test_raw_fixture_splits_into_the_articles(raw_fixture):
    from ffnlab.training.wikitext import load_documents

    docs = load_documents(str(raw_fixture))
    assert [p + "\n" for p in docs.pages[:2]] + [docs.pages[2]] == ARTICLES  # split at the newline before a title
    assert len(docs.pages) == 3 and all(p.startswith(" = ") for p in docs.pages)
    assert "= = Career = =" in docs.pages[0] and "= = = Reception = = =" in docs.pages[2]


def test_detokenizer_undoes_wikitext_artifacts():
    from ffnlab.training.wikitext import detokenize, word_count

    assert detokenize(" = = Career = = \n") == " == Career ==\n"
    assert detokenize("guest @-@ starring , 1 @,@ 000 at 3 @.@ 5 ° C . ") == "guest-starring, 1,000 at 3.5°C. "
    assert detokenize("Lee ( 2006 ) said \" hi \" .") == 'Lee (2006) said "hi" .'
    assert detokenize("the poets ' work") == "the poets' work"
    assert word_count(" a  b\nc ") == 5  # the harness's re.split: leading and trailing empty pieces count


def test_rolling_windows_predict_every_token_once_within_the_context():
    from ffnlab.training.perplexity import rolling_windows

    for n in (1, 5, 24, 25, 49, 100):
        tokens = list(range(100, 100 + n))
        seq = [7, *tokens]
        seen = []
        for inp, scored in rolling_windows(tokens, 7, 24):
            assert 1 <= scored <= len(inp) <= 24
            start = next(i for i in range(len(seq)) if seq[i:i + len(inp)] == inp)  # inputs are slices of seq
            seen += seq[start + len(inp) - scored + 1:start + len(inp) + 1]
        assert seen == tokens


def test_perplexity_equals_the_direct_transformers_computation(exported, raw_fixture, capsys, tmp_path,
                                                               monkeypatch):
    """The command's word, byte and token perplexities are those of per-token log-likelihoods
    computed directly with transformers; the per-token figures agree to 1e-5."""
    from ffnlab.training import perplexity as P
    from ffnlab.training.wikitext import detokenize, load_documents

    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    p = run_cli(capsys, "perplexity", str(exported), "--dataset", str(raw_fixture), "--context", str(CONTEXT),
                "--batch", "3", "--progress", "off", "--json")
    assert p.returncode == 0, p.stderr
    (got,) = json.loads(p.stdout)

    model = transformers.AutoModelForCausalLM.from_pretrained(str(exported)).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(exported))
    assert tok.bos_token_id is None and tok.eos_token_id is None  # ffnlab's exports: first token is the prefix
    pages = load_documents(str(raw_fixture)).pages
    direct = []
    for page in pages:
        ids = tok.encode(detokenize(page))
        direct.append(direct_token_lls(model, ids[1:], ids[0], CONTEXT))
    lm = P.load_model(str(exported), device="cpu")
    ours: list[list[float]] = []
    P.documents_perplexity(lm, load_documents(str(raw_fixture)), context=CONTEXT, batch=3, token_lls=ours)
    assert [len(d) for d in ours] == [len(d) for d in direct]
    worst = max(abs(a - b) for d, e in zip(ours, direct, strict=True) for a, b in zip(d, e, strict=True))
    assert worst < 1e-5, worst

    total = math.fsum(x for d in direct for x in d)
    words = sum(len(re.split(r"\s+", p)) for p in pages)
    nbytes = sum(len(p.encode("utf-8")) for p in pages)
    assert got["word_perplexity"] == pytest.approx(math.exp(-total / words), rel=1e-6)
    assert got["byte_perplexity"] == pytest.approx(math.exp(-total / nbytes), rel=1e-6)
    assert got["bits_per_byte"] == pytest.approx(-total / nbytes / math.log(2), rel=1e-6)
    assert got["token_perplexity"] == pytest.approx(math.exp(-total / sum(map(len, direct))), rel=1e-6)
    assert (got["words"], got["bytes"], got["documents"], got["context"]) == (words, nbytes, 3, CONTEXT)
    assert "first token" in got["note"] and got["revision"].startswith("local:")

    # the transformers docs' strided loop, literally: labels with -100 before each window's new tokens
    ids = torch.tensor([tok.encode("\n\n".join(pages))])
    nll, count, prev_end = 0.0, 0, 0
    for begin in range(0, ids.size(1), 16):
        end = min(begin + CONTEXT, ids.size(1))
        trg = end - prev_end
        inp = ids[:, begin:end]
        labels = inp.clone()
        labels[:, :-trg] = -100
        with torch.no_grad():
            out = model(inp, labels=labels)
        scored = int((labels[:, 1:] != -100).sum())
        nll += float(out.loss) * scored
        count += scored
        prev_end = end
        if end == ids.size(1):
            break
    p = run_cli(capsys, "perplexity", str(exported), "--dataset", str(raw_fixture), "--context", str(CONTEXT),
                "--stride", "16", "--protocol", "strided", "--progress", "off", "--json")
    (strided,) = json.loads(p.stdout)
    assert strided["strided_tokens"] == count
    assert strided["strided_token_perplexity"] == pytest.approx(math.exp(nll / count), rel=1e-5)


def test_results_are_cached_per_revision_and_local_files_load_offline(exported, raw_fixture, capsys, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    jsonl = tmp_path / "test.jsonl"
    from ffnlab.training.wikitext import load_documents

    pages = load_documents(str(raw_fixture)).pages
    jsonl.write_text("".join(json.dumps({"page": p}) + "\n" for p in pages), encoding="utf-8")
    args = ["perplexity", str(exported), "--dataset", str(jsonl), "--context", "32", "--protocol", "documents",
            "--progress", "off", "--json"]
    first = json.loads(run_cli(capsys, *args).stdout)[0]
    again = json.loads(run_cli(capsys, *args).stdout)[0]
    assert not first["cached"] and again["cached"]
    assert {k: v for k, v in again.items() if k != "cached"} == {k: v for k, v in first.items() if k != "cached"}
    raw = json.loads(run_cli(capsys, *[a if a != str(jsonl) else str(raw_fixture) for a in args]).stdout)[0]
    assert raw["word_perplexity"] == pytest.approx(first["word_perplexity"], rel=1e-12)  # the same articles
    copy = tmp_path / "hf-copy"
    shutil.copytree(exported, copy)
    (copy / "model.safetensors").touch()  # a new revision of the weights: measured again
    moved = json.loads(run_cli(capsys, *[a if a != str(exported) else str(copy) for a in args]).stdout)[0]
    assert not moved["cached"] and moved["revision"] != first["revision"]


def _nan_copy(exported: Path, where: Path) -> Path:
    """A copy of the exported model whose every floating-point weight is NaN."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(exported, where)
    weights = load_file(str(where / "model.safetensors"))
    save_file({k: torch.full_like(v, float("nan")) if v.is_floating_point() else v for k, v in weights.items()},
              str(where / "model.safetensors"), metadata={"format": "pt"})
    return where


@pytest.mark.parametrize("output", [["--json"], [], ["--format", "csv"], ["--format", "markdown"]])
def test_a_result_that_is_not_finite_is_never_cached(exported, raw_fixture, capsys, tmp_path, monkeypatch, output):
    """A NaN model's perplexity: every output (--json, the table, --format) refuses it alike, one
    error line naming the figure and exit 2, nothing on stdout (the table printed nan and exited 0);
    no call leaves a file in the cache, so no later call answers "(cached)"."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("FFNLAB_CACHE", str(cache))
    nan = _nan_copy(exported, tmp_path / "nan")
    args = ["perplexity", str(nan), "--dataset", str(raw_fixture), "--context", "32", "--protocol", "documents",
            "--progress", "off", *output]
    for _ in range(2):
        p = run_cli(capsys, *args)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (p.returncode, p.stderr)
        assert "word_perplexity nan" in lines[0] and "cached" not in p.stdout and not p.stdout.strip()
    assert not [f for f in (cache / "perplexity").rglob("*") if f.is_file()]


def test_table_measure_refuses_a_result_that_is_not_finite(exported, raw_fixture, capsys, tmp_path, monkeypatch):
    """``table --measure`` measures through the same path: a NaN model is one error line, exit 2."""
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    nan = _nan_copy(exported, tmp_path / "nan")
    p = run_cli(capsys, "table", str(nan), "--measure", "--dataset", str(raw_fixture), "--context", "32",
                "--progress", "off")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "word_perplexity nan" in lines[0], (p.returncode, p.stderr)


@pytest.mark.parametrize("figure", ["NaN", "Infinity", "1e999"])
def test_a_cached_file_holding_a_figure_that_is_not_finite_is_not_served(exported, raw_fixture, capsys, tmp_path,
                                                                          monkeypatch, figure):
    """A cache file an older ffnlab wrote with a NaN in it (or one edited to hold one) is measured again."""
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    args = ["perplexity", str(exported), "--dataset", str(raw_fixture), "--context", "32", "--protocol",
            "documents", "--progress", "off", "--json"]
    first = json.loads(run_cli(capsys, *args).stdout)[0]
    (kept,) = (tmp_path / "cache" / "perplexity").glob("*.json")
    text = kept.read_text()
    spoiled = re.sub(r'"word_perplexity": [^,\n]+', f'"word_perplexity": {figure}', text)
    assert spoiled != text
    kept.write_text(spoiled)
    again = json.loads(run_cli(capsys, *args).stdout)[0]
    assert not again["cached"] and again["word_perplexity"] == first["word_perplexity"]
    assert json.loads(kept.read_text(), parse_constant=lambda c: pytest.fail(c))["word_perplexity"] == \
        first["word_perplexity"]  # measured again and kept, strict


def _documents_record(ll: float, tokens: int, words: int, nbytes: int):
    """The record :func:`ffnlab.training.perplexity.measure` writes for a documents result of these sums."""
    from ffnlab.training import perplexity as P

    r = P.DocumentsResult(ll, tokens, words, nbytes, 3, False)
    return P.PerplexityRecord(model="m", revision="local:0", dataset="d.txt", documents=3, context=64,
                              dtype="float32", device="cpu", word_perplexity=r.word_perplexity,
                              byte_perplexity=r.byte_perplexity, bits_per_byte=r.bits_per_byte,
                              token_perplexity=r.token_perplexity, tokens=tokens, words=words, bytes=nbytes,
                              protocol=P.DOCUMENTS_PROTOCOL.format(context=64))


def test_every_record_a_measure_can_write_passes_the_cache_checks():
    """Oracle: DocumentsResult's own figures (the measure's formulas) over 20,000 random sums, from a
    near-perfect model (a summed log-likelihood of -1e-12) to a bad one (12 nats a token) and counts
    from 1 to 10**8: read_cache's checks (PerplexityRecord.impossible) refuse none of them."""
    import random

    rng = random.Random(16)
    refused = []
    for _ in range(20_000):
        tokens = rng.choice([1, 2, rng.randint(1, 10**4), rng.randint(1, 10**8)])
        words, nbytes = max(1, int(tokens * rng.uniform(0.2, 1.0))), max(1, int(tokens * rng.uniform(1.0, 6.0)))
        ll = -tokens * rng.choice([0.0, 1e-12, rng.uniform(0, 1e-6), rng.uniform(0, 12)])
        rec = _documents_record(ll, tokens, words, nbytes)
        if rec.impossible() is not None:
            refused.append((ll, tokens, words, nbytes, rec.impossible()))
    assert refused == []


def test_a_record_no_measure_writes_is_named_by_the_cache_checks():
    from dataclasses import replace

    rec = _documents_record(-1234.5, 1000, 700, 4000)
    assert rec.impossible() is None
    for change, said in [({"word_perplexity": -5}, "word_perplexity -5"),  # an int: no measure writes one
                         ({"word_perplexity": 0.5}, "word_perplexity 0.5"), ({"tokens": True}, "tokens True"),
                         ({"words": 0}, "words 0"), ({"dataset": 1}, "dataset 1"),
                         ({"word_perplexity": rec.word_perplexity * 1.001}, "byte_perplexity"),  # sums disagree
                         ({"bits_per_byte": None}, "some given, some not"),
                         ({"stride": 128, "strided_tokens": 5, "strided_token_perplexity": 2.0,
                           "strided_protocol": "p"}, "stride 128: longer than the context 64")]:
        assert said in (replace(rec, **change).impossible() or ""), change


def test_the_default_dataset_is_never_downloaded_unless_named(exported, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty HF cache
    p = run_cli(capsys, "perplexity", str(exported), "--progress", "off")
    assert p.returncode == 2 and "not in the Hugging Face cache" in p.stderr and "--dataset" in p.stderr


def test_a_local_dataset_is_read_before_a_model_is_loaded_and_a_hub_one_after(exported, capsys, monkeypatch,
                                                                             tmp_path):
    """A local file is read first, so a bad one is said before a model loads; a Hub dataset only
    after the first model loaded. Oracle: with a model folder that is not one (no config.json),
    the one error line names whichever was read first."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    (tmp_path / "nomodel").mkdir()
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe not UTF-8\n")
    p = run_cli(capsys, "perplexity", str(tmp_path / "nomodel"), "--dataset", str(tmp_path / "bad.txt"),
                "--progress", "off")
    assert p.returncode == 2 and "bad.txt: cannot read it as text" in p.stderr, p.stderr
    p = run_cli(capsys, "perplexity", str(tmp_path / "nomodel"), "--dataset", "org/some-dataset", "--progress", "off")
    assert p.returncode == 2 and "org/some-dataset" not in p.stderr and "nomodel" in p.stderr, p.stderr
    # the same bad file with a good model: the same line, the model never built
    p = run_cli(capsys, "perplexity", str(exported), "--dataset", str(tmp_path / "bad.txt"), "--progress", "off")
    assert p.returncode == 2 and "bad.txt: cannot read it as text" in p.stderr, p.stderr


def test_a_dataset_name_is_a_hub_id_exactly_when_huggingface_hub_says_so():
    """Oracle: huggingface_hub's own validate_repo_id, on the pass's names, lengths at the limit and
    200,000 random strings of the characters that matter; a name it refuses is a local path."""
    import random

    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    from ffnlab.training.wikitext import is_hub_id, is_local

    def valid(name: str) -> bool:
        try:
            validate_repo_id(name)
        except HFValidationError:
            return False
        return True

    rng = random.Random(14)
    names = ["", "_", "a" * 96, "a" * 97, "o/" + "a" * 96, "o/" + "a" * 97, "x.git", "a.gitx", "-a", "a-", "a--b",
             "a..b", "a.-b", "a/b/c", "/a", "a/", "caf\u00e9", "my data", "held-out/", "a:b", "C:\\corpus", "-",
             "EleutherAI/wikitext_document_level", "wikitext"]
    assert [n for n in names if is_local(n)] == [n for n in names if not valid(n)]  # none of these exists here
    names += ["".join(rng.choice("aZ9_-./ ~\\:\u00e9") for _ in range(rng.randint(0, 8))) for _ in range(200_000)]
    wrong = [n for n in names if is_hub_id(n) != valid(n)]
    assert not wrong, wrong[:10]


def test_lm_eval_harness_agrees(exported, raw_fixture, tmp_path):
    """Where lm-evaluation-harness is installed: its windows, de-tokenizer, counts and rolling
    log-likelihoods on the same model (given an EOS token, its prefix) are ffnlab's."""
    lm_eval_utils = pytest.importorskip("lm_eval.utils")
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks.wikitext import preprocess_wikitext as harness

    from ffnlab.training import perplexity as P
    from ffnlab.training.export_tokenizer import byte_symbols
    from ffnlab.training.wikitext import byte_count, detokenize, load_documents, word_count

    docs = load_documents(str(raw_fixture))
    for page in docs.pages:
        assert detokenize(page) == harness.wikitext_detokenizer({"page": page})
        counts = harness.process_results({"page": page}, (0.0,))
        assert (counts["word_perplexity"][1], counts["byte_perplexity"][1]) == (word_count(page), byte_count(page))
    for n in (1, 23, 24, 25, 77):
        theirs = [lm_eval_utils.make_disjoint_window(w) for w in
                  lm_eval_utils.get_rolling_token_windows(list(range(n)), -1, 24, 1)]
        ours = list(P.rolling_windows(list(range(n)), -1, 24))
        assert [(c + t[:-1], len(t)) for c, t in theirs] == ours

    folder = tmp_path / "with-eos"
    shutil.copytree(exported, folder)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    tok.eos_token = byte_symbols()[10]  # "\n": a prefix both sides use
    tok.save_pretrained(str(folder))
    lm = P.load_model(str(folder), device="cpu")
    ours_doc: list[list[float]] = []
    P.documents_perplexity(lm, docs, context=CONTEXT, batch=2, token_lls=ours_doc)
    hflm = HFLM(pretrained=str(folder), batch_size=2, max_length=CONTEXT, device="cpu")
    reqs = [Instance("loglikelihood_rolling", {}, (detokenize(p),), i) for i, p in enumerate(docs.pages)]
    theirs_doc = hflm.loglikelihood_rolling(reqs, disable_tqdm=True)
    for ours_lls, theirs_ll in zip(ours_doc, theirs_doc, strict=True):
        assert math.fsum(ours_lls) == pytest.approx(theirs_ll, rel=1e-6)


def test_table_measures_an_exported_model_in_its_own_column(exported, raw_fixture, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    common = ["--dataset", str(raw_fixture), "--context", str(CONTEXT), "--progress", "off", "--json"]
    p = run_cli(capsys, "table", str(exported), "--measure", *common)
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    (ppl,) = json.loads(run_cli(capsys, "perplexity", str(exported), "--protocol", "documents", *common).stdout)
    assert ppl["cached"]  # the table's measurement, kept
    assert row["ppl_measured"] == ppl["word_perplexity"] and row["ppl_measured_byte"] == ppl["byte_perplexity"]
    assert row["ppl_measured_protocol"] == "lm-eval-wikitext" and row["ppl_published"] is None
    assert row["organisation"] is None and row["ratio_raw"] > 0 and row["train_flops_per_token"] > 0
