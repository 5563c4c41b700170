import numpy as np

from ... import Tensor


def causal_lower_right(q_len, kv_len):
    return Tensor(np.arange(kv_len)[None, :] <= np.arange(q_len)[:, None] + (kv_len - q_len))
