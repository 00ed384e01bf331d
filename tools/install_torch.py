"""Install torch into this interpreter's environment: the CPU build where there is no GPU.

``make demo`` / ``make test`` run it before ``pip install -e .``, so that pip never pulls the
multi-GB CUDA build (and its ``nvidia-*`` libraries) onto a machine without a GPU, which is what
plain ``pip install torch`` does on Linux from PyPI. The route:

1. ``--index ARGS`` given (the Makefile's ``TORCH_INDEX``): ``pip install TORCH ARGS``, as asked;
2. an NVIDIA GPU (``nvidia-smi -L`` lists one): ``pip install TORCH`` (PyPI's Linux wheel is CUDA);
3. no GPU and PyTorch's CPU index answers: ``pip install TORCH --index-url CPU_INDEX
   --extra-index-url PYPI`` (the ``+cpu`` wheel; its dependencies from either index);
4. no GPU and that index cannot be reached (an offline mirror, a machine whose pip is set up with
   local wheels), or step 3 failed: plain ``pip install TORCH``, which there resolves to whatever
   the configured indexes serve.

After installing it prints the build it got and warns when a CUDA build landed on a machine
without a GPU. ``--dry-run`` prints the route and the pip command without running pip.
Environment: ``FFNLAB_TORCH_CPU_INDEX`` and ``FFNLAB_PYPI_INDEX`` replace the two index URLs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PYPI_INDEX = "https://pypi.org/simple"
PROBE_TIMEOUT_S = 10


def has_nvidia_gpu() -> bool:
    """Whether ``nvidia-smi -L`` runs and lists at least one GPU."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    try:
        r = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and "GPU" in r.stdout


def index_answers(index: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether ``index`` serves a torch project page (one GET, a short timeout)."""
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/torch/", timeout=timeout) as r:
            return 200 <= r.status < 300
    except (OSError, ValueError):
        return False


def routes(torch_req: str, index_args: str, gpu: bool, cpu_index: str, pypi: str,
           reachable: bool) -> list[tuple[str, list[str]]]:
    """The (reason, pip arguments) to try in order; the first that succeeds wins."""
    plain = ["install", torch_req]
    if index_args.strip():
        return [("the index you gave (TORCH_INDEX)", [*plain, *shlex.split(index_args)])]
    if gpu:
        return [("an NVIDIA GPU is present: the default (CUDA) build", plain)]
    if reachable:
        return [(f"no GPU: the CPU build from {cpu_index}",
                 [*plain, "--index-url", cpu_index, "--extra-index-url", pypi]),
                ("the CPU index failed: the configured indexes", plain)]
    return [(f"no GPU and {cpu_index} cannot be reached: the configured indexes", plain)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch", default="torch==2.13.0", help="torch requirement")
    ap.add_argument("--index", default="", help="extra pip arguments that choose the index (used as given)")
    ap.add_argument("--dry-run", action="store_true", help="print the route and pip command only")
    args = ap.parse_args(argv)
    cpu_index = os.environ.get("FFNLAB_TORCH_CPU_INDEX", CPU_INDEX)
    pypi = os.environ.get("FFNLAB_PYPI_INDEX", PYPI_INDEX)
    gpu = has_nvidia_gpu()
    reachable = not args.index.strip() and not gpu and index_answers(cpu_index)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    for reason, pip_args in routes(args.torch, args.index, gpu, cpu_index, pypi, reachable):
        print(f"torch: {reason}: pip {shlex.join(pip_args)}", flush=True)
        if args.dry_run:
            return 0
        if subprocess.run([*pip, *pip_args]).returncode == 0:
            break
    else:
        print("torch: every route failed; see pip's messages above", file=sys.stderr)
        return 1
    probe = "import torch; print(torch.__version__, torch.version.cuda or 'none')"
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    version, _, cuda = got.stdout.strip().partition(" ")
    print(f"torch: installed {version} (CUDA {cuda})")
    if not gpu and cuda not in ("", "none"):
        print(f"torch: warning: a CUDA build on a machine without an NVIDIA GPU; for the small CPU build run "
              f"make clean-venv, then make ... TORCH_INDEX='--index-url {cpu_index} --extra-index-url {pypi}'",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
