"""The backward pass (SPEC.md section 2.6) in decimal, and its self-check.

Method, in short, and unlike the C++ reference's (intervals grouped by
equal logits, Ziv's refinement, exact forms by exponent): each row's
weights come from attention_row, the sink's weight from the lse as
exp(sigma - lse); D = sum_j w_j dP_j with dP_j exact (Fraction); the logit
gradients w_j (dP_j - D) times the scale and the softcap's derivative
1 - tanh^2 are decimal products, summed row by row in the order of the
formulas. Exact only where it is plain: a row whose logits are all equal
has weights 1/n and every term rational; a key whose dP equals every
equal-logit class's mean has dX = 0. Everything else is approximate, and an
approximate zero or a value too near a midpoint is refused (exit 3), never
guessed; the random generator redraws such cases.
"""

import decimal
from dataclasses import dataclass, field
from fractions import Fraction

from .approx import EXACT_ONE, EXACT_ZERO, NAN, Approx, d_add, d_exp, d_from_fraction, d_mul, d_sub, d_tanh, decimal_context
from .attention import (
    CHECK_DIGITS, WORKING_DIGITS, LogitModel, attention_row, checked_value, exact_dot, is_finite, visible_keys,
)

GRADIENT_NAMES = ("dq", "dk", "dv", "dsink")


@dataclass
class Gradients:
    """All gradients of a case, flattened in C order."""

    dq: list = field(default_factory=list)     # [B, Hq, L, d_k]
    dk: list = field(default_factory=list)     # [B, Hkv, S, d_k]
    dv: list = field(default_factory=list)     # [B, Hkv, S, d_v]
    dsink: list = field(default_factory=list)  # [Hq] with sinks, else empty

    def items(self):
        return tuple((name, getattr(self, name)) for name in GRADIENT_NAMES)


def _exact_logit(model, case, d, m):
    """The logit as a Fraction when it is rational, else the pair (d, m) that
    identifies it (an irrational scale or a softcap keeps distinct pairs apart)."""
    if case.softcap is None and model.scale_exact is not None:
        return model.scale_exact * d + m
    return (d, m)


def compute_gradients(case, digits):
    """Every gradient of the case at the given number of significant digits."""
    B, Hq, Hkv, L, S = case.batch, case.q_heads, case.kv_heads, case.q_len, case.kv_len
    dk_w, dv_w = case.d_k, case.d_v
    g = Gradients()
    g.dq = [EXACT_ZERO] * (B * Hq * L * dk_w)
    g.dk = [EXACT_ZERO] * (B * Hkv * S * dk_w)
    g.dv = [EXACT_ZERO] * (B * Hkv * S * dv_w)
    g.dsink = [EXACT_ZERO] * Hq if case.sinks is not None else []
    with decimal.localcontext(decimal_context(digits)):
        model = LogitModel(case)
        for b in range(B):
            for h in range(Hq):
                for i in range(L):
                    _add_row(case, model, g, b, h, i)
    return g


