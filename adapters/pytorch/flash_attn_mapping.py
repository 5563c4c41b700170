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

The layouts of spec/SPEC.md section 2.5 (attnspec-packed/1 cases) go to
FlashAttention's own layout entry points, whose conventions they follow:
flash_attn_varlen_func (packed rows, cu_seqlens_q / cu_seqlens_k int32,
lse [Hq, total_q]) and flash_attn_with_kvcache (cache_seqlens int32, the
new keys appended in place into the cache, a paged cache through
block_table, lse [B, Hq, L]). FlashAttention 2 takes pages of a multiple
of 256 rows only ("page_block_size must be a multiple of 256"): other
page sizes are declined.
"""
import os

PAGE_SIZE_MULTIPLE = 256


def _options(torch, np, case, directory, device):
    """The shared options as flash_attn keyword arguments."""
    window = case.get("window")
    side = lambda value: -1 if value is None else value
    options = {
        "causal": case["causal"] == "bottom_right",
        "window_size": (side(window["left"]), side(window["right"])) if window else (-1, -1),
        "softcap": case["softcap"] if case["softcap"] is not None else 0.0,
    }
    if case["scale"] is not None:
        options["softmax_scale"] = case["scale"]
    if case.get("alibi"):
        slopes = np.load(os.path.join(directory, "alibi_slopes.npy"))
        options["alibi_slopes"] = torch.from_numpy(slopes).to(device).to(torch.float32)
    return options


def run_flash_attn(torch, np, case, directory, q, k, v, device):
    """FlashAttention's output [B, Hq, L, d] and lse [B, Hq, L] for the case."""
    from flash_attn import flash_attn_func
    bshd = lambda x: x.transpose(1, 2).contiguous()
    out, lse, _ = flash_attn_func(bshd(q), bshd(k), bshd(v), return_attn_probs=True,
                                  **_options(torch, np, case, directory, device))
    return out.transpose(1, 2), lse


def run_flash_attn_backward(torch, np, case, directory, q, k, v, dout, device):
    """dQ [B, Hq, L, d], dK and dV [B, Hkv, S, d] for dO: autograd through
    flash_attn_func, which runs FlashAttention's own backward kernel."""
    from flash_attn import flash_attn_func
    leaves = [x.transpose(1, 2).contiguous().detach().requires_grad_(True) for x in (q, k, v)]
    out = flash_attn_func(*leaves, **_options(torch, np, case, directory, device))
    grads = torch.autograd.grad(out, leaves, grad_outputs=dout.transpose(1, 2).contiguous())
    return [grad.transpose(1, 2) for grad in grads]


def run_flash_attn_varlen(torch, np, case, directory, to_tensor):
    """flash_attn_varlen_func on a packed batch: output [rows_q, Hq, d] and
    lse [Hq, rows_q] as NumPy arrays, padding rows 0 and NaN (FlashAttention
    reads rows up to cu_seqlens[-1] only, so the padding stays out of it)."""
    from flash_attn import flash_attn_varlen_func
    q, k, v = (np.load(os.path.join(directory, name + ".npy")) for name in ("q", "k", "v"))
    cu_q, cu_k = np.asarray(case["cu_seqlens_q"], dtype=np.int32), np.asarray(case["cu_seqlens_k"], dtype=np.int32)
    total_q, total_k = int(cu_q[-1]), int(cu_k[-1])
    lengths_q, lengths_k = np.diff(cu_q), np.diff(cu_k)
    out, lse, _ = flash_attn_varlen_func(
        to_tensor(q[:total_q]), to_tensor(k[:total_k]), to_tensor(v[:total_k]), to_tensor(cu_q, integer=True),
        to_tensor(cu_k, integer=True), int(lengths_q.max(initial=0)), int(lengths_k.max(initial=0)),
        return_attn_probs=True, **_options(torch, np, case, directory, to_tensor.device))
    full_out = np.zeros((q.shape[0], case["q_heads"], case["d_v"]))
    full_lse = np.full((case["q_heads"], q.shape[0]), np.nan)
    full_out[:total_q] = out.to(torch.float32).cpu().numpy()
    full_lse[:, :total_q] = lse.to(torch.float32).cpu().numpy()
    return full_out, full_lse


def run_flash_attn_with_kvcache(torch, np, case, directory, to_tensor):
    """flash_attn_with_kvcache: output [B, L, Hq, d] and lse [B, Hq, L] as
    NumPy arrays, or a reason to decline the case. The cache tensors are
    fresh copies, so that its in-place append changes nothing of attnspec's."""
    from flash_attn import flash_attn_with_kvcache
    page_size = case["page_size"]
    if page_size is not None and page_size % PAGE_SIZE_MULTIPLE != 0:
        return "FlashAttention 2 takes pages of a multiple of %d rows, not %d" % (PAGE_SIZE_MULTIPLE, page_size)
    load = lambda name: np.load(os.path.join(directory, name + ".npy"))
    options = _options(torch, np, case, directory, to_tensor.device)
    if case["new_len"] > 0:
        options["k"], options["v"] = to_tensor(load("k_new")), to_tensor(load("v_new"))
    if page_size is not None:
        options["block_table"] = to_tensor(np.asarray(case["block_table"], dtype=np.int32), integer=True)
    out, lse = flash_attn_with_kvcache(
        to_tensor(load("q")), to_tensor(load("k_cache")), to_tensor(load("v_cache")),
        cache_seqlens=to_tensor(np.asarray(case["cache_seqlens"], dtype=np.int32), integer=True),
        return_softmax_lse=True, **options)
    return out.to(torch.float32).cpu().numpy(), lse.to(torch.float32).cpu().numpy()
