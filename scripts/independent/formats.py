"""Number formats and correct rounding (SPEC.md section 3), in integer arithmetic.

Rounding starts from an exact rational (Fraction), never from a float, so
no rounding error of the machine's own arithmetic can enter it. Results are
Python floats, which hold every value of every format exactly.
"""

import math
import struct
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class NumberFormat:
    name: str
    p: int  # significand bits, hidden bit included
    emin: int  # exponent of the smallest normal number
    max_finite: Fraction
    has_inf: bool  # False: overflow and infinities become NaN


FORMATS = {
    f.name: f
    for f in (
        NumberFormat("float64", 53, -1022, (2 - Fraction(1, 2**52)) * 2**1023, True),
        NumberFormat("float32", 24, -126, (2 - Fraction(1, 2**23)) * 2**127, True),
        NumberFormat("float16", 11, -14, Fraction(65504), True),
        NumberFormat("bfloat16", 8, -126, (2 - Fraction(1, 2**7)) * 2**127, True),
        NumberFormat("float8_e4m3fn", 4, -6, Fraction(448), False),
        NumberFormat("float8_e5m2", 3, -14, Fraction(57344), True),
    )
}


def pow2(e):
    """2**e as an exact Fraction, for any integer e."""
    return Fraction(2**e) if e >= 0 else Fraction(1, 2**-e)


def floor_log2(x):
    """floor(log2(x)) of a positive Fraction, exactly."""
    n, d = x.numerator, x.denominator
    e = n.bit_length() - d.bit_length()
    # n/d lies in [2^(e-1), 2^(e+1)); decide which half by one comparison.
    if (n << max(-e, 0)) < (d << max(e, 0)):
        e -= 1
    return e


def quantum_exponent(x, fmt):
    """Exponent q of the spacing 2^q of fmt's numbers around |x| > 0.

    The exponent is unbounded above (overflow is decided after rounding)
    and clamped below at emin, which gives gradual underflow.
    """
    return max(floor_log2(abs(x)), fmt.emin) - fmt.p + 1


def _split(x, q):
    """|x| / 2^q as (integer part, fractional part as a Fraction)."""
    scaled = abs(x) / pow2(q)
    whole = scaled.numerator // scaled.denominator
    return whole, scaled - whole


def near_midpoint(x, fmt, tolerance):
    """True if |x| is within tolerance (absolute) of a rounding midpoint of fmt."""
    q = quantum_exponent(x, fmt)
    _, frac = _split(x, q)
    return abs(frac - Fraction(1, 2)) * pow2(q) <= tolerance


def round_fraction(x, fmt):
    """Round an exact rational to fmt: nearest, ties to even, then overflow.

    Returns a Python float, which holds every value of every format exactly.
    A nonzero value that rounds to zero keeps its sign; exact zero is +0.
    """
    if x == 0:
        return 0.0
    negative = x < 0
    q = quantum_exponent(x, fmt)
    whole, frac = _split(x, q)
    if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    magnitude = whole * pow2(q)
    if magnitude > fmt.max_finite:
        if not fmt.has_inf:
            return math.nan
        return -math.inf if negative else math.inf
    result = math.ldexp(whole, q)  # exact: whole has at most p bits
    return -result if negative else result


def is_representable(value, fmt):
    """Whether a float (NaN and infinities included) is a value of fmt."""
    if math.isnan(value):
        return True
    if math.isinf(value):
        return fmt.has_inf
    if value == 0:
        return True
    exact = Fraction(value)
    # Compare as rationals: a float16 value rounded to float16 is itself.
    rounded = round_fraction(exact, fmt)
    return not math.isnan(rounded) and not math.isinf(rounded) and Fraction(rounded) == exact


# Rounded results are compared as float64 bit patterns (compare, and the
# check of expected.json strings), where == would equate +0 with -0.
def same_bits(expected, got):
    """Bitwise equality of two doubles, except that any NaN equals any NaN."""
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return struct.pack("<d", expected) == struct.pack("<d", got)
