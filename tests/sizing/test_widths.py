from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ffnlab.errors import FfnlabError
from ffnlab.sizing.counting import dense_ffn_params
from ffnlab.sizing.widths import (
    WidthRule,
    alignment,
    check_width,
    make_rule,
    param_matched_ratio,
    parse_ratio,
    resolve_d_ff,
    round_to_multiple,
)

# (d_model, ffn_dim_multiplier, multiple_of, published width) from Meta's params.json / HF configs
LLAMA_WIDTHS = [
    (4096, None, 256, 11008),  # LLaMA-7B, Llama-2-7B
    (5120, None, 256, 13824),  # LLaMA-13B
    (6656, None, 256, 17920),  # LLaMA-30B
    (8192, None, 256, 22016),  # LLaMA-65B
    (8192, "1.3", 4096, 28672),  # Llama-2-70B, Llama-3-70B
    (4096, "1.3", 1024, 14336),  # Llama-3-8B (and Mistral 7B's width)
    (16384, "1.2", 4096, 53248),  # Llama-3.1-405B
]


@pytest.mark.parametrize("d, mult, multiple, width", LLAMA_WIDTHS)
def test_llama_rule_reproduces_published_widths(d, mult, multiple, width):
    rule = make_rule("llama", multiplier=mult, multiple_of=multiple)
    assert resolve_d_ff(d, "swiglu", rule) == width


@given(st.integers(1, 50_000), st.sampled_from(["1", "2", "8/3", "4", "6", "8"]))
def test_param_matched_gated_equals_plain_when_exact(d, r):
    ratio = parse_ratio(r)
    plain = resolve_d_ff(d, "gelu", WidthRule("ratio", ratio=ratio))
    gated = resolve_d_ff(d, "swiglu", WidthRule("param-matched", ratio=ratio))
    p_plain = dense_ffn_params(d, plain, False, False)
    p_gated = dense_ffn_params(d, gated, True, False)
    exact = ratio * d * 2 / 3
    if exact.denominator == 1 and (ratio * d).denominator == 1:
        assert p_gated == p_plain  # 3 * d * (2r/3) d == 2 * d * r d
    else:  # rounding up adds less than one unit of width: < 3d parameters
        assert 0 <= p_gated - (2 * d * ratio * d) < 3 * d


@given(st.integers(1, 30_000))
def test_eight_thirds_swiglu_has_a_4x_mlps_parameters_when_3_divides_d(d):
    d = 3 * d
    width = resolve_d_ff(d, "swiglu", make_rule("param-matched", ratio="4"))
    assert width == 8 * d // 3
    assert dense_ffn_params(d, width, True, False) == dense_ffn_params(d, 4 * d, False, False)


@given(st.integers(1, 10_000), st.integers(1, 10_000))
def test_param_matched_ratio_is_three_halves_for_gated(d, f):
    assert param_matched_ratio(d, f, True) == Fraction(3, 2) * Fraction(f, d)
    assert param_matched_ratio(d, f, False) == Fraction(f, d)


def test_golden_rule_is_raw_four_for_every_kind():
    for kind in ("gelu", "swiglu", "relu2", "glu"):
        assert resolve_d_ff(768, kind, make_rule("golden")) == 3072


def test_parse_ratio_forms():
    assert parse_ratio("8/3") == Fraction(8, 3)
    assert parse_ratio("2.6875") == Fraction(43, 16)
    assert parse_ratio(4) == 4
    for bad in ("0", "-1", "abc", "1/0", "nan"):
        with pytest.raises(FfnlabError):
            parse_ratio(bad)


def test_rounding_modes():
    assert round_to_multiple(Fraction(10922), 256, "up") == 11008
    assert round_to_multiple(Fraction(10922), 256, "down") == 10752
    assert round_to_multiple(Fraction(10880), 256, "nearest") == 11008  # halves go up
    assert round_to_multiple(Fraction(1, 2), 64, "down") == 64  # never zero


def test_alignment():
    assert alignment(11008) == {"pow2_divisor": 256, "div64": True, "div128": True, "div256": True}
    assert alignment(10923)["pow2_divisor"] == 1


@pytest.mark.parametrize("kwargs", [
    dict(rule="ratio"), dict(rule="nope", ratio=4), dict(rule="explicit", d_ff=-3),
    dict(rule="explicit", d_ff=0), dict(ratio="-2"), dict(rule="golden", ratio=3),
    dict(rule="ratio", ratio=4, multiple_of=0), dict(rule="ratio", ratio=4, multiplier=1.3),
])
def test_bad_rules_raise(kwargs):
    with pytest.raises(FfnlabError):
        make_rule(**kwargs)


