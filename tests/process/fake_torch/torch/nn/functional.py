import numpy as np

from .. import Tensor


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    q, k, v = query.array, key.array, value.array
    dtype = q.dtype.type
    if attn_mask is not None and is_causal:
        raise RuntimeError("attn_mask and is_causal together")
    group = q.shape[1] // k.shape[1]
    if group != 1 and not enable_gqa:
        raise RuntimeError("head counts differ without enable_gqa")
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = dtype(scale) if scale is not None else dtype(1) / np.sqrt(dtype(q.shape[-1]))
    logits = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    L, S = q.shape[-2], k.shape[-2]
    visible = np.ones(logits.shape, dtype=bool)
    if is_causal:
        visible &= np.arange(S)[None, :] <= np.arange(L)[:, None]
    if attn_mask is not None and attn_mask.array.dtype == bool:
        visible &= np.broadcast_to(attn_mask.array, logits.shape)
    elif attn_mask is not None:
        additive = np.broadcast_to(attn_mask.array.astype(dtype), logits.shape)
        visible &= additive != -np.inf
        logits = logits + additive
    out = np.zeros(q.shape[:-1] + (v.shape[-1],), dtype=dtype)
    weights = np.zeros(logits.shape, dtype=dtype)
    for row in np.ndindex(*q.shape[:-1]):
        keys = visible[row]
        if keys.any():
            x = logits[row][keys]
            with np.errstate(invalid="ignore", over="ignore"):
                w = np.exp(x - x.max())
                weights[row][keys] = w / w.sum()
                out[row] = weights[row][keys] @ v[row[0], row[1]][keys]

    def backward(dout):
        # The textbook gradients over visible keys; dK and dV summed over
        # each kv head's query heads, as autograd does through enable_gqa.
        dout = dout.astype(dtype)
        dq, dk, dv = np.zeros(q.shape, dtype), np.zeros(k.shape, dtype), np.zeros(v.shape, dtype)
        for row in np.ndindex(*q.shape[:-1]):
            keys = visible[row]
            if not keys.any():
                continue
            w = weights[row][keys]
            dp = v[row[0], row[1]][keys] @ dout[row]
            ds = w * (dp - w @ dp) * scale
            dq[row] = ds @ k[row[0], row[1]][keys]
            dk[row[0], row[1]][keys] += np.outer(ds, q[row])
            dv[row[0], row[1]][keys] += np.outer(w, dout[row])
        per_kv_head = lambda t: t.reshape(t.shape[0], t.shape[1] // group, group, *t.shape[2:]).sum(axis=2)
        return dq, per_kv_head(dk), per_kv_head(dv)

    return Tensor(out, backward)
