#!/usr/bin/env python3
"""attnspec-process/1 adapter for OpenVINO's ScaledDotProductAttention
(opset13) on the CPU plugin (spec/SPEC.md section 8; OpenVINO 2026.4.1 in
.venv, requirements.txt).

    attnspec run --kernel 'cmd:.venv/bin/python adapters/openvino/openvino_adapter.py --precision f32'

--precision f32|bf16|f16 is the CPU plugin's INFERENCE_PRECISION_HINT; the
inputs are float32 tensors. The plugin lowers a hint the CPU has no
instructions for to f32 (on an AVX2-only CPU every hint runs in f32), so
the hello declares the precision the compiled model reports, not the one
asked for, and says both in its name.

--path picks which of the plugin's two code paths runs the op (read in
OpenVINO's src/plugins/intel_cpu/src/transformations/, and seen in each
compiled model's runtime graph):
  plain    a model with just the op, as a non-LLM model has it: the
           CommonOptimizations pass ScaledDotProductAttentionDecomposition
           rewrites it into MatMul, Multiply, Add/Select, Softmax, MatMul,
           which the Snippets MHA tokenizer fuses into one jitted Subgraph
           (4D inputs) or which run as separate MatMul/Softmax nodes (the
           5D inputs that grouped-query heads need).
  kvcache  the stateful LLM pattern ReadValue -> Gather(beam_idx) -> Concat
           -> ScaledDotProductAttention -> Assign, which StatefulSDPAFusion
           turns into the plugin's own ScaledDotProductAttentionWithKVCache
           node (nodes/scaled_attn.cpp). The first S - L keys and values are
           put into the state, the last L come as new ones, so it takes
           S >= L only and its causal alignment is bottom-right (the queries
           are the last L positions). KV_CACHE_PRECISION is set to f32: the
           default, u8, quantizes the cached keys and values, a format
           attnspec has no name for.
  paged    the op LLM serving runs, PagedAttentionExtension (experimental,
           through openvino.op._PagedAttentionExtension; paged_attention.py),
           runtime layer PagedAttention: paged KV caches of 32-row pages
           only, always causal bottom-right, the new keys the queries' own,
           so it declares causal_only, page_sizes [32] and
           kv_len_at_least_q_len; dense cases go through it with their
           first S - L keys in a cache of pages in order. No masks,
           windows, ALiBi or sinks here (the op has inputs for the last
           three; not mapped).

Glue (the only places the adapter does arithmetic-free work the op does not
do itself): the op ignores its mask when causal is set, so with a mask the
causal blocks are folded into the mask (as torch_adapter.py does for
PyTorch, which refuses the pair); grouped-query heads on the plain path go
through the op's numpy broadcasting as [B, Hkv, Hq/Hkv, L, d] queries
against [B, Hkv, 1, S, d] keys (views, no copies). Models are compiled with
dynamic shapes and cached by their options (rank, mask kind, scale, causal):
an adapter process of a quick run compiled 7 to 17 of them, 0.02-0.32 s each
and at most 2.7 s in all, on a 2-core AVX2 machine (its stderr logs each).
No backward: OpenVINO runs inference only.
"""
import argparse
import json
import os
import sys
import time

HINTS = {"f32": "f32", "bf16": "bf16", "f16": "f16"}
FORMAT_NAMES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


