"""A stand-in for the flash_attn package (FlashAttention 2.6), in NumPy, for
tests only: flash_attn_func, flash_attn_varlen_func and
flash_attn_with_kvcache as their docstrings define them. Layout [B, S, H,
d]; everything aligned bottom-right (off = S - L); key j visible to query i
iff i + off - left <= j <= i + off + right (window_size, -1 unbounded;
causal sets right to 0); score = softcap * tanh(q.k scale / softcap), then
- slope |i + off - j|; a row with no visible key outputs 0 (lse -inf here:
FlashAttention's own lse for such rows is not what this checks)."""
import numpy as np

from torch import Tensor

__version__ = "2.6.3+fake"


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    dtype = q.array.dtype
    if dtype not in (np.float16,):
        raise RuntimeError("FlashAttention only supports fp16 and bf16")
    slopes = None if alibi_slopes is None else alibi_slopes.array
    out, lse = _attend(q.array, k.array, v.array, softmax_scale, causal, window_size, softcap, slopes)

    def backward(dout):
        grads = _attend_backward(q.array, k.array, v.array, dout, softmax_scale, causal, window_size, softcap, slopes)
        return tuple(g.astype(dtype) for g in grads)

    out = Tensor(out.astype(dtype), backward)
    return (out, Tensor(lse.astype(np.float32)), None) if return_attn_probs else out


