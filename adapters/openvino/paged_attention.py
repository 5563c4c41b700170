"""OpenVINO's PagedAttentionExtension (the op its LLM serving path runs) on
the CPU plugin, for openvino_adapter.py --path paged and paged_probe.py:
the model with 2026.4.1's 28 inputs, and the mapping of attnspec's dense
cases and paged KV caches (spec/SPEC.md 2.5) onto them.

What the op is, read in OpenVINO 2026.4.1 (src/core/src/op/paged_attention.cpp,
validate_and_infer_types: the count and order of inputs change between
releases; src/plugins/intel_cpu/src/nodes/paged_attn.cpp) and probed here:
  - queries, new keys and new values are rows [tokens, heads * d], the
    tokens of sequence b from subsequence_begins[b]; its new keys are its
    queries' own (one per query), written by the op into the cache after
    past_lens[b] cached ones;
  - the cache is a pool [blocks, Hkv, 32, d]; sequence b's blocks are
    block_indices[block_indices_begins[b]:block_indices_begins[b + 1]];
    the CPU plugin fixes the block size at 32 (ConvertPagedAttnInputs,
    KVCacheConfig::keyCacheBlockSize) and refuses others;
  - it always masks causally, bottom-right (query i of sequence b sees its
    keys j <= past_lens[b] + i); sliding window 0 (none), no ALiBi slopes.
"""
import numpy as np

BLOCK = 32  # rows per cache block: the only size the CPU plugin takes


def build(ov, hq, hkv, d_k, d_v, precision="f32"):
    """A compiled model of the op alone; its optional inputs get empty constants."""
    import openvino.opset13 as ops
    from openvino.op import _PagedAttentionExtension
    p = lambda shape, dtype, name: ops.parameter(ov.PartialShape(shape), dtype, name=name)
    tensors = [p([-1, hq * d_k], np.float32, "q"), p([-1, hkv * d_k], np.float32, "k"),
               p([-1, hkv * d_v], np.float32, "v"), p([-1, hkv, -1, d_k], np.float32, "key_cache"),
               p([-1, hkv, -1, d_v], np.float32, "value_cache")]
    ints = [p([-1], np.int32, n) for n in ("past_lens", "subsequence_begins", "block_indices", "block_indices_begins")]
    scale, max_context_len = p([], np.float32, "scale"), p([], np.int32, "max_context_len")
    empty_i, empty_f, zero = (lambda: ops.constant(np.zeros([0], np.int32)), lambda: ops.constant(np.zeros([0], np.float32)),
                              lambda: ops.constant(np.int32(0)))
    aggregation = p([-1], np.int32, "score_aggregation_window")  # [B] (a scalar is refused past one sequence)
    rest = [aggregation, empty_i(), empty_i(), empty_f(), empty_f(), zero(), zero(), empty_f(), zero(), empty_i(), empty_i(),
            empty_i(), empty_i(), ops.constant(np.zeros([0], np.uint8)), empty_i()]
    inputs = tensors + ints + [scale, zero(), empty_f(), max_context_len] + rest  # sliding_window 0, no ALiBi
    node = _PagedAttentionExtension([x.output(0) for x in inputs])
    info = node.get_rt_info()  # the CPU node refuses to build without these (nodes/paged_attn.cpp)
    info["k_head_size"], info["num_k_heads"], info["v_head_size"], info["num_v_heads"] = d_k, hkv, d_v, hkv
    model = ov.Model([node.output(0)], tensors + ints + [scale, max_context_len, aggregation])
    # The default KV cache precision, u8, would quantize the cache.
    return ov.Core().compile_model(model, "CPU", {"KV_CACHE_PRECISION": "f32", "INFERENCE_PRECISION_HINT": precision})


def run(compiled, q, k_new, v_new, key_cache, value_cache, past_lens, block_lists, scale):
    """q [B, L, Hq, d_k], k_new/v_new [B, L, Hkv, d] (the queries' own keys),
    caches [blocks, Hkv, 32, d] (written to: pass copies), past_lens [B],
    block_lists[b] the blocks of sequence b in order; out [B, L, Hq, d_v]."""
    B, L = q.shape[0], q.shape[1]
    rows = lambda x: np.ascontiguousarray(x.reshape(B * L, -1), dtype=np.float32)
    begins = np.cumsum([0] + [len(blocks) for blocks in block_lists]).astype(np.int32)
    feed = {"q": rows(q), "k": rows(k_new), "v": rows(v_new), "key_cache": key_cache, "value_cache": value_cache,
            "past_lens": np.asarray(past_lens, np.int32), "subsequence_begins": np.arange(0, B * L + 1, L, dtype=np.int32),
            "block_indices": np.concatenate([np.asarray(b, np.int32) for b in block_lists]) if B else np.zeros(0, np.int32),
            "block_indices_begins": begins, "scale": np.float32(scale),
            "max_context_len": np.int32(max(past_lens) + L), "score_aggregation_window": np.zeros(B, np.int32)}
    out = compiled.create_infer_request().infer(feed)[0]
    return np.asarray(out, np.float32).reshape(B, L, q.shape[2], -1)


def blocks_for(length):
    return -(-length // BLOCK)


def run_dense(compiled, q, k, v, scale):
    """A dense bottom-right causal problem with S >= L (q [B, Hq, L, d_k],
    k, v [B, Hkv, S, d]): its first S - L keys go into a cache of blocks in
    order, zeros elsewhere, the last L come as the queries' own; out
    [B, Hq, L, d_v]."""
    B, Hkv, S = k.shape[0], k.shape[1], k.shape[2]
    L = q.shape[2]
    past = S - L
    per = blocks_for(S)
    caches = []
    for x in (k, v):
        pool = np.zeros((B * per, Hkv, BLOCK, x.shape[3]), np.float32)
        for b in range(B):
            for t in range(past):
                pool[b * per + t // BLOCK, :, t % BLOCK] = x[b, :, t]
        caches.append(pool)
    heads_last = lambda x: np.swapaxes(x, 1, 2)  # [B, H, n, d] -> [B, n, H, d]
    out = run(compiled, heads_last(q), heads_last(k[:, :, past:]), heads_last(v[:, :, past:]), caches[0], caches[1],
              [past] * B, [list(range(b * per, (b + 1) * per)) for b in range(B)], scale)
    return np.swapaxes(out, 1, 2)
