'use strict';
// ONNX Runtime's MultiHeadAttention contrib operator (com.microsoft, CPU
// execution provider), one node a model: the operator ORT's transformer
// optimizer fuses BERT, ViT and encoder-decoder attention into.
//
// Which code path runs (1.30, contrib_ops/cpu/bert/multihead_attention.cc,
// MultiHeadAttention<float>::Compute): with no key_padding_mask, no
// attention_bias, no unidirectional, no past or present tensors and an L2
// cache size the platform reports, MLAS's flash kernel (MlasFlashAttention,
// core/mlas/lib/flashattn.cpp: an online softmax over blocks of keys, the
// output divided by the row sum at the end); otherwise, or with the
// environment variable ORT_DISABLE_FLASH_ATTENTION=1, the unfused
// composition of AttentionCPUBase::ApplyAttention (scores materialised,
// mask and bias added, softmax normalised, then P V). The WASM build
// (onnxruntime-web) reports no L2 cache size and always takes the unfused
// path (probed, see docs/findings/onnxruntime-1.30.md).
// Probed on 1.30: unidirectional = 1 hides key j from row i when j > i,
// except in the last row (and with one query), which sees every key, so it
// is a causal mask only when S = L (both alignments) or L = 1
// (bottom-right); key_padding_mask is int32, 0 blocks; a blocked key's
// logit gets mask_filter_value added (default -10000).
//
// Glue done here, all of it exact, and nothing else:
// - q, k, v go in as [B, L, Hq*d_k], [B, S, H*d_k], [B, S, H*d_v];
//   the output [B, L, H*d_v] is written back as [B, H, L, d_v];
// - a bool mask whose heads are all alike becomes key_padding_mask
//   [B, L, S] (int32, a batch dimension of 1 repeated), with
//   mask_filter_value = -inf, so that a blocked key weighs exactly 0;
//   one whose heads differ (key_padding_mask has no head axis) becomes the
//   additive mask {0, -inf} it equals (spec/SPEC.md, MASKBOOL);
// - an additive mask becomes attention_bias [B or 1, H or 1, L, S];
// - causal masking becomes unidirectional = 1 when the keys it leaves are
//   the case's, checked key by key; otherwise its band is folded into the
//   mask (key_padding_mask rows, or -inf added to attention_bias), as a
//   caller of MultiHeadAttention with S != L has to;
// - an explicit scale becomes the scale attribute (float32; ORT reads 0 as
//   "use the default", so a scale of 0 is unsupported);
// - float16: q, k, v and attention_bias go in as float16 (a value float16
//   cannot hold makes the case unsupported). The CPU provider has no
//   float16 kernel; ORT's CastFloat16Transformer
//   (core/optimizer/insert_cast_transformer.cc) puts Casts to float32
//   before the node and back to float16 after it, so the float32 kernel,
//   flash path included, runs on exact inputs and the output is rounded.

const path = require('path');
const { writeNpy } = require('./npy');
const { toHalfArray } = require('./float16');
const { encodeInput, readCase, loadRuntime, valueInfo, sessionFor, runtimeLabel } = require('./common');

const IR_VERSION = 11;
const MAX_ELEMENTS = 1 << 24; // B*H*L*S: the unfused path materialises every score

// Whether row i sees key j under the case's causal masking (spec/SPEC.md 2.2).
function caseVisible(spec, i, j) {
  if (spec.causal === 'top_left') return j <= i;
  if (spec.causal === 'bottom_right') return j <= i + spec.kv_len - spec.q_len;
  return true;
}

// ORT's unidirectional = 1 without past keys (probed on 1.30; see header).
function ortVisible(spec, i, j) {
  return j <= i || i === spec.q_len - 1;
}

function unidirectionalFits(spec) {
  for (let i = 0; i < spec.q_len; i++) {
    for (let j = 0; j < spec.kv_len; j++) if (caseVisible(spec, i, j) !== ortVisible(spec, i, j)) return false;
  }
  return true;
}

// The bool mask (or none: all true) and the folded causal band (or none)
// as key_padding_mask [B, L, S] values, or null when the heads differ.
function keyPaddingMask(spec, mask, band) {
  const [mb, mh] = mask ? mask.shape : [1, 1];
  const B = spec.batch, L = spec.q_len, S = spec.kv_len, plane = L * S;
  const out = new Int32Array(B * plane);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < mh; h++) {
      const from = ((mb === 1 ? 0 : b) * mh + h) * plane;
      for (let x = 0; x < plane; x++) {
        const keep = (!mask || mask.data[from + x]) && (!band || band(Math.floor(x / S), x % S)) ? 1 : 0;
        if (h === 0) out[b * plane + x] = keep;
        else if (out[b * plane + x] !== keep) return null;
      }
    }
  }
  return out;
}

