"""The attention function (SPEC.md section 2) in decimal, and its self-check.

Method, in short: dot products and mask differences are exact (Fraction);
exp is shifted by the largest logit and taken on exact differences; an
output whose equally weighted key groups all share one mean of V is that
mean, exactly. Every result is computed at 120 significant digits and again
at 160, and the two must agree to 60 digits; an approximate result within
1e-100 (relative) of a rounding midpoint is refused rather than rounded.
"""

import decimal
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from .approx import (
    EXACT_ONE, EXACT_ZERO, NAN, NEG_INF, Approx, d_add, d_div, d_exp, d_expm1, d_from_fraction,
    d_log1p, d_mul, d_sqrt, d_sub, d_sum, d_tanh, decimal_context,
)
from .errors import AmbiguousRounding, PrecisionInsufficient
from .formats import near_midpoint, round_fraction

WORKING_DIGITS = 120
CHECK_DIGITS = 160
OUTPUT_DIGITS = 60
# A decimal result this close (relative) to a rounding midpoint cannot be
# trusted to round correctly, unless the decimal arithmetic was exact.
MIDPOINT_GUARD = Fraction(1, 10**100)


def visible_keys(case, b, h, i):
    """Visible keys of row (b, h, i) with their additive mask value plus ALiBi bias (Fraction)."""
    L, S = case.q_len, case.kv_len
    keys = []
    for j in range(S):
        if case.causal == "top_left" and j > i:
            continue
        if case.causal == "bottom_right" and j > i + S - L:
            continue
        if case.window is not None:
            diagonal = i + (S - L if case.window["alignment"] == "bottom_right" else 0)
            if case.window["left"] is not None and j < diagonal - case.window["left"]:
                continue
            if case.window["right"] is not None and j > diagonal + case.window["right"]:
                continue
        m = Fraction(0)
        if case.mask_kind == "bool":
            if not case.mask_at(b, h, i, j):
                continue
        elif case.mask_kind == "additive":
            entry = case.mask_at(b, h, i, j)
            if entry == -math.inf:
                continue
            m = Fraction(entry)
        keys.append((j, m + case.alibi_bias(b, h, i, j)))
    return keys


def exact_dot(x, y):
    """sum x_t * y_t of finite floats (or Fractions), exactly."""
    return sum((Fraction(a) * Fraction(b) for a, b in zip(x, y)), Fraction(0))


def is_finite(x):
    """A real input is finite: a Fraction (a descaled input, SPEC.md 2.4)
    always is, and need not fit in a float; a float when math says so."""
    return isinstance(x, Fraction) or math.isfinite(x)


def exact_decimal(x):
    """A finite float or dyadic Fraction as a Decimal, exactly.

    Decimal(float) is exact; a descaled input p / 2^n, a Fraction, is
    p 5^n / 10^n, written out in full whatever the context's precision
    (Decimal's string constructor does not round).
    """
    if not isinstance(x, Fraction):
        return Decimal(x)
    n = x.denominator.bit_length() - 1
    assert x.denominator == 1 << n, "a real input is dyadic: a float times a float32 factor"
    return Decimal(f"{x.numerator * 5**n}E-{n}")


class LogitModel:
    """Computes logits x_j = cap(scale * d_j) + m_j and their differences.

    Differences x_j - x_r matter more than the logits themselves: they feed
    exp, and logits can be huge while their differences are small. They
    are therefore formed from the exact d_j - d_r and m_j - m_r. Keys with
    equal d differ by exactly m_j - m_r (an exact zero when the masks agree
    too), which keeps tied weights (1/n) and their means exact.
    """

    def __init__(self, case):
        self.scale_exact = None  # the scale as a Fraction when it is rational
        if case.scale is not None:
            self.scale_exact = Fraction(case.scale)
        else:
            root = math.isqrt(case.d_k)
            if root * root == case.d_k:
                self.scale_exact = Fraction(1, root)
        if self.scale_exact is not None:
            self.scale = d_from_fraction(self.scale_exact)
        else:
            # The exact real 1/sqrt(d_k), rounded to the working precision.
            self.scale = d_div(EXACT_ONE, d_sqrt(Approx(Decimal(case.d_k), True)))
        self.softcap = None if case.softcap is None else d_from_fraction(Fraction(case.softcap))

    def scaled(self, d):
        if self.scale_exact is not None:
            return d_from_fraction(self.scale_exact * d)
        return d_mul(self.scale, d_from_fraction(d))

    def capped(self, d):
        """softcap * tanh(scale * d / softcap), or scale * d without softcap."""
        s = self.scaled(d)
        if self.softcap is None:
            return s
        return d_mul(self.softcap, d_tanh(d_div(s, self.softcap)))

    def logit(self, d, m):
        if self.softcap is None and self.scale_exact is not None:
            return d_from_fraction(self.scale_exact * d + m)
        return d_add(self.capped(d), d_from_fraction(m))

    def difference(self, dj, mj, dr, mr):
        """x_j - x_r."""
        if dj == dr:
            return d_from_fraction(mj - mr)  # exact zero when the masks agree too
        if self.softcap is None:
            if self.scale_exact is not None:
                return d_from_fraction(self.scale_exact * (dj - dr) + (mj - mr))
            return d_add(d_mul(self.scale, d_from_fraction(dj - dr)), d_from_fraction(mj - mr))
        # Capped logits are bounded by the softcap, so subtracting them
        # loses at most the digits of softcap / |difference|.
        return d_add(d_sub(self.capped(dj), self.capped(dr)), d_from_fraction(mj - mr))


