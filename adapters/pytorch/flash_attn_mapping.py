"""The spec's features (spec/SPEC.md section 2) as arguments of the
flash_attn package's flash_attn_func (FlashAttention 2, >= 2.6: softcap),
for adapters/pytorch/torch_adapter.py --backend flash_attn.

FlashAttention aligns everything bottom-right (off = S - L): causal is
j <= i + off, window_size = (left, right) with -1 for an unbounded side is
the spec's window (left, right, bottom_right), and alibi_slopes ([Hq] or
[B, Hq], float32) add -slope |i + off - j| after the softcap, as section
2.3 does. It takes no mask, no sinks and no descales (FlashAttention 3's
fp8 interface does; not mapped here), one head size for q, k and v, and
float16 or bfloat16 inputs on a GPU. Layout: [B, L, H, d], so q, k and v
are transposed on the way in and the output on the way out; the lse comes
back as [B, Hq, L] (natural log, float32).
"""


def run_flash_attn(torch, np, case, directory, q, k, v, device):
    """FlashAttention's output [B, Hq, L, d] and lse [B, Hq, L] for the case."""
    import os
    from flash_attn import flash_attn_func
    window = case.get("window")
    side = lambda value: -1 if value is None else value
    options = {
        "causal": case["causal"] == "bottom_right",
        "window_size": (side(window["left"]), side(window["right"])) if window else (-1, -1),
        "softcap": case["softcap"] if case["softcap"] is not None else 0.0,
        "return_attn_probs": True,
    }
    if case["scale"] is not None:
        options["softmax_scale"] = case["scale"]
    if case.get("alibi"):
        slopes = np.load(os.path.join(directory, "alibi_slopes.npy"))
        options["alibi_slopes"] = torch.from_numpy(slopes).to(device).to(torch.float32)
    bshd = lambda x: x.transpose(1, 2).contiguous()
    out, lse, _ = flash_attn_func(bshd(q), bshd(k), bshd(v), **options)
    return out.transpose(1, 2), lse
