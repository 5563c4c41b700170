"""A stand-in for the flash_attn package (FlashAttention 2.6), in NumPy, for
tests only: flash_attn_func as its docstring defines it. Layout [B, S, H,
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
    q, k, v = (np.swapaxes(t.array, 1, 2).astype(np.float64) for t in (q, k, v))  # to [B, H, S, d]
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    B, H, L, S = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1 / np.sqrt(q.shape[-1])
    score = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if softcap > 0:
        score = softcap * np.tanh(score / softcap)
    i, j = np.arange(L)[:, None] + (S - L), np.arange(S)[None, :]
    if alibi_slopes is not None:
        slopes = alibi_slopes.array
        slopes = slopes[:, :, None, None] if slopes.ndim == 2 else slopes[None, :, None, None]
        score = score - slopes * np.abs(i - j)
    left, right = window_size
    right = 0 if causal else right
    visible = np.ones((L, S), dtype=bool)
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
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
    out = Tensor(np.swapaxes(out, 1, 2).astype(dtype))
    return (out, Tensor(lse.astype(np.float32)), None) if return_attn_probs else out
