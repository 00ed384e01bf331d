"""The install: torch is the CPU build where there is no GPU, and tools/install_torch.py picks that route.

Oracles: torch's own build record (``torch.version.cuda``), and the pip command the script prints
for a PATH with and without an ``nvidia-smi`` that lists a GPU, with PyTorch's CPU index played by
a local server that answers, or by a port where nothing listens.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from paths import ROOT

SCRIPT = ROOT / "tools" / "install_torch.py"


def _gpu_listed() -> bool:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    r = subprocess.run([exe, "-L"], capture_output=True, text=True)
    return r.returncode == 0 and "GPU" in r.stdout


@pytest.mark.skipif(_gpu_listed(), reason="a GPU machine: the CUDA build is the right one here")
def test_torch_is_the_cpu_build_on_a_machine_without_a_gpu():
    import torch

    assert torch.version.cuda is None, (torch.__version__, torch.version.cuda)  # the CPU wheel has no CUDA


def fake_nvidia_smi(folder: Path, code: int, output: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\necho '{output}'\nexit {code}\n")
    exe.chmod(0o755)
    return folder


def plan(path_dirs: list[Path], cpu_index: str, *args: str) -> str:
    env = {**os.environ, "PATH": os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"]),
           "FFNLAB_TORCH_CPU_INDEX": cpu_index, "FFNLAB_PYPI_INDEX": "https://pypi.example/simple"}
    p = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", *args], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def answering_index():
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            ok = self.path.rstrip("/").endswith("/torch")
            self.send_response(200 if ok else 404)
            self.end_headers()
            self.wfile.write(b"<html><a href='torch-2.13.0+cpu.whl'>torch</a></html>" if ok else b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    server.shutdown()


def closed_port() -> str:
    with socket.socket() as s:  # bound, never listening: a connection is refused at once
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/whl/cpu"


def test_no_gpu_and_a_reachable_cpu_index_installs_from_it(tmp_path, answering_index):
    out = plan([tmp_path / "empty"], answering_index)
    assert f"--index-url {answering_index} --extra-index-url https://pypi.example/simple" in out
    assert "torch==2.13.0" in out


def test_no_gpu_and_no_cpu_index_falls_back_to_the_configured_indexes(tmp_path):
    out = plan([tmp_path / "empty"], closed_port())
    assert "cannot be reached" in out and out.rstrip().endswith("pip install torch==2.13.0")


def test_a_listed_gpu_gets_the_default_build(tmp_path, answering_index):
    out = plan([fake_nvidia_smi(tmp_path / "gpu", 0, "GPU 0: NVIDIA H200 (UUID: GPU-1)")], answering_index)
    assert "NVIDIA GPU" in out and "--index-url" not in out


def test_nvidia_smi_without_a_gpu_counts_as_no_gpu(tmp_path, answering_index):
    """A driver tool that fails (no device, no driver loaded) is a CPU machine."""
    out = plan([fake_nvidia_smi(tmp_path / "nogpu", 9, "NVIDIA-SMI has failed")], answering_index)
    assert f"--index-url {answering_index}" in out


def test_an_index_given_by_hand_is_used_as_given(tmp_path, answering_index):
    out = plan([tmp_path / "empty"], answering_index, "--index", "--index-url https://example/whl/cu128")
    assert out.rstrip().endswith("pip install torch==2.13.0 --index-url https://example/whl/cu128")