def _per_sequence_slopes(alibi_slopes, b):
    if alibi_slopes is None:
        return None
    slopes = alibi_slopes.array
    return slopes[b] if slopes.ndim == 2 else slopes


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """Packed rows [total, H, d]; sequence b is rows cu_seqlens[b] ..
    cu_seqlens[b+1]-1, aligned bottom-right on its own lengths; lse
    [H, total_q]."""
    dtype = q.array.dtype
    if dtype not in (np.float16,):
        raise RuntimeError("FlashAttention only supports fp16 and bf16")
    cu_q, cu_k = cu_seqlens_q.array, cu_seqlens_k.array
    if cu_q.dtype != np.int32 or cu_k.dtype != np.int32:
        raise RuntimeError("cu_seqlens_q must have dtype int32")
    total_q, heads = q.array.shape[0], q.array.shape[1]
    if cu_q[-1] != total_q:
        raise RuntimeError("cu_seqlens_q[-1] must be the total number of query rows")
    out = np.zeros((total_q, heads, v.array.shape[-1]))
    lse = np.full((heads, total_q), -np.inf)
    for b in range(len(cu_q) - 1):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        o, l = _attend(q.array[None, rows], k.array[None, keys], v.array[None, keys], softmax_scale, causal,
                       window_size, softcap, _per_sequence_slopes(alibi_slopes, b))
        out[rows], lse[:, rows] = o[0], l[0]
    out = Tensor(out.astype(dtype))
    return (out, Tensor(lse.astype(np.float32)), None) if return_attn_probs else out


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None, cache_seqlens=None,
                            cache_batch_idx=None, cache_leftpad=None, block_table=None, softmax_scale=None,
                            causal=False, window_size=(-1, -1), softcap=0.0, rotary_interleaved=True,
                            alibi_slopes=None, num_splits=0, return_softmax_lse=False):
    """q [B, L, H, d]; the new k, v [B, n, Hk, d] written into the cache in
    place at cache_seqlens[b] (through block_table when paged, pages of a
    multiple of 256 rows); sequence b attends its cache_seqlens[b] + n
    keys, aligned bottom-right; lse [B, H, L]."""
    dtype = q.array.dtype
    if dtype not in (np.float16,):
        raise RuntimeError("FlashAttention only supports fp16 and bf16")
    seqlens = cache_seqlens.array
    if seqlens.dtype != np.int32:
        raise RuntimeError("cache_seqlens must have dtype int32")
    paged = block_table is not None
    if paged and k_cache.array.shape[1] % 256 != 0:
        raise RuntimeError("Paged KV cache block size must be divisible by 256")
    new = 0 if k is None else k.array.shape[1]

    def slot(b, t):  # where slot t of sequence b lives in the cache
        if not paged:
            return b, t
        page_size = k_cache.array.shape[1]
        return block_table.array[b, t // page_size], t % page_size

    batch = q.array.shape[0]
    for b in range(batch):  # the in-place append
        for t in range(new):
            where = slot(b, seqlens[b] + t)
            k_cache.array[where] = k.array[b, t]
            v_cache.array[where] = v.array[b, t]
    out = np.zeros(q.array.shape[:3] + (v_cache.array.shape[-1],))
    lse = np.full((batch, q.array.shape[2], q.array.shape[1]), -np.inf)
    for b in range(batch):
        places = [slot(b, t) for t in range(seqlens[b] + new)]
        keys = np.array([k_cache.array[p] for p in places]).reshape((-1,) + k_cache.array.shape[2:])
        values = np.array([v_cache.array[p] for p in places]).reshape((-1,) + v_cache.array.shape[2:])
        o, l = _attend(q.array[None, b], keys[None], values[None], softmax_scale, causal, window_size, softcap,
                       _per_sequence_slopes(alibi_slopes, b))
        out[b], lse[b] = o[0], l[0]
    out = Tensor(out.astype(dtype))
    return (out, Tensor(lse.astype(np.float32))) if return_softmax_lse else out


def _scores(q, k, v, softmax_scale, causal, window_size, softcap, slopes):
    """[B, S, H, d] arrays to q, k, v as [B, H, S, d] float64 (k and v
    repeated per query head), the scaled logits before the softcap, the
    scores and the visible keys [L, S], and the scale."""
    q, k, v = (np.swapaxes(t, 1, 2).astype(np.float64) for t in (q, k, v))  # to [B, H, S, d]
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    L, S = q.shape[2], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1 / np.sqrt(q.shape[-1])
    scaled = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    score = softcap * np.tanh(scaled / softcap) if softcap > 0 else scaled
    i, j = np.arange(L)[:, None] + (S - L), np.arange(S)[None, :]
    if slopes is not None:
        slopes = slopes[:, :, None, None] if slopes.ndim == 2 else slopes[None, :, None, None]
        score = score - slopes * np.abs(i - j)
    left, right = window_size
    right = 0 if causal else right
    visible = np.ones((L, S), dtype=bool)
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
    return q, k, v, scaled, score, visible, scale


def _attend(q, k, v, softmax_scale, causal, window_size, softcap, slopes):
    """[B, S, H, d] arrays to the output [B, L, H, d] and lse [B, H, L] in
    float64."""
    q, k, v, _, score, visible, _ = _scores(q, k, v, softmax_scale, causal, window_size, softcap, slopes)
    B, H, L = q.shape[0], q.shape[1], q.shape[2]
    out = np.zeros((B, H, L, v.shape[-1]))
    lse = np.full((B, H, L), -np.inf)
    for row in np.ndindex(B, H, L):
        keys = visible[row[2]]
        if keys.any():
            x = score[row][keys]
            top = x.max()
            w = np.exp(x - top)
            out[row] = (w / w.sum()) @ v[row[0], row[1]][keys]
            lse[row] = top + np.log(w.sum())
    return np.swapaxes(out, 1, 2), lse


def _attend_backward(q, k, v, dout, softmax_scale, causal, window_size, softcap, slopes):
    """The gradients of _attend's function for dO [B, L, H, d], in float64
    (the textbook backward, standing in for FlashAttention 2's kernel): dq
    [B, L, H, d], dk and dv [B, S, Hkv, d], summed over each kv head's
    query heads."""
    kv_heads = k.shape[2]
    q, k, v, scaled, score, visible, scale = _scores(q, k, v, softmax_scale, causal, window_size, softcap, slopes)
    dout = np.swapaxes(dout, 1, 2).astype(np.float64)
    B, H, L = q.shape[0], q.shape[1], q.shape[2]
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for row in np.ndindex(B, H, L):
        keys = visible[row[2]]
        if not keys.any():
            continue
        x = score[row][keys]
        w = np.exp(x - x.max())
        w /= w.sum()
        dp = v[row[0], row[1]][keys] @ dout[row]
        ds = w * (dp - w @ dp) * scale
        if softcap > 0:
            ds *= 1 - np.tanh(scaled[row][keys] / softcap) ** 2
        dq[row] = ds @ k[row[0], row[1]][keys]
        dk[row[0], row[1]][keys] += np.outer(ds, q[row])
        dv[row[0], row[1]][keys] += np.outer(w, dout[row])
    per_kv_head = lambda t: t.reshape(B, kv_heads, H // kv_heads, *t.shape[2:]).sum(axis=2)
    return np.swapaxes(dq, 1, 2), np.swapaxes(per_kv_head(dk), 1, 2), np.swapaxes(per_kv_head(dv), 1, 2)
