'use strict';
// Checks gqa_op.js's mapping of a case's causal masking and window onto
// GroupQueryAttention's causal / local_window_size (row i sees keys
// i + S - L - W + 1 ... i + S - L, probed on 1.30): the expected answers
// are worked out by hand from spec/SPEC.md 2.2. Exits 1 on a mismatch.
// Also mha_op.js's test of where unidirectional = 1 is the case's causal band.
// Run: node adapters/onnxruntime/band_test.js (no ONNX Runtime needed).

const { mapBand } = require('./gqa_op');

const window = (left, right, alignment = 'bottom_right') => ({ left, right, alignment });
const cases = [
  // [label, L, S, causal, window, expected {causal, windowSize} or null]
  ['no masking', 3, 5, null, null, { causal: 0, windowSize: -1 }],
  ['causal bottom-right', 3, 5, 'bottom_right', null, { causal: 1, windowSize: -1 }],
  ['causal top-left, S = L', 4, 4, 'top_left', null, { causal: 1, windowSize: -1 }],
  ['causal top-left, S > L', 3, 5, 'top_left', null, null],
  ['window (2, 0): 3 keys', 3, 5, null, window(2, 0), { causal: 1, windowSize: 3 }],
  ['window (0, 0): the diagonal', 3, 5, null, window(0, 0), { causal: 1, windowSize: 1 }],
  ['window (unbounded, 0) is causal', 3, 5, null, window(null, 0), { causal: 1, windowSize: -1 }],
  ['causal with window (2, 4)', 3, 5, 'bottom_right', window(2, 4), { causal: 1, windowSize: 3 }],
  ['window (2, 1): keys right of the diagonal', 3, 5, null, window(2, 1), null],
  ['window (unbounded, unbounded)', 3, 5, null, window(null, null), { causal: 0, windowSize: -1 }],
  ['window (2, unbounded): no right edge', 3, 5, null, window(2, null), null],
  ['window past every key: none left', 2, 2, null, window(9, 0), { causal: 1, windowSize: -1 }],
  ['top-left window (1, 0), S > L', 2, 4, null, window(1, 0, 'top_left'), null],
];

let failures = 0;
for (const [label, L, S, causal, win, expected] of cases) {
  const got = mapBand({ q_len: L, kv_len: S, causal, window: win });
  if (JSON.stringify(got) !== JSON.stringify(expected)) {
    console.log(`FAIL ${label}: got ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
    ++failures;
  }
}
console.log(`${cases.length - failures} of ${cases.length} band mappings as expected`);

// MultiHeadAttention's unidirectional = 1 (probed on 1.30: row i sees j <= i,
// the last row every key): the causal cases it gives (mha_op.js), by hand.
const { unidirectionalFits } = require('./mha_op');
const mhaCases = [
  // [label, L, S, causal, expected]
  ['S = L, top-left', 4, 4, 'top_left', true],
  ['S = L, bottom-right', 4, 4, 'bottom_right', true],
  ['L = 1, bottom-right: every key', 1, 5, 'bottom_right', true],
  ['L = 1, top-left: key 0 only', 1, 5, 'top_left', false],
  ['S > L, top-left: the last row would see all', 3, 5, 'top_left', false],
  ['S > L, bottom-right', 3, 5, 'bottom_right', false],
  ['S < L, top-left: rows past S see every key anyway', 5, 2, 'top_left', true],
];
let mhaFailures = 0;
for (const [label, L, S, causal, expected] of mhaCases) {
  const got = unidirectionalFits({ q_len: L, kv_len: S, causal });
  if (got !== expected) {
    console.log(`FAIL MultiHeadAttention ${label}: got ${got}, expected ${expected}`);
    ++mhaFailures;
  }
}
console.log(`${mhaCases.length - mhaFailures} of ${mhaCases.length} MultiHeadAttention causal mappings as expected`);
process.exit(failures + mhaFailures ? 1 : 0);
