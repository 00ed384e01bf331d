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