function unsupportedReason(spec) {
  for (const feature of ['window', 'alibi', 'sinks', 'descales', 'softcap']) {
    if (spec[feature]) return `MultiHeadAttention has no ${feature} (not declared)`;
  }
  if (spec.kv_heads !== spec.q_heads) return 'MultiHeadAttention has one head count for q, k and v (no GQA)';
  if (spec.scale === 0) return 'MultiHeadAttention reads scale = 0 as "use 1/sqrt(d_k)"';
  const elements = spec.batch * spec.q_heads * spec.q_len * spec.kv_len;
  if (elements > MAX_ELEMENTS) return `B*H*L*S = ${elements} exceeds max_elements ${MAX_ELEMENTS}`;
  return null;
}

// A case tensor [B, H, T, d] as [B, T, H*d].
function toBSD(values, [B, H, T, d]) {
  const out = new Float32Array(values.length);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < T; t++) {
        const from = ((b * H + h) * T + t) * d, to = ((b * T + t) * H + h) * d;
        for (let c = 0; c < d; c++) out[to + c] = values[from + c];
      }
    }
  }
  return out;
}

function buildModel(plan) {
  const { TensorProto, AttributeProto, ModelProto } = loadRuntime().onnx;
  const F = plan.dtype === 'float32' ? TensorProto.DataType.FLOAT : TensorProto.DataType.FLOAT16;
  const { B, H, L, S, dk, dv } = plan;
  const inputs = [valueInfo('query', F, [B, L, H * dk]), valueInfo('key', F, [B, S, H * dk]),
    valueInfo('value', F, [B, S, H * dv])];
  const names = ['query', 'key', 'value', '']; // no packed bias
  if (plan.keyPadding) {
    inputs.push(valueInfo('key_padding_mask', TensorProto.DataType.INT32, [B, L, S]));
    names.push('key_padding_mask');
  } else {
    names.push('');
  }
  if (plan.biasShape) {
    inputs.push(valueInfo('attention_bias', F, plan.biasShape));
    names.push('attention_bias');
  }
  while (names[names.length - 1] === '') names.pop();
  const attribute = [{ name: 'num_heads', type: AttributeProto.AttributeType.INT, i: H }];
  if (plan.unidirectional) attribute.push({ name: 'unidirectional', type: AttributeProto.AttributeType.INT, i: 1 });
  if (plan.scale !== null) attribute.push({ name: 'scale', type: AttributeProto.AttributeType.FLOAT, f: plan.scale });
  if (plan.keyPadding) {
    attribute.push({ name: 'mask_filter_value', type: AttributeProto.AttributeType.FLOAT, f: -Infinity });
  }
  const model = ModelProto.create({
    irVersion: IR_VERSION,
    producerName: 'attnspec-onnxruntime-adapter',
    opsetImport: [{ domain: '', version: 23 }, { domain: 'com.microsoft', version: 1 }],
    graph: {
      name: 'multi_head_attention',
      // Only "output": asking for present_key/present_value would take the
      // flash path away (the kernel runs it only when they are absent).
      node: [{ opType: 'MultiHeadAttention', domain: 'com.microsoft', name: 'mha', input: names, output: ['output'],
        attribute }],
      input: inputs,
      output: [valueInfo('output', F, [B, L, H * dv])],
    },
  });
  return ModelProto.encode(model).finish();
}

