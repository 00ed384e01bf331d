import os
import sys
from pathlib import Path

# the helpers (tests/helpers: hf_cases, hf_count, cli_run, paths, ...) import as top-level modules
sys.path.insert(0, str(Path(__file__).parent / "helpers"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# prepared corpora of tests stay inside the checkout, never in the user's ~/.cache
os.environ.setdefault("FFNLAB_CACHE", str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "ffnlab-cache"))
# one torch thread per test process (and the processes it starts) unless the caller set a count:
# pytest-xdist runs a worker per core, and a worker's torch with a thread per core spin-waits against
# the other worker's (tests/sizing/memory/test_memory_step.py with -n 2 on 2 cores: 128 s wall,
# 144 s CPU with torch's default; 25 s, 30 s CPU with one thread). Runs that state their own count
# (train.threads, a test's own OMP_NUM_THREADS) keep it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
