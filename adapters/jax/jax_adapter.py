#!/usr/bin/env python3
"""attnspec-process/1 adapter for JAX's jax.nn.dot_product_attention
(spec/SPEC.md section 8), its forward and, by jax.vjp, its backward.

    attnspec run --kernel 'cmd:.venv/bin/python adapters/jax/jax_adapter.py --dtype bfloat16'

--implementation xla (the default; the only one on a CPU) or cudnn (needs
a GPU build of jaxlib and a GPU: without one the adapter exits with
status 2 before its hello). --dtype float64 turns on jax_enable_x64.

What the op does, read in JAX 0.10.2 (jax/_src/nn/functions.py,
`dot_product_attention`, `_dot_product_attention_xla`,
`_dot_product_attention_core`, `_apply_masks`), and so what the hello
declares:
- Layout (batch, seq, heads, d), BTNH; the case's [B, H, L, d] arrays are
  transposed on the way in and out (the one piece of glue besides the
  window's unbounded sides).
- Logits: an einsum with preferred_element_type promote(input, float32)
  (float32 for 16-bit inputs, through DotAlgorithmPreset BF16_BF16_F32 /
  F16_F16_F32; float64 for float64), times the scale in that type, plus
  the bias (the additive mask). The softmax is "always carried out in
  fp32": the logits are cast to float32 before it, float64 inputs
  included, so float64 declares a float32 accumulator.
- P = softmax(...).astype(key.dtype): the normalised weights are rounded
  to the input type before P V (declared as a weights format, scale 1,
  for bfloat16 and float16); P V is an einsum in the input type (XLA on
  the CPU accumulates it in float32, probed: 1 + 4095 * 2^-9 in bfloat16
  gives 9, not 1), rounded to the input type.
- Masks: a bool mask (True = attend) and is_causal and local_window_size
  select between the logit and a large finite negative number,
  -0.7 * float32 max (`_get_large_negative`), not -inf: a row with no
  visible key is the mean of every value row, not 0
  (fully_masked_rows false). The bias is added, so -inf blocks too.
- is_causal is jnp.tril of (T, S): top-left. local_window_size (left,
  right) keeps i - left <= j <= i + right: top-left, both edges inclusive.
- GQA: query head h reads kv head h // (N / K) (the reshape to
  (B, T, K, G, H)). d_v must equal d_k (value has key's shape).
- return_residual gives the lse, cast to key.dtype (rounded to the input
  type for bfloat16 and float16).
- Backward (jax.vjp with dO, its jaxpr read): dV = P^T dO takes the
  forward's bfloat16/float16 P (declared as the gradient storage format);
  dS stays float32 (the f32 operand of the BF16_BF16_F32 transpose is not
  rounded on the CPU, probed); dP = dO V^T is an einsum in the input
  type, rounded to it (SPEC 6.11 has no format for dP: a finding, not a
  declaration). The softmax's derivative is autodiff through exp, sum
  and division (jax_softmax_custom_jvp is off by default).
Under jit, bfloat16 shapes whose dots XLA emits elementally (L = S = 1,
L = 1 and S = 2, d = 1 with L = S = 1...) fail to compile ("Algorithm not
supported by the ElementalIrEmitter: ALG_DOT_BF16_BF16_F32"): those cases
are declined with that reason.
Every case is one jax.jit compilation per distinct (options, shapes),
cached; ATTNSPEC_JAX_TIMINGS=FILE appends one line per case (compile and
run seconds) to FILE. On the CPU the jitted op raises for float16 ("The
precision 'F16_F16_F32' is not supported by dot_general on CPU"): the
op's try/except fallback to the default precision only catches the error
outside jit, where each einsum compiles at once; under jit it comes at
compilation, after the try. --eager calls the op without the outer
jax.jit, as a script does, where the fallback applies (the logits einsum
with precision None and preferred_element_type float32), at 7-9 s of
compilation a new shape; --fallback-precision takes that fallback under
jit (take_fallback), the float16 column's way.
"""
import argparse
import json
import os
import sys
import time

FORMATS = ("float64", "float32", "float16", "bfloat16")
IMPLEMENTATIONS = ("xla", "cudnn")
UNCOMPILABLE = "Algorithm not supported by the ElementalIrEmitter: ALG_DOT_BF16_BF16_F32"


class Declined(Exception):
    """A case the op cannot run, with the reason (replied as unsupported)."""


