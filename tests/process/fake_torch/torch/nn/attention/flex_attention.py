"""FlexAttention as PyTorch 2.5 documents it, in NumPy (tests only): the
score is q.k times the scale, then score_mod(score, b, h, q_idx, kv_idx);
keys the block mask's mask_mod rejects get no weight; a row with none
outputs 0 and lse -inf. score_mod and mask_mod are called once, on index
arrays broadcast over [B, H, L, S], where PyTorch vmaps them."""
import numpy as np

from ... import Tensor


class BlockMask:
    def __init__(self, mask_mod, shape):
        self.mask_mod, self.shape = mask_mod, shape


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None):
    return BlockMask(mask_mod, (B, H, Q_LEN, KV_LEN))


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False):
    q, k, v = query.array, key.array, value.array
    group = q.shape[1] // k.shape[1]
    if group != 1 and not enable_gqa:
        raise RuntimeError("head counts differ without enable_gqa")
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    B, H, L, S = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    scale = scale if scale is not None else 1 / np.sqrt(q.shape[-1])
    score = np.matmul(q.astype(np.float64), np.swapaxes(k, -1, -2).astype(np.float64)) * scale
    index = np.ix_(np.arange(B), np.arange(H), np.arange(L), np.arange(S))
    if score_mod is not None:
        score = np.broadcast_to(score_mod(score, *index), score.shape)
    visible = np.ones(score.shape, dtype=bool)
    if block_mask is not None:
        visible = np.broadcast_to(block_mask.mask_mod(*index), score.shape)
    out = np.zeros((B, H, L, v.shape[-1]))
    lse = np.full((B, H, L), -np.inf)
    for row in np.ndindex(B, H, L):
        keys = visible[row]
        if keys.any():
            x = score[row][keys]
            with np.errstate(invalid="ignore", over="ignore"):
                top = x.max()
                w = np.exp(x - top)
                out[row] = (w / w.sum()) @ v[row[0], row[1]][keys]
                lse[row] = top + np.log(w.sum())
    out = Tensor(out.astype(q.dtype))
    return (out, Tensor(lse.astype(np.float32))) if return_lse else out
