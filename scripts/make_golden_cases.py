#!/usr/bin/env python3
"""Write the golden attnspec cases under cases/golden/ (standard library only).

Why this file exists: the golden cases are small, hand-made problems, each
aimed at one rule of spec/SPEC.md section 2 (the seed examples, GQA head
mapping, both causal alignments, fully masked rows, NaN in blocked keys,
softcap order, additive masks, explicit scale, rounding ties, narrow input
formats). Every case gets an expected.json computed by the independent
reference (the package scripts/independent/), and this script asserts the
properties the case is meant to show (seed values to 4 or 3 decimals,
exact 1/n weights, ties rounding to even, ...), so a wrong case cannot be
written silently.

Usage: python3 scripts/make_golden_cases.py [--out DIR]   (default cases/golden)
"""

import argparse
import dataclasses
import decimal
import math
import os
import sys
import tempfile
import time
from decimal import Decimal
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import independent as ir  # noqa: E402  (the package scripts/independent/)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR = "scripts/make_golden_cases.py"
NAN = math.nan
INF = math.inf


def tensor(nested):
    """A nested list as (shape, flat values in C order)."""
    shape = []
    level = nested
    while isinstance(level, list):
        shape.append(len(level))
        level = level[0]

    def flatten(x):
        return [y for item in x for y in flatten(item)] if isinstance(x, list) else [x]

    flat = flatten(nested)
    assert len(flat) == ir.shape_size(shape), "ragged nested list"
    return tuple(shape), flat


def make_meta(dtype, q, k, v, checks, scale=None, softcap=None, causal=None, mask=None, source=None, window=None,
              alibi=None, sinks=None, descales=None):
    """case.json fields; sizes are read off the arrays' shapes."""
    (B, Hq, L, dk), (_, Hkv, S, _), (_, _, _, dv) = q[0], k[0], v[0]
    provenance = {"generator": GENERATOR, "checks": checks}
    if source:
        provenance["source"] = source
    return {
        "dtype": dtype, "batch": B, "q_heads": Hq, "kv_heads": Hkv, "q_len": L, "kv_len": S,
        "d_k": dk, "d_v": dv, "scale": scale, "softcap": softcap, "causal": causal,
        "mask": mask, "window": window, "alibi": alibi, "sinks": sinks, "descales": descales,
        "provenance": provenance,
    }


def values(results, name):
    """Results of one kind as floats (NaN, infinities included)."""
    return [float(a.value) for a in getattr(results, name)]


def assert_close(got, want, places, what):
    for g, w in zip(got, want, strict=True):
        assert round(g, places) == round(w, places), f"{what}: {got} != {want} to {places} decimals"


def rounded(results, name, fmt):
    return [ir.round_result(a, ir.FORMATS[fmt]) for a in getattr(results, name)]


# ---------------------------------------------------------------------------
# The cases. Each function returns (meta, q, k, v, mask, check); check(results,
# case) asserts what the case is meant to show.


