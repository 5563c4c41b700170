#!/usr/bin/env python3
"""Finding 13's measurement (docs/findings/pytorch-2.15.md): does PyTorch's
CPU flash-attention backward round dV into the input type once per block
of queries?

    .venv/bin/python adapters/pytorch/flash_backward_blocks_probe.py --dtype bfloat16

For each query length L it runs SDPA's FLASH_ATTENTION backend forward and
backward on random bfloat16 (or float16) inputs, then rebuilds dV = P^T dO
from the exact weights rounded to the input type, summing each block of
`block` query rows exactly and rounding the running dV to the input type
after every block (block = all rows: one rounding at the end, what the
declared class allows). It prints, per L and block size, the share of dV
elements equal to the kernel's. The block size that matches (nearly) all
of them is the kernel's; the rest differ where the kernel's float32 exp
of a weight lands on the other side of a rounding boundary.
"""
import argparse
import math
import sys

BLOCKS = (16, 32, 64, 128, 256)
LENGTHS = (16, 32, 33, 64, 65, 128, 191, 192, 256, 512, 767, 768, 1024)


def rounded(torch, x, dtype):
    """x rounded to dtype through float32, back in float64."""
    return x.to(torch.float32).to(dtype).to(torch.float64)


def blockwise_dv(torch, p_stored, dout, block, dtype):
    """sum_i P[i]^T dO[i], the running sum rounded to dtype after each block of rows."""
    dv = torch.zeros(p_stored.shape[1], dout.shape[1], dtype=torch.float64)
    for start in range(0, p_stored.shape[0], block):
        dv = rounded(torch, dv + p_stored[start:start + block].T @ dout[start:start + block], dtype)
    return dv


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    parser.add_argument("--kv-len", type=int, default=40)
    parser.add_argument("--head-dim", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    S, d = args.kv_len, args.head_dim
    print("torch %s, %s, S = %d, d = %d, seed %d" % (torch.__version__, args.dtype, S, d, args.seed))
    print("share of dV elements equal to the kernel's, by the block of query rows after which dV is rounded")
    print("%6s  %s  %s" % ("L", "  ".join("%5d" % b for b in BLOCKS), "once (the declared class)"))
    for L in LENGTHS:
        q, dout = (torch.randn(1, 1, L, d).to(dtype) for _ in range(2))
        k, v = (torch.randn(1, 1, S, d).to(dtype) for _ in range(2))
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            out = torch.nn.functional.scaled_dot_product_attention(*leaves)
        out.backward(dout)
        kernel_dv = leaves[2].grad[0, 0].to(torch.float64)
        logits = q[0, 0].double() @ k[0, 0].double().T / math.sqrt(d)
        p_stored = rounded(torch, torch.softmax(logits, -1), dtype)  # P stored in the input type
        dout64 = dout[0, 0].double()
        shares = [(blockwise_dv(torch, p_stored, dout64, b, dtype) == kernel_dv).double().mean().item()
                  for b in BLOCKS + (L,)]
        print("%6d  %s  %5.3f" % (L, "  ".join("%5.3f" % s for s in shares[:-1]), shares[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
