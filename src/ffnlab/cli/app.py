"""The ``ffnlab`` Typer app and what every command group shares: panels, output options, width rules.

Also the conventions every command follows: ``--version``, shell completion (typer's
``--install-completion`` / ``--show-completion``), and help that reads as prose
(:func:`tidy_help`: paragraphs reflowed to the terminal, no ``<bool>`` or ``<list[str]>`` types).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ffnlab import __version__, render
from ffnlab.cli.notes import say
from ffnlab.errors import FfnlabError, require
from ffnlab.files import expand_user
from ffnlab.netwait import TIMEOUT_HELP
from ffnlab.sizing.engine_spec import LAUNCH_LINES
from ffnlab.validation import choice, count, integer, named, show

if TYPE_CHECKING:
    from ffnlab.sizing.widths import WidthRule

HELP = """ffnlab: choose, check and test the feed-forward (FFN) width of Transformers.

Sizing, audit and claims answer instantly from exact arithmetic; train, sweep and verify answer with measurements. \
Start with: ffnlab size --d-model 4096 --ffn swiglu --rule llama, or ffnlab verify (the main job). \
Table commands take --json, --format table|markdown|csv and --wide.
"""

app = typer.Typer(help=HELP, add_completion=True, no_args_is_help=True, rich_markup_mode="rich",
                  pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]})


def version_line() -> str:
    return f"ffnlab {__version__}"


def _print_version(value: bool) -> None:
    if value:
        print(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                 help="Print ffnlab's version and exit."),
) -> None:
    """Options before the command: --version, shell completion, --help."""


_PARAGRAPHS = re.compile(r"\n\s*\n")
_LIST_TYPE = re.compile(r"<list\[([^\]]+)\]>")


def reflow(text: str | None) -> str | None:
    """Help text with each paragraph on one line (the terminal wraps it), paragraphs kept apart."""
    if not text:
        return text
    return "\n\n".join(" ".join(p.split()) for p in _PARAGRAPHS.split(text.strip()))


def _plain_type(param: Any, original: Any) -> Any:
    """A param's help type without noise: none for a flag, ``<str>...`` for a repeatable option
    (``<str>`` for an argument, whose name already ends in ``...``)."""
    repeat = "" if getattr(param, "param_type_name", "") == "argument" else "..."

    def display_type_rich(ctx: Any) -> str | None:
        label = original(ctx)
        if label == "<bool>" or getattr(param, "is_flag", False):
            return None
        return _LIST_TYPE.sub(rf"<\1>{repeat}", label) if isinstance(label, str) else label
    return display_type_rich


def _tidy_param(param: Any) -> Any:
    """The param with :func:`_plain_type` as its help type (once; click caches the --help option)."""
    if param is not None and hasattr(param, "display_type_rich") and not getattr(param, "_plain_type", False):
        param.display_type_rich = _plain_type(param, param.display_type_rich)  # typer's help type column
        param._plain_type = True
    return param


def tidy_help(command: Any) -> Any:
    """``command`` and its subcommands with reflowed help and plain types (returned for chaining).

    Docstrings are written wrapped at 110 columns; click would print those line breaks mid-sentence.
    """
    command.help = reflow(command.help)
    for param in getattr(command, "params", []):
        param.help = reflow(getattr(param, "help", None))
        _tidy_param(param)
    help_option = command.get_help_option  # --help is made per context, not kept in params
    command.get_help_option = lambda ctx: _tidy_param(help_option(ctx))
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)
    return command

SIZING = "Sizing (instant, no torch)"
MODELS = "Real models and claims (no torch)"
TRAINING = "Training (PyTorch)"
EXPERIMENTS = "Experiments (PyTorch)"
FMT_HELP = "Output format for tables: table, markdown or csv (raw numbers, one table)."
JSON_OPTION = typer.Option(False, "--json", help="Print JSON (the documented contract).")


def _expanded(value: str) -> Path:
    """:func:`ffnlab.files.expand_user` inside a parser: its refusal (an unknown user, no home
    folder) raised as click's BadParameter, whose text click keeps after the option's name. An
    :class:`ffnlab.errors.FfnlabError` is a ValueError, which click's parser catches and replaces
    by a bare "Invalid value for '--out': ~nouser/x" that says nothing of what is wrong."""
    try:
        return expand_user(value)
    except FfnlabError as e:
        raise typer.BadParameter(str(e)) from None


def _named(value: Any) -> None:
    """:func:`ffnlab.validation.named` inside a parser (click's BadParameter: the line names the option)."""
    try:
        named(value, "the path")
    except FfnlabError as e:
        raise typer.BadParameter(str(e)) from None


def user_path(value: str) -> Path:
    """The ``parser`` of every option or argument that names a file or folder: the path with a
    leading ``~`` or ``~user`` expanded as a shell would (a quoted ``'~/run'``, or ``--out=~/run``,
    which the shell leaves alone), so that ``--out ~/run`` never makes a folder named ``~``; an
    unknown user is one error line naming the option and the user (:func:`_expanded`). An empty
    path is refused (:func:`ffnlab.validation.named`): ``Path("")`` is the working folder, which
    ``--out "$DIR"`` with DIR unset never means."""
    _named(value)
    return _expanded(value) if str(value).startswith("~") else Path(value)


def user_path_text(value: str) -> str:
    """:func:`user_path` for an option that takes a file or a name (a preset): the text kept as
    written unless it starts with ``~``; empty, refused."""
    _named(value)
    return str(_expanded(value)) if str(value).startswith("~") else value


def named_text(value: str) -> str:
    """The ``parser`` of an option naming a file or a Hub id that its loader reads as written
    (``--dataset``: ``~`` expanded there, the error naming it as given): an empty name refused, as
    :func:`user_path` refuses it."""
    _named(value)
    return value


user_path.__name__ = "path"  # the type help shows: <path>, as typer's own Path type
user_path_text.__name__ = "str"  # <str>, as before
named_text.__name__ = "str"

ENGINE_CONFIG_OPTION = typer.Option(None, "--engine-config", parser=user_path_text,
                                    help="A trainer's launch config whose settings "
                                    "to price: a torchtitan .toml, a TRL, axolotl or torchtune .yaml, a transformers "
                                    "TrainingArguments .json (batch, sequence, precision, checkpointing, optimizer, "
                                    "parallel sizes, LoRA; data/engine_configs.json). Says which keys it used and "
                                    "which it ignored; an explicit flag overrides a key. Any other file: "
                                    f"{LAUNCH_LINES} line for the serving engine (fit --mode serve, size --gpu).")
PLOT_OPTION = typer.Option(None, "--plot", parser=user_path_text,
                           help="Also write the step's memory timeline as a figure to FILE (.svg; "
                           ".png with matplotlib installed): live memory by moment, stacked by what is alive, the "
                           "peak and its moment marked, the engine in the title.")
OVERWRITE_PLOT_OPTION = typer.Option(False, "--overwrite", help="Replace the --plot FILE if it exists (without it, "
                                     "an existing file is never replaced).")
FORMAT_OPTION = typer.Option("table", "--format", "-f", help=FMT_HELP)
WIDE_OPTION = typer.Option(False, "--wide", help="Every column in the terminal table (the default fits 80 columns).")
TIMEOUT_OPTION = typer.Option(None, "--timeout", help=TIMEOUT_HELP)


class CountError(typer.BadParameter):
    """A count flag's value that cannot be read, as the one line every count flag gives:
    ``FLAG: cannot read 'VALUE'; expected FORMS`` (:func:`ffnlab.validation.count`'s own words),
    without click's ``Invalid value for '--flag':`` wrapper, so a flag read by typer and a count
    read later (``plan TARGET``) say it the same way."""

    def format_message(self) -> str:
        return self.message


def counted(flag: str, *, total: bool = False) -> Callable[[Any], int]:
    """The ``parser`` of a count flag (``typer.Option(..., parser=counted("--seq-len"))``):
    :func:`ffnlab.validation.count`, a size by vLLM's convention (``8k`` = 8,000, ``8K`` = ``8Ki``
    = 8,192) or, ``total``, a token or parameter total in decimal (``15T``). A value written with
    a suffix is echoed on stderr (``note: --seq-len 8k read as 8,000``) once the command is past
    its checks (:func:`ffnlab.cli.notes.say`: a value refused later, out of its range, is the one
    error line, not the second line after the note); one that cannot be read is a usage error
    naming the flag and the forms it takes (:class:`CountError`)."""

    def parse(value: Any) -> int:
        try:
            n, suffixed = count(value, flag, total=total)
        except ValueError as e:  # not a ValueError to typer: its own message would drop the forms
            raise CountError(str(e)) from None
        if suffixed:  # said once the command is past its checks: a value out of range is the one line
            say(f"note: {flag} {str(value).strip()} read as {n:,}")
        return n
    parse.__name__ = "count"  # the type help shows: <count> (a number, or one with a suffix)
    return parse


def check_format(fmt: str) -> str:
    require(fmt in render.FORMATS, f"--format must be one of {', '.join(render.FORMATS)}, got {show(fmt)}")
    return fmt


@dataclass(frozen=True)
class WidthFlags:
    """The width flags of ``size`` and ``plan`` as given (None: not given), travelling as one."""

    ratio: str | None = None
    rule: str | None = None
    multiplier: str | None = None
    multiple_of: int | None = None
    rounding: str = "up"
    d_ff: int | None = None

    @property
    def given(self) -> bool:
        """Whether any flag that sets a width was given (``--rounding`` alone sets none)."""
        return any(v is not None for v in (self.ratio, self.rule, self.multiplier, self.multiple_of, self.d_ff))

    def rule_for(self, ffn: str) -> WidthRule:
        """The width rule these flags give for the FFN kind ``ffn``, each flag checked."""
        from ffnlab.sizing.kinds import get_kind
        from ffnlab.sizing.widths import RULES, make_rule

        get_kind(ffn)
        if self.rule is not None:
            choice(self.rule, "--rule", RULES)
        check_ints(d_ff=(self.d_ff, 1, 2**40), multiple_of=(self.multiple_of, 1, 2**20))
        require(self.d_ff is not None or self.ratio is not None or self.rule in ("llama", "golden"),
                "give a width: --d-ff F, --ratio R (optionally --rule param-matched), --rule llama or --rule golden")
        return make_rule(self.rule, ratio=self.ratio, d_ff=self.d_ff, multiplier=self.multiplier,
                         multiple_of=self.multiple_of, rounding=self.rounding)


def check_ints(**values: tuple[int | None, int, int]) -> None:
    """Each option ``name=(value, lo, hi)`` (``None`` = not given) as one validated integer."""
    for name, (value, lo, hi) in values.items():
        if value is not None:
            integer(value, f"--{name.replace('_', '-')} ({name})", lo, hi)
