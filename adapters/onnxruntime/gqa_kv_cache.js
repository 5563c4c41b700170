'use strict';
// GroupQueryAttention's KV-cache decode (com.microsoft, CPU execution
// provider): an attnspec-packed/1 "kv_cache" case (spec/SPEC.md sections
// 2.5 and 8) run as ORT runs a decoding step: past_key / past_value
// [B, Hkv, P, D] holding each sequence's cached keys, the new keys as
// key / value [B, L, Hkv * D], and seqlens_k[b] = S_b - 1, so that ORT
// reads cache_seqlens[b] past keys of entry b and appends the L new ones
// after them. The past buffer is as long as the longest sequence's
// cache: a shorter sequence's slots past its length hold what the layout
// put there (NaN), which ORT must not read.
// Found by probing 1.30: two entries of 3 and 1 past keys, NaN in the
// second one's unused slots, give the right outputs for both; with L > 1
// and past keys ORT takes one batch entry a run ("batch_size must be 1
// when sequence_length > 1 and past context is given"), so such entries
// run one by one, each with its own past only.
// GroupQueryAttention appends as many keys as it has queries: the cases
// it takes have new_len = L (SPEC 8: what `kv_len_at_least_q_len` means
// for a KV cache); any other is answered "unsupported".

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('./npy');
const { toHalfArray } = require('./float16');
const { encodeInput, loadRuntime, sessionFor } = require('./common');
const { buildModel, mapBand, sameBand, HEAD_SIZE_MULTIPLE } = require('./gqa_op');

function readPackedCache(dir) {
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'case.json'), 'utf8'));
  if (spec.format !== 'attnspec-packed/1' || spec.kind !== 'kv_cache') {
    throw new Error(`case.json: expected an attnspec-packed/1 kv_cache case, got ${spec.format} ${spec.kind}`);
  }
  const arrays = {};
  for (const name of ['q', 'k_cache', 'v_cache', 'k_new', 'v_new']) arrays[name] = readNpy(path.join(dir, `${name}.npy`));
  if (spec.sinks === true) arrays.sinks = readNpy(path.join(dir, 'sinks.npy'));
  return { spec, arrays };
}

function unsupportedReason(spec) {
  if (spec.page_size !== null) return 'GroupQueryAttention has no paged cache (not declared)';
  if (spec.alibi) return 'GroupQueryAttention has no alibi (not declared)';
  if (spec.d_v !== spec.d_k) return 'GroupQueryAttention has one head size for q, k and v (d_v != d_k)';
  if (spec.new_len !== spec.q_len) {
    return `GroupQueryAttention appends as many keys as it has queries: new_len ${spec.new_len} != q_len ${spec.q_len}`;
  }
  return null;
}

// Entries b0 ... b0 + nb - 1 of a [B, T, H, d] tensor, positions 0 ...
// count - 1, as a zero-padded Float32Array [nb, count, H, D] (bsnh) or
// [nb, H, count, D] (bnsh).
function entries(array, b0, nb, count, D, bsnh) {
  const [, T, H, d] = array.shape;
  const out = new Float32Array(nb * count * H * D);
  for (let b = 0; b < nb; b++) {
    for (let t = 0; t < count; t++) {
      for (let h = 0; h < H; h++) {
        const from = (((b0 + b) * T + t) * H + h) * d;
        const to = bsnh ? ((b * count + t) * H + h) * D : ((b * H + h) * count + t) * D;
        for (let c = 0; c < d; c++) out[to + c] = array.data[from + c];
      }
    }
  }
  return out;
}

