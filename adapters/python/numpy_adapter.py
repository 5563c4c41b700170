#!/usr/bin/env python3
"""An attnspec-process/1 adapter in Python: a NumPy attention kernel that
attnspec tests over stdin/stdout (spec/SPEC.md section 8).

Copy this file to test your own kernel: replace `attention`, `gradients`
and `merge` (and the HELLO reply's formats and capabilities) and keep the
protocol loop. The layouts (variable-length batches, KV caches, paged or not) come
as attnspec-packed/1 directories, which packed_cases.py (beside this file)
maps onto the dense `attention`. Run it with

    attnspec run --kernel 'cmd:python3 numpy_adapter.py --dtype float32'

Needs NumPy (Debian: python3-numpy). Nothing but protocol replies may go to
stdout; print diagnostics to stderr, which attnspec keeps in a log file.
"""
import argparse
import json
import os
import sys

import numpy as np

import packed_cases

DTYPES = {"float64": np.float64, "float32": np.float32}


def hello(dtype_name):
    return {
        "protocol": 1,
        "name": "numpy-" + dtype_name,
        "formats": {"input": dtype_name, "accumulate": dtype_name, "output": dtype_name},
        "capabilities": {
            "masks": ["bool", "additive"],
            "causal": ["top_left", "bottom_right"],
            "window": ["top_left", "bottom_right"],
            "alibi": ["top_left", "bottom_right"],
            "sinks": True,
            # float64 inputs times float32 factors need not be binary64
            # numbers: attnspec takes descales with narrower inputs only.
            "descales": dtype_name != "float64",
            "gqa": True,
            "scale": True,
            "softcap": True,
            "dv_ne_dk": True,
            "lse": True,
            "fully_masked_rows": True,  # 0, as SPEC 2.3 says
            # Through packed_cases.py: each sequence run as a dense problem.
            "varlen": True,
            "kv_cache": True,
            "paged_kv_cache": True,
            "merge_partials": dtype_name,
            # The backward of SPEC 2.6, sent with kind "backward".
            "backward": True,
        },
    }


def prepare(case, q, k, v, mask, dtype, slopes=None, descales=None):
    """What the forward and the backward share: the real inputs in `dtype`
    (K and V repeated per query head), the scale, the scaled logits before
    the softcap, the logits and which keys each row sees."""
    b, hq, hkv, L, S = case["batch"], case["q_heads"], case["kv_heads"], case["q_len"], case["kv_len"]
    q, k, v = q.astype(dtype), k.astype(dtype), v.astype(dtype)
    group = hq // hkv
    if descales is not None:
        # The real inputs: each factor ([B, Hkv]) times its kv head's rows,
        # rounded to `dtype` as a kernel would; query heads read their kv
        # head's q factor.
        q_descale, k_descale, v_descale = (factor.astype(dtype)[:, :, None, None] for factor in descales)
        q = q * np.repeat(q_descale, group, axis=1)
        k = k * k_descale
        v = v * v_descale
    k = np.repeat(k, group, axis=1)  # query head h reads kv head h // group
    v = np.repeat(v, group, axis=1)
    scale = dtype(case["scale"]) if case["scale"] is not None else dtype(1) / np.sqrt(dtype(case["d_k"]))
    scaled = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    logits = scaled
    if case["softcap"] is not None:
        cap = dtype(case["softcap"])
        logits = cap * np.tanh(scaled / cap)
    if case.get("alibi") is not None:  # -slope |i + off - j|, after the scale and softcap
        off = 0 if case["alibi"]["alignment"] == "top_left" else S - L
        distance = np.abs(np.arange(L)[:, None] + off - np.arange(S)[None, :]).astype(dtype)
        slopes = slopes.astype(dtype).reshape((-1, hq, 1, 1))  # [1 or B, Hq, 1, 1]
        logits = logits - slopes * distance
    visible = np.ones((b, hq, L, S), dtype=bool)
    if case["causal"] is not None:
        offset = 0 if case["causal"] == "top_left" else S - L
        visible &= np.arange(S)[None, :] <= np.arange(L)[:, None] + offset
    window = case.get("window")  # absent or null: no window
    if window is not None:
        diagonal = np.arange(L)[:, None] + (0 if window["alignment"] == "top_left" else S - L)
        if window["left"] is not None:
            visible &= np.arange(S)[None, :] >= diagonal - window["left"]
        if window["right"] is not None:
            visible &= np.arange(S)[None, :] <= diagonal + window["right"]
    if case["mask"] == "bool":
        visible &= np.broadcast_to(mask, visible.shape)
    elif case["mask"] == "additive":  # -inf blocks a key like False does
        additive = np.broadcast_to(mask.astype(dtype), logits.shape)
        visible &= additive != -np.inf
        logits = logits + additive
    return q, k, v, scale, scaled, logits, visible


