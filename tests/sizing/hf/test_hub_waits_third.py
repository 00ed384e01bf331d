"""A third adversarial pass over the bounded network waits (ffnlab.netwait), with a fake Hub on
127.0.0.1 (tests/helpers/fake_hub.py) misbehaving in ways new to the suite, and a 1 s --timeout.

The pass tried 12 behaviours on ``audit``, ``fit`` and ``size --from`` (36 calls): a slow transfer
that keeps moving (six pieces 0.4 s apart: longer than the timeout in all, never a gap as long),
a body cut short by a closed connection, a status line then silence, bytes that are not HTTP, a
redirect to itself, 429 and 503 asking (``Retry-After``) for a wait of 100,000 s to every request
or to the download alone (its HEAD answered), a truncated config.json, and 502, 301, 410 and 204
answers (42 calls). One finding: a download answered 429 or 503 with ``Retry-After`` waited what the
server asked (huggingface_hub sleeps it before the retry that netwait refuses anyway): 28 hours for
100,000 s (the HEAD is not retried, so only the download waited). Now the failed answer's wait
headers are dropped and the error line names the wait asked for. Left by the pass and mended
since (the last two tests): a 301 without a Location and a 204 read "cannot reach the Hub" though
it answered, and a redirect loop was named only as httpx's "Exceeded 20 redirects". Oracles, none
of them a clock: the exit status and error line, and the requests the server saw (each URL at most once)."""

from __future__ import annotations

import json

import pytest
from fake_hub import FakeHub
from hub_waits import LLAMA, each_url_once, error_line, ffnlab


@pytest.fixture
def hub():
    fake = FakeHub()
    fake.add("org/tiny", {"main": {"config.json": json.dumps({**LLAMA, "_name_or_path": "x" * 6000}).encode()}})
    server, url = fake.serve()
    yield fake, url
    fake.release()
    server.shutdown()


def test_a_slow_transfer_that_keeps_moving_is_not_cut(hub, tmp_path):
    """Six pieces 0.4 s apart: 2 s in all against a 1 s timeout, which bounds gaps, not length."""
    fake, url = hub
    fake.misbehave = "trickle"
    p = ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--json", "--timeout", "1")
    assert p.returncode == 0, p.stderr
    assert "params_total" in p.stdout and json.loads(p.stdout)
    each_url_once(fake)
    # each 0.4 s gap outlasts the progress delay (a tenth of the timeout): the wait is shown, once
    waits = [x for x in p.stderr.splitlines() if x.startswith("waiting for ")]
    assert len(waits) == 1 and "up to 1 s" in waits[0], p.stderr


@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_of_a_day_is_not_waited(hub, tmp_path, status):
    fake, url = hub
    fake.misbehave, fake.status, fake.retry_after = "get-retry-after", status, 100_000
    line = error_line(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--timeout", "1"))
    assert f"answered {status}" in line and "asked for a wait of 100000 s" in line
    each_url_once(fake)


@pytest.mark.parametrize("mode, fragment", [
    ("close-body", "broke"),
    ("headers-stall", "did not answer within 1 s"),
    ("garbage", "broke"),
])
def test_a_broken_answer_is_one_line_after_one_try(hub, tmp_path, mode, fragment):
    fake, url = hub
    fake.misbehave = mode
    line = error_line(ffnlab(url, tmp_path / "hf", "fit", "org/tiny", "--timeout", "1"))
    assert fragment in line and "org/tiny config.json" in line
    each_url_once(fake)


def test_a_truncated_config_is_named_not_a_traceback(hub, tmp_path):
    fake, url = hub
    fake.misbehave = "bad-json"
    line = error_line(ffnlab(url, tmp_path / "hf", "size", "--from", "org/tiny", "--timeout", "1"))
    assert "config.json" in line and "JSON" in line


@pytest.mark.parametrize("status", [204, 301, 200])
def test_an_answer_without_the_file_says_what_was_answered(hub, tmp_path, status):
    """A 204, a 301 without a Location or a bare 200 (no Hub headers) was read as "cannot reach the
    Hub" though it answered (the third pass left it): the line now names the answer."""
    fake, url = hub
    fake.misbehave, fake.status = "status", status
    line = error_line(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--timeout", "1"))
    assert f"answered {status}" in line and "check HF_ENDPOINT" in line and "cannot reach" not in line, line
    each_url_once(fake)


def test_a_redirect_loop_is_named(hub, tmp_path):
    fake, url = hub
    fake.misbehave = "redirect-loop"
    line = error_line(ffnlab(url, tmp_path / "hf", "audit", "org/tiny", "--timeout", "1"))
    assert "redirect loop" in line and "org/tiny config.json" in line, line
