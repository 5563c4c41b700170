#!/usr/bin/env python3
"""A probe, not an adapter: does OpenVINO's PagedAttentionExtension (the op
its LLM serving path runs) answer through the Python API on the CPU, and
with which page sizes and alignments? The measurement behind the
openvino-paged column's capabilities (causal only, pages of 32;
docs/findings/openvino-2026.4.1.md); the model is paged_attention.py's.

    .venv/bin/python adapters/openvino/paged_probe.py

One sequence, 5 cached keys and 2 new ones (which are also the 2 queries,
as in the op), Hq = 2 query heads on Hkv = 1 kv head, pages in reverse
order; prints, for each page size, the largest error against the
bottom-right causal and the unmasked references, or the plugin's error.
"""
import sys

import numpy as np
import openvino as ov

import paged_attention


def softmax_pv(s, v):
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def main():
    hq, hkv, d, past, new = 2, 1, 4, 5, 2
    total = past + new
    compiled = paged_attention.build(ov, hq, hkv, d, d)
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
                "scale": np.float32(1 / np.sqrt(d)), "max_context_len": np.int32(total),
                "score_aggregation_window": np.zeros(1, np.int32)}
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
