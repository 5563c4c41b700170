#!/usr/bin/env python3
"""attnspec-process/1 adapter for PyTorch >= 2:
torch.nn.functional.scaled_dot_product_attention, with a chosen backend,
number format and device (spec/SPEC.md section 8).

    attnspec run --kernel 'cmd:python3 adapters/pytorch/torch_adapter.py --dtype bfloat16 --device cuda --backend flash'

--backend: default (PyTorch picks), math, flash, efficient, cudnn (SDPA;
the fused ones need a GPU), or flex: FlexAttention (PyTorch >= 2.5), which
also takes sliding windows of both alignments, ALiBi and softcap, and returns
the lse (adapters/pytorch/flex_mapping.py says how each maps onto its
score_mod and block mask; --compile runs torch.compile(flex_attention),
inductor's fused kernel, as adapters/pytorch/flex_compile.py describes,
instead of the eager composition); or flash_attn: the flash_attn package's
flash_attn_func (FlashAttention 2 >= 2.6, float16/bfloat16 on a GPU), which
takes bottom-right causal masking, windows and ALiBi, softcap and returns
the lse (adapters/pytorch/flash_attn_mapping.py), and the layouts through
flash_attn_varlen_func and flash_attn_with_kvcache (contiguous or paged
caches; FlashAttention 2's pages are multiples of 256 rows, other page
sizes are declined). What the adapter declares follows the installed
version: an explicit scale from 2.1, bottom-right causal masks from 2.1
(torch.nn.attention.bias), grouped-query heads from 2.5 (enable_gqa), and
zeros for fully masked rows from 2.5. The SDPA backends also take the
backward (SPEC 2.6): torch.autograd.grad of the output with dO, the
backend's own backward kernel (FlashAttention 2's for flash, storing P and
dS in the input type, declared as the gradient storage format), and so
do flex (autograd through FlexAttention and its score_mod: on a GPU its
generated backward kernel, P and dS in the input type as well) and
flash_attn (flash_attn_func's own backward kernel). PyTorch refuses a mask together with
is_causal, so with a mask the causal blocks are folded into it (the one
piece of glue; declining such cases made a fifth of the suite's cases
unjudged, which is INCOMPLETE).
"""
import argparse
import json
import os
import sys

FORMATS = ("float64", "float32", "float16", "bfloat16")
BACKENDS = ("default", "math", "flash", "efficient", "cudnn", "flex", "flash_attn")


def version_at_least(torch, major, minor):
    parts = torch.__version__.split("+")[0].split(".")
    return (int(parts[0]), int(parts[1])) >= (major, minor)