def seed_matrix():
    q = tensor([[[[1.0, 0, 1, 0], [0, 1, 0, 1]]]])
    k = tensor([[[[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]]])
    v = tensor([[[[1.0, 2, 3], [4, 5, 6], [7, 8, 9]]]])

    def check(results, case):
        # The worked example of the seed, printed to 4 decimals there.
        assert_close(values(results, "weights"), [0.5065, 0.1863, 0.3072, 0.1863, 0.5065, 0.3072], 4, "weights")
        assert_close(values(results, "out"), [3.4021, 4.4021, 5.4021, 4.3626, 5.3626, 6.3626], 4, "out")

    meta = make_meta("float64", q, k, v, source="shared/seeds/001",
                     checks="default scale 1/sqrt(d_k) with d_k = 4 (the head width, not a model width); "
                            "weights [[0.5065,0.1863,0.3072],[0.1863,0.5065,0.3072]] and output "
                            "[[3.4021,4.4021,5.4021],[4.3626,5.3626,6.3626]] of the seed to 4 decimals")
    return meta, q, k, v, None, check


def seed_two_keys():
    q = tensor([[[[1.0, 2.0]]]])
    k = tensor([[[[1.0, 0.0], [0.0, 1.0]]]])
    v = tensor([[[[1.0, 0.0], [0.0, 1.0]]]])

    def check(results, case):
        # Logits 1/sqrt(2) and 2/sqrt(2); the seed gives weights (0.330, 0.670).
        assert_close(values(results, "weights"), [0.330, 0.670], 3, "weights")
        assert values(results, "out") == values(results, "weights"), "V = I: output equals weights"

    meta = make_meta("float64", q, k, v, source="shared/seeds/003",
                     checks="irrational default scale 1/sqrt(2): logits 0.707 and 1.414, weights "
                            "(0.330, 0.670) to 3 decimals; V = identity so the output equals the weights")
    return meta, q, k, v, None, check


def seed_zero_query():
    q = tensor([[[[0.0, 0.0, 0.0]]]])
    k = tensor([[[[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [4.0, -2.0, 0.25]]]])
    v = tensor([[[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]]])

    def check(results, case):
        with decimal.localcontext(ir.decimal_context(100)):
            third = ir.significant_string(ir.Approx(Decimal(1) / Decimal(3), False))
            ln3 = ir.significant_string(ir.Approx(Decimal(3).ln(), False))
        for name in ("weights", "out"):
            assert [ir.significant_string(a) for a in getattr(results, name)] == [third] * 3, name
        assert ir.significant_string(results.lse[0]) == ln3, "lse = log 3"

    meta = make_meta("float64", q, k, v, source="shared/seeds/003",
                     checks="a zero query gives equal logits (0) for distinct keys: weights exactly 1/3, "
                            "output 1/3 each (V = identity), lse = log 3")
    return meta, q, k, v, None, check


def gqa():
    q = tensor([[
        [[1.0, 0.0], [0.0, 1.0]],
        [[2.0, -1.0], [0.5, 0.5]],
        [[-1.0, 1.0], [1.0, 2.0]],
        [[0.0, -2.0], [1.5, -0.5]],
    ]])
    k = tensor([[
        [[1.0, 2.0], [-1.0, 0.5], [0.0, 1.0]],
        [[2.0, -1.0], [0.25, 0.0], [-2.0, -2.0]],
    ]])
    v = tensor([[
        [[1.0, -1.0], [2.0, 0.5], [-3.0, 4.0]],
        [[0.0, 8.0], [-5.0, 1.0], [6.0, -2.0]],
    ]])

    def check(results, case):
        # Query head h must read kv head h // 2 (repeat_interleave), not h % 2
        # (np.tile, the ONNX bug): rebuild both with Hkv = Hq and compare.
        def with_kv_heads(order):
            nk, nv = case.kv_len * case.d_k, case.kv_len * case.d_v
            wide_k = [x for g in order for x in case.k[g * nk:(g + 1) * nk]]
            wide_v = [x for g in order for x in case.v[g * nv:(g + 1) * nv]]
            wide = dataclasses.replace(case, kv_heads=4, k=wide_k, v=wide_v)
            return ir.compute(wide, ir.WORKING_DIGITS)
        right, wrong = with_kv_heads([0, 0, 1, 1]), with_kv_heads([0, 1, 0, 1])
        assert [a.value for a in right.out] == [a.value for a in results.out], "h // (Hq/Hkv)"
        assert [a.value for a in wrong.out] != [a.value for a in results.out], "h % Hkv must differ"

    meta = make_meta("float32", q, k, v,
                     checks="GQA with Hq = 4, Hkv = 2: query head h reads kv head h // 2 "
                            "(heads 0,1 -> 0; 2,3 -> 1); the h % Hkv mapping gives different outputs")
    return meta, q, k, v, None, check


def causal_inputs(L, S):
    q = tensor([[[[0.5 * i - 1.0, 1.0 - 0.25 * i] for i in range(L)]]])
    k = tensor([[[[1.0 + j, -0.5 * j] for j in range(S)]]])
    v = tensor([[[[float(j), 2.0 - j] for j in range(S)]]])
    return q, k, v


def visible_counts(results, S):
    w = values(results, "weights")
    return [sum(1 for x in w[i:i + S] if x != 0) for i in range(0, len(w), S)]


def causal_top_left():
    q, k, v = causal_inputs(3, 5)

    def check(results, case):
        assert visible_counts(results, 5) == [1, 2, 3], "top_left: key j visible iff j <= i"
        assert ir.significant_string(results.weights[0]) == "1." + "0" * 59 + "E+0"

    meta = make_meta("float32", q, k, v, causal="top_left",
                     checks="causal top_left with L = 3 < S = 5: row i sees keys j <= i "
                            "(1, 2, 3 keys); row 0 has weight exactly 1 on key 0")
    return meta, q, k, v, None, check


def causal_bottom_right():
    q, k, v = causal_inputs(3, 5)

    def check(results, case):
        assert visible_counts(results, 5) == [3, 4, 5], "bottom_right: j <= i + S - L"

    meta = make_meta("float32", q, k, v, causal="bottom_right",
                     checks="causal bottom_right with L = 3 < S = 5: row i sees keys j <= i + 2 "
                            "(3, 4, 5 keys); same inputs as causal_top_left")
    return meta, q, k, v, None, check


def causal_bottom_right_long_q():
    q, k, v = causal_inputs(5, 3)

    def check(results, case):
        assert visible_counts(results, 3) == [0, 0, 1, 2, 3], "bottom_right with L > S"
        assert values(results, "lse")[:2] == [-INF, -INF], "fully masked rows: lse -inf"
        assert all(a.is_exact_zero() for a in results.out[:4]), "fully masked rows: output 0"

    meta = make_meta("float32", q, k, v, causal="bottom_right",
                     checks="causal bottom_right with L = 5 > S = 3: rows 0 and 1 see no key "
                            "(output exactly 0, lse -inf, weights 0); row i >= 2 sees j <= i - 2")
    return meta, q, k, v, None, check


def sliding_window():
    # A zero query: every visible key has logit 0, so each row's output is
    # the mean of its visible values. Bottom-right, L = 3, S = 6, window
    # (1, 1): row i sees keys i + 2 to i + 4 within 0..5, i.e. {2, 3, 4},
    # {3, 4, 5}, {4, 5}; keys 0 and 1 are outside every row's window and
    # hold NaN.
    q = tensor([[[[0.0, 0.0] for _ in range(3)]]])
    k = tensor([[[[NAN, NAN] if j < 2 else [1.0 + j, -0.5 * j] for j in range(6)]]])
    v = tensor([[[[NAN] if j < 2 else [float(j)] for j in range(6)]]])

    def check(results, case):
        assert visible_counts(results, 6) == [3, 3, 2], "window (1, 1), bottom_right: i + 2 <= j <= i + 4"
        assert values(results, "out") == [3.0, 4.0, 4.5], "the mean of the window's values"
        assert all(a.exact for a in results.out)

    meta = make_meta("float32", q, k, v, window={"left": 1, "right": 1, "alignment": "bottom_right"},
                     checks="sliding window (1, 1), bottom_right, L = 3, S = 6, zero query: row i sees "
                            "keys i + 2 to i + 4 (both edges inclusive; the last row 2 keys) and outputs "
                            "their mean, exactly 3, 4, 4.5; keys 0 and 1, NaN, are outside every window")
    return meta, q, k, v, None, check


def alibi():
    # A zero query: the logits are the biases alone. Bottom-right, L = 2,
    # S = 3, so the diagonal is key i + 1; V[j] = j. Head 0 (slope 1/2):
    # row 0 has distances 1, 0, 1, weights symmetric about key 1 and output
    # exactly 1; row 1 has distances 2, 1, 0 and output
    # (e^-m + 2) / (1 + e^-m + e^-2m). Head 1 (slope 0): uniform weights,
    # output exactly 1. Top-left alignment would give row 0 distances 0, 1, 2.
    q = tensor([[[[0.0], [0.0]], [[0.0], [0.0]]]])
    k = tensor([[[[1.0], [-2.0], [0.5]]]])
    v = tensor([[[[0.0], [1.0], [2.0]]]])
    slopes = ((2,), [0.5, 0.0])

    def check(results, case):
        out = values(results, "out")
        e = math.exp(-0.5)
        assert out[0] == 1.0 and results.out[0].exact, "row 0: weights symmetric about the diagonal key"
        assert_close(out[1:2], [(e + 2) / (1 + e + e * e)], 12, "row 1: (e^-m + 2) / (1 + e^-m + e^-2m)")
        assert out[2:] == [1.0, 1.0], "slope 0: uniform weights"

    meta = make_meta("float32", q, k, v, alibi={"alignment": "bottom_right"},
                     checks="ALiBi slopes (1/2, 0), bottom_right, L = 2, S = 3, zero query: the logits are "
                            "-m |i + 1 - j|; head 0 row 0 outputs exactly 1 (symmetric weights), row 1 "
                            "(e^-0.5 + 2) / (1 + e^-0.5 + e^-1); head 1 (slope 0) outputs exactly 1")
    return meta, q, k, v, None, check, slopes


def sinks():
    # A zero query: every logit is 0 and the weights depend on the sinks
    # alone. d_k = 4, so the default scale is 1/2: a kernel that scales the
    # sink (head 2's 2 into 1) is off. V[j] = j over S = 3 keys; row 1 of
    # every head is fully masked. Head 0 (sink 0 = the logits): four equal
    # terms, output exactly (0 + 1 + 2) / 4, lse ln 4. Head 1 (-inf: no
    # sink): output exactly 1, lse ln 3. Head 2 (sink 2): output
    # 3 / (3 + e^2), lse ln(3 + e^2). Fully masked rows output exactly 0,
    # with lse the sink (0, -inf, 2).
    q = tensor([[[[0.0] * 4, [0.0] * 4]] * 3])
    k = tensor([[[[1.0, -2.0, 0.5, 0.0], [0.25, 1.0, -1.0, 2.0], [-0.5, 0.0, 3.0, 1.0]]]])
    v = tensor([[[[0.0], [1.0], [2.0]]]])
    mask = tensor([[[[True, True, True], [False, False, False]]]])
    sink_logits = [0.0, -INF, 2.0]

    def check(results, case):
        out, lse = values(results, "out"), values(results, "lse")
        e2 = math.exp(2)
        assert out[0] == 0.75 and results.out[0].exact, "sink equal to the logits: a fourth term, 3/4 exactly"
        assert out[2] == 1.0 and results.out[2].exact, "-inf: no sink"
        assert_close(out[4:5], [3 / (3 + e2)], 12, "sink 2: 3 / (3 + e^2)")
        assert out[1::2] == [0.0, 0.0, 0.0], "fully masked rows: exactly 0"
        assert_close([lse[0], lse[2], lse[4]], [math.log(4), math.log(3), math.log(3 + e2)], 12, "lse")
        assert lse[1::2] == [0.0, -math.inf, 2.0], "a fully masked row's lse is its sink"

    meta = make_meta("float32", q, k, v, mask="bool", sinks=True,
                     checks="attention sinks (0, -inf, 2), zero query, d_k = 4 (scale 1/2, never applied to "
                            "the sink), V[j] = j, row 1 fully masked: outputs 3/4 exactly, 1 exactly, "
                            "3 / (3 + e^2); fully masked rows 0 with lse 0, -inf, 2")
    return meta, q, k, v, mask, check, None, sink_logits


def descales():
    # fp8 inputs with FlashAttention 3's descales, one factor per kv head
    # (Hq = 4, Hkv = 2: query heads 0, 1 read kv head 0, heads 2, 3 kv head
    # 1), d_k = 4 (scale 1/2), S = 2. The real inputs are the kernel's
    # times the factors; each head's output has a closed form in them:
    #   head 0: a zero query (a tie), output v_descale 0 times the mean of
    #     V0, exactly; v_descale 0 is float32(1/3), a full 24-bit factor.
    #   head 1: q.k = (1, 3), real logits 1/2 * 2 * 3/4 * (1, 3) = (3/4, 9/4):
    #     weights 1/(1 + e^1.5) and 1/(1 + e^-1.5) (without q's factor the
    #     gap is 0.75, without k's 2).
    #   head 2: q.k = (-8, 8), real logits 1/2 * 1/8 * 1/2 * (-8, 8) = (-1/4,
    #     1/4): weights 1/(1 + e^0.5), 1/(1 + e^-0.5) (no descales: a gap
    #     of 8; kv head 0's factors, head % Hkv: 12).
    #   head 3: a zero query, output 7/4 times the mean of V1, exactly.
    q = tensor([[[[0.0, 0.0, 0.0, 0.0]], [[1.0, 0.0, 0.0, 0.0]], [[4.0, 0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0, 0.0]]]])
    k = tensor([[[[1.0, 1.0, 0.0, 0.0], [3.0, 1.0, 0.0, 0.0]], [[-2.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0]]]])
    v = tensor([[[[1.0, -2.0], [3.0, 0.5]], [[448.0, -0.5], [-448.0, 1.5]]]])
    third = ir.round_fraction(Fraction(1, 3), ir.FORMATS["float32"])
    factors = {"q": [2.0, 0.125], "k": [0.75, 0.5], "v": [third, 1.75]}

    def check(results, case):
        fmt = ir.FORMATS["float8_e4m3fn"]
        assert all(ir.is_representable(x, fmt) for x in case.q + case.k + case.v)
        assert third != 1 / 3 and ir.is_representable(third, ir.FORMATS["float32"])
        out, lse = values(results, "out"), values(results, "lse")
        f = Fraction(third)
        assert [Fraction(a.value) for a in results.out[0:2]] == [f * 2, f * Fraction(-3, 4)], "head 0: v_descale x mean"
        assert all(a.exact for a in results.out[0:2] + results.out[6:8])
        assert out[6:8] == [0.0, 0.875], "head 3: 7/4 x the mean of V1, exactly"
        assert_close([lse[0], lse[3]], [math.log(2)] * 2, 12, "zero queries: lse ln 2")
        w = 1 / (1 + math.exp(-1.5))
        assert_close(out[2:4], [third * ((1 - w) * 1 + w * 3), third * ((1 - w) * -2 + w * 0.5)], 12, "head 1")
        assert_close([lse[1]], [2.25 + math.log1p(math.exp(-1.5))], 12, "head 1: lse")
        w = 1 / (1 + math.exp(-0.5))
        assert_close(out[4:6], [1.75 * 448 * (1 - 2 * w), 1.75 * ((1 - w) * -0.5 + w * 1.5)], 10, "head 2")
        assert_close([lse[2]], [0.25 + math.log1p(math.exp(-0.5))], 12, "head 2: lse")
        # The same results as the real inputs, exact in float64 (a 4-bit
        # value times a float32 factor), given without descales.
        def real(tensor_, factors_of, head_factor):
            (shape, flat), heads = tensor_, tensor_[0][1]
            per_head = len(flat) // heads
            return shape, [x * factors[factors_of][head_factor(h)] for h in range(heads)
                           for x in flat[h * per_head:(h + 1) * per_head]]

        with tempfile.TemporaryDirectory() as scratch:
            plain = dict(meta, dtype="float64", descales=None)
            ir.write_case(scratch, plain, real(q, "q", lambda h: h // 2), real(k, "k", lambda g: g), real(v, "v", lambda g: g))
            plain_results = ir.compute_checked(ir.read_case(scratch))
        for name, got in results.items():
            assert [ir.significant_string(a) for a in got] == [
                ir.significant_string(a) for a in getattr(plain_results, name)], f"{name}: as the real inputs"

    meta = make_meta("float8_e4m3fn", q, k, v, descales=True,
                     checks="fp8 descales per kv head (q 2, 1/8; k 3/4, 1/2; v float32(1/3), 7/4), Hq = 4, "
                            "Hkv = 2, scale 1/2: zero queries output v_descale times the mean of V exactly; "
                            "real logit gaps 1.5 and 0.5 (raw q.k gaps 2 and 16), weights 1/(1 + e^-gap); "
                            "the same results as the real inputs without descales")
    return meta, q, k, v, None, check, None, None, factors


def dv_ne_dk():
    q = tensor([[[[1.0, -0.5, 2.0], [0.25, 1.5, -1.0]]]])
    k = tensor([[[[0.5, 1.0, -1.0], [2.0, 0.0, 0.5], [-1.5, 1.0, 1.0], [1.0, 1.0, 1.0]]]])
    v = tensor([[[[1.0, 2.0, 3.0, 4.0, 5.0], [-1.0, 0.5, 0.0, 2.0, -3.0],
                  [4.0, -4.0, 1.0, 0.25, 0.0], [0.0, 1.0, -2.0, 3.0, 1.0]]]])

    def check(results, case):
        assert len(results.out) == 2 * 5 and len(results.weights) == 2 * 4

    meta = make_meta("float64", q, k, v,
                     checks="d_k = 3 != d_v = 5: output rows have 5 values; default scale "
                            "1/sqrt(3) uses d_k")
    return meta, q, k, v, None, check


def fully_masked_row():
    # Key 3 is blocked for every row, so its NaN and infinities must not reach
    # any result (0 * NaN = NaN is the classic leak).
    q = tensor([[[[1.0, 2.0], [-1.0, 0.5], [0.25, -2.0]],
                 [[0.5, 0.5], [3.0, 1.0], [-0.5, 1.5]]]])
    k = tensor([[[[1.0, -1.0], [2.0, 0.5], [-1.0, 1.0], [NAN, NAN]]]])
    v = tensor([[[[1.0, 0.0, -1.0], [2.0, 4.0, 0.5], [-3.0, 1.0, 2.0], [NAN, INF, -INF]]]])
    mask = tensor([[[[True, True, False, False],
                     [False, False, False, False],
                     [True, False, True, False]]]])

    def check(results, case):
        for name in ("out", "weights", "lse"):
            assert not any(math.isnan(x) for x in values(results, name)), f"NaN leaked into {name}"
        lse = values(results, "lse")  # [head 0 rows 0-2, head 1 rows 0-2]
        assert [x == -INF for x in lse] == [False, True, False] * 2, "only row 1 is fully masked"
        assert all(a.is_exact_zero() for h in range(2) for a in results.out[h * 9 + 3:h * 9 + 6])

    meta = make_meta("float32", q, k, v, mask="bool",
                     checks="bool mask [1,1,L,S] broadcast over 2 heads; row 1 all false: output "
                            "exactly 0, weights 0, lse -inf; key 3 (blocked in every row) holds NaN "
                            "in k and NaN/+inf/-inf in v, which must not leak into any result")
    return meta, q, k, v, mask, check


def softcap():
    # Row 0: q.k = 36, 40, 37, logits about 25-28 before the cap; the cap 2
    # saturates them to 2 - O(1e-11), so the weights are 1/3 to 10 digits.
    # Row 1: small logits, where the cap bends but does not saturate.
    q = tensor([[[[4.0, 5.0], [0.5, -0.25]]]])
    k = tensor([[[[4.0, 4.0], [5.0, 4.0], [3.0, 5.0]]]])
    v = tensor([[[[1.0, -2.0], [3.0, 0.5], [-1.5, 4.0]]]])

    def check(results, case):
        w = values(results, "weights")
        assert all(abs(x - 1 / 3) < 1e-9 for x in w[:3]), "saturated softcap: near-uniform weights"
        assert len(set(ir.significant_string(a) for a in results.weights[:3])) == 3, "yet not equal"
        # Without the cap, key 1 would take almost all the weight of row 0.
        uncapped = ir.compute(dataclasses.replace(case, softcap=None), ir.WORKING_DIGITS)
        assert float(uncapped.weights[1].value) > 0.8

    meta = make_meta("float32", q, k, v, softcap=2.0,
                     checks="softcap 2 after the scale: row 0 has q.k about 40 (scaled logits 25-28) "
                            "capped to just under 2, so its weights are 1/3 to about 1e-11 (uncapped, "
                            "key 1 would take 0.85); row 1 has small logits where the cap bends")
    return meta, q, k, v, None, check


def additive_mask():
    q = tensor([[[[1.0, 0.5], [-1.0, 2.0]], [[0.25, -1.0], [2.0, 2.0]]],
                [[[0.0, 1.0], [1.5, -0.5]], [[-2.0, 0.5], [1.0, 1.0]]]])
    k = tensor([[[[1.0, -1.0], [0.5, 2.0], [-1.0, 0.0]], [[2.0, 1.0], [0.0, -0.5], [1.0, 1.0]]],
                [[[-0.5, 0.5], [1.0, 1.0], [2.0, -2.0]], [[0.0, 0.0], [1.0, -1.0], [-1.5, 0.5]]]])
    v = tensor([[[[1.0, 2.0], [3.0, -1.0], [0.0, 5.0]], [[-2.0, 1.0], [4.0, 0.0], [1.0, 1.0]]],
                [[[0.5, 0.5], [-1.0, 2.0], [2.0, -3.0]], [[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]]]])
    mask = tensor([[[[0.0, -1.5, -INF], [0.25, -INF, 0.0]]]])

    def check(results, case):
        w = values(results, "weights")
        for row in range(8):  # 2 batches x 2 heads x 2 rows, mask broadcast
            blocked = 2 if row % 2 == 0 else 1
            assert w[row * 3 + blocked] == 0 and all(w[row * 3 + j] > 0 for j in range(3) if j != blocked)

    meta = make_meta("float64", q, k, v, mask="additive",
                     checks="additive mask of shape [1,1,L,S] broadcast over B = 2 and Hq = 2, "
                            "added after the scale: finite values (-1.5, 0.25, 0) shift logits, "
                            "-inf blocks the key")
    return meta, q, k, v, mask, check


def explicit_scale():
    q = tensor([[[[1.0, 2.0, -1.0, 0.5], [4.0, 0.0, 2.0, -2.0]]]])
    k = tensor([[[[1.0, 1.0, 1.0, 1.0], [-2.0, 0.5, 3.0, 1.0], [0.0, 4.0, -1.0, 2.0]]]])
    v = tensor([[[[1.0, -1.0], [0.5, 2.0], [-3.0, 0.25]]]])

    def check(results, case):
        default = ir.compute(dataclasses.replace(case, scale=None), ir.WORKING_DIGITS)
        assert default.weights[0].value != results.weights[0].value, "0.125 != 1/sqrt(4)"

    meta = make_meta("float64", q, k, v, scale=0.125,
                     checks="explicit scale 0.125 replaces the default 1/sqrt(d_k) = 0.5 (d_k = 4)")
    return meta, q, k, v, None, check


def midpoint_tie():
    # Two identical keys: weights exactly 1/2, output the exact mean of V.
    # 1 + 2^-24 lies halfway between 1 and 1 + 2^-23 (float32): ties to even
    # give 1. 1 + 3*2^-24 lies halfway between 1 + 2^-23 (odd) and 1 + 2^-22
    # (even): up to 1 + 2^-22. The third column is the first, negated.
    ulp = 2.0**-23
    q = tensor([[[[0.5, -1.0], [3.0, 0.25]]]])
    k = tensor([[[[1.0, 2.0], [1.0, 2.0]]]])
    v = tensor([[[[1.0, 1.0 + ulp, -1.0], [1.0 + ulp, 1.0 + 2 * ulp, -(1.0 + ulp)]]]])

    def check(results, case):
        assert all(ir.significant_string(a) == "5." + "0" * 59 + "E-1" for a in results.weights)
        assert all(a.exact for a in results.out), "tie means are exact"
        want = [1.0, 1.0 + 2 * ulp, -1.0] * 2
        assert rounded(results, "out", "float32") == want, "ties to even"
        assert [float(a.value) for a in results.out] == [1 + ulp / 2, 1 + 1.5 * ulp, -(1 + ulp / 2)] * 2

    meta = make_meta("float32", q, k, v,
                     checks="identical keys give weights exactly 1/2; outputs are exact float32 "
                            "midpoints 1+2^-24 (ties to even: 1), 1+3*2^-24 (up to 1+2^-22) and "
                            "-(1+2^-24) (-1); a reference that is not correctly rounded misses them")
    return meta, q, k, v, None, check


def bfloat16_inputs():
    q = tensor([[[[1.5, -2.25], [0.1015625, 3.0]], [[-0.375, 1.0078125], [2.0, -1.0]]]])
    k = tensor([[[[1.0078125, 0.5], [-3.0, 1.25], [100.0, -0.0078125]]]])
    v = tensor([[[[1.5, -2.25], [255.0, 0.1015625], [-1.0078125, 6.0]]]])

    def check(results, case):
        fmt = ir.FORMATS["bfloat16"]
        assert all(ir.is_representable(x, fmt) for x in case.q + case.k + case.v)
        assert not ir.is_representable(1.00390625, fmt)  # 1 + 2^-8 needs 9 bits

    meta = make_meta("bfloat16", q, k, v,
                     checks="bfloat16 inputs (8-bit significands such as 1+2^-7, 255, 13/128) with "
                            "GQA Hq = 2, Hkv = 1; results rounded to bfloat16")
    return meta, q, k, v, None, check


def float8_e4m3fn_inputs():
    q = tensor([[[[1.125, -0.875, 0.25], [3.5, 0.015625, -6.0]]]])
    k = tensor([[[[0.5, 1.0, -1.0], [-0.875, 2.5, 1.125], [2.0, -0.25, 0.5]]]])
    v = tensor([[[[448.0, -1.125], [-448.0, 0.0625], [2.5, 240.0]]]])

    def check(results, case):
        fmt = ir.FORMATS["float8_e4m3fn"]
        assert all(ir.is_representable(x, fmt) for x in case.q + case.k + case.v)
        assert not ir.is_representable(1.0625, fmt)  # 1 + 2^-4 needs 5 bits

    meta = make_meta("float8_e4m3fn", q, k, v,
                     checks="float8_e4m3fn inputs including the largest value +-448 in V; "
                            "results rounded to e4m3fn (no infinity, overflow is NaN)")
    return meta, q, k, v, None, check


def single_key():
    q = tensor([[[[1.0, -2.0, 0.5], [3.0, 0.25, 4.0]], [[-1.0, -1.0, 2.0], [0.0, 0.0, 0.0]]]])
    k = tensor([[[[2.0, 0.5, -3.0]]]])
    v = tensor([[[[1.5, -7.0]]]])

    def check(results, case):
        assert all(a.exact and a.value == 1 for a in results.weights), "weight exactly 1"
        assert all(a.exact for a in results.out + results.lse), "output and lse are exact"
        logits = [Fraction(1, 2) * ir.exact_dot(case.q[r * 3:r * 3 + 3], case.k) for r in range(4)]
        assert [Fraction(a.value) for a in results.lse] == logits, "lse equals the logit"
        assert values(results, "out") == [1.5, -7.0] * 4, "output equals V"

    meta = make_meta("float64", q, k, v, scale=0.5,
                     checks="S = 1 with explicit scale 0.5: weight exactly 1, output equals V, lse "
                            "equals the logit 0.5*q.k exactly (including a zero query: lse 0)")
    return meta, q, k, v, None, check


def subnormal_output():
    # Two equal logits: weights exactly 1/2. The values are normal float32
    # numbers, 2^-124 and -(2^-124 - 2^-138); their products with 1/2 are
    # normal too, but their mean, 2^-139, is a float32 subnormal: a kernel
    # that flushes subnormal results to zero returns 0.
    q = tensor([[[[0.0]]]])
    k = tensor([[[[0.0], [0.0]]]])
    v = tensor([[[[2.0**-124, 1.0], [-(2.0**-124 - 2.0**-138), 3.0]]]])

    def check(results, case):
        assert all(ir.significant_string(a) == "5." + "0" * 59 + "E-1" for a in results.weights)
        assert all(a.exact for a in results.out), "the mean of V is exact"
        assert rounded(results, "out", "float32") == [2.0**-139, 2.0], "a float32 subnormal, exactly"
        fmt = ir.FORMATS["float32"]
        assert all(ir.is_representable(x, fmt) and (x == 0 or abs(x) >= 2.0**-126) for x in case.v)

    meta = make_meta("float32", q, k, v,
                     checks="normal float32 values whose exact mean, 2^-139, is a float32 subnormal "
                            "(weights exactly 1/2): flushing subnormal results to zero gives 0")
    return meta, q, k, v, None, check


CASES = [
    seed_matrix, seed_two_keys, seed_zero_query, gqa, causal_top_left, causal_bottom_right,
    causal_bottom_right_long_q, sliding_window, alibi, sinks, descales, dv_ne_dk, fully_masked_row, softcap, additive_mask,
    explicit_scale, midpoint_tie, bfloat16_inputs, float8_e4m3fn_inputs, single_key,
    subnormal_output,
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(REPO, "cases", "golden"), help="output folder")
    args = parser.parse_args()
    if not __debug__:
        sys.exit("make_golden_cases.py: run without -O; the case checks are assert statements")
    start = time.perf_counter()
    for build in CASES:
        name = build.__name__
        case_start = time.perf_counter()
        # ALiBi cases add their slopes, sink cases then their sinks, descale cases then their factors.
        meta, q, k, v, mask, check, *extra = build()
        slopes, sink_logits, factors = (extra + [None] * 3)[:3]
        case_dir = os.path.join(args.out, name)
        ir.write_case(case_dir, meta, q, k, v, mask, slopes, sink_logits, factors)
        results = ir.write_expected(case_dir)
        check(results, ir.read_case(case_dir))
        print(f"{name}: ok ({time.perf_counter() - case_start:.2f} s)")
    print(f"wrote {len(CASES)} golden cases to {args.out} in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
