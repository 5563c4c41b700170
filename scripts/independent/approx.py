"""Decimal arithmetic that remembers whether it is exact.

Rounding an approximation to a format is unsafe near a midpoint; rounding
an exact value never is. Results such as a mean with weights exactly 1/2
are exact in decimal and may sit exactly on a midpoint, so each value
carries whether every operation leading to it was exact (the decimal
context's Inexact flag tells).
"""

import decimal
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Approx:
    value: Decimal
    exact: bool
    error: Decimal = Decimal(0)  # |120-digit - 160-digit|, set by the self-check

    def is_exact_zero(self):
        return self.exact and self.value == 0


EXACT_ZERO = Approx(Decimal(0), True)
EXACT_ONE = Approx(Decimal(1), True)
NAN = Approx(Decimal("NaN"), True)
NEG_INF = Approx(Decimal("-Infinity"), True)


def _tracked(operation, *args):
    """Apply a decimal operation in the current context, tracking exactness."""
    ctx = decimal.getcontext()
    ctx.clear_flags()
    value = operation(*(a.value for a in args))
    exact = all(a.exact for a in args) and not ctx.flags[decimal.Inexact]
    return Approx(value, exact)


def d_add(a, b):
    return _tracked(lambda x, y: x + y, a, b)


def d_sub(a, b):
    return _tracked(lambda x, y: x - y, a, b)


def d_mul(a, b):
    # An exact zero factor makes the product exactly zero, whatever the other.
    if a.is_exact_zero() or b.is_exact_zero():
        return EXACT_ZERO
    return _tracked(lambda x, y: x * y, a, b)


def d_div(a, b):
    if a.is_exact_zero():
        return EXACT_ZERO
    return _tracked(lambda x, y: x / y, a, b)


def d_exp(a):
    return _tracked(lambda x: x.exp(), a)


def d_sqrt(a):
    return _tracked(lambda x: x.sqrt(), a)


def d_sum(terms):
    total = EXACT_ZERO
    for term in terms:
        total = d_add(total, term)
    return total


def d_from_fraction(x):
    """A rational as a decimal, rounded once to the working precision."""
    return d_div(Approx(Decimal(x.numerator), True), Approx(Decimal(x.denominator), True))


def d_tanh(a):
    """tanh at the working precision, with full relative accuracy.

    tanh(x) = sign(x) * (1 - 2/(exp(2|x|) + 1)). That form cancels for small
    |x|, so the digits cancellation eats are added to the precision; for
    tiny |x|, tanh(x) = x to working precision; for large |x|, exp(2|x|)
    would overflow and 1 - tanh|x| is far below one unit in the last place,
    so the result is sign(x).
    """
    if a.is_exact_zero():
        return EXACT_ZERO  # tanh(0) = 0 is the only exact case
    ctx = decimal.getcontext()
    x = abs(a.value)
    if 2 * x > 3 * ctx.prec:
        # 2/(exp(2x)+1) < 2*10^(-1.3 prec): rounds away at prec digits.
        t = Decimal(1)
    elif x.adjusted() < -(ctx.prec // 2 + 2):
        # tanh x = x (1 - x^2/3 + ...), and x^2/3 < 10^-(prec+3).
        t = +x
    else:
        with decimal.localcontext() as local:
            local.prec = ctx.prec + max(0, -x.adjusted()) + 5
            t = 1 - 2 / ((2 * x).exp() + 1)
        t = +t  # round to the working precision
    return Approx(t if a.value > 0 else -t, False)


def _boosted_digits(x):
    """Working precision plus the digits lost when 1 + x cancels (|x| < 1)."""
    return decimal.getcontext().prec + max(0, -x.adjusted()) + 5


def d_expm1(a):
    """exp(x) - 1 with full relative accuracy for small |x| (|x| < 1 here)."""
    if a.is_exact_zero():
        return EXACT_ZERO
    x = a.value
    if x.adjusted() < -(decimal.getcontext().prec + 5):
        return Approx(+x, False)  # expm1(x) = x (1 + x/2 + ...), x/2 below an ulp
    with decimal.localcontext() as local:
        local.prec = _boosted_digits(x)
        result = x.exp() - 1
    return Approx(+result, False)


def d_log1p(a):
    """log(1 + y) with full relative accuracy for small |y|."""
    if a.is_exact_zero():
        return EXACT_ZERO  # log(1) = 0 is the only exact case
    y = a.value
    if y.adjusted() < -(decimal.getcontext().prec + 5):
        return Approx(+y, False)
    with decimal.localcontext() as local:
        local.prec = _boosted_digits(y)
        result = (1 + y).ln()  # 1 + y is exact at the boosted precision
    return Approx(+result, False)


def decimal_context(digits):
    """A context with an exponent range wide enough for any float input."""
    return decimal.Context(
        prec=digits, rounding=decimal.ROUND_HALF_EVEN, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
    )