class Compiled:
    """Compiled models by options, each with its own infer request."""

    def __init__(self, ov, args):
        self.ov, self.args, self.models = ov, args, {}
        self.core = ov.Core()
        self.config = {"INFERENCE_PRECISION_HINT": HINTS[args.precision]}
        if args.path == "kvcache":
            self.config["KV_CACHE_PRECISION"] = "f32"

    def get(self, key):
        if key not in self.models:
            start = time.time()
            model = (self.build_kvcache if self.args.path == "kvcache" else self.build_plain)(*key)
            compiled = self.core.compile_model(model, "CPU", self.config)
            print("openvino_adapter: compiled %s in %.3f s" % (key, time.time() - start), file=sys.stderr)
            self.models[key] = (compiled, compiled.create_infer_request())
        return self.models[key]

    def sdpa(self, q, k, v, rank, mask, scale, causal, params):
        import numpy as np
        import openvino.opset13 as ops
        m = s = None
        if mask:
            m = ops.parameter(self.ov.PartialShape([-1] * rank), bool if mask == "bool" else np.float32, name="mask")
            params.append(m)
        if scale:
            s = ops.parameter([], np.float32, name="scale")
            params.append(s)
            if m is None:  # the scale is the fifth input; a scalar 0 is "no mask" (opset13 spec)
                m = ops.constant(np.float32(0))
        return ops.scaled_dot_product_attention(q, k, v, m, s, causal=causal)

    def build_plain(self, rank, mask, scale, causal):
        import numpy as np
        import openvino.opset13 as ops
        shape = self.ov.PartialShape([-1] * rank)
        q, k, v = (ops.parameter(shape, np.float32, name=n) for n in ("q", "k", "v"))
        params = [q, k, v]
        node = self.sdpa(q, k, v, rank, mask, scale, causal, params)
        return self.ov.Model([node], params)

    def build_kvcache(self, rank, mask, scale, causal):
        """The pattern StatefulSDPAFusion matches (transformations/cpu_opset/
        common/pass/stateful_sdpa_fusion.cpp); the state's initial value is
        an empty slice of the new keys, so a reset state holds no keys."""
        import numpy as np
        import openvino.opset13 as ops
        import openvino.opset6 as ops6
        import openvino.opset8 as ops8
        from openvino.op.util import Variable, VariableInfo
        shape = self.ov.PartialShape([-1] * 4)
        q, k, v = (ops.parameter(shape, np.float32, name=n) for n in ("q", "k", "v"))
        beam = ops.parameter(self.ov.PartialShape([-1]), np.int32, name="beam_idx")
        params, present, assigns = [q, k, v, beam], [], []
        for name, new in (("past_k", k), ("past_v", v)):
            info = VariableInfo()
            info.data_shape, info.data_type, info.variable_id = shape, self.ov.Type.f32, name
            variable = Variable(info)
            empty = ops.slice(new, np.array([0]), np.array([0]), np.array([1]), np.array([2]))
            past = ops8.gather(ops6.read_value(empty, variable), beam, np.int32(0))
            concat = ops.concat([past, new], 2)
            present.append(concat)
            assigns.append(ops6.assign(concat, variable))
        node = self.sdpa(q, present[0], present[1], rank, mask, scale, causal, params)
        return self.ov.Model([ops.result(node)], assigns, params)


class CompiledPaged:
    """Compiled PagedAttentionExtension models by heads and head sizes."""

    def __init__(self, ov, args):
        self.ov, self.args, self.models = ov, args, {}

    def get(self, key):
        if key not in self.models:
            import paged_attention
            start = time.time()
            self.models[key] = paged_attention.build(self.ov, *key, precision=HINTS[self.args.precision])
            print("openvino_adapter: compiled paged %s in %.3f s" % (key, time.time() - start), file=sys.stderr)
        return self.models[key]


def effective_precision(ov, args):
    """What the plugin makes of the hint on this CPU: the compiled model's
    INFERENCE_PRECISION_HINT (a tiny model, compiled once)."""
    import numpy as np
    import openvino.opset13 as ops
    x = ops.parameter([1, 1, 1, 1], np.float32)
    compiled = ov.Core().compile_model(ov.Model([ops.scaled_dot_product_attention(x, x, x)], [x]), "CPU",
                                       {"INFERENCE_PRECISION_HINT": HINTS[args.precision]})
    return {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()]


def hello(ov, args, runs_in):
    # Both paths keep the scores, the softmax and P V in the compiled
    # precision (f32 here: the Snippets Subgraph and MatMul nodes are
    # jit_avx2_f32 / brgemm_avx2_f32, the SDPA node mlas_f32; a bf16 or f16
    # run, on CPUs that have one, rounds the inputs to it and accumulates
    # the products in f32: not measured here).
    formats = {"input": runs_in, "accumulate": "float32", "output": runs_in}
    kvcache = args.path == "kvcache"
    if args.path == "paged":
        capabilities = {"causal": ["bottom_right"], "causal_only": True, "kv_len_at_least_q_len": True, "gqa": True,
                        "scale": True, "dv_ne_dk": True, "lse": False, "paged_kv_cache": True, "page_sizes": [32],
                        "backward": False}
        return {"protocol": 1, "name": "openvino-%s-paged-%s-hint-runs-%s" % (ov.get_version().split("-")[0],
                                                                             args.precision, runs_in),
                "formats": formats, "capabilities": capabilities}
    capabilities = {"masks": ["bool", "additive"],
                    "causal": ["bottom_right"] if kvcache else ["top_left"],
                    # plain: K/V broadcast over a 5D batch; kvcache: the node reads kv head h / (Hq / Hkv).
                    "gqa": True, "scale": True, "softcap": False, "dv_ne_dk": True, "lse": False,
                    # The op's specification computes softmax over a row of -inf: NaN, not 0.
                    "fully_masked_rows": False, "backward": False}
    if kvcache:
        capabilities["kv_len_at_least_q_len"] = True
    return {"protocol": 1,
            "name": "openvino-%s-%s-%s-hint-runs-%s" % (ov.get_version().split("-")[0], args.path, args.precision,
                                                        runs_in),
            "formats": formats, "capabilities": capabilities}


