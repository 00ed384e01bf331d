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
