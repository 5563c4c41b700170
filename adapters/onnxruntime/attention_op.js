'use strict';
// ONNX's Attention operator (opset 23) with 4-D Q [B,Hq,L,dk], K
// [B,Hkv,S,dk], V [B,Hkv,S,dv] and an optional attn_mask, one node a model,
// so that the matmuls, the softmax, the scale, the softcap, the mask
// handling, top-left causal masking and the GQA head mapping are all ORT's.
//
// Glue done here, in the kernel's input format, and nothing else:
// - the case's f64 values are converted to float32 or float16 (common.js);
//   a value the format cannot represent makes the case "unsupported";
// - an additive mask becomes an attn_mask of the input dtype, so in
//   float16 mode its values are rounded to float16 (-inf stays -inf);
// - an explicit scale and a softcap become ORT's float attributes (float32);
//   without one the attribute is omitted and ORT uses its default;
// - outputs are written as ORT returns them ('<f4', or '<f2' bit patterns).

const path = require('path');
const { writeNpy } = require('./npy');
const { toHalfArray } = require('./float16');
const { encodeInput, readCase, loadRuntime, valueInfo, sessionFor, runtimeLabel } = require('./common');

const OPSET = 23;
const IR_VERSION = 11; // the IR version that introduced opset 23
const MAX_ELEMENTS = 1 << 24; // B*Hq*L*S: ORT materialises every score

// Why ORT's Attention cannot run this case, or null when it can.
function unsupportedReason(spec) {
  if (spec.causal === 'bottom_right') return "ORT's Attention is_causal is top-left only; bottom_right is not offered";
  if (spec.causal !== null && spec.causal !== 'top_left') return `unknown causal ${JSON.stringify(spec.causal)}`;
  for (const feature of ['window', 'alibi', 'sinks', 'descales']) {
    if (spec[feature]) return `ORT's Attention has no ${feature} (not declared)`;
  }
  const elements = spec.batch * spec.q_heads * spec.q_len * spec.kv_len;
  if (elements > MAX_ELEMENTS) return `B*Hq*L*S = ${elements} exceeds max_elements ${MAX_ELEMENTS}`;
  return null;
}

function buildModel(dtype, shapes, maskKind, scale, softcap, causal) {
  const { TensorProto, AttributeProto, ModelProto } = loadRuntime().onnx;
  const elemType = dtype === 'float32' ? TensorProto.DataType.FLOAT : TensorProto.DataType.FLOAT16;
  const inputs = [valueInfo('Q', elemType, shapes.q), valueInfo('K', elemType, shapes.k), valueInfo('V', elemType, shapes.v)];
  const nodeInputs = ['Q', 'K', 'V'];
  if (maskKind !== null) {
    const maskType = maskKind === 'bool' ? TensorProto.DataType.BOOL : elemType;
    inputs.push(valueInfo('attn_mask', maskType, shapes.mask));
    nodeInputs.push('attn_mask');
  }
  const attribute = [];
  if (causal) attribute.push({ name: 'is_causal', type: AttributeProto.AttributeType.INT, i: 1 });
  if (scale !== null) attribute.push({ name: 'scale', type: AttributeProto.AttributeType.FLOAT, f: scale });
  if (softcap !== null) attribute.push({ name: 'softcap', type: AttributeProto.AttributeType.FLOAT, f: softcap });
  const model = ModelProto.create({
    irVersion: IR_VERSION,
    producerName: 'attnspec-onnxruntime-adapter',
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: 'attention',
      node: [{ opType: 'Attention', domain: '', name: 'attention', input: nodeInputs, output: ['Y'], attribute }],
      input: inputs,
      output: [valueInfo('Y', elemType, shapes.y)],
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
  const ortType = dtype === 'float32' ? 'float32' : 'float16';
  const shapes = {
    q: arrays.q.shape,
    k: arrays.k.shape,
    v: arrays.v.shape,
    y: [spec.batch, spec.q_heads, spec.q_len, spec.d_v],
  };
  const feeds = {};
  for (const [name, input] of [['Q', 'q'], ['K', 'k'], ['V', 'v']]) {
    const encoded = encodeInput(arrays[input].data, dtype, `${input}.npy`);
    if (encoded.reason) return encoded.reason;
    feeds[name] = new ort.Tensor(ortType, encoded.data, arrays[input].shape);
  }
  if (spec.mask !== null) {
    shapes.mask = arrays.mask.shape;
    const values = arrays.mask.data;
    if (spec.mask === 'bool') {
      feeds.attn_mask = new ort.Tensor('bool', values, shapes.mask);
    } else {
      const data = dtype === 'float32' ? Float32Array.from(values) : toHalfArray(values);
      feeds.attn_mask = new ort.Tensor(ortType, data, shapes.mask);
    }
  }
  const causal = spec.causal === 'top_left';
  const key = JSON.stringify(['Attention', dtype, shapes, spec.mask, spec.scale, spec.softcap, causal]);
  const session = await sessionFor(key, () => buildModel(dtype, shapes, spec.mask, spec.scale, spec.softcap, causal));
  const result = await session.run(feeds);
  const y = result.Y;
  if (y.dims.join(',') !== shapes.y.join(',')) throw new Error(`ORT returned shape [${y.dims}], want [${shapes.y}]`);
  writeNpy(path.join(dir, 'out.npy'), dtype === 'float32' ? '<f4' : '<f2', shapes.y, y.data);
  y.dispose?.();
  return null;
}

function helloReply(dtype) {
  return {
    protocol: 1,
    name: `${runtimeLabel()}-1.30-${dtype}`,
    // float16: ORT 1.30's CPU Attention<MLFloat16> keeps its scores and
    // softmax weights in MLFloat16 buffers (see README), so float16 is the
    // format its intermediates are rounded to.
    formats: { input: dtype, accumulate: dtype, output: dtype },
    capabilities: {
      masks: ['bool', 'additive'],
      causal: ['top_left'],
      gqa: true,
      scale: true,
      softcap: true,
      dv_ne_dk: true,
      lse: false,
      // Rows with no visible key come out as 0 (checked: bool masks,
      // additive -inf rows, both dtypes; FULLMASK passes).
      fully_masked_rows: true,
      max_elements: MAX_ELEMENTS,
    },
  };
}

module.exports = { runCase, helloReply, dtypes: ['float32', 'float16'] };