// Runs the case in DIR and writes DIR/out.npy. Returns null on success or
// the reason the case is unsupported; throws on bad input or ORT errors.
async function runCase(dir, dtype) {
  const { ort } = loadRuntime();
  const { spec, arrays } = readCase(dir);
  const reason = unsupportedReason(spec);
  if (reason) return reason;
  for (const name of ['q', 'k', 'v', 'mask']) {
    if (!arrays[name] || arrays[name].descr === '|b1') continue;
    const encoded = encodeInput(arrays[name].data, dtype, `${name}.npy`);
    if (encoded.reason) return encoded.reason;
  }
  const B = spec.batch, H = spec.q_heads, L = spec.q_len, S = spec.kv_len, dk = spec.d_k, dv = spec.d_v;
  const unidirectional = spec.causal !== null && unidirectionalFits(spec);
  // A causal band unidirectional cannot give, as a predicate to fold into the mask.
  const band = spec.causal !== null && !unidirectional ? (i, j) => caseVisible(spec, i, j) : null;
  const plane = L * S;
  const blocked = (x) => band && !band(Math.floor((x % plane) / S), x % S);
  const keyPadding = spec.mask === 'bool' || (spec.mask === null && band)
    ? keyPaddingMask(spec, arrays.mask || null, band) : null;
  // An additive mask, or a bool mask with per-head differences as its
  // {0, -inf} bias; either with -inf where the folded band blocks.
  const bias = spec.mask === 'additive' ? Float32Array.from(arrays.mask.data, (x, i) => (blocked(i) ? -Infinity : x))
    : spec.mask === 'bool' && !keyPadding
      ? Float32Array.from(arrays.mask.data, (x, i) => (x && !blocked(i) ? 0 : -Infinity)) : null;
  const plan = {
    dtype, B, H, L, S, dk, dv, scale: spec.scale, unidirectional,
    keyPadding: keyPadding !== null, biasShape: bias ? arrays.mask.shape : null,
  };
  // float16 tensors travel as their bit patterns (the values were checked
  // to be float16 numbers, so the conversion is exact).
  const tensor = (values, shape) => (dtype === 'float32' ? new ort.Tensor('float32', values, shape)
    : new ort.Tensor('float16', toHalfArray(values), shape));
  const feeds = {
    query: tensor(toBSD(arrays.q.data, arrays.q.shape), [B, L, H * dk]),
    key: tensor(toBSD(arrays.k.data, arrays.k.shape), [B, S, H * dk]),
    value: tensor(toBSD(arrays.v.data, arrays.v.shape), [B, S, H * dv]),
  };
  if (keyPadding) feeds.key_padding_mask = new ort.Tensor('int32', keyPadding, [B, L, S]);
  if (bias) feeds.attention_bias = tensor(bias, plan.biasShape);
  const session = await sessionFor(JSON.stringify(['MultiHeadAttention', plan]), () => buildModel(plan));
  const result = await session.run(feeds);
  const y = result.output;
  if (y.dims.join(',') !== [B, L, H * dv].join(',')) throw new Error(`ORT returned shape [${y.dims}], want [${[B, L, H * dv]}]`);
  // float16 outputs stay bit patterns, written as '<f2'.
  const out = dtype === 'float32' ? new Float32Array(B * H * L * dv) : new Uint16Array(B * H * L * dv);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < L; i++) {
        const from = ((b * L + i) * H + h) * dv, to = ((b * H + h) * L + i) * dv;
        for (let c = 0; c < dv; c++) out[to + c] = y.data[from + c];
      }
    }
  }
  y.dispose?.();
  writeNpy(path.join(dir, 'out.npy'), dtype === 'float32' ? '<f4' : '<f2', [B, H, L, dv], out);
  return null;
}

function helloReply(dtype) {
  // The code path is chosen by ORT, not by the adapter; the name says when
  // the flash path is switched off, so that a report tells the columns apart.
  const noFlash = process.env.ORT_DISABLE_FLASH_ATTENTION === '1' ? '-noflash' : '';
  return {
    protocol: 1,
    name: `${runtimeLabel()}-1.30-mha-${dtype}${noFlash}`,
    // Both paths keep scores, weights and the P V sums in float32; in
    // float16 only the inputs and the output are float16 (ORT's Casts).
    formats: { input: dtype, accumulate: 'float32', output: dtype },
    capabilities: {
      masks: ['bool', 'additive'],
      // unidirectional is causal only where S = L (either alignment) or
      // L = 1 (bottom-right); other causal bands go in folded into the mask.
      causal: ['top_left', 'bottom_right'],
      gqa: false,
      scale: true,
      softcap: false,
      dv_ne_dk: true,
      lse: false,
      // A row every key of which is blocked comes out NaN (mask_filter_value
      // -inf, or -inf in attention_bias; probed).
      fully_masked_rows: false,
      max_elements: MAX_ELEMENTS,
    },
  };
}

// 1.30's CPU provider registers MultiHeadAttention<float> alone (the
// float16 kernels are CUDA's and WebGPU's); float16 runs it between Casts.
module.exports = { runCase, helloReply, dtypes: ['float32', 'float16'], buildModel, ortVisible, unidirectionalFits };
