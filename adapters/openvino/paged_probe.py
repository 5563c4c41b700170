#!/usr/bin/env python3
"""A probe, not an adapter: does OpenVINO's PagedAttentionExtension (the op
its LLM serving path runs) answer through the Python API on the CPU, and
with which page sizes and alignments? docs/findings/openvino-2026.4.1.md
says why attnspec does not judge it yet; this is the measurement behind it.

    .venv/bin/python adapters/openvino/paged_probe.py

One sequence, 5 cached keys and 2 new ones (which are also the 2 queries,
as in the op), Hq = 2 query heads on Hkv = 1 kv head, pages in reverse
order; prints, for each page size, the largest error against the
bottom-right causal and the unmasked references, or the plugin's error.
"""
import sys

import numpy as np
import openvino as ov
import openvino.opset13 as ops
from openvino.op import _PagedAttentionExtension


def build(core, hq, hkv, d):
    """The op's 28 inputs in 2026.4.1's order (src/core/src/op/paged_attention.cpp,
    validate_and_infer_types); the optional features get empty constants."""
    p = lambda shape, dtype, name: ops.parameter(ov.PartialShape(shape), dtype, name=name)
    tensors = [p([-1, hq * d], np.float32, "q"), p([-1, hkv * d], np.float32, "k"), p([-1, hkv * d], np.float32, "v"),
               p([-1, hkv, -1, d], np.float32, "key_cache"), p([-1, hkv, -1, d], np.float32, "value_cache")]
    ints = [p([-1], np.int32, n) for n in ("past_lens", "subsequence_begins", "block_indices", "block_indices_begins")]
    scale, max_context_len = p([], np.float32, "scale"), p([], np.int32, "max_context_len")
    empty_i, empty_f, zero = (lambda: ops.constant(np.zeros([0], np.int32)), lambda: ops.constant(np.zeros([0], np.float32)),
                              lambda: ops.constant(np.int32(0)))
    rest = [zero(), empty_i(), empty_i(), empty_f(), empty_f(), zero(), zero(), empty_f(), zero(), empty_i(), empty_i(),
            empty_i(), empty_i(), ops.constant(np.zeros([0], np.uint8)), empty_i()]
    inputs = tensors + ints + [scale, zero(), empty_f(), max_context_len] + rest  # sliding_window 0, no ALiBi
    node = _PagedAttentionExtension([x.output(0) for x in inputs])
    info = node.get_rt_info()  # the CPU node refuses to build without these (nodes/paged_attn.cpp)
    info["k_head_size"], info["num_k_heads"], info["v_head_size"], info["num_v_heads"] = d, hkv, d, hkv
    model = ov.Model([node.output(0)], tensors + ints + [scale, max_context_len])
    # The default KV cache precision, u8, would quantize the cache.
    return core.compile_model(model, "CPU", {"KV_CACHE_PRECISION": "f32", "INFERENCE_PRECISION_HINT": "f32"})


def softmax_pv(s, v):
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def main():
    core = ov.Core()
    hq, hkv, d, past, new = 2, 1, 4, 5, 2
    total = past + new
    compiled = build(core, hq, hkv, d)
    kinds = {o.get_rt_info()["layerType"].astype(str) for o in compiled.get_runtime_model().get_ordered_ops()}
    print("OpenVINO %s; runtime layers: %s" % (ov.get_version(), ", ".join(sorted(kinds))))
    rng = np.random.default_rng(0)
    k, v = (rng.standard_normal((hkv, total, d)).astype(np.float32) for _ in range(2))
    q = rng.standard_normal((hq, new, d)).astype(np.float32)
    logits = q @ np.repeat(k, hq // hkv, 0).transpose(0, 2, 1) / np.sqrt(d)
    visible = np.arange(total)[None, :] <= np.arange(new)[:, None] + past
    causal = softmax_pv(np.where(visible, logits, -np.inf), np.repeat(v, hq // hkv, 0))
    plain = softmax_pv(logits, np.repeat(v, hq // hkv, 0))
    for page in (1, 3, 16, 32, 64):
        pages = -(-total // page)
        order = np.arange(pages + 1)[::-1].copy()  # logical page n is physical page order[n]
        caches = [np.full((pages + 1, hkv, page, d), np.nan, np.float32) for _ in range(2)]
        for t in range(past):
            caches[0][order[t // page], :, t % page], caches[1][order[t // page], :, t % page] = k[:, t], v[:, t]
        feed = {"q": q.transpose(1, 0, 2).reshape(new, -1), "k": k[:, past:].transpose(1, 0, 2).reshape(new, -1),
                "v": v[:, past:].transpose(1, 0, 2).reshape(new, -1), "key_cache": caches[0], "value_cache": caches[1],
                "past_lens": np.array([past], np.int32), "subsequence_begins": np.array([0, new], np.int32),
                "block_indices": order[:pages].astype(np.int32), "block_indices_begins": np.array([0, pages], np.int32),
                "scale": np.float32(1 / np.sqrt(d)), "max_context_len": np.int32(total)}
        try:
            out = compiled.create_infer_request().infer(feed)[0].reshape(new, hq, d).transpose(1, 0, 2)
            print("page size %3d: error %.3g against bottom-right causal, %.3g against no mask" %
                  (page, abs(out - causal).max(), abs(out - plain).max()))
        except RuntimeError as error:
            lines = [line for line in str(error).splitlines() if line.strip()]
            print("page size %3d: refused: %s" % (page, lines[-1][:160]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