def visible(np, case):
    """Key j is visible to query i iff j <= i + offset (SPEC 2.2)."""
    L, S = case["q_len"], case["kv_len"]
    offset = S - L if case["causal"] == "bottom_right" else 0
    return np.arange(S)[None, :] <= np.arange(L)[:, None] + offset


def run_paged_case(np, compiled, directory, kind):
    """--path paged: a dense case or a paged KV cache (SPEC 2.5) through
    PagedAttentionExtension; anything it cannot express is declined."""
    import paged_attention
    with open(os.path.join(directory, "case.json")) as f:
        case = json.load(f)
    decline = lambda why: {"ok": False, "unsupported": True, "error": why}
    if kind not in ("dense", "kv_cache"):
        return decline("PagedAttentionExtension takes no %s cases (not declared)" % kind)
    if case["causal"] != "bottom_right":
        return decline("PagedAttentionExtension always masks causally, bottom-right")
    if case.get("mask") or case.get("window") or case.get("alibi") or case.get("sinks") or case.get("softcap") \
            or case.get("descales"):
        return decline("masks, windows, ALiBi, sinks, softcaps and descales are not mapped on this path")
    load = lambda name: np.ascontiguousarray(np.load(os.path.join(directory, name + ".npy")).astype(np.float32))
    Hq, Hkv, L, d_k, d_v = case["q_heads"], case["kv_heads"], case["q_len"], case["d_k"], case["d_v"]
    scale = case["scale"] if case["scale"] is not None else 1 / np.sqrt(d_k)
    model = compiled.get((Hq, Hkv, d_k, d_v))
    if kind == "dense":
        if case["kv_len"] < L:
            return decline("PagedAttentionExtension's keys include the queries' own: kv_len >= q_len")
        out = paged_attention.run_dense(model, load("q"), load("k"), load("v"), scale)
    else:
        if case["page_size"] != paged_attention.BLOCK:
            return decline("the CPU plugin takes pages of %d rows only, not %s" % (paged_attention.BLOCK, case["page_size"]))
        if case["new_len"] != L:
            return decline("PagedAttentionExtension's new keys are its queries' own: new_len = q_len")
        # attnspec's pool is [pages, page_size, Hkv, d], the op's [pages, Hkv, page_size, d].
        pool = lambda name: np.ascontiguousarray(load(name).transpose(0, 2, 1, 3))
        past = case["cache_seqlens"]
        blocks = [case["block_table"][b][:paged_attention.blocks_for(past[b] + L)] for b in range(case["batch"])]
        out = paged_attention.run(model, load("q"), load("k_new"), load("v_new"), pool("k_cache"), pool("v_cache"),
                                  past, blocks, scale)
    np.save(os.path.join(directory, "out.npy"), np.ascontiguousarray(out, dtype=np.float32))
    return {"ok": True}