# The row's sink, where it has one, enters as one more key: q.k = 0 (a
# logit of 0 whatever the scale and softcap), additive term sigma, values 0,
# no weight of its own in the results (SPEC.md sections 2.3 and 5).
SINK = "sink"


def attention_row(case, model, b, h, i):
    """Weights (S), output (d_v) and lse of row (b, h, i) as Approx values.

    The rows read are the real inputs: with descales, the kernel's inputs
    times their factors, exact Fractions (SPEC.md 2.4); sinks are not scaled.
    """
    S, dv = case.kv_len, case.d_v
    keys = visible_keys(case, b, h, i)
    sink = case.sink(h)
    if not keys and sink is None:
        return [EXACT_ZERO] * S, [EXACT_ZERO] * dv, NEG_INF
    g = h // (case.q_heads // case.kv_heads)
    q = case.q_row(b, h, i)
    # Only visible keys and values are read: blocked ones may hold NaN.
    k_rows = {j: case.k_row(b, g, j) for j, _ in keys}
    if not all(is_finite(x) for x in q) or not all(
        is_finite(x) for row in k_rows.values() for x in row
    ):
        # A non-finite visible logit: NaN everywhere, except that blocked
        # keys keep weight 0 (SPEC.md 2.3 leaves this open; the C++
        # reference does the same).
        visible = {j for j, _ in keys}
        return [NAN if j in visible else EXACT_ZERO for j in range(S)], [NAN] * dv, NAN
    d = {j: exact_dot(q, k_rows[j]) for j, _ in keys}
    m = dict(keys)
    v_rows = {j: case.v_row(b, g, j) for j, _ in keys}
    if sink is not None:
        keys = keys + [(SINK, sink)]
        d[SINK], m[SINK], v_rows[SINK] = Fraction(0), sink, [0.0] * dv
    logits = {j: model.logit(d[j], m[j]) for j, _ in keys}
    # Shift by (approximately) the largest logit r so that exp never
    # overflows: u_j = exp(x_j - x_r) <= about 1, and z = sum u_j >= 1.
    r = max(logits, key=lambda j: logits[j].value)
    delta = {j: model.difference(d[j], m[j], d[r], m[r]) for j, _ in keys}
    # Keys near r (|delta| < 1) are written u_j = 1 + e_j, e_j = expm1(delta_j)
    # to full relative accuracy. Sums then split into an exact part (a count,
    # a plain sum of values) and a small part, so nearly tied keys whose
    # values cancel do not lose their difference to rounding at 1.
    near = [j for j, _ in keys if abs(delta[j].value) < 1]
    far = [j for j, _ in keys if abs(delta[j].value) >= 1]
    e = {j: d_expm1(delta[j]) for j in near}
    u = {j: d_exp(delta[j]) for j in far}
    z_minus_1 = d_add(
        Approx(Decimal(len(near) - 1), True), d_sum([e[j] for j in near] + [u[j] for j in far])
    )
    z = d_add(EXACT_ONE, z_minus_1)
    weights = []
    for j in range(S):
        if j in e:
            weights.append(d_div(d_add(EXACT_ONE, e[j]), z))
        elif j in u:
            weights.append(d_div(u[j], z))
        else:
            weights.append(EXACT_ZERO)  # blocked
    # Keys with equal (d, m) have equal logits, hence equal weights.
    groups = {}
    for j, _ in keys:
        groups.setdefault((d[j], m[j]), []).append(j)
    out = []
    for t in range(dv):
        if not all(is_finite(v_rows[j][t]) for j, _ in keys):
            out.append(NAN)
            continue
        mean = common_group_mean(groups.values(), {j: v_rows[j][t] for j, _ in keys})
        if mean is not None:
            out.append(d_from_fraction(mean))
            continue
        v = {j: Approx(exact_decimal(v_rows[j][t]), True) for j, _ in keys}
        # (sum u_j v_j) / z rather than sum w_j v_j: one rounding fewer per key.
        exact_part = d_sum(v[j] for j in near)
        small_part = d_sum([d_mul(e[j], v[j]) for j in near] + [d_mul(u[j], v[j]) for j in far])
        out.append(d_div(d_add(exact_part, small_part), z))
    lse = d_add(logits[r], d_log1p(z_minus_1))
    return weights, out, lse


