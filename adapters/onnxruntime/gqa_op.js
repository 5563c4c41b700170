'use strict';
// ONNX Runtime's GroupQueryAttention contrib operator (com.microsoft, CPU
// execution provider), one node a model: the operator onnxruntime-genai's
// LLM exports run, with its KV cache inputs, local (sliding) window,
// softcap, smooth softmax and head sinks.
// Found by probing 1.30 (README): causal=1 (its default) is bottom-right
// causal over past + new keys; local_window_size = W lets row i see keys
// i + S - L - W + 1 ... i + S - L, i.e. the window (W - 1, 0); a head sink
// is compared with the scaled, capped logits; head_size must be a multiple
// of 8; the keys are at least the queries (S >= L).
//
// Glue done here, all of it exact, and nothing else:
// - the S keys go in as S - L past keys (BNSH past_key/past_value) and L new
//   ones (BSNH key/value); with S = L there is no past (the prompt path);
// - a head dimension that is not a multiple of 8 is padded with zeros in
//   q, k and v (adding products of 0; the padded output columns are
//   dropped), and the default scale is then passed as float32(1/sqrt(d_k));
// - causal masking and a window become causal / local_window_size when the
//   band they leave is ORT's, checked key by key; otherwise the case is
//   "unsupported";
// - an additive mask becomes attention_bias, and sinks head_sink, of the
//   input type (a value that type cannot hold makes the case unsupported);
// - sinks that are all 0 become smooth_softmax = 1, others head_sink;
// - with past keys and L > 1, ORT takes one batch entry a run: the entries
//   are run one by one.

const path = require('path');
const { writeNpy } = require('./npy');
const { toHalfArray } = require('./float16');
const { encodeInput, readCase, loadRuntime, valueInfo, sessionFor, runtimeLabel } = require('./common');

const IR_VERSION = 11;
const MAX_ELEMENTS = 1 << 24; // B*Hq*L*S: ORT's CPU path materialises every score
const HEAD_SIZE_MULTIPLE = 8;

// The visible keys of row i under the case's causal masking and window
// (spec/SPEC.md 2.2), as a predicate.
function caseBand(spec) {
  const L = spec.q_len, S = spec.kv_len;
  const offset = (alignment) => (alignment === 'top_left' ? 0 : S - L);
  const causal = spec.causal;
  const window = spec.window || null;
  return (i, j) => {
    if (causal && j > i + offset(causal)) return false;
    if (window) {
      const off = offset(window.alignment);
      if (window.left !== null && j < i + off - window.left) return false;
      if (window.right !== null && j > i + off + window.right) return false;
    }
    return true;
  };
}

// ORT's band for causal (0/1) and local_window_size (-1: none).
function ortBand(spec, causal, windowSize) {
  const diagonal = spec.kv_len - spec.q_len;
  return (i, j) => !causal || (j <= i + diagonal && (windowSize < 0 || j > i + diagonal - windowSize));
}

// Whether ORT's {causal, windowSize} leave exactly the case's band.
function sameBand(spec, candidate) {
  const want = caseBand(spec);
  const have = ortBand(spec, candidate.causal, candidate.windowSize);
  for (let i = 0; i < spec.q_len; i++) {
    for (let j = 0; j < spec.kv_len; j++) if (want(i, j) !== have(i, j)) return false;
  }
  return true;
}

// ORT's {causal, windowSize} that leave exactly the case's band, or null.
function mapBand(spec) {
  const want = caseBand(spec);
  const candidates = [{ causal: 0, windowSize: -1 }, { causal: 1, windowSize: -1 }];
  const window = spec.window || null;
  if (window && window.left !== null) {
    // The window's left edge j >= i + off - left, moved to ORT's diagonal.
    const off = window.alignment === 'top_left' ? 0 : spec.kv_len - spec.q_len;
    const size = spec.kv_len - spec.q_len - (off - window.left) + 1;
    candidates.push({ causal: 1, windowSize: Math.max(0, size) });
  }
  for (const candidate of candidates) {
    const have = ortBand(spec, candidate.causal, candidate.windowSize);
    let same = true;
    for (let i = 0; i < spec.q_len && same; i++) {
      for (let j = 0; j < spec.kv_len && same; j++) same = want(i, j) === have(i, j);
    }
    if (same) return candidate;
  }
  return null;
}

