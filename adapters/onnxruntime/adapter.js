#!/usr/bin/env node
'use strict';
// attnspec-process/1 adapter for ONNX Runtime 1.30 (onnxruntime-node, CPU
// execution provider): each attnspec-case/1 case is run through a one-node
// ONNX model, opset 23 "Attention" with 4-D Q/K/V, so that the matmuls, the
// softmax, the scale, the softcap, the mask handling, top-left causal
// masking and the GQA head mapping are all ORT's own.
//
// Glue done here, in the kernel's input format, and nothing else:
// - the case's f64 values are converted to float32 (Math.fround) or to
//   float16 bit patterns; a value the format cannot represent exactly makes
//   the case "unsupported" rather than being rounded silently;
// - an additive mask becomes an attn_mask input of the input dtype, so in
//   float16 mode its values are rounded to float16 (-inf stays -inf);
// - an explicit scale and a softcap become ORT's float attributes (float32);
//   without one the attribute is omitted and ORT uses its default;
// - outputs are written as ORT returns them ('<f4', or '<f2' bit patterns).
// Sessions use one intra-op thread: attnspec runs one case at a time and
// the machines running it are shared.
// Protocol replies go to stdout, one JSON object a line; logs go to stderr.

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { readNpy, writeNpy } = require('./npy');
const { toHalfArray, fromHalfBits } = require('./float16');

const OPSET = 23;
const IR_VERSION = 11; // the IR version that introduced opset 23
const MAX_ELEMENTS = 1 << 24; // B*Hq*L*S: ORT materialises every score
const SESSION_CACHE_SIZE = 32;

function log(message) {
  process.stderr.write(`[onnxruntime adapter] ${message}\n`);
}

function parseDtype(argv) {
  let dtype = 'float32';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--dtype' && i + 1 < argv.length) dtype = argv[++i];
    else if (argv[i].startsWith('--dtype=')) dtype = argv[i].slice('--dtype='.length);
    else {
      log(`unknown argument ${JSON.stringify(argv[i])}; usage: node adapter.js [--dtype float32|float16]`);
      process.exit(2);
    }
  }
  if (dtype !== 'float32' && dtype !== 'float16') {
    log(`unsupported --dtype ${JSON.stringify(dtype)}: want float32 or float16`);
    process.exit(2);
  }
  return dtype;
}

// Why ORT's Attention cannot run this case, or null when it can.
function unsupportedReason(spec) {
  if (spec.causal === 'bottom_right') return "ORT's Attention is_causal is top-left only; bottom_right is not offered";
  if (spec.causal !== null && spec.causal !== 'top_left') return `unknown causal ${JSON.stringify(spec.causal)}`;
  const elements = spec.batch * spec.q_heads * spec.q_len * spec.kv_len;
  if (elements > MAX_ELEMENTS) return `B*Hq*L*S = ${elements} exceeds max_elements ${MAX_ELEMENTS}`;
  return null;
}

// The tensor element values in the adapter's dtype, or a reason why the
// values are not all representable there.
function encodeInput(values, dtype, name) {
  if (dtype === 'float32') {
    const out = Float32Array.from(values);
    for (let i = 0; i < values.length; i++) {
      if (out[i] !== values[i] && !(Number.isNaN(values[i]) && Number.isNaN(out[i]))) {
        return { reason: `${name}[${i}] = ${values[i]} is not representable in float32` };
      }
    }
    return { data: out };
  }
  const bits = toHalfArray(values);
  for (let i = 0; i < values.length; i++) {
    const back = fromHalfBits(bits[i]);
    if (back !== values[i] && !(Number.isNaN(values[i]) && Number.isNaN(back))) {
      return { reason: `${name}[${i}] = ${values[i]} is not representable in float16` };
    }
  }
  return { data: bits };
}

function readCase(dir) {
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'case.json'), 'utf8'));
  if (spec.format !== 'attnspec-case/1') throw new Error(`case.json: format ${JSON.stringify(spec.format)}`);
  const dims = {
    q: [spec.batch, spec.q_heads, spec.q_len, spec.d_k],
    k: [spec.batch, spec.kv_heads, spec.kv_len, spec.d_k],
    v: [spec.batch, spec.kv_heads, spec.kv_len, spec.d_v],
  };
  const arrays = {};
  for (const name of ['q', 'k', 'v']) {
    arrays[name] = readNpy(path.join(dir, `${name}.npy`));
    if (arrays[name].descr !== '<f8') throw new Error(`${name}.npy: dtype ${arrays[name].descr}, want <f8`);
    if (arrays[name].shape.join(',') !== dims[name].join(',')) {
      throw new Error(`${name}.npy: shape [${arrays[name].shape}] but case.json says [${dims[name]}]`);
    }
  }
  if (spec.mask !== null) {
    const mask = readNpy(path.join(dir, 'mask.npy'));
    const want = spec.mask === 'bool' ? '|b1' : '<f8';
    if (spec.mask !== 'bool' && spec.mask !== 'additive') throw new Error(`case.json: mask ${JSON.stringify(spec.mask)}`);
    if (mask.descr !== want) throw new Error(`mask.npy: dtype ${mask.descr}, want ${want} for a ${spec.mask} mask`);
    const s = mask.shape;
    const ok = s.length === 4 && (s[0] === 1 || s[0] === spec.batch) && (s[1] === 1 || s[1] === spec.q_heads) &&
      s[2] === spec.q_len && s[3] === spec.kv_len;
    if (!ok) throw new Error(`mask.npy: shape [${s}] is not [B or 1, Hq or 1, L, S]`);
    arrays.mask = mask;
  }
  return { spec, arrays };
}

