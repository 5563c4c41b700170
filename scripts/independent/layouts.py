"""Layouts (SPEC.md section 2.5), read from their definition, not from attnspec's code.

A laid-out case holds a dense problem and a recipe (case.json's "layout",
SPEC.md section 4). Sequence b is batch entry b cut to its lengths: its
first q_lens[b] queries (varlen) or all L of them (kv_cache), and its
first kv_lens[b] keys; each sequence is a dense problem of its own, with
causal masking, windows and ALiBi aligned to its own L_b and S_b. Its
results go where a kernel returns them: varlen out [rows, Hq, d_v] and
lse [Hq, rows], sequence b's query i at row cu_seqlens_q[b] + i, padding
rows NaN; KV caches out [B, L, Hq, d_v] and lse [B, Hq, L].

The packing itself (cu_seqlens, pages, block tables) is what the kernel
sees; the answer depends only on the lengths, which is what is checked here
against `attnspec reference` on the same case.
"""

import dataclasses
import math
from fractions import Fraction

from .attention import compute_checked, round_result
from .errors import BadInput
from .formats import round_fraction

VARLEN_FIELDS = {"kind", "q_lens", "kv_lens", "padding_q_rows", "padding_k_rows"}
CACHE_FIELDS = {"kind", "kv_lens", "new_len", "page_size", "spare_slots", "spare_pages", "page_order"}


def _lengths(layout, name, count, top, where):
    values = layout.get(name)
    if (not isinstance(values, list) or len(values) != count
            or any(isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= top for n in values)):
        raise BadInput(f"{where}: layout.{name} must be {count} integers in 0..{top}")
    return values


def check_layout(layout, meta, where):
    """Validate case.json's "layout" against the case's sizes; return it."""
    if layout is None:
        return None
    B, L, S = meta["batch"], meta["q_len"], meta["kv_len"]
    if meta["mask"] is not None or meta.get("descales"):
        raise BadInput(f"{where}: a laid-out case has no mask and no descales")
    kind = layout.get("kind") if isinstance(layout, dict) else None
    if kind == "varlen" and set(layout) == VARLEN_FIELDS:
        _lengths(layout, "q_lens", B, L, where)
        _lengths(layout, "kv_lens", B, S, where)
    elif kind == "kv_cache" and set(layout) == CACHE_FIELDS:
        kv_lens = _lengths(layout, "kv_lens", B, S, where)
        new_len = layout["new_len"]
        if isinstance(new_len, bool) or not isinstance(new_len, int) or not 0 <= new_len <= min(kv_lens):
            raise BadInput(f"{where}: layout.new_len must be an integer in 0..min(kv_lens)")
    else:
        raise BadInput(f"{where}: layout must be a varlen or kv_cache recipe with exactly its fields")
    return layout


def sequence_lengths(case):
    """(L_b, S_b) of each sequence."""
    layout = case.layout
    if layout["kind"] == "varlen":
        return list(zip(layout["q_lens"], layout["kv_lens"]))
    return [(case.q_len, n) for n in layout["kv_lens"]]


def sequence_case(case, b, q_len, kv_len):
    """Batch entry b cut to its first q_len queries and kv_len keys, batch 1."""
    Hq, Hkv, L, S, dk, dv = case.q_heads, case.kv_heads, case.q_len, case.kv_len, case.d_k, case.d_v
    q = [x for h in range(Hq) for i in range(q_len)
         for x in case.q[((b * Hq + h) * L + i) * dk:((b * Hq + h) * L + i + 1) * dk]]
    k = [x for g in range(Hkv) for j in range(kv_len)
         for x in case.k[((b * Hkv + g) * S + j) * dk:((b * Hkv + g) * S + j + 1) * dk]]
    v = [x for g in range(Hkv) for j in range(kv_len)
         for x in case.v[((b * Hkv + g) * S + j) * dv:((b * Hkv + g) * S + j + 1) * dv]]
    slopes = None if case.alibi_slopes is None else case.alibi_slopes[b * Hq:(b + 1) * Hq]
    return dataclasses.replace(case, batch=1, q_len=q_len, kv_len=kv_len, q=q, k=k, v=v,
                               alibi_slopes=slopes, layout=None)


def laid_out_results(case, fmt):
    """Rounded outputs and lse in the layout's arrangement, and their shapes."""
    Hq, dv = case.q_heads, case.d_v
    lengths = sequence_lengths(case)
    per_sequence = []
    for b, (q_len, kv_len) in enumerate(lengths):
        if q_len == 0:
            per_sequence.append(([], []))
        elif kv_len == 0:  # rows with no visible key: 0, lse the sink's or -inf
            lse = []
            for h in range(Hq):
                sink = -math.inf if case.sinks is None else case.sinks[h]
                if sink == -math.inf:
                    value = -math.inf if fmt.has_inf else math.nan  # as round_result rounds -inf
                else:
                    value = round_fraction(Fraction(sink), fmt)
                lse.extend([value] * q_len)
            per_sequence.append(([0.0] * (Hq * q_len * dv), lse))
        else:
            results = compute_checked(sequence_case(case, b, q_len, kv_len), kinds=("out", "lse"))
            per_sequence.append(([round_result(a, fmt) for a in results.out],
                                 [round_result(a, fmt) for a in results.lse]))
    if case.layout["kind"] == "varlen":
        rows = sum(q for q, _ in lengths) + case.layout["padding_q_rows"]
        out, lse = [math.nan] * (rows * Hq * dv), [math.nan] * (Hq * rows)
        first = 0
        for (q_len, _), (seq_out, seq_lse) in zip(lengths, per_sequence):
            for h in range(Hq):
                for i in range(q_len):
                    at = ((first + i) * Hq + h) * dv
                    out[at:at + dv] = seq_out[(h * q_len + i) * dv:(h * q_len + i + 1) * dv]
                    lse[h * rows + first + i] = seq_lse[h * q_len + i]
            first += q_len
        return out, lse, (rows, Hq, dv), (Hq, rows)
    B, L = case.batch, case.q_len
    out, lse = [0.0] * (B * L * Hq * dv), [0.0] * (B * Hq * L)
    for b, (seq_out, seq_lse) in enumerate(per_sequence):
        for h in range(Hq):
            for i in range(L):
                at = ((b * L + i) * Hq + h) * dv
                out[at:at + dv] = seq_out[(h * L + i) * dv:(h * L + i + 1) * dv]
                lse[(b * Hq + h) * L + i] = seq_lse[h * L + i]
    return out, lse, (B, L, Hq, dv), (B, Hq, L)