function unsupportedReason(spec) {
  for (const feature of ['alibi', 'descales']) {
    if (spec[feature]) return `GroupQueryAttention has no ${feature} (not declared)`;
  }
  if (spec.mask === 'bool') return 'GroupQueryAttention takes additive masks (attention_bias) only';
  if (spec.d_v !== spec.d_k) return 'GroupQueryAttention has one head size for q, k and v (d_v != d_k)';
  if (spec.kv_len < spec.q_len) return 'GroupQueryAttention needs S >= L (the new keys are the queries\' own)';
  const elements = spec.batch * spec.q_heads * spec.q_len * spec.kv_len;
  if (elements > MAX_ELEMENTS) return `B*Hq*L*S = ${elements} exceeds max_elements ${MAX_ELEMENTS}`;
  return null;
}

// Batch entries b0 ... b0 + nb - 1 of a case tensor [B, H, T, d], its
// positions first ... first + count - 1, as a zero-padded Float32Array of
// layout [nb, count, H, D] (bsnh) or [nb, H, count, D] (bnsh).
function relayout(values, [, H, T, d], D, b0, nb, first, count, bsnh) {
  const out = new Float32Array(nb * H * count * D);
  for (let b = 0; b < nb; b++) {
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < count; t++) {
        const from = (((b0 + b) * H + h) * T + first + t) * d;
        const to = bsnh ? ((b * count + t) * H + h) * D : ((b * H + h) * count + t) * D;
        for (let c = 0; c < d; c++) out[to + c] = values[from + c];
      }
    }
  }
  return out;
}

function buildModel(plan) {
  const { TensorProto, AttributeProto, ModelProto } = loadRuntime().onnx;
  const F = plan.dtype === 'float32' ? TensorProto.DataType.FLOAT : TensorProto.DataType.FLOAT16;
  const I = TensorProto.DataType.INT32;
  const { B, Hq, Hkv, L, S, D, past } = plan;
  const inputs = [valueInfo('query', F, [B, L, Hq * D]), valueInfo('key', F, [B, L, Hkv * D]),
    valueInfo('value', F, [B, L, Hkv * D])];
  const names = ['query', 'key', 'value'];
  if (past > 0) {
    inputs.push(valueInfo('past_key', F, [B, Hkv, past, D]), valueInfo('past_value', F, [B, Hkv, past, D]));
    names.push('past_key', 'past_value');
  } else {
    names.push('', '');
  }
  inputs.push(valueInfo('seqlens_k', I, [B]), valueInfo('total_sequence_length', I, []));
  names.push('seqlens_k', 'total_sequence_length', '', '', ''); // no rotary: cos, sin, position_ids
  if (plan.biasShape || plan.headSink) {
    if (plan.biasShape) inputs.push(valueInfo('attention_bias', F, plan.biasShape));
    names.push(plan.biasShape ? 'attention_bias' : '');
  }
  if (plan.headSink) {
    inputs.push(valueInfo('head_sink', F, [Hq]));
    names.push('head_sink');
  }
  const int = (name, i) => ({ name, type: AttributeProto.AttributeType.INT, i });
  const float = (name, f) => ({ name, type: AttributeProto.AttributeType.FLOAT, f });
  const attribute = [int('num_heads', Hq), int('kv_num_heads', Hkv), int('causal', plan.causal)];
  if (plan.windowSize >= 0) attribute.push(int('local_window_size', plan.windowSize));
  if (plan.scale !== null) attribute.push(float('scale', plan.scale));
  if (plan.softcap !== null) attribute.push(float('softcap', plan.softcap));
  if (plan.smoothSoftmax) attribute.push(int('smooth_softmax', 1));
  // Its length symbolic: onnxruntime-web 1.30's shape inference infers
  // another one and refuses the model (the kernel writes S entries).
  const present = [B, Hkv, 'total_sequence_length', D];
  const model = ModelProto.create({
    irVersion: IR_VERSION,
    producerName: 'attnspec-onnxruntime-adapter',
    opsetImport: [{ domain: '', version: 23 }, { domain: 'com.microsoft', version: 1 }],
    graph: {
      name: 'group_query_attention',
      node: [{ opType: 'GroupQueryAttention', domain: 'com.microsoft', name: 'gqa', input: names,
        output: ['output', 'present_key', 'present_value'], attribute }],
      input: inputs,
      // present_key and present_value are required outputs: without them
      // ORT 1.30 reads no past values (zeros), found while probing.
      output: [valueInfo('output', F, [B, L, Hq * D]), valueInfo('present_key', F, present),
        valueInfo('present_value', F, present)],
    },
  });
  return ModelProto.encode(model).finish();
}