async function runCacheCase(dir, dtype) {
  const { spec, arrays } = readPackedCache(dir);
  const reason = unsupportedReason(spec);
  if (reason) return reason;
  const B = spec.batch, Hq = spec.q_heads, Hkv = spec.kv_heads, L = spec.q_len, d = spec.d_k;
  const cached = spec.cache_seqlens;
  // One {causal, local_window_size} for every entry, each over its own
  // keys: the one of the longest entry (where a window cuts most), checked
  // on the others.
  const entrySpec = (b) => ({ q_len: L, kv_len: cached[b] + L, causal: spec.causal, window: spec.window || null });
  const longest = cached.indexOf(Math.max(...cached));
  const band = mapBand(entrySpec(longest));
  if (!band || !cached.every((n, b) => sameBand(entrySpec(b), band))) {
    return "GroupQueryAttention's bands are causal (bottom-right) with a left window or none; this case's causal " +
      'masking and window leave another band for some sequence';
  }
  for (const name of ['q', 'k_cache', 'v_cache', 'k_new', 'v_new', 'sinks']) {
    if (!arrays[name]) continue;
    const encoded = encodeInput(arrays[name].data, dtype, `${name}.npy`);
    if (encoded.reason) return encoded.reason;
  }
  const D = Math.ceil(d / HEAD_SIZE_MULTIPLE) * HEAD_SIZE_MULTIPLE;
  const sinks = arrays.sinks ? arrays.sinks.data : null;
  const smoothSoftmax = sinks !== null && sinks.every((x) => x === 0);
  const anyPast = cached.some((n) => n > 0);
  const entriesPerRun = anyPast && L > 1 ? 1 : B;
  const { ort } = loadRuntime();
  const tensor = (values, shape) => (dtype === 'float32'
    ? new ort.Tensor('float32', Float32Array.from(values), shape)
    : new ort.Tensor('float16', toHalfArray(values), shape));
  const out = dtype === 'float32' ? new Float32Array(B * L * Hq * d) : new Uint16Array(B * L * Hq * d);
  for (let b0 = 0; b0 < B; b0 += entriesPerRun) {
    const group = cached.slice(b0, b0 + entriesPerRun);
    const past = Math.max(...group);
    const plan = {
      dtype, B: entriesPerRun, Hq, Hkv, L, S: past + L, D, past, causal: band.causal, windowSize: band.windowSize,
      scale: spec.scale !== null ? spec.scale : D !== d ? Math.fround(1 / Math.sqrt(d)) : null,
      softcap: spec.softcap, smoothSoftmax, headSink: sinks !== null && !smoothSoftmax, biasShape: null,
    };
    const feeds = {
      query: tensor(entries(arrays.q, b0, entriesPerRun, L, D, true), [entriesPerRun, L, Hq * D]),
      key: tensor(entries(arrays.k_new, b0, entriesPerRun, L, D, true), [entriesPerRun, L, Hkv * D]),
      value: tensor(entries(arrays.v_new, b0, entriesPerRun, L, D, true), [entriesPerRun, L, Hkv * D]),
      seqlens_k: new ort.Tensor('int32', Int32Array.from(group, (n) => n + L - 1), [entriesPerRun]),
      total_sequence_length: new ort.Tensor('int32', Int32Array.from([past + L]), []),
    };
    if (past > 0) {
      feeds.past_key = tensor(entries(arrays.k_cache, b0, entriesPerRun, past, D, false), [entriesPerRun, Hkv, past, D]);
      feeds.past_value = tensor(entries(arrays.v_cache, b0, entriesPerRun, past, D, false), [entriesPerRun, Hkv, past, D]);
    }
    if (plan.headSink) feeds.head_sink = tensor(sinks, [Hq]);
    const session = await sessionFor(JSON.stringify(['GroupQueryAttention', plan]), () => buildModel(plan));
    const result = await session.run(feeds);
    const y = result.output.data;
    for (const t of Object.values(result)) if (t !== result.output) t.dispose?.();
    // ORT's [nb, L, Hq * D] is the layout's [B, L, Hq, d] once the padded
    // columns are dropped.
    for (let row = 0; row < entriesPerRun * L * Hq; row++) {
      for (let c = 0; c < d; c++) out[(b0 * L * Hq + row) * d + c] = y[row * D + c];
    }
  }
  writeNpy(path.join(dir, 'out.npy'), dtype === 'float32' ? '<f4' : '<f2', [B, L, Hq, d], out);
  return null;
}

module.exports = { runCacheCase };
