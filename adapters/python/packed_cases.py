"""Reading attnspec-packed/1 case directories (spec/SPEC.md section 8) and
mapping their layouts onto a dense attention function, as SPEC section 2.5
defines them: each sequence of a variable-length batch or a KV cache is a
dense problem of batch 1 with its own lengths.

A Python adapter whose kernel takes dense [B, H, L, d] tensors only gets
every layout from this module: pass `run_packed` its dense function

    dense(case, q, k, v, slopes, sinks) -> (out [1, Hq, L, d_v], lse [1, Hq, L])

with `case` the sequence's fields (attnspec-case/1 names, batch 1, its own
q_len and kv_len, no mask) and q [1, Hq, L, d_k], k, v [1, Hkv, S, d].
A kernel with layouts of its own (a varlen or paged kernel) reads the
same files itself; this module shows what each holds.

Needs NumPy (Debian: python3-numpy).
"""
import json
import os

import numpy as np


def load_case(directory):
    with open(os.path.join(directory, "case.json")) as f:
        return json.load(f)


def _load(directory, name):
    return np.load(os.path.join(directory, name + ".npy"))


def _optional(directory, name, present):
    return _load(directory, name) if present else None


def _sequence(case, q_len, kv_len):
    """The fields of one sequence's dense problem (SPEC 2.5)."""
    fields = dict(case, batch=1, q_len=q_len, kv_len=kv_len, mask=None)
    for packed_only in ("cu_seqlens_q", "cu_seqlens_k", "cache_seqlens", "new_len", "page_size", "block_table"):
        fields.pop(packed_only, None)
    return fields


def _slopes_of(slopes, b):
    """ALiBi slopes [B, Hq] give sequence b row b; [Hq] are everyone's."""
    if slopes is None:
        return None
    return slopes[b] if slopes.ndim == 2 else slopes


def _heads_first(rows):
    """[n, H, d] (rows of a packed tensor) to [1, H, n, d]."""
    return np.ascontiguousarray(np.swapaxes(rows, 0, 1))[None]


def run_varlen(directory, case, dense):
    """Outputs [rows_q, Hq, d_v] and lse [Hq, rows_q]; padding rows hold
    0 and NaN (they are not read)."""
    q, k, v = (_load(directory, name) for name in ("q", "k", "v"))
    slopes = _optional(directory, "alibi_slopes", case.get("alibi"))
    sinks = _optional(directory, "sinks", case.get("sinks"))
    cu_q, cu_k = case["cu_seqlens_q"], case["cu_seqlens_k"]
    out = np.zeros((q.shape[0], case["q_heads"], case["d_v"]))
    lse = np.full((case["q_heads"], q.shape[0]), np.nan)
    for b in range(case["batch"]):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        if rows.stop == rows.start:
            continue  # a sequence with no queries outputs nothing
        o, l = dense(_sequence(case, rows.stop - rows.start, keys.stop - keys.start), _heads_first(q[rows]),
                     _heads_first(k[keys]), _heads_first(v[keys]), _slopes_of(slopes, b), sinks)
        out[rows] = np.swapaxes(o[0], 0, 1)
        lse[:, rows] = l[0]
    return out, lse


def cached_keys(case, cache, new, b):
    """Sequence b's keys (or values), [S_b, Hkv, d]: its cache slots
    0 .. cache_seqlens[b]-1, contiguous or through its block table, then
    the new ones."""
    cached = case["cache_seqlens"][b]
    page_size = case["page_size"]
    if page_size is None:
        rows = cache[b, :cached]
    else:
        slots = np.arange(cached)
        pages = np.asarray(case["block_table"][b], dtype=np.int64)[slots // page_size]
        rows = cache[pages, slots % page_size]
    return np.concatenate([rows, new[b]], axis=0)


def run_kv_cache(directory, case, dense):
    """Outputs [B, L, Hq, d_v] and lse [B, Hq, L]."""
    q = _load(directory, "q")
    k_cache, v_cache, k_new, v_new = (_load(directory, name) for name in ("k_cache", "v_cache", "k_new", "v_new"))
    slopes = _optional(directory, "alibi_slopes", case.get("alibi"))
    sinks = _optional(directory, "sinks", case.get("sinks"))
    batch, L = case["batch"], case["q_len"]
    out = np.zeros((batch, L, case["q_heads"], case["d_v"]))
    lse = np.zeros((batch, case["q_heads"], L))
    for b in range(batch):
        keys = cached_keys(case, k_cache, k_new, b)
        values = cached_keys(case, v_cache, v_new, b)
        o, l = dense(_sequence(case, L, keys.shape[0]), _heads_first(q[b]), _heads_first(keys),
                     _heads_first(values), _slopes_of(slopes, b), sinks)
        out[b] = np.swapaxes(o[0], 0, 1)
        lse[b] = l[0]
    return out, lse


def run_packed(kind, directory, dense):
    """kind: the run request's "kind", "varlen" or "kv_cache"."""
    case = load_case(directory)
    if case.get("format") != "attnspec-packed/1" or case.get("kind") != kind:
        raise ValueError("expected an attnspec-packed/1 case of kind %r in %s" % (kind, directory))
    return (run_varlen if kind == "varlen" else run_kv_cache)(directory, case, dense)


def load_merge(directory):
    """A merge's input: partial outputs [parts, rows, d_v] and their lse
    [parts, rows] (-inf: a part with no visible key for the row, whose
    outputs are 0)."""
    case = load_case(directory)
    if case.get("format") != "attnspec-packed/1" or case.get("kind") != "merge":
        raise ValueError("expected an attnspec-packed/1 merge case in " + directory)
    return _load(directory, "out_parts"), _load(directory, "lse_parts")
