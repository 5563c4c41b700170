#!/usr/bin/env node
'use strict';
// attnspec-process/1 adapter for ONNX Runtime 1.30 on the CPU. Each
// attnspec-case/1 case runs through a one-node ONNX model of the operator
// --op names:
//   attention             ONNX's Attention, opset 23 (attention_op.js)
//   group_query_attention the com.microsoft GroupQueryAttention contrib
//                         operator (gqa_op.js)
//   multi_head_attention  the com.microsoft MultiHeadAttention contrib
//                         operator (mha_op.js)
// --dtype float32 (default) or float16; --runtime node (default:
// onnxruntime-node, the native CPU execution provider) or web
// (onnxruntime-web, its WASM build, one thread).
// Protocol replies go to stdout, one JSON object a line; logs go to stderr.

const readline = require('readline');
const { log, loadRuntime, selectRuntime } = require('./common');

const OPS = {
  attention: () => require('./attention_op'),
  group_query_attention: () => require('./gqa_op'),
  multi_head_attention: () => require('./mha_op'),
};
const RUNTIMES = ['node', 'web'];
const USAGE = 'usage: node adapter.js [--op attention|group_query_attention|multi_head_attention] ' +
  '[--dtype float32|float16] [--runtime node|web]';

function parseArguments(argv) {
  const options = { op: 'attention', dtype: 'float32', runtime: 'node' };
  for (let i = 0; i < argv.length; i++) {
    const match = /^--(op|dtype|runtime)(?:=(.*))?$/.exec(argv[i]);
    if (!match) {
      log(`unknown argument ${JSON.stringify(argv[i])}; ${USAGE}`);
      process.exit(2);
    }
    let value = match[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) {
        log(`--${match[1]} needs a value; ${USAGE}`);
        process.exit(2);
      }
      value = argv[++i];
    }
    options[match[1]] = value;
  }
  if (!Object.hasOwn(OPS, options.op)) {
    log(`unknown --op ${JSON.stringify(options.op)}: want ${Object.keys(OPS).join(' or ')}`);
    process.exit(2);
  }
  if (!RUNTIMES.includes(options.runtime)) {
    log(`unknown --runtime ${JSON.stringify(options.runtime)}: want ${RUNTIMES.join(' or ')}`);
    process.exit(2);
  }
  selectRuntime(options.runtime);
  const op = OPS[options.op]();
  if (!op.dtypes.includes(options.dtype)) {
    log(`unsupported --dtype ${JSON.stringify(options.dtype)} for --op ${options.op}: want ${op.dtypes.join(' or ')}`);
    process.exit(2);
  }
  return { op, dtype: options.dtype };
}

function reply(object) {
  process.stdout.write(`${JSON.stringify(object)}\n`);
}

async function handle(request, op, dtype) {
  if (request.op === 'hello') {
    if (request.protocol !== 1) log(`hello asks for protocol ${request.protocol}; this adapter speaks 1`);
    reply(op.helloReply(dtype));
    return;
  }
  if (request.op === 'run') {
    const id = request.id;
    try {
      if (typeof request.case !== 'string') throw new Error('"case" must be a directory path');
      // No "kind": a dense attnspec-case/1 case; else an attnspec-packed/1
      // one, for the layouts the operator declares.
      const run = request.kind === undefined ? op.runCase : op.packed && op.packed[request.kind];
      if (!run) throw new Error(`this operator takes no ${JSON.stringify(request.kind)} cases (not declared)`);
      const reason = await run(request.case, dtype);
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
  const { op, dtype } = parseArguments(process.argv.slice(2));
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
    await handle(request, op, dtype);
  }
  process.exit(0); // stdin closed without "bye"
}

main().catch((error) => {
  log(`fatal: ${error && error.stack ? error.stack : error}`);
  process.exit(1);
});