def row_weights(x, sink, dtype):
    """The weights of a row's visible logits x and its sink's weight (0
    without one), and the row's lse; NaN throughout where a logit is NaN or
    infinite (a non-finite query or key spoils the row, SPEC 2.3)."""
    with np.errstate(invalid="ignore", over="ignore"):
        shift = max(x.max(), sink) if np.isfinite(x).all() else np.nan
        weights = np.exp(x - shift)
        sink_weight = np.exp(sink - shift)
        total = weights.sum() + sink_weight
        return weights / total, sink_weight / total, shift + np.log(total)


def attention(case, q, k, v, mask, dtype, slopes=None, sinks=None, descales=None):
    """softmax(Q K^T * scale + mask) V in `dtype`, per the spec's semantics,
    and the log-sum-exp of each row's logits (the sink's included)."""
    b, hq, L = case["batch"], case["q_heads"], case["q_len"]
    q, k, v, _, _, logits, visible = prepare(case, q, k, v, mask, dtype, slopes, descales)
    out = np.zeros((b, hq, L, v.shape[-1]), dtype=dtype)  # rows with no visible key stay 0
    # A row with no visible key: the sink's logit, or -inf (SPEC 2.3).
    lse = np.empty((b, hq, L), dtype=dtype)
    lse[...] = sinks.astype(dtype)[None, :, None] if sinks is not None else dtype(-np.inf)
    for row in np.ndindex(b, hq, L):
        keys = visible[row]
        if not keys.any():
            continue
        # Only visible keys take part, so NaN or Inf in a blocked key or value
        # cannot leak through 0 * NaN. A sink (-inf: none) is one more logit
        # in the denominator, with no value.
        sink = dtype(sinks[row[1]]) if sinks is not None else dtype(-np.inf)
        weights, _, lse[row] = row_weights(logits[row][keys], sink, dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            out[row] = weights @ v[row[0], row[1]][keys]
    return out, lse


def gradients(case, q, k, v, dout, mask, dtype, slopes=None, sinks=None):
    """The backward pass of SPEC 2.6 in `dtype`, as autograd composes it:
    dV = P^T dO, dP = dO V^T, D = rowsum(P * dP), dS = P (dP - D) times the
    softcap's derivative and the scale, dQ = dS K, dK = dS^T Q (summed over
    each kv head's query heads), and each sink's -sum P_sink D. Over
    visible keys only, as the forward."""
    b, hq, hkv, L, S = case["batch"], case["q_heads"], case["kv_heads"], case["q_len"], case["kv_len"]
    q, k, v, scale, scaled, logits, visible = prepare(case, q, k, v, mask, dtype, slopes)
    dout = dout.astype(dtype)
    dq = np.zeros(q.shape, dtype=dtype)
    dk = np.zeros(k.shape, dtype=dtype)  # per query head, summed per kv head below
    dv = np.zeros(v.shape, dtype=dtype)
    dsink = np.zeros(hq, dtype=dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for row in np.ndindex(b, hq, L):
            keys = visible[row]
            if not keys.any():
                continue  # no term anywhere; a lone sink has D = 0
            sink = dtype(sinks[row[1]]) if sinks is not None else dtype(-np.inf)
            weights, sink_weight, _ = row_weights(logits[row][keys], sink, dtype)
            head_k, head_v = k[row[0], row[1]][keys], v[row[0], row[1]][keys]
            dp = head_v @ dout[row]
            d = weights @ dp
            ds = weights * (dp - d)
            if case["softcap"] is not None:
                t = np.tanh(scaled[row][keys] / dtype(case["softcap"]))
                ds = ds * (dtype(1) - t * t)
            ds = ds * scale
            dq[row] = ds @ head_k
            dk[row[0], row[1]][keys] += np.outer(ds, q[row])
            dv[row[0], row[1]][keys] += np.outer(weights, dout[row])
            if sinks is not None:
                dsink[row[1]] -= sink_weight * d
    group = hq // hkv
    dk = dk.reshape(b, hkv, group, S, -1).sum(axis=2)
    dv = dv.reshape(b, hkv, group, S, -1).sum(axis=2)
    return dq, dk, dv, (dsink if sinks is not None else None)


def merge(out_parts, lse_parts, dtype):
    """The merge of partial results [parts, rows, d_v] with their lse
    [parts, rows] (SPEC 6.9), in `dtype`, shifted by the largest lse; a row
    whose parts are all empty (lse -inf) outputs 0, lse -inf."""
    o, l = out_parts.astype(dtype), lse_parts.astype(dtype)
    largest = l.max(axis=0)
    empty = largest == -np.inf
    shift = np.where(empty, dtype(0), largest)
    weights = np.exp(l - shift)  # 0 for empty parts
    total = weights.sum(axis=0)
    out = (weights[:, :, None] * o).sum(axis=0) / np.where(empty, dtype(1), total)[:, None]
    lse = np.where(empty, dtype(-np.inf), shift + np.log(np.where(empty, dtype(1), total)))
    return out, lse


def save(directory, out, lse, dtype):
    np.save(os.path.join(directory, "out.npy"), np.ascontiguousarray(out, dtype=dtype))
    np.save(os.path.join(directory, "lse.npy"), np.ascontiguousarray(lse, dtype=dtype))


def save_gradients(directory, dq, dk, dv, dsink, dtype):
    for name, array in (("dq", dq), ("dk", dk), ("dv", dv), ("dsink", dsink)):
        if array is not None:
            np.save(os.path.join(directory, name + ".npy"), np.ascontiguousarray(array, dtype=dtype))


def run_case(directory, dtype, kind="dense"):
    if kind == "merge":
        return save(directory, *merge(*packed_cases.load_merge(directory), dtype), dtype)
    if kind not in ("dense", "backward"):
        def dense(case, q, k, v, slopes, sinks):
            return attention(case, q, k, v, None, dtype, slopes, sinks)
        return save(directory, *packed_cases.run_packed(kind, directory, dense), dtype)
    with open(os.path.join(directory, "case.json")) as f:
        case = json.load(f)
    arrays = {name: np.load(os.path.join(directory, name + ".npy")) for name in ("q", "k", "v")}
    mask = np.load(os.path.join(directory, "mask.npy")) if case["mask"] else None
    slopes = np.load(os.path.join(directory, "alibi_slopes.npy")) if case.get("alibi") else None
    sinks = np.load(os.path.join(directory, "sinks.npy")) if case.get("sinks") else None
    descales = None
    if case.get("descales"):  # [B, Hkv] each, in the order q, k, v
        descales = [np.load(os.path.join(directory, name + "_descale.npy")) for name in ("q", "k", "v")]
    if kind == "backward":  # the same case with dout.npy (SPEC 2.6); no descales
        dout = np.load(os.path.join(directory, "dout.npy"))
        grads = gradients(case, arrays["q"], arrays["k"], arrays["v"], dout, mask, dtype, slopes, sinks)
        return save_gradients(directory, *grads, dtype)
    save(directory, *attention(case, arrays["q"], arrays["k"], arrays["v"], mask, dtype, slopes, sinks, descales), dtype)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float64", choices=sorted(DTYPES))
    dtype_name = parser.parse_args().dtype
    dtype = DTYPES[dtype_name]
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "hello":
            reply = hello(dtype_name)
        elif request["op"] == "run":
            try:
                run_case(request["case"], dtype, request.get("kind", "dense"))
                reply = {"id": request["id"], "ok": True}
            except Exception as error:  # one bad case must not end the session
                reply = {"id": request["id"], "ok": False, "error": repr(error)}
        elif request["op"] == "bye":
            return
        else:
            print("unknown request: " + line, file=sys.stderr)
            continue
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