def test_llama_rule_honours_rounding_and_clamp_is_visible():
    from ffnlab.sizing.widths import rounding_quotient, unrounded_width

    # int(2 * 4 * 4096 / 3) = 10922 = 42.66 multiples of 256
    assert unrounded_width(4096, "swiglu", make_rule("llama")) == 10922
    assert resolve_d_ff(4096, "swiglu", make_rule("llama", multiple_of=256, rounding="down")) == 42 * 256
    assert resolve_d_ff(4096, "swiglu", make_rule("llama", multiple_of=256, rounding="nearest")) == 43 * 256
    assert rounding_quotient(64, 4096, "nearest") == 0  # round_to_multiple clamps this 0 up to 1
    assert round_to_multiple(64, 4096, "nearest") == 4096


def test_absurd_widths_are_refused_not_overflowed():
    with pytest.raises(FfnlabError, match="multiplier must be a number > 0 and <= 1000000"):
        resolve_d_ff(4096, "swiglu", make_rule("llama", multiplier="1e308"))
    with pytest.raises(FfnlabError, match="beyond any model"):  # in range, but the width is not
        resolve_d_ff(2**30, "swiglu", make_rule("llama", multiplier="1e6"))
    with pytest.raises(FfnlabError, match="at most"):
        check_width(2**40, "d_model")


# -- the JSON `rule` field, defaults, boundaries and user-facing messages (written out by hand) ----

@pytest.mark.parametrize("rule, text", [
    (make_rule(d_ff=3072), "explicit d_ff=3072"),
    (make_rule("golden"), "golden (raw ratio 4, the seed's law)"),
    (make_rule("golden", multiple_of=64, rounding="down"),
     "golden (raw ratio 4, the seed's law, multiple_of=64 (down))"),
    (make_rule("ratio", ratio="4"), "ratio ratio=4"),
    (make_rule("param-matched", ratio="8/3", multiple_of=128), "param-matched ratio=8/3 multiple_of=128 (up)"),
    (make_rule("llama"), "llama ratio=4 multiple_of=256 (up)"),
    (make_rule("llama", multiplier="1.3", multiple_of=1024, rounding="nearest"),
     "llama ratio=4 multiplier=13/10 multiple_of=1024 (nearest)"),
    (make_rule("ratio", ratio="2.6875"), "ratio ratio=43/16"),
])
def test_describe_is_what_the_json_rule_field_says(rule, text):
    assert rule.describe() == text


def test_make_rule_defaults():
    assert make_rule(d_ff=3072) == WidthRule("explicit", d_ff=3072)
    assert make_rule(ratio=4) == WidthRule("ratio", ratio=Fraction(4), multiple_of=1, rounding="up")
    assert make_rule("ratio", ratio=4, multiple_of=1) == WidthRule("ratio", ratio=Fraction(4))  # 1 is allowed
    assert make_rule("golden") == WidthRule("golden", ratio=Fraction(4), multiple_of=1, rounding="up")
    assert make_rule("golden", ratio="4", multiple_of=8, rounding="down") == WidthRule(
        "golden", ratio=Fraction(4), multiple_of=8, rounding="down")
    assert make_rule("llama") == WidthRule("llama", ratio=Fraction(4), multiple_of=256, rounding="up")
    assert make_rule("llama", ratio="3", multiplier="1.5", multiple_of=64) == WidthRule(
        "llama", ratio=Fraction(3), multiplier=Fraction(3, 2), multiple_of=64, rounding="up")
    assert make_rule("param-matched", ratio="4", rounding="nearest").rounding == "nearest"