def hello(jax, args):
    narrow = args.dtype in ("float16", "bfloat16")
    # The softmax is float32 whatever the input (float64 included).
    formats = {"input": args.dtype, "accumulate": "float32", "output": args.dtype}
    if narrow:
        formats["weights"] = args.dtype  # probs.astype(key.dtype) before P V
        formats["weights_scale"] = 1
        formats["gradient_storage"] = args.dtype  # dV = P^T dO with the rounded P
    return {
        "protocol": 1,
        "name": "jax-%s-%s%s%s-%s-%s" % (jax.__version__, args.implementation, "-eager" if args.eager else "",
                                          "-fallback" if args.fallback_precision else "",
                                          jax.default_backend(), args.dtype),
        "formats": formats,
        "capabilities": {"masks": ["bool", "additive"], "causal": ["top_left"], "window": ["top_left"],
                         "gqa": True, "scale": True, "softcap": False, "dv_ne_dk": False, "lse": True,
                         "fully_masked_rows": False, "backward": True},
    }


def take_fallback(jax):
    """--fallback-precision: _dot_product_attention_core tries its logits
    einsum with DotAlgorithmPreset F16_F16_F32 (BF16_BF16_F32) and, where
    that raises, runs it again with precision None (a bare except). Eagerly
    the first call raises on the CPU and the fallback runs; under jit the
    error comes at compilation, past the try. This takes the fallback up
    front, so that jit computes what the op computes eagerly (checked
    against --eager: outputs and lse bitwise equal, dQ as close as jit and
    eager agree without it; docs/findings/jax-0.10.2.md, finding 33)."""
    from jax._src.nn import functions

    class FallbackEinsum:
        def __init__(self, module):
            self.module = module

        def einsum(self, *operands, precision=None, **options):
            return self.module.einsum(*operands, precision=None, **options)

    functions.jnp_einsum = FallbackEinsum(functions.jnp_einsum)


def declined(case):
    """Why the op cannot run this case, or None."""
    if case.get("softcap") is not None:
        return "dot_product_attention has no softcap"
    for option in ("alibi", "sinks", "descales", "layout", "merge"):
        if case.get(option):
            return "dot_product_attention takes no %s" % option
    if case["causal"] == "bottom_right":
        return "is_causal is top-left (jnp.tril of (T, S) in _get_causal_mask)"
    window = case.get("window")
    if window and window["alignment"] != "top_left":
        return "local_window_size is top-left (_get_window_mask: i - left <= j <= i + right)"
    if case["d_v"] != case["d_k"]:
        return "dot_product_attention needs value of key's shape (d_v = d_k)"
    return None


class Attention:
    """jax.jit'ed forward and backward, one compilation per distinct static
    options and shapes (the cache below), timed."""

    def __init__(self, jax, args):
        self.jax, self.args = jax, args
        self.jnp = jax.numpy
        self.dtype = getattr(self.jnp, args.dtype)
        self.compiled = {}
        self.timings = os.environ.get("ATTNSPEC_JAX_TIMINGS")

    def function(self, static):
        """The op with its static options: is_causal, local_window_size,
        which mask, whether a scale is given, forward or backward."""
        is_causal, window, mask_kind, has_scale, backward = static
        jax, implementation = self.jax, self.args.implementation

        def forward(q, k, v, mask, scale):
            options = {"is_causal": is_causal, "local_window_size": window, "implementation": implementation}
            if has_scale:
                options["scale"] = scale
            if mask_kind == "bool":
                options["mask"] = mask
            elif mask_kind == "additive":
                options["bias"] = mask
            return jax.nn.dot_product_attention(q, k, v, return_residual=not backward, **options)

        if not backward:
            return forward

        def gradients(q, k, v, mask, scale, dout):
            _, pullback = jax.vjp(lambda q, k, v: forward(q, k, v, mask, scale), q, k, v)
            return pullback(dout)  # under GQA the vjp sums dK, dV over each kv head's query heads

        return gradients

    def __call__(self, static, arrays):
        key = (static, tuple((a.shape, str(a.dtype)) if a is not None else None for a in arrays))
        compile_seconds = 0.0
        if key not in self.compiled:
            start = time.perf_counter()
            if self.args.eager:  # JAX's own per-operation caches compile on the first call
                self.compiled[key] = self.function(static)
            else:
                try:
                    self.compiled[key] = self.jax.jit(self.function(static)).lower(*arrays).compile()
                except Exception as error:
                    # XLA on the CPU emits a dot of a few elements
                    # elementally, and that emitter has no BF16_BF16_F32
                    # algorithm (L = S = 1, for one): the jitted op cannot
                    # run such a shape at all.
                    if UNCOMPILABLE in str(error):
                        raise Declined("under jax.jit XLA cannot compile this shape: %s" % UNCOMPILABLE) from error
                    raise
            compile_seconds = time.perf_counter() - start
        start = time.perf_counter()
        result = self.jax.block_until_ready(self.compiled[key](*arrays))
        run_seconds = time.perf_counter() - start
        if self.timings:
            with open(self.timings, "a") as f:
                f.write("%s compile %.4f run %.4f\n" % ("backward" if static[-1] else "forward",
                                                        compile_seconds, run_seconds))
        return result


