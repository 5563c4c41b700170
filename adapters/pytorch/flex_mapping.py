"""The spec's features (spec/SPEC.md section 2) as PyTorch FlexAttention
arguments, for adapters/pytorch/torch_adapter.py --backend flex.

FlexAttention (torch.nn.attention.flex_attention, PyTorch >= 2.5) takes the
visibility rules as a mask_mod (a block mask) and everything added to the
logits as a score_mod applied to the scaled score, so every feature but
sinks and descales maps onto it without computing anything outside it:

- bool mask, the -inf entries of an additive mask, causal masking and
  sliding windows of either alignment: mask_mod (key j visible to query i
  iff j <= i + off for causal, i + off - left <= j <= i + off + right for a
  window; off = 0 top-left, S - L bottom-right);
- softcap, then ALiBi (-slope |i + off - j|) and the finite additive mask
  entries: score_mod, in that order (section 2.3: after the scale and the
  softcap, beside the additive mask).

A row with no visible key: FlexAttention outputs 0 and an lse of -inf,
which is the spec's.

The softcap travels as a 0-d tensor in the scores' type, not a Python
float: FlexAttention runs score_mod under torch.compile even in eager
mode, and PyTorch 2.15's dynamo turns a captured float that changes
between calls into a SymFloat, which flex_attention's higher-order op
rejects ("can only be of (Tensor, int, SymInt)"), so every softcap case
after the first raised TorchRuntimeError.

The backward (SPEC 2.6) is autograd's through the same call: score_mod
is differentiated where it is traced (softcap's tanh; ALiBi and the
additive mask add constants).
"""


def offset(case, alignment):
    return case["kv_len"] - case["q_len"] if alignment == "bottom_right" else 0


def flex_arguments(torch, np, case, directory, device, float64_inputs):
    """(score_mod, mask_mod) for the case, each None when it has nothing to do."""
    import os
    # FlexAttention computes its scores in float64 for float64 inputs, else in float32.
    score_type = np.float64 if float64_inputs else np.float32
    load = lambda name: torch.from_numpy(np.load(os.path.join(directory, name + ".npy"))).to(device)
    mask = load("mask") if case["mask"] else None
    if mask is not None and case["mask"] == "additive":
        # In the scores' type: a float64 mask would turn score_mod's result
        # into float64, which eager FlexAttention follows (scores in float64
        # where the kernel's are float32) and inductor's CPU kernel gets
        # wrong (docs/findings/pytorch-2.15.md, finding 23). The case's
        # mask values are numbers of the input format, exact in either.
        mask = mask.to(torch.float64 if float64_inputs else torch.float32)
    mask_batch, mask_heads = (mask.shape[0], mask.shape[1]) if mask is not None else (1, 1)
    # The slopes are float32 numbers; in the scores' type, so that the bias
    # slope * |i + off - j| is computed in it: float32 slopes rounded that
    # product to float32 in float64 cases (what finding 25 first was).
    slopes = load("alibi_slopes").to(torch.float64 if float64_inputs else torch.float32) if case.get("alibi") else None
    causal, window, softcap = case["causal"], case.get("window"), case["softcap"]
    # [()] reads the 0-d tensor as a value inside score_mod (a 0-d tensor
    # for PyTorch, a scalar for the tests' NumPy stand-in).
    cap = torch.from_numpy(np.array(softcap, dtype=score_type)).to(device) if softcap is not None else None

    def mask_entry(tensor, b, h, q_idx, kv_idx):
        return tensor[b if mask_batch > 1 else 0, h if mask_heads > 1 else 0, q_idx, kv_idx]

    def mask_mod(b, h, q_idx, kv_idx):
        visible = q_idx >= 0
        if mask is not None:
            entry = mask_entry(mask, b, h, q_idx, kv_idx)
            visible = visible & (entry if case["mask"] == "bool" else entry != -float("inf"))
        if causal:
            visible = visible & (kv_idx <= q_idx + offset(case, causal))
        if window:
            off = offset(case, window["alignment"])
            if window["left"] is not None:
                visible = visible & (kv_idx >= q_idx + off - window["left"])
            if window["right"] is not None:
                visible = visible & (kv_idx <= q_idx + off + window["right"])
        return visible

    def score_mod(score, b, h, q_idx, kv_idx):
        if softcap is not None:
            score = cap[()] * torch.tanh(score / cap[()])
        if slopes is not None:
            slope = slopes[b, h] if slopes.dim() == 2 else slopes[h]
            score = score - slope * torch.abs(q_idx + offset(case, case["alibi"]["alignment"]) - kv_idx)
        if mask is not None and case["mask"] == "additive":
            entry = mask_entry(mask, b, h, q_idx, kv_idx)
            score = score + torch.where(entry == -float("inf"), 0.0, entry)  # its -inf entries are mask_mod's
        return score

    has_mask = mask is not None or causal or window
    has_score = softcap is not None or slopes is not None or (mask is not None and case["mask"] == "additive")
    return (score_mod if has_score else None), (mask_mod if has_mask else None)


def run_flex(torch, np, case, directory, q, k, v, device, compiled=False):
    """FlexAttention's output and lse for the case (the lse None when
    compiled for the CPU, where inductor's kernel returns none)."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    score_mod, mask_mod = flex_arguments(torch, np, case, directory, device, q.dtype == torch.float64)
    block_mask = None
    if mask_mod is not None:
        block_mask = create_block_mask(mask_mod, case["batch"], case["q_heads"], case["q_len"], case["kv_len"],
                                       device=device)
    options = {"enable_gqa": case["q_heads"] != case["kv_heads"]}
    if case["scale"] is not None:
        options["scale"] = case["scale"]
    if not compiled:
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, return_lse=True, **options)
    from flex_compile import compiled_flex_attention, timed_call
    lse_too = device != "cpu"
    result = timed_call(torch, compiled_flex_attention(torch), q, k, v, score_mod=score_mod, block_mask=block_mask,
                        return_lse=lse_too, **options)
    return result if lse_too else (result, None)