def backend_context(torch, backend):
    """A context manager that restricts SDPA to one backend."""
    import contextlib
    if backend == "default":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # PyTorch >= 2.3
        names = {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION"}
        return sdpa_kernel(getattr(SDPBackend, names[backend]))
    except ImportError:
        flags = {name: name == backend for name in ("math", "flash", "efficient")}
        if backend == "cudnn":
            raise SystemExit("torch_adapter: the cudnn backend needs PyTorch >= 2.3")
        return torch.backends.cuda.sdp_kernel(enable_math=flags["math"], enable_flash=flags["flash"],
                                              enable_mem_efficient=flags["efficient"])


def flex_hello(torch, args):
    """FlexAttention: scores and softmax in float32 for 16-bit inputs,
    the weights P rounded to the input type for P V (a weights format,
    SPEC 6.4, scale 1). Eager, it runs PyTorch's unfused composition
    (torch/_higher_order_ops/flex_attention.py, math_attention:
    `post_mod_scores.to(query.dtype) @ value`); compiled on the CPU,
    inductor's C++ flash template
    (torch/_inductor/codegen/cpp_flex_attention_template.py), whose online
    softmax writes P in the input type (online_softmax_row's p_row) and
    which returns no lse ("torch.compile on CPU only supports inference
    and `return_lse` is not supported yet", flex_cpu.py)."""
    narrow = args.dtype in ("float16", "bfloat16")
    cpu_compiled = args.compile and args.device == "cpu"
    accumulate = "float32" if narrow else args.dtype
    formats = {"input": args.dtype, "accumulate": accumulate, "output": args.dtype}
    if narrow and args.device == "cpu":
        formats["weights"] = args.dtype
        formats["weights_scale"] = 1
    if narrow:  # its backward kernel casts P and dS to the inputs' type for the tensor cores' products
        formats["gradient_storage"] = args.dtype
    both = ["top_left", "bottom_right"]
    return {
        "protocol": 1,
        "name": "torch-%s-flex%s-%s-%s" % (torch.__version__.split("+")[0], "-compiled" if args.compile else "",
                                         args.device, args.dtype),
        "formats": formats,
        "capabilities": {"masks": ["bool", "additive"], "causal": both, "window": both, "alibi": both,
                         "gqa": True, "scale": True, "softcap": True,
                         # A value head size of its own from PyTorch 2.6.
                         "dv_ne_dk": version_at_least(torch, 2, 6), "lse": not cpu_compiled,
                         "fully_masked_rows": True,
                         # PyTorch 2.15 on the CPU: "FlexAttention does not
                         # support backward on CPU" (NotImplementedError).
                         "backward": args.device != "cpu"},
    }


def flash_attn_hello(torch, args):
    """FlashAttention 2: bottom-right alignment only, no masks, softmax in float32."""
    import flash_attn
    right = ["bottom_right"]
    return {
        "protocol": 1,
        "name": "flash_attn-%s-%s-%s" % (flash_attn.__version__, args.device, args.dtype),
        # Its backward kernel feeds P and dS to the tensor cores in the input type.
        "formats": {"input": args.dtype, "accumulate": "float32", "output": args.dtype,
                    "gradient_storage": args.dtype},
        "capabilities": {"causal": right, "window": right, "alibi": right, "gqa": True, "scale": True,
                         "softcap": True, "dv_ne_dk": False, "lse": True, "fully_masked_rows": True,
                         "backward": True,
                         # flash_attn_varlen_func and flash_attn_with_kvcache
                         # (flash_attn_mapping.py); pages of 256k rows only.
                         "varlen": True, "kv_cache": True, "paged_kv_cache": True},
    }


def hello(torch, args):
    if args.backend == "flex":
        return flex_hello(torch, args)
    if args.backend == "flash_attn":
        return flash_attn_hello(torch, args)
    # What each backend does with 16-bit inputs (read in PyTorch 2.15's
    # source): the math composition computes in float32 unless
    # allow_fp16_bf16_reduction_math_sdp is set (aten/src/ATen/native/
    # transformers/attention.cpp upcasts q, k, v), and so does its autograd
    # backward; the CPU flash kernel (aten/src/ATen/native/cpu/
    # FlashAttentionKernel.cpp) sums the row's denominator from its float32
    # weights and rounds them to the input type for P V (a weights format,
    # SPEC 6.4, scale 1), and its backward stores P and dS in the input
    # type; the fused GPU kernels keep the softmax in float32 and feed P
    # and dS to the tensor cores in the input type.
    narrow = args.dtype in ("float16", "bfloat16")
    cpu = args.device == "cpu"
    cpu_flash = args.backend in ("flash", "default") and cpu  # PyTorch's CPU default is flash where it applies
    fused = args.backend in ("flash", "efficient", "cudnn") or (args.backend == "default" and not cpu)
    # Before the flag existed the math composition computed in the input type.
    allowed = getattr(getattr(getattr(torch, "backends", None), "cuda", None), "fp16_bf16_reduction_math_sdp_allowed", None)
    reduced_math = allowed() if allowed else True
    wide_math = args.backend == "math" and not reduced_math
    accumulate = "float32" if narrow and (fused or wide_math or cpu_flash) else args.dtype
    formats = {"input": args.dtype, "accumulate": accumulate, "output": args.dtype}
    if cpu_flash and narrow:
        formats["weights"] = args.dtype
        formats["weights_scale"] = 1
    if (fused or cpu_flash) and narrow:  # their backward kernels store P and dS in the input type
        formats["gradient_storage"] = args.dtype
    new = version_at_least(torch, 2, 5)
    causal = ["top_left"] + (["bottom_right"] if version_at_least(torch, 2, 1) else [])
    return {
        "protocol": 1,
        "name": "torch-%s-%s-%s-%s" % (torch.__version__.split("+")[0], args.backend, args.device, args.dtype),
        "formats": formats,
        "capabilities": {"masks": ["bool", "additive"], "causal": causal, "gqa": new,
                         "scale": version_at_least(torch, 2, 1), "softcap": False,
                         # The CPU flash kernel takes one head size for q, k and v.
                         "dv_ne_dk": not (cpu and args.backend == "flash"),
                         "lse": False, "fully_masked_rows": new, "backward": True},
    }


def save(np, directory, name, array, carrier):
    """Writes NAME.npy in C order: PyTorch's gradients (the CPU flash
    kernel's dQ) can be strided views, and .numpy() keeps their order."""
    np.save(os.path.join(directory, name + ".npy"), np.ascontiguousarray(array, dtype=carrier))


class ToTensor:
    """NumPy arrays to tensors of the adapter's dtype on its device
    (integer ones, offsets and tables, keep their int32)."""

    def __init__(self, torch, np, args):
        self.torch, self.np, self.device = torch, np, args.device
        self.dtype = getattr(torch, args.dtype)

    def __call__(self, array, integer=False):
        tensor = self.torch.from_numpy(self.np.ascontiguousarray(array)).to(self.device)
        return tensor if integer else tensor.to(self.dtype)


def run_packed(torch, np, directory, args, kind):
    """An attnspec-packed/1 case (spec/SPEC.md section 8): the layouts, for
    the flash_attn backend, which declares them."""
    with open(os.path.join(directory, "case.json")) as f:
        case = json.load(f)
    if args.backend != "flash_attn" or kind not in ("varlen", "kv_cache"):
        return {"ok": False, "error": "backend %s takes no %s cases (not declared)" % (args.backend, kind)}
    from flash_attn_mapping import run_flash_attn_varlen, run_flash_attn_with_kvcache
    run = run_flash_attn_varlen if kind == "varlen" else run_flash_attn_with_kvcache
    with torch.no_grad():
        result = run(torch, np, case, directory, ToTensor(torch, np, args))
    if isinstance(result, str):
        return {"ok": False, "unsupported": True, "error": result}
    out, lse = result
    carrier = np.float16 if args.dtype == "float16" else np.float32
    save(np, directory, "out", out, carrier)
    save(np, directory, "lse", lse, np.float64)
    return {"ok": True}


def run_case(torch, np, directory, args, kind="dense"):
    if kind not in ("dense", "backward"):
        return run_packed(torch, np, directory, args, kind)
    with open(os.path.join(directory, "case.json")) as f:
        case = json.load(f)
    dtype = getattr(torch, args.dtype)
    load = lambda name: torch.from_numpy(np.load(os.path.join(directory, name + ".npy"))).to(args.device)
    q, k, v = (load(name).to(dtype) for name in ("q", "k", "v"))
    # float16 values travel as <f2, the others as <f4 or <f8 (bfloat16 fits float32 exactly).
    carrier = {"float64": np.float64, "float16": np.float16}.get(args.dtype, np.float32)
    wide = torch.float64 if args.dtype == "float64" else torch.float32
    if kind == "backward" and args.backend == "flash_attn":
        from flash_attn_mapping import run_flash_attn_backward
        grads = run_flash_attn_backward(torch, np, case, directory, q, k, v, load("dout").to(dtype), args.device)
        for name, grad in zip(("dq", "dk", "dv"), grads):
            save(np, directory, name, grad.to(wide).cpu().numpy(), carrier)
        return {"ok": True}
    if kind == "backward" and args.backend == "flex":
        from flex_mapping import run_flex
        for tensor in (q, k, v):
            tensor.requires_grad_(True)
        out, _ = run_flex(torch, np, case, directory, q, k, v, args.device)
        # Autograd through score_mod (softcap's tanh), and under enable_gqa
        # the sums of dK and dV over each kv head's query heads.
        grads = torch.autograd.grad(out, (q, k, v), grad_outputs=load("dout").to(dtype))
        for name, grad in zip(("dq", "dk", "dv"), grads):
            save(np, directory, name, grad.to(wide).cpu().numpy(), carrier)
        return {"ok": True}
    if args.backend in ("flex", "flash_attn"):
        from flash_attn_mapping import run_flash_attn
        from flex_mapping import run_flex
        with torch.no_grad():
            if args.backend == "flex":
                out, lse = run_flex(torch, np, case, directory, q, k, v, args.device, compiled=args.compile)
            else:
                out, lse = run_flash_attn(torch, np, case, directory, q, k, v, args.device)
        save(np, directory, "out", out.to(wide).cpu().numpy(), carrier)
        if lse is not None:
            save(np, directory, "lse", lse.to(wide).cpu().numpy(), np.float64)
        return {"ok": True}
    options = {}
    if case["scale"] is not None:
        options["scale"] = case["scale"]
    if case["q_heads"] != case["kv_heads"]:
        options["enable_gqa"] = True
    mask = None
    if case["mask"]:
        values = np.load(os.path.join(directory, "mask.npy"))
        if case["causal"]:
            # Key j is visible to query i iff j <= i + offset (spec section 2.2).
            L, S = case["q_len"], case["kv_len"]
            offset = S - L if case["causal"] == "bottom_right" else 0
            visible = np.arange(S)[None, :] <= np.arange(L)[:, None] + offset
            values = values & visible if case["mask"] == "bool" else np.where(visible, values, -np.inf)
        mask = torch.from_numpy(np.ascontiguousarray(values)).to(args.device)
        if case["mask"] == "additive":
            mask = mask.to(dtype)
    elif case["causal"] == "top_left":
        options["is_causal"] = True
    elif case["causal"] == "bottom_right":
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(case["q_len"], case["kv_len"])
    if kind == "backward":  # the case carries dout.npy (SPEC 2.6)
        dout = load("dout").to(dtype)
        for tensor in (q, k, v):
            tensor.requires_grad_(True)
        with backend_context(torch, args.backend):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)
            # Under enable_gqa autograd sums dK and dV over each kv head's query heads.
            grads = torch.autograd.grad(out, (q, k, v), grad_outputs=dout)
        for name, grad in zip(("dq", "dk", "dv"), grads):
            save(np, directory, name, grad.to(wide).cpu().numpy(), carrier)
        return {"ok": True}
    with torch.no_grad(), backend_context(torch, args.backend):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)
    save(np, directory, "out", out.to(wide).cpu().numpy(), carrier)
    return {"ok": True}


