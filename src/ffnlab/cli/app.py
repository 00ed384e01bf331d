"""The ``ffnlab`` Typer app and what every command group shares: panels, output options, width rules."""

from __future__ import annotations

import typer

from ffnlab import render
from ffnlab.errors import require
from ffnlab.validation import choice, integer

HELP = """ffnlab: choose, check and test the feed-forward (FFN) width of Transformers.

Sizing, audit and claims answer instantly from exact arithmetic; train, sweep and verify answer with measurements. Start with: ffnlab size --d-model 4096 --ffn swiglu --rule llama, or ffnlab verify (the main job). Table commands take --json and --format table|markdown|csv.
"""

app = typer.Typer(help=HELP, add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]})

SIZING = "Sizing (instant, no torch)"
MODELS = "Real models and claims (no torch)"
TRAINING = "Training (PyTorch)"
EXPERIMENTS = "Experiments (PyTorch)"
FMT_HELP = "Output format for tables: table, markdown or csv."
JSON_OPTION = typer.Option(False, "--json", help="Print JSON (the documented contract).")
FORMAT_OPTION = typer.Option("table", "--format", "-f", help=FMT_HELP)


def check_format(fmt: str) -> str:
    require(fmt in render.FORMATS, f"--format must be one of {', '.join(render.FORMATS)}, got {fmt!r}")
    return fmt


def width_rule(ffn: str, ratio: str | None, rule: str | None, multiplier: str | None, multiple_of: int | None,
          rounding: str, d_ff: int | None):
    from ffnlab.sizing.kinds import get_kind
    from ffnlab.sizing.widths import RULES, make_rule

    get_kind(ffn)
    if rule is not None:
        choice(rule, "--rule", RULES)
    check_ints(d_ff=(d_ff, 1, 2**40), multiple_of=(multiple_of, 1, 2**20))
    require(d_ff is not None or ratio is not None or rule in ("llama", "golden"),
            "give a width: --d-ff F, --ratio R (optionally --rule param-matched), --rule llama or --rule golden")
    return make_rule(rule, ratio=ratio, d_ff=d_ff, multiplier=multiplier, multiple_of=multiple_of,
                     rounding=rounding)


def check_ints(**values: tuple[int | None, int, int]) -> None:
    """Each option ``name=(value, lo, hi)`` (``None`` = not given) as one validated integer."""
    for name, (value, lo, hi) in values.items():
        if value is not None:
            integer(value, f"--{name.replace('_', '-')} ({name})", lo, hi)