def run_case(jax, np, attention, directory, kind):
    if kind not in ("dense", "backward"):
        return {"ok": False, "unsupported": True, "error": "dot_product_attention takes no %s layout" % kind}
    with open(os.path.join(directory, "case.json")) as f:
        case = json.load(f)
    why = declined(case)
    if why:
        return {"ok": False, "unsupported": True, "error": why}
    jnp, dtype = attention.jnp, attention.dtype
    load = lambda name: np.load(os.path.join(directory, name + ".npy"))
    # [B, H, L, d] -> JAX's (batch, seq, heads, d).
    to_btnh = lambda array: jnp.asarray(np.ascontiguousarray(array.transpose(0, 2, 1, 3)), dtype=dtype)
    q, k, v = (to_btnh(load(name)) for name in ("q", "k", "v"))
    mask = None
    if case["mask"] == "bool":
        mask = jnp.asarray(load("mask"))  # [B or 1, Hq or 1, L, S]: JAX's (B, N, T, S) broadcast
    elif case["mask"] == "additive":
        mask = jnp.asarray(load("mask"), dtype=dtype)  # the values are k 2^e and -inf: exact in every format
    window = case.get("window")
    if window:
        # An unbounded side: L + S covers every key of every row.
        unbounded = case["q_len"] + case["kv_len"]
        window = tuple(unbounded if window[side] is None else window[side] for side in ("left", "right"))
    else:
        window = None
    has_scale = case["scale"] is not None
    # A traced scale: one compilation serves every scale of a shape.
    # jnp.asarray rounds it to the logits' type, as the op's own
    # jnp.array(scale, dtype=logits.dtype) does.
    scale = jnp.asarray(case["scale"] if has_scale else 1.0, dtype=jnp.float64 if dtype == jnp.float64 else jnp.float32)
    carrier = {"float64": np.float64, "float16": np.float16}.get(attention.args.dtype, np.float32)
    static = (case["causal"] == "top_left", window, case["mask"], has_scale, kind == "backward")
    from_btnh = lambda array: np.ascontiguousarray(np.asarray(array.astype(jnp.float64 if dtype == jnp.float64 else jnp.float32)).transpose(0, 2, 1, 3))
    if kind == "backward":
        dout = to_btnh(load("dout"))
        grads = attention(static, (q, k, v, mask, scale, dout))
        for name, grad in zip(("dq", "dk", "dv"), grads):
            np.save(os.path.join(directory, name + ".npy"), from_btnh(grad).astype(carrier))
        return {"ok": True}
    out, lse = attention(static, (q, k, v, mask, scale))
    np.save(os.path.join(directory, "out.npy"), from_btnh(out).astype(carrier))
    # The residual is (B, T, N): to [B, N, T].
    lse = np.asarray(lse.astype(jnp.float64 if dtype == jnp.float64 else jnp.float32)).transpose(0, 2, 1)
    np.save(os.path.join(directory, "lse.npy"), np.ascontiguousarray(lse, dtype=np.float64))
    return {"ok": True}


def main():
    parser = argparse.ArgumentParser(description="attnspec-process/1 adapter for jax.nn.dot_product_attention")
    parser.add_argument("--dtype", default="float32", choices=FORMATS)
    parser.add_argument("--implementation", default="xla", choices=IMPLEMENTATIONS)
    parser.add_argument("--eager", action="store_true",
                        help="call the op without an outer jax.jit (float16 on the CPU: under jit it raises)")
    parser.add_argument("--fallback-precision", action="store_true",
                        help="under jit, take the op's own fallback for the logits einsum (precision None), "
                             "as it does eagerly where the explicit algorithm does not compile (float16 on the CPU)")
    args = parser.parse_args()
    try:
        import numpy as np
        import jax
    except ImportError as error:
        print("jax_adapter: needs JAX and NumPy (%s)" % error, file=sys.stderr)
        return 2
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # else float64 arrays become float32
    if args.implementation == "cudnn":
        try:
            jax.devices("gpu")
        except RuntimeError as error:
            print("jax_adapter: --implementation cudnn needs a GPU and a CUDA jaxlib (%s)" % error, file=sys.stderr)
            return 2
    if args.fallback_precision:
        take_fallback(jax)
    attention = Attention(jax, args)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "bye":
            return 0
        if request["op"] == "hello":
            reply = hello(jax, args)
        else:
            try:
                reply = run_case(jax, np, attention, request["case"], request.get("kind", "dense"))
            except Declined as reason:
                reply = {"ok": False, "unsupported": True, "error": str(reason)}
            except Exception as error:  # reported for this case; the session goes on
                reply = {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}
            reply["id"] = request["id"]
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
