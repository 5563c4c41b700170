"""FlexAttention as PyTorch 2.5 documents it, in NumPy (tests only): the
score is q.k times the scale, then score_mod(score, b, h, q_idx, kv_idx);
keys the block mask's mask_mod rejects get no weight; a row with none
outputs 0 and lse -inf. score_mod and mask_mod are called once, on index
arrays broadcast over [B, H, L, S], where PyTorch vmaps them. The output
carries the textbook backward (torch.autograd.grad), score_mod's
derivative taken by a complex step where PyTorch's autograd traces it."""
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
    slope = np.ones(score.shape)  # d score_mod / d score
    if score_mod is not None:
        step = 1e-30  # exact to float64 for analytic score_mods (softcap's tanh, ALiBi's and the mask's sums)
        slope = np.broadcast_to(np.imag(score_mod(score + step * 1j, *index)) / step, score.shape)
        score = np.broadcast_to(score_mod(score, *index), score.shape)
    visible = np.ones(score.shape, dtype=bool)
    if block_mask is not None:
        visible = np.broadcast_to(block_mask.mask_mod(*index), score.shape)
    out = np.zeros((B, H, L, v.shape[-1]))
    lse = np.full((B, H, L), -np.inf)
    weights = np.zeros(score.shape)
    for row in np.ndindex(B, H, L):
        keys = visible[row]
        if keys.any():
            x = score[row][keys]
            with np.errstate(invalid="ignore", over="ignore"):
                top = x.max()
                w = np.exp(x - top)
                weights[row][keys] = w / w.sum()
                out[row] = weights[row][keys] @ v[row[0], row[1]][keys]
                lse[row] = top + np.log(w.sum())

    def backward(dout):
        # Over visible keys; dK and dV summed over each kv head's query
        # heads, as autograd does through enable_gqa.
        dout = dout.astype(np.float64)
        dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
        for row in np.ndindex(B, H, L):
            keys = visible[row]
            if not keys.any():
                continue
            w = weights[row][keys]
            dp = v[row[0], row[1]][keys].astype(np.float64) @ dout[row]
            ds = w * (dp - w @ dp) * slope[row][keys] * scale
            dq[row] = ds @ k[row[0], row[1]][keys]
            dk[row[0], row[1]][keys] += np.outer(ds, q[row])
            dv[row[0], row[1]][keys] += np.outer(w, dout[row])
        per_kv_head = lambda t: t.reshape(t.shape[0], t.shape[1] // group, group, *t.shape[2:]).sum(axis=2)
        return tuple(g.astype(q.dtype) for g in (dq, per_kv_head(dk), per_kv_head(dv)))

    out = Tensor(out.astype(q.dtype), backward)
    return (out, Tensor(lse.astype(np.float32))) if return_lse else out