def common_group_mean(groups, values):
    """The mean of values shared by every group of equally weighted keys, or None.

    The output is a convex combination of the group means (each group's
    keys share one weight), so if all group means are one number M the
    output is exactly M, a rational that may sit on a rounding midpoint.
    The decimal sum could not show it is exact when the groups' weights
    differ (they are transcendental), so it is taken here exactly.
    """
    means = {sum(Fraction(values[j]) for j in group) / len(group) for group in groups}
    return means.pop() if len(means) == 1 else None


@dataclass
class Results:
    """All results of a case, flattened in C order."""

    out: list  # [B, Hq, L, d_v]
    lse: list  # [B, Hq, L]
    weights: list  # [B, Hq, L, S]

    def items(self):
        return (("out", self.out), ("lse", self.lse), ("weights", self.weights))


def compute(case, digits):
    """Every row of the case at the given number of significant digits."""
    results = Results([], [], [])
    with decimal.localcontext(decimal_context(digits)):
        model = LogitModel(case)
        for b in range(case.batch):
            for h in range(case.q_heads):
                for i in range(case.q_len):
                    weights, out, lse = attention_row(case, model, b, h, i)
                    results.weights.extend(weights)
                    results.out.extend(out)
                    results.lse.append(lse)
    return results


def significant_string(a):
    """The expected.json form of a value: 60 significant digits, or 0/-inf/nan."""
    if a.value.is_nan():
        return "nan"
    if a.value.is_infinite():
        return "-inf" if a.value < 0 else "inf"
    if a.value == 0:
        if not a.exact:
            raise PrecisionInsufficient(
                "precision insufficient: an approximate result is zero (cancellation, or "
                "a weight below decimal's exponent range)"
            )
        return "0"
    with decimal.localcontext(decimal_context(OUTPUT_DIGITS)):
        return format(a.value, f".{OUTPUT_DIGITS - 1}E")


def compute_checked(case, kinds=("out", "lse", "weights")):
    """Results at 120 digits, verified against a 160-digit rerun.

    The 60-digit strings of every result of the given kinds must agree
    (compare needs no weights: a weight too small for decimal's exponent
    range cannot be written but does not matter there). The difference
    between the two runs is kept as an error estimate for the midpoint guard.
    """
    low = compute(case, WORKING_DIGITS)
    high = compute(case, CHECK_DIGITS)
    checked = Results([], [], [])
    for (name, lows), (_, highs) in zip(low.items(), high.items()):
        if name not in kinds:
            continue
        target = getattr(checked, name)
        for index, (a, b) in enumerate(zip(lows, highs)):
            target.append(checked_value(case, f"{name}[{index}]", a, b))
    return checked


def checked_value(case, what, a, b):
    """a (at 120 digits) once b (at 160) agrees with it to 60 digits, with
    their difference kept as its error estimate for the midpoint guard."""
    if significant_string(a) != significant_string(b):
        raise PrecisionInsufficient(
            f"{case.path}: precision insufficient: {what} is "
            f"{significant_string(a)} at {WORKING_DIGITS} digits but "
            f"{significant_string(b)} at {CHECK_DIGITS} digits"
        )
    error = Decimal(0)
    if a.value.is_finite() and not a.exact:
        with decimal.localcontext(decimal_context(2 * CHECK_DIGITS)):
            error = abs(a.value - b.value)
    return Approx(a.value, a.exact, error)


def round_result(a, fmt):
    """Round a checked result to fmt, refusing when the approximation cannot decide."""
    if a.value.is_nan():
        return math.nan
    if a.value.is_infinite():
        # float8_e4m3fn has no infinity: NaN, as for its overflow.
        if not fmt.has_inf:
            return math.nan
        return -math.inf if a.value < 0 else math.inf
    if a.value == 0:
        if not a.exact:
            raise AmbiguousRounding("approximate zero: sign unknown")
        return 0.0  # an exact zero is +0
    # Far outside every format's range the rounding is known without
    # converting to a Fraction (a weight like exp(-1e17) has a huge exponent):
    # below 1e-330 is under half the smallest float64 subnormal (2.5e-324),
    # above 1e310 over the float64 overflow threshold (1.8e308).
    if a.value.adjusted() < -330:
        return -0.0 if a.value < 0 else 0.0
    if a.value.adjusted() > 310:
        return round_fraction(Fraction(-1 if a.value < 0 else 1) * 2**2000, fmt)
    x = Fraction(a.value)
    if not a.exact:
        tolerance = max(MIDPOINT_GUARD * abs(x), 4 * Fraction(a.error))
        if near_midpoint(x, fmt, tolerance):
            raise AmbiguousRounding(
                f"{a.value:.30E} is within {float(tolerance):.1e} of a {fmt.name} rounding midpoint"
            )
    return round_fraction(x, fmt)
