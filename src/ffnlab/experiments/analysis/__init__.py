"""The analysis of a sweep: the statistics (pooled variance, Dunnett, Welch, TOST, power),
verdicts, trends of the best ratio and the maturity rule."""
