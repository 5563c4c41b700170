#!/usr/bin/env python3
"""Independent high-precision reference for attnspec (Python standard library only).

Why this file exists: the C++ certified reference (spec/SPEC.md section 5)
must not be the only judge of itself. This script recomputes scaled
dot-product attention, as defined in spec/SPEC.md section 2, with a
different method and different code: Python's `decimal` at 120 significant
digits, with every result recomputed at 160 digits and required to agree
to 60 digits. Results are rounded to a number format (SPEC.md section 3)
with integer arithmetic only, from the exact rational value of the decimal
result, and refused where a 120-digit approximation cannot decide the
rounding.

Method, in short: dot products and mask differences are exact (Fraction);
exp is shifted by the largest logit and taken on exact differences;
every decimal value carries whether it is exact (the context's Inexact
flag), so exact results (tied weights 1/n, means of tied values) may sit
on a rounding midpoint while approximate ones may not come within 1e-100
of one; an output whose equally weighted key groups all share one mean of
V is that mean, exactly.

It also reads and writes attnspec cases (SPEC.md section 4), including a
small NPY reader and writer, so that it depends on nothing outside the
standard library (no numpy: it may be missing on CI machines).

Subcommands (see --help of each):
  expected CASE_DIR...                    write expected.json into each case
  compare CASE_DIR --format F --ref FILE  check the C++ reference bit for bit
  random OUT_DIR --count N --seed S       write random cases for cross-checks

Exit status: 0 success, 1 mismatch (compare), 2 bad input,
3 this implementation cannot decide (precision insufficient or an ambiguous
rounding).
"""

import argparse
import ast
import decimal
import json
import math
import os
import random
import struct
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

WORKING_DIGITS = 120
CHECK_DIGITS = 160
OUTPUT_DIGITS = 60
# A decimal result this close (relative) to a rounding midpoint cannot be
# trusted to round correctly, unless the decimal arithmetic was exact.
MIDPOINT_GUARD = Fraction(1, 10**100)
EXPECTED_FORMAT = "attnspec-expected/1"
CASE_FORMAT = "attnspec-case/1"
GENERATOR = "scripts/independent_reference.py (python decimal, 120 digits, checked at 160)"


class BadInput(ValueError):
    """A case or array that does not follow SPEC.md section 4 (exit 2)."""


class PrecisionInsufficient(ArithmeticError):
    """The 120- and 160-digit runs disagree in the first 60 digits (exit 3)."""


class AmbiguousRounding(ArithmeticError):
    """An approximate value lies too close to a rounding midpoint (exit 3)."""


# ---------------------------------------------------------------------------
# NPY files: read versions 1.0, 2.0 and 3.0, write 1.0.
# Arrays are kept as (shape tuple, flat list in C order).

NPY_MAGIC = b"\x93NUMPY"
# descr -> (struct code, item size); '|b1' is handled separately.
NPY_FLOAT_CODES = {"<f8": ("d", 8), "<f4": ("f", 4)}
NPY_DESCRS = ("<f8", "<f4", "|b1")


def shape_size(shape):
    """Number of elements of an array of this shape (1 for a scalar)."""
    size = 1
    for n in shape:
        size *= n
    return size


def _parse_npy_header(text, path):
    """Parse the header dictionary and check it describes an array we read."""
    try:
        header = ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise BadInput(f"{path}: unreadable NPY header: {exc}") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise BadInput(f"{path}: NPY header must have exactly descr, fortran_order, shape")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    if descr not in NPY_DESCRS:
        raise BadInput(f"{path}: dtype {descr!r} not supported (need one of {', '.join(NPY_DESCRS)})")
    if fortran is not False:
        raise BadInput(f"{path}: Fortran order not supported (need C order)")
    if not isinstance(shape, tuple) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise BadInput(f"{path}: bad shape {shape!r}")
    return descr, shape