@pytest.mark.parametrize("kwargs, message", [
    (dict(rule="nope", ratio=4),
     "unknown width rule 'nope'; choose one of: explicit, ratio, param-matched, llama, golden"),
    (dict(ratio=4, rounding="sideways"), "rounding must be one of ('up', 'nearest', 'down'), got 'sideways'"),
    (dict(ratio=4, multiple_of=0), "multiple_of must be an integer >= 1, got 0"),
    (dict(ratio=4, multiple_of=True), "multiple_of must be an integer >= 1, got True"),
    (dict(ratio=4, multiple_of=64.0), "multiple_of must be an integer >= 1, got 64.0"),
    (dict(rule="explicit"), "the explicit rule needs d_ff"),
    (dict(rule="explicit", d_ff=2.5), "d_ff must be a positive integer, got 2.5"),
    (dict(rule="ratio", ratio=4, d_ff=3072), "d_ff=3072 cannot be combined with the 'ratio' rule"),
    (dict(rule="golden", ratio=3), "the golden rule fixes the ratio at 4"),
    (dict(rule="param-matched"), "the 'param-matched' rule needs a ratio (e.g. --ratio 4 or --ratio 8/3)"),
    (dict(rule="ratio", ratio=4, multiplier="1.3"), "multiplier applies to the llama rule only"),
    (dict(rule="ratio", ratio="2000000"),
     "ratio must be a number > 0 and <= 1000000 (such as 4, 2.5 or 8/3), got '2000000'"),
    (dict(rule="llama", multiplier="0"), "multiplier must be a number > 0"),
])
def test_bad_rules_say_what_is_wrong(kwargs, message):
    with pytest.raises(FfnlabError) as err:
        make_rule(**kwargs)
    assert str(err.value).startswith(message)


def test_check_width_accepts_whole_floats_and_refuses_the_rest():
    assert check_width(3072, "d_ff") == 3072
    whole = check_width(3072.0, "d_ff")
    assert whole == 3072 and type(whole) is int
    assert check_width(2**31 - 1, "d_ff") == 2**31 - 1  # the largest width allowed
    for bad, message in [(True, "d_ff must be a positive integer, got True"),
                         ("3", "d_ff must be a positive integer, got '3'"),
                         (2.5, "d_ff must be a positive integer, got 2.5"),
                         (0, "d_ff must be a positive integer, got 0"),
                         (2**31, "d_ff must be at most 2,147,483,647, got 2,147,483,648"),
                         (10**20, "d_ff must be at most 2,147,483,647, got 1.00e+20")]:
        with pytest.raises(FfnlabError) as err:
            check_width(bad, "d_ff")
        assert str(err.value) == message


def test_widths_at_the_limit_and_d_model_checked():
    # 2^31 - 1 wide at ratio 1: exactly the largest width allowed
    assert resolve_d_ff(2**31 - 1, "gelu", make_rule("ratio", ratio=1)) == 2**31 - 1
    with pytest.raises(FfnlabError, match="^d_model must be a positive integer, got 0$"):
        resolve_d_ff(0, "gelu", make_rule("ratio", ratio=4))
    assert resolve_d_ff(768, "swiglu", make_rule(d_ff=1000)) == 1000  # explicit: as given, not rounded
    from ffnlab.sizing.widths import unrounded_width

    assert unrounded_width(768, "swiglu", make_rule(d_ff=1000)) == 1000
    assert unrounded_width(768, "swiglu", make_rule("param-matched", ratio=4)) == 2048  # 4 x 768 x 2/3
    assert unrounded_width(768, "gelu", make_rule("param-matched", ratio=4)) == 3072  # plain: r x d


def test_rounding_defaults_and_refusals():
    from ffnlab.sizing.widths import rounding_quotient

    assert round_to_multiple(Fraction(10922), 256) == 11008  # up by default
    assert rounding_quotient(Fraction(10922), 256) == 43
    assert rounding_quotient(Fraction(10922), 256, "down") == 42
    with pytest.raises(FfnlabError, match=r"^multiple_of must be an integer >= 1, got 2\.5$"):
        rounding_quotient(10, 2.5)
    with pytest.raises(FfnlabError, match=r"^multiple_of must be an integer >= 1, got 0$"):
        rounding_quotient(10, 0)
    with pytest.raises(FfnlabError, match=r"^rounding must be one of \('up', 'nearest', 'down'\), got 'UP'$"):
        rounding_quotient(10, 4, "UP")


def test_short_int_and_raw_ratio():
    from ffnlab.sizing.widths import fraction_text, raw_ratio, short_int

    assert short_int(12345) == "12,345"
    assert short_int(999_999_999_999) == "999,999,999,999"  # 12 digits: still written out
    assert short_int(10**12) == "1.00e+12"
    assert short_int(9_876_543_210_123_456) == "9.87e+15"
    assert raw_ratio(768, 3072) == 4 and raw_ratio(4096, 11008) == Fraction(43, 16)
    assert fraction_text(Fraction(8, 3)) == "8/3" and fraction_text(Fraction(4)) == "4"


def test_parse_ratio_names_what_it_parses():
    with pytest.raises(FfnlabError, match="^ratio must be a number > 0"):
        parse_ratio("-1")
    with pytest.raises(FfnlabError, match="^multiplier must be a number > 0"):
        parse_ratio("-1", "multiplier")