def _add_row(case, model, g, b, h, i):
    keys = visible_keys(case, b, h, i)
    if not keys:
        return  # no visible key: no term anywhere (a lone sink has D = 0)
    dk_w, dv_w, S = case.d_k, case.d_v, case.kv_len
    kv = h // (case.q_heads // case.kv_heads)
    row = (b * case.q_heads + h) * case.q_len + i
    key_index = {j: (b * case.kv_heads + kv) * S + j for j, _ in keys}
    q = case.q_row(b, h, i)
    k_rows = {j: case.k_row(b, kv, j) for j, _ in keys}
    dout = case.dout_row(b, h, i)
    sink = case.sink(h)
    if not all(is_finite(x) for x in q) or not all(is_finite(x) for r in k_rows.values() for x in r):
        for t in range(dk_w):
            g.dq[row * dk_w + t] = NAN
        for j in key_index.values():
            g.dk[j * dk_w:(j + 1) * dk_w] = [NAN] * dk_w
            g.dv[j * dv_w:(j + 1) * dv_w] = [NAN] * dv_w
        if sink is not None:
            g.dsink[h] = NAN
        return
    weights, _, lse = attention_row(case, model, b, h, i)
    v_rows = {j: case.v_row(b, kv, j) for j, _ in keys}
    # dV first: it needs only the weights and dO.
    for j, _ in keys:
        for t in range(dv_w):
            at = key_index[j] * dv_w + t
            if not is_finite(dout[t]):
                g.dv[at] = NAN
            elif not g.dv[at].value.is_nan():
                g.dv[at] = d_add(g.dv[at], d_mul(weights[j], Approx(decimal.Decimal(dout[t]), True)))
    finite_dp = all(is_finite(x) for x in dout) and all(is_finite(x) for r in v_rows.values() for x in r)
    if not finite_dp:
        for t in range(dk_w):
            g.dq[row * dk_w + t] = NAN
        for j in key_index.values():
            g.dk[j * dk_w:(j + 1) * dk_w] = [NAN] * dk_w
        if sink is not None:
            g.dsink[h] = NAN
        return
    d = {j: exact_dot(q, k_rows[j]) for j, _ in keys}
    m = dict(keys)
    dp = {j: exact_dot(dout, v_rows[j]) for j, _ in keys}
    # Classes of equal logits, the sink one more key of dP 0.
    classes = {}
    for j, _ in keys:
        classes.setdefault(_exact_logit(model, case, d[j], m[j]), []).append(dp[j])
    if sink is not None:
        classes.setdefault(_exact_logit(model, case, Fraction(0), sink), []).append(Fraction(0))
    means = {sum(members) / len(members) for members in classes.values()}
    n = len(keys) + (1 if sink is not None else 0)
    if len(classes) == 1:
        total = sum(dp.values(), Fraction(0))
        big_d = d_from_fraction(total / n)
        dx = {j: d_from_fraction((dp[j] - total / n) / n) for j, _ in keys}
        sink_weight = d_from_fraction(Fraction(1, n)) if sink is not None else None
    else:
        big_d = EXACT_ZERO
        for j, _ in keys:
            big_d = d_add(big_d, d_mul(weights[j], d_from_fraction(dp[j])))
        if all(sum(members) == 0 for members in classes.values()):
            big_d = EXACT_ZERO  # D = sum_C w_C S_C vanishes with every class sum S_C
        dx = {}
        for j, _ in keys:
            if len(means) == 1 and dp[j] in means:
                dx[j] = EXACT_ZERO
            else:
                dx[j] = d_mul(weights[j], d_sub(d_from_fraction(dp[j]), big_d))
        sink_weight = d_exp(d_sub(d_from_fraction(sink), lse)) if sink is not None else None
    if sink is not None:
        g.dsink[h] = d_sub(g.dsink[h], d_mul(sink_weight, big_d))
    for j, _ in keys:
        ds = d_mul(model.scale, dx[j])
        if case.softcap is not None and d[j] != 0:
            t_cap = d_tanh(d_mul(model.scaled(d[j]), d_from_fraction(1 / Fraction(case.softcap))))
            ds = d_mul(ds, d_sub(EXACT_ONE, d_mul(t_cap, t_cap)))
        k = k_rows[j]
        for t in range(dk_w):
            g.dq[row * dk_w + t] = d_add(g.dq[row * dk_w + t], d_mul(ds, _exact(k[t])))
            at = key_index[j] * dk_w + t
            g.dk[at] = d_add(g.dk[at], d_mul(ds, _exact(q[t])))


def _exact(x):
    return d_from_fraction(Fraction(x))


def compute_gradients_checked(case):
    """Gradients at 120 digits, verified against a 160-digit rerun (as compute_checked)."""
    low = compute_gradients(case, WORKING_DIGITS)
    high = compute_gradients(case, CHECK_DIGITS)
    checked = Gradients()
    for (name, lows), (_, highs) in zip(low.items(), high.items()):
        target = getattr(checked, name)
        for index, (a, b) in enumerate(zip(lows, highs)):
            target.append(checked_value(case, f"{name}[{index}]", a, b))
    return checked


def gradient_shapes(case):
    shapes = {
        "dq": (case.batch, case.q_heads, case.q_len, case.d_k),
        "dk": (case.batch, case.kv_heads, case.kv_len, case.d_k),
        "dv": (case.batch, case.kv_heads, case.kv_len, case.d_v),
    }
    if case.sinks is not None:
        shapes["dsink"] = (case.q_heads,)
    return shapes