def read_npy(path):
    """Read an NPY file; return (descr, shape, flat values in C order)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None
    if data[:6] != NPY_MAGIC or len(data) < 10:
        raise BadInput(f"{path}: not an NPY file")
    major = data[6]
    if major == 1:
        (header_len,) = struct.unpack_from("<H", data, 8)
        start, encoding = 10, "latin1"
    elif major in (2, 3):
        if len(data) < 12:
            raise BadInput(f"{path}: truncated NPY header")
        (header_len,) = struct.unpack_from("<I", data, 8)
        # Version 3 only changes the header encoding to UTF-8.
        start, encoding = 12, ("latin1" if major == 2 else "utf8")
    else:
        raise BadInput(f"{path}: NPY version {major}.{data[7]} not supported")
    body_start = start + header_len
    if len(data) < body_start:
        raise BadInput(f"{path}: truncated NPY header")
    descr, shape = _parse_npy_header(data[start:body_start].decode(encoding), path)
    body = data[body_start:]
    count = shape_size(shape)
    if descr == "|b1":
        if len(body) != count:
            raise BadInput(f"{path}: expected {count} bytes of data, found {len(body)}")
        if any(byte > 1 for byte in body):
            raise BadInput(f"{path}: bool array holds a byte other than 0 or 1")
        return descr, shape, [byte == 1 for byte in body]
    code, size = NPY_FLOAT_CODES[descr]
    if len(body) != count * size:
        raise BadInput(f"{path}: expected {count * size} bytes of data, found {len(body)}")
    return descr, shape, list(struct.unpack(f"<{count}{code}", body))


def write_npy(path, descr, shape, values):
    """Write an NPY version 1.0 file (C order, little-endian)."""
    shape = tuple(shape)
    if descr not in NPY_DESCRS:
        raise ValueError(f"cannot write dtype {descr!r}")
    if len(values) != shape_size(shape):
        raise ValueError(f"{path}: {len(values)} values for shape {shape}")
    shape_text = repr(shape)  # Python tuple syntax, as numpy writes it: (3,) or (2, 3)
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}"
    # numpy pads the header with spaces so the data starts on a 64-byte boundary.
    pad = -(10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    if descr == "|b1":
        body = bytes(1 if x else 0 for x in values)
    else:
        code, _ = NPY_FLOAT_CODES[descr]
        body = struct.pack(f"<{len(values)}{code}", *values)
    with open(path, "wb") as f:
        f.write(NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + body)


# ---------------------------------------------------------------------------
# Number formats and correct rounding (SPEC.md section 3), integer arithmetic.


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


# ---------------------------------------------------------------------------
# Cases (SPEC.md section 4).

CASE_FIELDS = (
    "format", "dtype", "batch", "q_heads", "kv_heads", "q_len", "kv_len",
    "d_k", "d_v", "scale", "softcap", "causal", "mask", "provenance",
)
SIZE_FIELDS = ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "d_k", "d_v")


@dataclass
class Case:
    """A case: case.json fields plus the arrays as flat lists in C order."""

    path: str
    dtype: str
    batch: int
    q_heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    d_k: int
    d_v: int
    scale: object  # float or None
    softcap: object  # float or None
    causal: object  # None, "top_left" or "bottom_right"
    mask_kind: object  # None, "bool" or "additive"
    q: list
    k: list
    v: list
    mask: object  # flat list or None
    mask_shape: object  # (B or 1, Hq or 1, L, S) or None

    def q_row(self, b, h, i):
        start = ((b * self.q_heads + h) * self.q_len + i) * self.d_k
        return self.q[start:start + self.d_k]

    def k_row(self, b, g, j):
        start = ((b * self.kv_heads + g) * self.kv_len + j) * self.d_k
        return self.k[start:start + self.d_k]

    def v_row(self, b, g, j):
        start = ((b * self.kv_heads + g) * self.kv_len + j) * self.d_v
        return self.v[start:start + self.d_v]

    def mask_at(self, b, h, i, j):
        """The mask entry for (b, h, i, j), broadcasting size-1 dimensions."""
        mb = b if self.mask_shape[0] > 1 else 0
        mh = h if self.mask_shape[1] > 1 else 0
        return self.mask[((mb * self.mask_shape[1] + mh) * self.q_len + i) * self.kv_len + j]


def _reject_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise BadInput(f"duplicate field in case.json: {keys}")
    return dict(pairs)


def _check_positive_finite_or_null(meta, name, where):
    value = meta[name]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{where}: {name} must be null or a number")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise BadInput(f"{where}: {name} must be finite and > 0")
    return value


def _check_meta(meta, where):
    """Validate case.json fields; return them normalised."""
    if not isinstance(meta, dict):
        raise BadInput(f"{where}: case.json must hold an object")
    unknown = set(meta) - set(CASE_FIELDS)
    missing = set(CASE_FIELDS) - set(meta)
    if unknown or missing:
        raise BadInput(f"{where}: unknown fields {sorted(unknown)}, missing fields {sorted(missing)}")
    if meta["format"] != CASE_FORMAT:
        raise BadInput(f"{where}: format must be {CASE_FORMAT!r}")
    if meta["dtype"] not in FORMATS:
        raise BadInput(f"{where}: unknown dtype {meta['dtype']!r}")
    for name in SIZE_FIELDS:
        n = meta[name]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise BadInput(f"{where}: {name} must be an integer >= 1")
    if meta["q_heads"] % meta["kv_heads"] != 0:
        raise BadInput(f"{where}: q_heads must be a multiple of kv_heads")
    if meta["causal"] not in (None, "top_left", "bottom_right"):
        raise BadInput(f"{where}: causal must be null, 'top_left' or 'bottom_right'")
    if meta["mask"] not in (None, "bool", "additive"):
        raise BadInput(f"{where}: mask must be null, 'bool' or 'additive'")
    if not isinstance(meta["provenance"], dict):
        raise BadInput(f"{where}: provenance must be an object")
    meta = dict(meta)
    meta["scale"] = _check_positive_finite_or_null(meta, "scale", where)
    meta["softcap"] = _check_positive_finite_or_null(meta, "softcap", where)
    return meta


def _read_array(path, descr, shape):
    got_descr, got_shape, values = read_npy(path)
    if got_descr != descr:
        raise BadInput(f"{path}: dtype {got_descr}, expected {descr}")
    if tuple(got_shape) != tuple(shape):
        raise BadInput(f"{path}: shape {got_shape}, expected {tuple(shape)}")
    return values


def read_case(case_dir):
    """Read and validate a case directory (SPEC.md section 4)."""
    where = os.path.join(case_dir, "case.json")
    try:
        with open(where, encoding="utf-8") as f:
            meta = json.load(f, object_pairs_hook=_reject_duplicate_keys)
    except OSError as exc:
        raise BadInput(f"{where}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where}: invalid JSON: {exc}") from None
    meta = _check_meta(meta, where)
    B, Hq, Hkv = meta["batch"], meta["q_heads"], meta["kv_heads"]
    L, S, dk, dv = meta["q_len"], meta["kv_len"], meta["d_k"], meta["d_v"]
    fmt = FORMATS[meta["dtype"]]
    arrays = {}
    for name, shape in (("q", (B, Hq, L, dk)), ("k", (B, Hkv, S, dk)), ("v", (B, Hkv, S, dv))):
        path = os.path.join(case_dir, f"{name}.npy")
        values = _read_array(path, "<f8", shape)
        for x in values:
            if not is_representable(x, fmt):
                raise BadInput(f"{path}: value {x!r} is not representable in {fmt.name}")
        arrays[name] = values
    mask, mask_shape = None, None
    mask_path = os.path.join(case_dir, "mask.npy")
    if meta["mask"] is None:
        if os.path.exists(mask_path):
            raise BadInput(f"{mask_path}: present but case.json has mask null")
    else:
        descr, mask_shape, mask = read_npy(mask_path)
        want = "|b1" if meta["mask"] == "bool" else "<f8"
        if descr != want:
            raise BadInput(f"{mask_path}: dtype {descr}, expected {want}")
        if (len(mask_shape) != 4 or mask_shape[0] not in (1, B) or mask_shape[1] not in (1, Hq)
                or mask_shape[2:] != (L, S)):
            raise BadInput(f"{mask_path}: shape {mask_shape}, expected [{B} or 1, {Hq} or 1, {L}, {S}]")
        if meta["mask"] == "additive":
            for x in mask:
                if math.isnan(x) or x == math.inf:
                    raise BadInput(f"{mask_path}: additive mask holds {x!r} (only finite and -inf allowed)")
    return Case(
        path=case_dir, dtype=meta["dtype"], batch=B, q_heads=Hq, kv_heads=Hkv, q_len=L,
        kv_len=S, d_k=dk, d_v=dv, scale=meta["scale"], softcap=meta["softcap"],
        causal=meta["causal"], mask_kind=meta["mask"], q=arrays["q"], k=arrays["k"],
        v=arrays["v"], mask=mask, mask_shape=mask_shape,
    )


def write_case(case_dir, meta, q, k, v, mask=None):
    """Write case.json and the arrays of a case.

    meta holds every case.json field except "format"; q, k, v and mask are
    (shape, flat values) pairs. The case is read back, so that a generator
    cannot write a case this script would reject.
    """
    os.makedirs(case_dir, exist_ok=True)
    doc = {"format": CASE_FORMAT}
    doc.update({name: meta[name] for name in CASE_FIELDS if name != "format"})
    with open(os.path.join(case_dir, "case.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    for name, (shape, values) in (("q", q), ("k", k), ("v", v)):
        write_npy(os.path.join(case_dir, f"{name}.npy"), "<f8", shape, values)
    mask_path = os.path.join(case_dir, "mask.npy")
    if mask is not None:
        descr = "|b1" if meta["mask"] == "bool" else "<f8"
        write_npy(mask_path, descr, mask[0], mask[1])
    elif os.path.exists(mask_path):
        os.remove(mask_path)
    return read_case(case_dir)


# ---------------------------------------------------------------------------
# Decimal arithmetic that remembers whether it is exact.
#
# Rounding an approximation to a format is unsafe near a midpoint; rounding
# an exact value never is. Results such as a mean with weights exactly 1/2
# are exact in decimal and may sit exactly on a midpoint, so each value
# carries whether every operation leading to it was exact (the decimal
# context's Inexact flag tells).


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


# ---------------------------------------------------------------------------
# The attention function (SPEC.md section 2).


def visible_keys(case, b, h, i):
    """Visible keys of row (b, h, i) with their additive mask value (Fraction)."""
    L, S = case.q_len, case.kv_len
    keys = []
    for j in range(S):
        if case.causal == "top_left" and j > i:
            continue
        if case.causal == "bottom_right" and j > i + S - L:
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
        keys.append((j, m))
    return keys


def exact_dot(x, y):
    """sum x_t * y_t of finite floats, exactly."""
    return sum((Fraction(a) * Fraction(b) for a, b in zip(x, y)), Fraction(0))


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
            self.scale = d_div(EXACT_ONE, _tracked(lambda x: x.sqrt(), Approx(Decimal(case.d_k), True)))
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


def attention_row(case, model, b, h, i):
    """Weights (S), output (d_v) and lse of row (b, h, i) as Approx values."""
    S, dv = case.kv_len, case.d_v
    keys = visible_keys(case, b, h, i)
    if not keys:
        return [EXACT_ZERO] * S, [EXACT_ZERO] * dv, NEG_INF
    g = h // (case.q_heads // case.kv_heads)
    q = case.q_row(b, h, i)
    # Only visible keys and values are read: blocked ones may hold NaN.
    k_rows = {j: case.k_row(b, g, j) for j, _ in keys}
    if not all(math.isfinite(x) for x in q) or not all(
        math.isfinite(x) for row in k_rows.values() for x in row
    ):
        return [NAN] * S, [NAN] * dv, NAN
    d = {j: exact_dot(q, k_rows[j]) for j, _ in keys}
    m = dict(keys)
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
    v_rows = {j: case.v_row(b, g, j) for j, _ in keys}
    # Keys with equal (d, m) have equal logits, hence equal weights.
    groups = {}
    for j, _ in keys:
        groups.setdefault((d[j], m[j]), []).append(j)
    out = []
    for t in range(dv):
        if not all(math.isfinite(v_rows[j][t]) for j, _ in keys):
            out.append(NAN)
            continue
        mean = common_group_mean(groups.values(), {j: v_rows[j][t] for j, _ in keys})
        if mean is not None:
            out.append(d_from_fraction(mean))
            continue
        v = {j: Approx(Decimal(v_rows[j][t]), True) for j, _ in keys}
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
            if significant_string(a) != significant_string(b):
                raise PrecisionInsufficient(
                    f"{case.path}: precision insufficient: {name}[{index}] is "
                    f"{significant_string(a)} at {WORKING_DIGITS} digits but "
                    f"{significant_string(b)} at {CHECK_DIGITS} digits"
                )
            error = Decimal(0)
            if a.value.is_finite() and not a.exact:
                with decimal.localcontext(decimal_context(2 * CHECK_DIGITS)):
                    error = abs(a.value - b.value)
            target.append(Approx(a.value, a.exact, error))
    return checked


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


# ---------------------------------------------------------------------------
# expected.json


def expected_document(results):
    return {
        "format": EXPECTED_FORMAT,
        "digits": OUTPUT_DIGITS,
        "generator": GENERATOR,
        "out": [significant_string(a) for a in results.out],
        "lse": [significant_string(a) for a in results.lse],
        "weights": [significant_string(a) for a in results.weights],
    }


def check_expected_strings(results, formats=tuple(FORMATS.values())):
    """Make sure the 60-digit strings can stand in for the values.

    Readers of expected.json (the C++ tests) round each string to a format.
    That gives the correct rounding unless a value lies within about 1e-60
    of a midpoint without being on it, or sits on one but needs more than
    60 digits. Raises AmbiguousRounding (or PrecisionInsufficient) if so,
    or if a value cannot be rounded with certainty at all.
    """
    for name, values in results.items():
        for index, a in enumerate(values):
            written = Approx(Decimal(significant_string(a).replace("inf", "Infinity")), True)
            for fmt in formats:
                if not same_bits(round_result(a, fmt), round_result(written, fmt)):
                    raise AmbiguousRounding(
                        f"{name}[{index}]: its {OUTPUT_DIGITS}-digit string rounds differently "
                        f"in {fmt.name} from the value itself"
                    )


def save_expected(case_dir, results):
    """Write expected.json for results that passed check_expected_strings."""
    with open(os.path.join(case_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected_document(results), f, indent=1)
        f.write("\n")


def write_expected(case_dir):
    """Compute a case and write its expected.json; return the checked results."""
    case = read_case(case_dir)
    results = compute_checked(case)
    check_expected_strings(results)
    save_expected(case_dir, results)
    return results


def cmd_expected(args):
    for case_dir in args.case_dirs:
        start = time.perf_counter()
        results = write_expected(case_dir)
        print(
            f"expected: {case_dir}: wrote expected.json ({len(results.out)} out, "
            f"{len(results.lse)} lse, {len(results.weights)} weights) in "
            f"{time.perf_counter() - start:.2f} s"
        )
    return 0


# ---------------------------------------------------------------------------
# compare: the C++ reference's rounded results against ours, bit for bit.


def same_bits(expected, got):
    """Bitwise equality of two doubles, except that any NaN equals any NaN."""
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return struct.pack("<d", expected) == struct.pack("<d", got)


def unflatten_index(flat, shape):
    index = []
    for n in reversed(shape):
        index.append(flat % n)
        flat //= n
    return ",".join(str(x) for x in reversed(index))


def cmd_compare(args):
    fmt = FORMATS[args.format]
    case = read_case(args.case_dir)
    out_shape = (case.batch, case.q_heads, case.q_len, case.d_v)
    lse_shape = out_shape[:3]
    got = {"out": _read_array(args.ref, "<f8", out_shape)}
    if args.ref_lse is not None:
        got["lse"] = _read_array(args.ref_lse, "<f8", lse_shape)
    results = compute_checked(case, kinds=("out", "lse"))
    shapes = {"out": out_shape, "lse": lse_shape}
    counts, mismatches = {}, []
    for name, values in got.items():
        expected = [round_result(a, fmt) for a in getattr(results, name)]
        agree = 0
        for index, (e, g) in enumerate(zip(expected, values)):
            if same_bits(e, g):
                agree += 1
            else:
                mismatches.append((name, index, e, g))
        counts[name] = f"{agree}/{len(values)} {name}"
    summary = ", ".join(counts.values())
    if not mismatches:
        print(f"compare: {args.case_dir} format={fmt.name}: {summary} agree")
        return 0
    print(f"compare: {args.case_dir} format={fmt.name}: MISMATCH: {summary} agree")
    for name, index, e, g in mismatches[:5]:
        print(f"  {name}[{unflatten_index(index, shapes[name])}]: expected {e.hex()}, got {g.hex()}")
    if len(mismatches) > 5:
        print(f"  ... and {len(mismatches) - 5} more")
    return 1


# ---------------------------------------------------------------------------
# random: small random cases that exercise every feature.
#
# Features are drawn in blocks of 12 consecutive cases: within a block every
# option of every feature appears (12 is a multiple of each option count),
# in a shuffled order, so any count >= 12 covers everything. Case i depends
# only on (seed, i).

RANDOM_BLOCK = 12
RANDOM_FEATURES = {
    "dtype": list(FORMATS),
    "causal": [None, "top_left", "bottom_right"],
    "mask": [None, "bool", "additive"],
    "mask_shape": ["broadcast", "full", "batch_only", "heads_only"],
    "group": [1, 2, 3, 4],  # Hq / Hkv
    "lengths": ["L<S", "L>S", "any"],
    "widths": ["d_v=d_k", "d_v!=d_k"],
    "scale": ["default", "explicit"],
    "softcap": [None, "set"],
    "ties": [False, True],
    "fully_masked_row": [False, True],
}
EXPLICIT_SCALES = [0.5, 0.25, 0.375, 1.0, 0.125, 1.5]
SOFTCAPS = [1.0, 2.0, 4.0, 0.75, 8.0]
ADDITIVE_VALUES = [0.0, 0.0, -1.5, 0.25, -3.0, 1.0, -0.5, -math.inf, -math.inf]


def feature_plan(seed, index):
    """The features of random case number index."""
    block, position = divmod(index, RANDOM_BLOCK)
    plan = {}
    for name, options in RANDOM_FEATURES.items():
        column = options * (RANDOM_BLOCK // len(options))
        random.Random(f"attnspec-random/{seed}/{block}/{name}").shuffle(column)
        plan[name] = column[position]
    return plan


def small_value(rng, fmt):
    """k * 2^e with small k and e: exactly representable in every format."""
    value = rng.randint(-7, 7) * 2.0 ** rng.randint(-2, 1)
    assert is_representable(value, fmt)
    return value


def midpoint_values(rng, fmt, n):
    """n values of fmt whose mean is exactly a rounding midpoint of fmt.

    With a = 2^e + k*ulp, the target mean is a + ulp/2. For even n, half the
    values are a and half a + ulp. For odd n the sum needs an odd number of
    half-ulps, which only a value from the binade below supplies:
    2^e - ulp/2; the remaining n - 1 values a + c_i*ulp make up the rest.
    k is 0 or 1 so ties round both down and up to even.
    """
    e = rng.randint(-1, 1)
    ulp = pow2(e - fmt.p + 1)
    k = rng.randint(0, 1)
    a = pow2(e) + k * ulp
    if n % 2 == 0:
        values = [a] * (n // 2) + [a + ulp] * (n // 2)
    else:
        ulps = k + (n + 1) // 2  # the others sum to (n-1)*a + ulps*ulp
        share = [ulps // (n - 1) + (1 if t < ulps % (n - 1) else 0) for t in range(n - 1)]
        values = [pow2(e) - ulp / 2] + [a + c * ulp for c in share]
    mean = sum(values) / n
    assert mean == a + ulp / 2 and Fraction(round_fraction(mean, fmt)) != mean
    sign = rng.choice([1, -1])
    values = [float(sign * x) for x in values]
    assert all(is_representable(x, fmt) for x in values)
    rng.shuffle(values)
    return values


def _random_sizes(rng, plan):
    group = plan["group"]
    kv_heads = rng.randint(1, max(1, min(2, 5 // group)))
    low_s = 2 if plan["ties"] else 1  # a tie needs two keys
    if plan["lengths"] == "L<S":
        L = rng.randint(1, 4)
        S = rng.randint(max(L + 1, low_s), 5)
    elif plan["lengths"] == "L>S":
        S = rng.randint(low_s, 4)
        L = rng.randint(S + 1, 5)
    else:
        L, S = rng.randint(1, 5), rng.randint(low_s, 5)
    d_k = rng.randint(1, 5)
    d_v = d_k if plan["widths"] == "d_v=d_k" else rng.choice([n for n in range(1, 6) if n != d_k])
    return {"batch": rng.randint(1, 2), "q_heads": group * kv_heads, "kv_heads": kv_heads,
            "q_len": L, "kv_len": S, "d_k": d_k, "d_v": d_v}


def _random_mask(rng, plan, sizes):
    B, Hq, L, S = sizes["batch"], sizes["q_heads"], sizes["q_len"], sizes["kv_len"]
    mb, mh = {"broadcast": (1, 1), "full": (B, Hq), "batch_only": (B, 1), "heads_only": (1, Hq)}[plan["mask_shape"]]
    shape = (mb, mh, L, S)
    if plan["mask"] == "bool":
        values = [rng.random() < 0.75 for _ in range(shape_size(shape))]
        blocked = False
    else:
        values = [rng.choice(ADDITIVE_VALUES) for _ in range(shape_size(shape))]
        blocked = -math.inf
    if plan["fully_masked_row"]:
        row = rng.randrange(mb * mh * L)
        values[row * S:(row + 1) * S] = [blocked] * S
    return shape, values


def random_case(rng, plan, seed, index):
    """Draw one case following plan; returns (meta, q, k, v, mask)."""
    fmt = FORMATS[plan["dtype"]]
    sizes = _random_sizes(rng, plan)
    B, Hq, Hkv = sizes["batch"], sizes["q_heads"], sizes["kv_heads"]
    L, S, dk, dv = sizes["q_len"], sizes["kv_len"], sizes["d_k"], sizes["d_v"]
    q = [small_value(rng, fmt) for _ in range(B * Hq * L * dk)]
    k, v = [], []
    for _ in range(B * Hkv):
        if plan["ties"]:
            # Identical keys: every visible key of a row has the same logit.
            key = [small_value(rng, fmt) for _ in range(dk)]
            k += key * S
            columns = [midpoint_values(rng, fmt, S) for _ in range(dv)]
            v += [columns[t][j] for j in range(S) for t in range(dv)]
        else:
            k += [small_value(rng, fmt) for _ in range(S * dk)]
            v += [small_value(rng, fmt) for _ in range(S * dv)]
    mask = None if plan["mask"] is None else _random_mask(rng, plan, sizes)
    meta = dict(sizes)
    meta.update({
        "dtype": fmt.name,
        "scale": None if plan["scale"] == "default" else rng.choice(EXPLICIT_SCALES),
        "softcap": None if plan["softcap"] is None else rng.choice(SOFTCAPS),
        "causal": plan["causal"],
        "mask": plan["mask"],
    })
    poisoned = _poison_unread_keys(meta, k, v, mask)
    covers = [f"{name}={value}" for name, value in plan.items()] + [f"nan_in_blocked_keys={poisoned}"]
    meta["provenance"] = {"generator": "scripts/independent_reference.py random", "seed": seed,
                          "index": index, "covers": covers}
    return meta, ((B, Hq, L, dk), q), ((B, Hkv, S, dk), k), ((B, Hkv, S, dv), v), mask


def _poison_unread_keys(meta, k, v, mask):
    """Put NaN into keys and values that no row can see; return how many.

    SPEC.md 2.3: blocked keys and values are never read, so NaN there must
    not reach any result (the 0 * NaN leak of pytorch#101967).
    """
    case = Case(path=None, dtype=meta["dtype"], batch=meta["batch"], q_heads=meta["q_heads"],
                kv_heads=meta["kv_heads"], q_len=meta["q_len"], kv_len=meta["kv_len"],
                d_k=meta["d_k"], d_v=meta["d_v"], scale=None, softcap=None, causal=meta["causal"],
                mask_kind=meta["mask"], q=[], k=k, v=v, mask=None if mask is None else mask[1],
                mask_shape=None if mask is None else mask[0])
    group = case.q_heads // case.kv_heads
    seen = {(b, h // group, j) for b in range(case.batch) for h in range(case.q_heads)
            for i in range(case.q_len) for j, _ in visible_keys(case, b, h, i)}
    count = 0
    for b in range(case.batch):
        for g in range(case.kv_heads):
            for j in range(case.kv_len):
                if (b, g, j) not in seen:
                    start_k = ((b * case.kv_heads + g) * case.kv_len + j) * case.d_k
                    start_v = ((b * case.kv_heads + g) * case.kv_len + j) * case.d_v
                    k[start_k:start_k + case.d_k] = [math.nan] * case.d_k
                    v[start_v:start_v + case.d_v] = [math.nan] * case.d_v
                    count += 1
    return count


def decidable_everywhere(case):
    """Results of a case whose every value (and string) rounds with certainty to every format."""
    results = compute_checked(case)
    check_expected_strings(results)
    return results


def cmd_random(args):
    start = time.perf_counter()
    tally = {name: {} for name in RANDOM_FEATURES}
    observed, redraws = {}, 0
    for index in range(args.count):
        plan = feature_plan(args.seed, index)
        rng = random.Random(f"attnspec-random/{args.seed}/case/{index}")
        case_dir = os.path.join(args.out_dir, f"case_{index:03d}")
        for attempt in range(50):
            case = write_case(case_dir, *random_case(rng, plan, args.seed, index))
            try:
                results = decidable_everywhere(case)
                break
            except (PrecisionInsufficient, AmbiguousRounding):
                continue  # redraw: this case would make compare refuse
        else:
            raise RuntimeError(f"{case_dir}: no decidable draw in 50 attempts")
        save_expected(case_dir, results)
        for name, value in plan.items():
            tally[name][str(value)] = tally[name].get(str(value), 0) + 1
        for name, n in observed_features(case, results).items():
            observed[name] = observed.get(name, 0) + n
        redraws += attempt
    print(f"random: wrote {args.count} cases to {args.out_dir} in {time.perf_counter() - start:.2f} s "
          f"({redraws} undecidable draws replaced)")
    print("planned features (cases):")
    for name, counts in tally.items():
        print(f"  {name}: " + ", ".join(f"{value} x{n}" for value, n in sorted(counts.items())))
    print("observed: " + ", ".join(f"{name} {n}" for name, n in observed.items()))
    return 0


def observed_features(case, results):
    """What a generated case actually exercises, counted in cases, rows or values."""
    fmt = FORMATS[case.dtype]
    S = case.kv_len
    row_weights = [results.weights[r * S:(r + 1) * S] for r in range(len(results.lse))]
    tied_rows = 0
    for weights in row_weights:
        visible = [w.value for w in weights if not w.is_exact_zero()]
        if len(visible) >= 2 and all(x.is_finite() for x in visible) and len(set(visible)) == 1:
            tied_rows += 1
    midpoints = 0
    for a in results.out:
        if a.exact and a.value.is_finite() and a.value != 0:
            x = Fraction(a.value)
            if Fraction(round_fraction(x, fmt)) != x and near_midpoint(x, fmt, Fraction(0)):
                midpoints += 1
    return {
        "GQA cases": int(case.q_heads > case.kv_heads),
        "L<S cases": int(case.q_len < case.kv_len),
        "L>S cases": int(case.q_len > case.kv_len),
        "d_v!=d_k cases": int(case.d_v != case.d_k),
        "rows": len(results.lse),
        "fully masked rows": sum(1 for a in results.lse if a.value.is_infinite()),
        "rows with tied weights": tied_rows,
        "outputs exactly on a midpoint": midpoints,
        "NaN-poisoned unread keys": sum(1 for x in case.k[::case.d_k] if math.isnan(x)),
    }


def build_parser():
    parser = argparse.ArgumentParser(
        prog="independent_reference.py",
        description="Independent high-precision reference for attnspec cases "
                    "(Python decimal at 120 digits, checked at 160).",
        epilog="Exit status: 0 success, 1 mismatch (compare), 2 bad input, "
               "3 precision insufficient or ambiguous rounding.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "expected", help="write expected.json into case directories",
        description="Compute out, lse and weights of each case and write CASE_DIR/expected.json "
                    f"({EXPECTED_FORMAT}): C-order lists of {OUTPUT_DIGITS}-significant-digit strings, "
                    "'0' for exact zero, '-inf' for the lse of a fully masked row, 'nan'.",
    )
    p.add_argument("case_dirs", nargs="+", metavar="CASE_DIR", help="an attnspec-case/1 directory")
    p.set_defaults(func=cmd_expected)

    p = sub.add_parser(
        "compare", help="compare the C++ reference's output with this one, bit for bit",
        description="Round this script's results to FORMAT and compare them bit for bit with the "
                    "C++ reference's ref.npy (<f8, [B,Hq,L,d_v]) and optionally ref_lse.npy "
                    "(<f8, [B,Hq,L]). NaN equals NaN; +0 and -0 differ. Prints one summary "
                    "line; on mismatch also the first 5 differences, and exits 1. Exits 3 if "
                    "a value cannot be rounded with certainty from 120 digits.",
    )
    p.add_argument("case_dir", metavar="CASE_DIR", help="the attnspec-case/1 directory the reference ran on")
    p.add_argument("--format", required=True, choices=list(FORMATS), help="target number format")
    p.add_argument("--ref", required=True, metavar="FILE", help="the reference output, <f8 [B,Hq,L,d_v]")
    p.add_argument("--ref-lse", metavar="FILE", help="the reference lse, <f8 [B,Hq,L]")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "random", help="write random small cases covering every feature",
        description="Write N case directories OUT_DIR/case_000 ... with expected.json, covering "
                    "every dtype, GQA, L != S, d_v != d_k, scale, softcap, both causal kinds, "
                    "bool and additive masks (broadcast and full), fully masked rows, NaN in "
                    "keys no row can see, and tied keys whose value means are rounding "
                    "midpoints. Every case is checked to be decidable in every format. Case i "
                    "depends only on (seed, i); any N >= 12 covers every feature.",
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="folder for case_000, case_001, ...")
    p.add_argument("--count", type=int, required=True, metavar="N", help="number of cases")
    p.add_argument("--seed", type=int, required=True, metavar="S", help="random seed")
    p.set_defaults(func=cmd_random)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (PrecisionInsufficient, AmbiguousRounding) as exc:
        print(f"cannot decide: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