def main():
    parser = argparse.ArgumentParser(description="attnspec-process/1 adapter for PyTorch SDPA")
    parser.add_argument("--dtype", default="float32", choices=FORMATS)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backend", default="default", choices=BACKENDS)
    parser.add_argument("--compile", action="store_true",
                        help="--backend flex only: torch.compile(flex_attention) (inductor) instead of eager")
    args = parser.parse_args()
    if args.compile and args.backend != "flex":
        print("torch_adapter: --compile goes with --backend flex", file=sys.stderr)
        return 2
    if args.compile and args.device == "cpu" and args.dtype == "float64":
        # flex_cpu.py: "torch.float, torch.float16 and torch.bfloat16 are supported in FlexAttention for CPU device"
        print("torch_adapter: compiled FlexAttention on the CPU takes --dtype float32, bfloat16 or float16",
              file=sys.stderr)
        return 2
    try:
        import numpy as np
        import torch
    except ImportError as error:
        print("torch_adapter: needs PyTorch >= 2 and NumPy (%s)" % error, file=sys.stderr)
        return 2
    if not version_at_least(torch, 2, 0):
        print("torch_adapter: needs PyTorch >= 2, found %s" % torch.__version__, file=sys.stderr)
        return 2
    if args.backend == "flex" and not version_at_least(torch, 2, 5):
        print("torch_adapter: --backend flex needs PyTorch >= 2.5, found %s" % torch.__version__, file=sys.stderr)
        return 2
    if args.backend == "flash_attn" and args.dtype not in ("float16", "bfloat16"):
        print("torch_adapter: --backend flash_attn takes --dtype float16 or bfloat16", file=sys.stderr)
        return 2
    if args.backend == "flash_attn":
        try:
            import flash_attn  # noqa: F401
        except ImportError as error:
            print("torch_adapter: --backend flash_attn needs the flash_attn package (%s)" % error, file=sys.stderr)
            return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the mappings beside it
    if args.compile:
        from flex_compile import prepare_inductor
        prepare_inductor(torch)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "bye":
            return 0
        if request["op"] == "hello":
            reply = hello(torch, args)
        else:
            try:
                reply = run_case(torch, np, request["case"], args, request.get("kind", "dense"))
            except Exception as error:  # reported for this case; the session goes on
                reply = {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}
            reply["id"] = request["id"]
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