// Runs batch entries b0 ... b0 + plan.B - 1 and returns ORT's output,
// [plan.B, L, Hq * D].
async function runEntries(plan, arrays, b0) {
  const { ort } = loadRuntime();
  const { B, Hq, Hkv, L, S, D, past } = plan;
  // float16 tensors travel as their bit patterns (the values were checked
  // to be float16 numbers, so the conversion is exact).
  const tensor = (values, shape) => (plan.dtype === 'float32'
    ? new ort.Tensor('float32', Float32Array.from(values), shape)
    : new ort.Tensor('float16', toHalfArray(values), shape));
  const feeds = {
    query: tensor(relayout(arrays.q.data, arrays.q.shape, D, b0, B, 0, L, true), [B, L, Hq * D]),
    key: tensor(relayout(arrays.k.data, arrays.k.shape, D, b0, B, past, L, true), [B, L, Hkv * D]),
    value: tensor(relayout(arrays.v.data, arrays.v.shape, D, b0, B, past, L, true), [B, L, Hkv * D]),
    seqlens_k: new ort.Tensor('int32', new Int32Array(B).fill(S - 1), [B]),
    total_sequence_length: new ort.Tensor('int32', Int32Array.from([S]), []),
  };
  if (past > 0) {
    const pastKey = relayout(arrays.k.data, arrays.k.shape, D, b0, B, 0, past, false);
    const pastValue = relayout(arrays.v.data, arrays.v.shape, D, b0, B, 0, past, false);
    feeds.past_key = tensor(pastKey, [B, Hkv, past, D]);
    feeds.past_value = tensor(pastValue, [B, Hkv, past, D]);
  }
  if (plan.biasShape) {
    // Its batch dimension is 1 (broadcast) or the case's B, of which these entries.
    const perEntry = plan.biasShape.slice(1).reduce((a, b) => a * b, 1);
    const first = arrays.mask.shape[0] === 1 ? 0 : b0 * perEntry;
    feeds.attention_bias = tensor(arrays.mask.data.slice(first, first + plan.biasShape[0] * perEntry), plan.biasShape);
  }
  if (plan.headSink) feeds.head_sink = tensor(arrays.sinks.data, [Hq]);
  const session = await sessionFor(JSON.stringify(['GroupQueryAttention', plan]), () => buildModel(plan));
  const result = await session.run(feeds);
  const y = result.output;
  if (y.dims.join(',') !== [B, L, Hq * D].join(',')) throw new Error(`ORT returned shape [${y.dims}], want [${[B, L, Hq * D]}]`);
  const data = y.data;
  for (const tensor of Object.values(result)) if (tensor !== y) tensor.dispose?.();
  return data;
}

