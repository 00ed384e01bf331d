"""Every network call is one bounded, reported wait (ffnlab.netwait), against a fake Hub on
127.0.0.1 that misbehaves (tests/helpers/fake_hub.py) and a 1 s --timeout.

Oracles, none of them a clock: the error line's kind (timeout, stalled transfer, refused
connection, server error, not found), that it is one ``error:`` line with exit 2 and no traceback,
the progress line naming the host and the timeout, and the requests the server saw: each URL at
most once (the libraries' silent retries, up to ~394 s against a silent Hub, are gone)."""

from __future__ import annotations

import json
import socket

import pytest
from fake_hub import FakeHub
from hub_waits import LLAMA, each_url_once, error_line, ffnlab


@pytest.fixture
def hub():
    fake = FakeHub()
    padded = {**LLAMA, "_name_or_path": "x" * 6000}  # ~6 KB: a body to stall in
    fake.add("org/tiny", {"main": {"config.json": json.dumps(padded).encode()}})
    server, url = fake.serve()
    yield fake, url
    fake.release()
    server.shutdown()


@pytest.mark.parametrize("argv", [["audit", "org/tiny"], ["size", "--from", "org/tiny"], ["fit", "org/tiny"]])
def test_a_hub_that_never_answers_is_a_timeout_after_one_try(hub, tmp_path, argv):
    fake, url = hub
    fake.misbehave = "stall"
    p = ffnlab(url, tmp_path / "hf", *argv, "--timeout", "1")
    line = error_line(p)
    host = url.removeprefix("http://")
    assert f"the Hub at {host} did not answer within 1 s (--timeout)" in line and "org/tiny config.json" in line
    assert f"waiting for {host}" in p.stderr and "up to 1 s" in p.stderr  # progress: the host and the timeout
    each_url_once(fake)


def test_a_server_error_says_so_after_one_try(hub, tmp_path):
    fake, url = hub
    fake.misbehave, fake.status = "status", 500
    line = error_line(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--timeout", "1"))
    assert "answered 500" in line and "server error" in line and "cannot reach" not in line
    each_url_once(fake)


def test_a_transfer_that_stalls_is_cut_and_named(hub, tmp_path):
    fake, url = hub
    fake.misbehave = "stall-body"
    line = error_line(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--timeout", "1"))
    assert "stopped sending for 1 s" in line and "stalled" in line
    each_url_once(fake)


def test_not_found_keeps_its_own_message(hub, tmp_path):
    fake, url = hub
    line = error_line(ffnlab(url, tmp_path / "hf", "audit", "org/nothing", "--timeout", "1"))
    assert "org/nothing is not on the Hub" in line


def test_a_refused_connection_says_so(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = error_line(ffnlab(f"http://127.0.0.1:{port}", tmp_path / "hf", "audit", "org/tiny", "--timeout", "1"))
    assert f"cannot connect to the Hub at 127.0.0.1:{port}" in line


def test_a_cached_config_answers_when_the_hub_stalls(hub, tmp_path):
    fake, url = hub
    ok = ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json")
    assert ok.returncode == 0, ok.stderr
    fake.misbehave = "stall"
    p = ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json", "--timeout", "1")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == json.loads(ok.stdout)


def test_an_hf_dataset_corpus_is_bounded_too(hub, tmp_path):
    pytest.importorskip("datasets")
    fake, url = hub
    fake.misbehave = "stall"
    p = ffnlab(url, tmp_path / "hf", "train", "--out", str(tmp_path / "run"), "--corpus", "hf:org/data",
               "--timeout", "1", "--set", f"data.cache_dir={tmp_path / 'cache'}")
    line = error_line(p)
    assert "dataset 'org/data'" in line and "did not answer within 1 s" in line
    each_url_once(fake)


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "601"])
def test_bad_timeouts_are_refused(tmp_path, value):
    p = ffnlab("http://127.0.0.1:9", tmp_path / "hf", "audit", "org/tiny", "--timeout", value)
    assert error_line(p).startswith("error: --timeout must be")


@pytest.mark.parametrize("argv", [["audit", "org/tiny"], ["fit", "org/tiny"]])
def test_a_bare_404_is_the_hubs_answer_not_an_unreachable_hub(hub, tmp_path, argv):
    """A 404 naming no repo, revision or file (no X-Error-Code: a proxy, a wrong HF_ENDPOINT) once
    read "cannot reach the Hub", though the Hub had answered (the second adversarial pass)."""
    fake, url = hub
    fake.misbehave, fake.status = "status", 404
    line = error_line(ffnlab(url, tmp_path / "hf", *argv, "--timeout", "1"))
    assert f"the Hub at {url} answered 404 for org/tiny config.json" in line and "cannot reach" not in line
    each_url_once(fake)