// ---- the one-node model ---------------------------------------------------

let onnxProto;
let ort;

// Loaded on first use, after the command line is checked, so that a usage
// error is reported at once.
function loadRuntime() {
  if (ort) return;
  onnxProto = require('onnx-proto').onnx;
  ort = require('onnxruntime-node');
  ort.env.logLevel = 'error';
}

function valueInfo(name, elemType, shape) {
  return {
    name,
    type: { tensorType: { elemType, shape: { dim: shape.map((d) => ({ dimValue: d })) } } },
  };
}

function buildModel(dtype, shapes, maskKind, scale, softcap, causal) {
  const { TensorProto, AttributeProto, ModelProto } = onnxProto;
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

// Sessions keyed by everything that is baked into the model; least
// recently used dropped first.
const sessions = new Map();

async function sessionFor(dtype, shapes, maskKind, scale, softcap, causal) {
  const key = JSON.stringify([dtype, shapes, maskKind, scale, softcap, causal]);
  let session = sessions.get(key);
  if (session) {
    sessions.delete(key);
  } else {
    const model = buildModel(dtype, shapes, maskKind, scale, softcap, causal);
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      logSeverityLevel: 3,
    });
    if (sessions.size >= SESSION_CACHE_SIZE) {
      const [oldestKey, oldest] = sessions.entries().next().value;
      sessions.delete(oldestKey);
      await oldest.release();
    }
  }
  sessions.set(key, session);
  return session;
}

// ---- one case -------------------------------------------------------------

// Runs the case in DIR and writes DIR/out.npy. Returns null on success or
// the reason the case is unsupported; throws on bad input or ORT errors.
async function runCase(dir, dtype) {
  loadRuntime();
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
      for (let i = 0; i < values.length; i++) {
        if (Number.isNaN(values[i]) || values[i] === Infinity) throw new Error(`mask.npy[${i}] = ${values[i]}: additive masks are finite or -inf`);
      }
      const data = dtype === 'float32' ? Float32Array.from(values) : toHalfArray(values);
      feeds.attn_mask = new ort.Tensor(ortType, data, shapes.mask);
    }
  }
  const session = await sessionFor(dtype, shapes, spec.mask, spec.scale, spec.softcap, spec.causal === 'top_left');
  const result = await session.run(feeds);
  const y = result.Y;
  if (y.dims.join(',') !== shapes.y.join(',')) throw new Error(`ORT returned shape [${y.dims}], want [${shapes.y}]`);
  if (dtype === 'float32') writeNpy(path.join(dir, 'out.npy'), '<f4', shapes.y, y.data);
  else writeNpy(path.join(dir, 'out.npy'), '<f2', shapes.y, y.data);
  y.dispose?.();
  return null;
}

// ---- protocol -------------------------------------------------------------

function reply(object) {
  process.stdout.write(`${JSON.stringify(object)}\n`);
}

function helloReply(dtype) {
  return {
    protocol: 1,
    name: `onnxruntime-1.30-${dtype}`,
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

async function handle(request, dtype) {
  if (request.op === 'hello') {
    if (request.protocol !== 1) log(`hello asks for protocol ${request.protocol}; this adapter speaks 1`);
    reply(helloReply(dtype));
    return;
  }
  if (request.op === 'run') {
    const id = request.id;
    try {
      if (typeof request.case !== 'string') throw new Error('"case" must be a directory path');
      const reason = await runCase(request.case, dtype);
      if (reason) reply({ id, ok: false, unsupported: true, error: reason });
      else reply({ id, ok: true });
    } catch (error) {
      const message = error && error.message ? error.message : String(error);
      log(`case ${id} (${request.case}): ${message}`);
      reply({ id, ok: false, error: message });
    }
    return;
  }
  if (request.op === 'bye') process.exit(0);
  log(`ignoring unknown op ${JSON.stringify(request.op)}`);
  if (request.id !== undefined) reply({ id: request.id, ok: false, error: `unknown op ${JSON.stringify(request.op)}` });
}

async function main() {
  const dtype = parseDtype(process.argv.slice(2));
  loadRuntime();
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      log(`not JSON, ignored: ${line.slice(0, 200)}`);
      continue;
    }
    await handle(request, dtype);
  }
  process.exit(0); // stdin closed without "bye"
}

if (require.main === module) {
  main().catch((error) => {
    log(`fatal: ${error && error.stack ? error.stack : error}`);
    process.exit(1);
  });
}

module.exports = { runCase, helloReply };