async function runCase(dir, dtype) {
  const { spec, arrays } = readCase(dir);
  const reason = unsupportedReason(spec);
  if (reason) return reason;
  const band = mapBand(spec);
  if (!band) {
    return "GroupQueryAttention's bands are causal (bottom-right) with a left window or none; this case's causal " +
      'masking and window leave another band';
  }
  for (const name of ['q', 'k', 'v', 'mask', 'sinks']) {
    if (!arrays[name] || arrays[name].descr === '|b1') continue;
    const encoded = encodeInput(arrays[name].data, dtype, `${name}.npy`);
    if (encoded.reason) return encoded.reason;
  }
  const B = spec.batch, Hq = spec.q_heads, L = spec.q_len, S = spec.kv_len, d = spec.d_k;
  const D = Math.ceil(d / HEAD_SIZE_MULTIPLE) * HEAD_SIZE_MULTIPLE;
  const sinks = arrays.sinks ? arrays.sinks.data : null;
  const smoothSoftmax = sinks !== null && sinks.every((x) => x === 0);
  // ORT refuses "batch_size must be 1 when sequence_length > 1 and past
  // context is given": such a case runs one batch entry at a time.
  const entriesPerRun = S > L && L > 1 ? 1 : B;
  const plan = {
    dtype, B: entriesPerRun, Hq, Hkv: spec.kv_heads, L, S, D, past: S - L, causal: band.causal, windowSize: band.windowSize,
    scale: spec.scale !== null ? spec.scale : D !== d ? Math.fround(1 / Math.sqrt(d)) : null,
    softcap: spec.softcap, smoothSoftmax, headSink: sinks !== null && !smoothSoftmax,
    biasShape: spec.mask === 'additive' ? [Math.min(arrays.mask.shape[0], entriesPerRun), ...arrays.mask.shape.slice(1)] : null,
  };
  // float16 outputs stay bit patterns, written as '<f2'.
  const out = dtype === 'float32' ? new Float32Array(B * Hq * L * d) : new Uint16Array(B * Hq * L * d);
  for (let b0 = 0; b0 < B; b0 += entriesPerRun) {
    const y = await runEntries(plan, arrays, b0);
    for (let b = 0; b < entriesPerRun; b++) {
      for (let h = 0; h < Hq; h++) {
        for (let i = 0; i < L; i++) {
          const from = ((b * L + i) * Hq + h) * D, to = (((b0 + b) * Hq + h) * L + i) * d;
          for (let c = 0; c < d; c++) out[to + c] = y[from + c];
        }
      }
    }
  }
  writeNpy(path.join(dir, 'out.npy'), dtype === 'float32' ? '<f4' : '<f2', [B, Hq, L, d], out);
  return null;
}

function helloReply(dtype) {
  return {
    protocol: 1,
    name: `${runtimeLabel()}-1.30-gqa-${dtype}`,
    // float16: the scaled logits are stored in float16 (probed: logits 2048
    // and 2049 give weights 1/2 and 1/2), so float16 is the format its
    // intermediates are rounded to, as for the Attention operator.
    formats: { input: dtype, accumulate: dtype, output: dtype },
    capabilities: {
      masks: ['additive'],
      causal: ['bottom_right'],
      window: ['bottom_right'],
      // float16: ORT takes head_sink in float16, but the suite's sinks are
      // float32 numbers (spec/SPEC.md section 4), most of which float16
      // cannot hold; declining them would leave SINK and others INCOMPLETE.
      sinks: dtype === 'float32',
      gqa: true,
      scale: true,
      softcap: true,
      dv_ne_dk: false,
      lse: false,
      // A row whose keys an additive mask blocks all comes out NaN (probed);
      // FULLMASK judges such rows all the same.
      fully_masked_rows: false,
      kv_len_at_least_q_len: true,
      causal_windows_only: true,
      // Its decode with past_key/past_value and seqlens_k (gqa_kv_cache.js);
      // no paged cache, no variable-length packing.
      kv_cache: true,
      max_elements: MAX_ELEMENTS,
    },
  };
}

module.exports = {
  runCase,
  // The layouts it takes (spec/SPEC.md section 8), by the run request's
  // "kind"; required when first used (gqa_kv_cache.js requires this file).
  packed: { kv_cache: (dir, dtype) => require('./gqa_kv_cache').runCacheCase(dir, dtype) },
  helloReply,
  dtypes: ['float32', 'float16'],
  mapBand,
  sameBand,
  buildModel,
  HEAD_SIZE_MULTIPLE,
};
