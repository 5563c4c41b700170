'use strict';
// What the ONNX Runtime adapters share (adapter.js picks one with --op):
// reading an attnspec-case/1 directory, converting its f64 values to the
// kernel's input format without rounding, loading the runtime (--runtime:
// onnxruntime-node's native CPU provider, or onnxruntime-web's WASM build
// on one thread) and onnx-proto, and a small cache of inference sessions.

const fs = require('fs');
const path = require('path');
const { readNpy } = require('./npy');
const { toHalfArray, fromHalfBits } = require('./float16');

const SESSION_CACHE_SIZE = 32;

function log(message) {
  process.stderr.write(`[onnxruntime adapter] ${message}\n`);
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

function readChecked(dir, file, descr, shape) {
  const array = readNpy(path.join(dir, file));
  if (array.descr !== descr) throw new Error(`${file}: dtype ${array.descr}, want ${descr}`);
  if (shape && array.shape.join(',') !== shape.join(',')) {
    throw new Error(`${file}: shape [${array.shape}] but case.json says [${shape}]`);
  }
  return array;
}

// case.json and the arrays the adapters use: q, k, v, the mask and the
// sink logits. Windows, ALiBi and descales are fields of case.json (the
// ALiBi slopes and descale factors are not read: no adapter here takes them).
function readCase(dir) {
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'case.json'), 'utf8'));
  if (spec.format !== 'attnspec-case/1') throw new Error(`case.json: format ${JSON.stringify(spec.format)}`);
  const arrays = {
    q: readChecked(dir, 'q.npy', '<f8', [spec.batch, spec.q_heads, spec.q_len, spec.d_k]),
    k: readChecked(dir, 'k.npy', '<f8', [spec.batch, spec.kv_heads, spec.kv_len, spec.d_k]),
    v: readChecked(dir, 'v.npy', '<f8', [spec.batch, spec.kv_heads, spec.kv_len, spec.d_v]),
  };
  if (spec.mask !== null) {
    if (spec.mask !== 'bool' && spec.mask !== 'additive') throw new Error(`case.json: mask ${JSON.stringify(spec.mask)}`);
    const mask = readChecked(dir, 'mask.npy', spec.mask === 'bool' ? '|b1' : '<f8');
    const s = mask.shape;
    const ok = s.length === 4 && (s[0] === 1 || s[0] === spec.batch) && (s[1] === 1 || s[1] === spec.q_heads) &&
      s[2] === spec.q_len && s[3] === spec.kv_len;
    if (!ok) throw new Error(`mask.npy: shape [${s}] is not [B or 1, Hq or 1, L, S]`);
    if (spec.mask === 'additive') {
      mask.data.forEach((x, i) => {
        if (Number.isNaN(x) || x === Infinity) throw new Error(`mask.npy[${i}] = ${x}: additive masks are finite or -inf`);
      });
    }
    arrays.mask = mask;
  }
  if (spec.sinks === true) {
    arrays.sinks = readChecked(dir, 'sinks.npy', '<f8', [spec.q_heads]);
    arrays.sinks.data.forEach((x, i) => {
      if (Number.isNaN(x) || x === Infinity) throw new Error(`sinks.npy[${i}] = ${x}: sink logits are finite or -inf`);
    });
  }
  return { spec, arrays };
}

let runtime;
let runtimeName = 'node';
const RUNTIMES = {
  // The native library and its CPU execution provider.
  node: { label: 'onnxruntime', load: () => require('onnxruntime-node'), provider: 'cpu' },
  // The WASM build (the browsers' CPU path), in this Node process; one
  // thread, so that no worker is started.
  web: {
    label: 'onnxruntime-web',
    load: () => {
      const ort = require('onnxruntime-web');
      ort.env.wasm.numThreads = 1;
      return ort;
    },
    provider: 'wasm',
  },
};

// Picks the runtime before its first use (adapter.js's --runtime).
function selectRuntime(name) {
  if (!Object.hasOwn(RUNTIMES, name)) throw new Error(`unknown runtime ${JSON.stringify(name)}`);
  runtimeName = name;
}

// The name prefix of the hello replies: onnxruntime or onnxruntime-web.
function runtimeLabel() {
  return RUNTIMES[runtimeName].label;
}

// The runtime and onnx-proto, loaded on first use, after the command
// line is checked, so that a usage error is reported at once.
function loadRuntime() {
  if (!runtime) {
    const ort = RUNTIMES[runtimeName].load();
    ort.env.logLevel = 'error';
    runtime = { ort, onnx: require('onnx-proto').onnx, provider: RUNTIMES[runtimeName].provider };
  }
  return runtime;
}

// A graph input or output; a dimension given as a string is symbolic.
function valueInfo(name, elemType, shape) {
  const dim = shape.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d }));
  return { name, type: { tensorType: { elemType, shape: { dim } } } };
}

// Sessions keyed by everything that is baked into the model; least
// recently used dropped first. One intra-op thread: attnspec runs one case
// at a time and the machines running it are shared.
const sessions = new Map();

async function sessionFor(key, buildModel) {
  const { ort, provider } = loadRuntime();
  let session = sessions.get(key);
  if (session) {
    sessions.delete(key);
  } else {
    session = await ort.InferenceSession.create(buildModel(), {
      executionProviders: [provider],
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

module.exports = { log, encodeInput, readCase, selectRuntime, runtimeLabel, loadRuntime, valueInfo, sessionFor };
