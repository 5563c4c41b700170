#!/usr/bin/env node
'use strict';
// Which code path MultiHeadAttention took, told by its rounding: three
// equal logits and V = (0, 0, x). MLAS's flash kernel divides the summed
// P V by the row sum at the end and returns float32(x / 3); the unfused
// path normalises the weights first and returns float32(x * float32(1/3)).
// For x = 5, 7 and 100 the two differ. Run it as
//   node adapters/onnxruntime/mha_path_probe.js [--runtime node|web]
// with and without ORT_DISABLE_FLASH_ATTENTION=1 (docs/findings/onnxruntime-1.30.md).

const { selectRuntime, loadRuntime, runtimeLabel } = require('./common');
const { buildModel } = require('./mha_op');

async function main() {
  const runtime = process.argv[2] === '--runtime' ? process.argv[3] : 'node';
  selectRuntime(runtime);
  const { ort, provider } = loadRuntime();
  const plan = { dtype: 'float32', B: 1, H: 1, L: 1, S: 3, dk: 1, dv: 1, scale: null, unidirectional: false, keyPadding: false, biasShape: null };
  const session = await ort.InferenceSession.create(buildModel(plan), { executionProviders: [provider], intraOpNumThreads: 1 });
  const paths = [];
  for (const x of [5, 7, 100]) {
    const tensor = (values) => new ort.Tensor('float32', Float32Array.from(values), [1, values.length, 1]);
    const y = (await session.run({ query: tensor([0]), key: tensor([0, 0, 0]), value: tensor([0, 0, x]) })).output.data[0];
    const flash = Math.fround(x / 3), unfused = Math.fround(x * Math.fround(1 / 3));
    const path = y === flash ? 'flash' : y === unfused ? 'unfused' : 'neither';
    paths.push(path);
    console.log(`x = ${x}: ${y} (flash ${flash}, unfused ${unfused}): ${path}`);
  }
  const env = process.env.ORT_DISABLE_FLASH_ATTENTION ? ` ORT_DISABLE_FLASH_ATTENTION=${process.env.ORT_DISABLE_FLASH_ATTENTION}` : '';
  console.log(`${runtimeLabel()}${env}: ${[...new Set(paths)].join(', ')}`);
}

main().catch((error) => {
  console.error(error && error.stack ? error.stack : error);
  process.exit(1);
});