def run_case(np, compiled, directory, args, kind):
    if args.path == "paged":
        return run_paged_case(np, compiled, directory, kind)
    if kind != "dense":
        return {"ok": False, "unsupported": True, "error": "OpenVINO's SDPA takes no %s cases (not declared)" % kind}
    with open(os.path.join(directory, "case.json")) as f:
        case = json.load(f)
    kvcache = args.path == "kvcache"
    if case["causal"] and case["causal"] != ("bottom_right" if kvcache else "top_left"):
        return {"ok": False, "unsupported": True, "error": "causal %s is not this path's alignment" % case["causal"]}
    load = lambda name: np.ascontiguousarray(np.load(os.path.join(directory, name + ".npy")).astype(np.float32))
    q, k, v = load("q"), load("k"), load("v")
    B, Hq, Hkv, L, S = case["batch"], case["q_heads"], case["kv_heads"], case["q_len"], case["kv_len"]
    mask = None
    if case["mask"]:
        mask = np.load(os.path.join(directory, "mask.npy"))
        if case["causal"]:  # the op ignores its mask when causal is set: fold the causal blocks in
            mask = mask & visible(np, case) if case["mask"] == "bool" else np.where(visible(np, case), mask, -np.inf)
        mask = np.ascontiguousarray(mask if case["mask"] == "bool" else mask.astype(np.float32))
    if kvcache and case["scale"] is not None and mask is None:
        # The fused node refuses opset13's scalar 0 for "no mask" (its shape
        # inference wants rank 2 to 4) and gives wrong outputs with a [1, 1]
        # zero constant (docs/findings/openvino-2026.4.1.md): a zero mask of
        # the full shape stands for it.
        mask = np.zeros((1, 1, L, S), np.float32)
        if case["causal"]:
            mask = np.where(visible(np, case), mask, -np.inf).astype(np.float32)
    mask_kind = case["mask"] or ("additive" if mask is not None else None)
    causal = bool(case["causal"]) and mask is None
    group = Hq // Hkv
    rank = 5 if group > 1 and not kvcache else 4
    if rank == 5:  # consecutive query heads share a kv head (SPEC 2.1), by numpy broadcasting
        q = q.reshape(B, Hkv, group, L, case["d_k"])
        k, v = k[:, :, None], v[:, :, None]
        if mask is not None:
            mb, mh = mask.shape[0], mask.shape[1]
            mask = mask.reshape(mb, Hkv, group, L, S) if mh == Hq else mask.reshape(mb, 1, 1, L, S)
    feed = {"q": q, "k": k, "v": v}
    if mask is not None:
        feed["mask"] = mask
    if case["scale"] is not None:
        feed["scale"] = np.float32(case["scale"])
    _, request = compiled.get((rank, mask_kind, case["scale"] is not None, causal))
    if kvcache:
        past = S - L
        if past < 0:
            return {"ok": False, "unsupported": True, "error": "the KV-cache path takes kv_len >= q_len"}
        feed["k"], feed["v"] = np.ascontiguousarray(k[:, :, past:]), np.ascontiguousarray(v[:, :, past:])
        feed["beam_idx"] = np.arange(B, dtype=np.int32)
        request.reset_state()
        if past > 0:
            for state in request.query_state():
                cached = k if state.name == "past_k" else v
                state.state = compiled.ov.Tensor(np.ascontiguousarray(cached[:, :, :past]))
    out = request.infer(feed)[0]
    out = np.asarray(out, dtype=np.float32).reshape(B, Hq, L, case["d_v"])
    np.save(os.path.join(directory, "out.npy"), np.ascontiguousarray(out))
    return {"ok": True}


def main():
    parser = argparse.ArgumentParser(description="attnspec-process/1 adapter for OpenVINO's ScaledDotProductAttention")
    parser.add_argument("--precision", default="f32", choices=sorted(HINTS))
    parser.add_argument("--path", default="plain", choices=("plain", "kvcache", "paged"))
    args = parser.parse_args()
    try:
        import numpy as np
        import openvino as ov
    except ImportError as error:
        print("openvino_adapter: needs OpenVINO >= 2024 and NumPy (%s)" % error, file=sys.stderr)
        return 2
    runs_in = effective_precision(ov, args)
    print("openvino_adapter: OpenVINO %s, hint %s, compiled models run in %s" % (ov.get_version(), args.precision,
                                                                             runs_in), file=sys.stderr)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # paged_attention.py beside it
    compiled = CompiledPaged(ov, args) if args.path == "paged" else Compiled(ov, args)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "bye":
            return 0
        if request["op"] == "hello":
            reply = hello(ov, args, runs_in)
        else:
            try:
                reply = run_case(np, compiled, request["case"], args, request.get("kind", "dense"))
            except Exception as error:  # reported for this case; the session goes on
                reply = {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}
            reply["id"] = request["id"]
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
