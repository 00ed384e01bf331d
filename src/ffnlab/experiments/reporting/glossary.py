"""The words ffnlab's reports and tables use, each explained once for a reader who is not a
statistician: the tests that decide a comparison (Dunnett, Welch, TOST), the checks that choose
between them (Levene, Bartlett), the intervals (Fieller, the delta method) and the training words
(tokens per parameter, maturity, iso-params). Every HTML page ffnlab writes ends with this list
(``templates/base.html.j2``), and docs/glossary.md is its Markdown rendering
(:func:`markdown`, checked equal by tests/project/test_glossary.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    """One glossary entry: the word as reports print it, and what it means in them."""

    term: str
    meaning: str


TERMS: tuple[Term, ...] = (
    Term("reference arm", "The arm every other arm is compared with, named in the sweep spec (`reference`); "
                          "differences are written as other minus reference."),
    Term("hypothesis", "A sentence the sweep spec states before any run (`hypotheses`: id, sentence, "
                       "comparison, margin, claimed effect). A report gives a verdict only on the hypotheses its "
                       "spec names."),
    Term("deciding interval", "The one 95% confidence interval a verdict rests on, from the test chosen by the "
                              "rule below; the other intervals a report shows are labelled sensitivity and never "
                              "change a verdict."),
    Term("equivalence margin", "The smallest difference that matters, fixed in the spec before the runs (default "
                               "0.5% of the reference's final loss). A difference inside it is called equivalent "
                               "or 'real but within the margin', never a win."),
    Term("TOST", "Two one-sided tests: the equivalence test. A small TOST p (below 0.05) shows the difference lies "
                 "inside plus or minus the margin; a large one says equivalence is not shown."),
    Term("Dunnett's test", "Compares several arms with one reference at once, holding the chance of any false "
                           "alarm across the family at 5%; its intervals are wider than one t-test's. Used when "
                           "the arms' variances may be pooled."),
    Term("Welch's t-test", "Compares two means without assuming their spreads are equal; with several "
                           "comparisons its intervals are widened (Bonferroni: the 5% split among them)."),
    Term("Levene's test", "Asks whether the arms' spreads (variances) differ, using distances from each arm's "
                          "median; with Bartlett's test it decides whether one pooled variance may serve every "
                          "arm."),
    Term("Bartlett's test", "Another test of equal variances, sharper than Levene's when the losses are close to "
                            "normal, misled when they are not."),
    Term("Fieller's interval", "A confidence interval for a ratio of two estimates (a ratio of two means, or the "
                               "minimum of a fitted parabola). It is unbounded when the denominator could be "
                               "zero, which a report says rather than hides."),
    Term("delta method", "An approximate standard error of a function of estimates (here the best ratio from a "
                         "parabola's coefficients), from their covariance."),
    Term("Cochran's Q", "Tests whether several estimates, each with its own error, agree (homogeneity); a small "
                        "p says they differ by more than their errors allow."),
    Term("power", "The chance a test detects an effect of a given size if it is real. 'Detectable at 80% power' "
                  "is the smallest difference the design finds four times in five."),
    Term("tokens per parameter", "Training tokens divided by non-embedding parameters: how long a model trained "
                                 "for its size. About 20 is compute-optimal (Hoffmann et al. 2022); a model far "
                                 "below it is still learning."),
    Term("maturity", "The spec's rule (default 20 tokens per parameter) a run must reach before a verdict about "
                     "an optimal ratio is given; below it such a verdict reads inconclusive."),
    Term("censored run", "A run that never reached the target loss; its tokens-to-target is known only to exceed "
                         "its training, so its arm's interval has no upper end."),
    Term("raw ratio", "d_ff / d_model, the FFN's width over the model's."),
    Term("parameter-matched ratio", "The raw ratio times 3/2 for a gated FFN (three matrices instead of two): the "
                                    "plain-MLP ratio with the same parameters per layer."),
    Term("iso-params / iso-flops", "A sweep control: every arm keeps the reference's non-embedding parameters "
                                   "(or training FLOPs per token) within the tolerance by changing d_model."),
    Term("bits per byte", "The validation loss in bits per byte of text, comparable across tokenizers; "
                          "perplexity is exp(loss in nats per token)."),
    Term("MFU", "Model FLOPs utilisation: the share of the GPU's peak FLOPs a training run achieves; ffnlab "
                "assumes 40% for its time estimates unless told (--mfu)."),
)


def markdown() -> str:
    """docs/glossary.md: a title, one line on where the terms appear, then one entry per term."""
    lines = ["# Glossary", "", "The words ffnlab's reports and tables use. Every HTML page ffnlab writes ends "
             "with this list.", ""]
    for t in TERMS:
        lines += [f"**{t.term}**: {t.meaning}", ""]
    return "\n".join(lines)
