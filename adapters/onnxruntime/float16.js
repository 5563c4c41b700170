'use strict';
// IEEE 754 binary16 conversions for the float16 mode: onnxruntime-node takes
// and returns float16 tensors as Uint16Array bit patterns, and Node 20 has no
// Float16Array. Rounding is to nearest, ties to even, with subnormals,
// overflow to infinity, signed zeros and NaN, so that a value exactly
// representable in float16 round-trips unchanged and anything else (an
// additive mask value) is rounded as float16 arithmetic would round it.

const TWO_POW_24 = 2 ** 24;
const SMALLEST_NORMAL = 2 ** -14;

function roundHalfEven(x) {
  const floor = Math.floor(x);
  const fraction = x - floor; // exact: x < 2^53
  if (fraction > 0.5) return floor + 1;
  if (fraction < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

// binary64 -> binary16 bits.
function toHalfBits(value) {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const magnitude = Math.abs(value);
  if (magnitude === Infinity) return sign | 0x7c00;
  if (magnitude < SMALLEST_NORMAL) {
    // Subnormal grid 2^-24; a rounding up to 1024 units lands exactly on the
    // smallest normal's bit pattern 0x0400.
    return sign | roundHalfEven(magnitude * TWO_POW_24);
  }
  // magnitude = m * 2^(exponent - 10) with m in [1024, 2048).
  let exponent = Math.floor(Math.log2(magnitude));
  // log2 may be off by one next to a power of two; correct it exactly.
  if (2 ** exponent > magnitude) exponent -= 1;
  else if (2 ** (exponent + 1) <= magnitude) exponent += 1;
  let significand = roundHalfEven(magnitude / 2 ** (exponent - 10));
  if (significand === 2048) {
    significand = 1024;
    exponent += 1;
  }
  if (exponent > 15) return sign | 0x7c00; // overflow (65520 and above)
  return sign | ((exponent + 15) << 10) | (significand - 1024);
}

// binary16 bits -> binary64 (exact).
function fromHalfBits(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1024 + fraction) * 2 ** (exponent - 25);
}

function toHalfArray(values) {
  const bits = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) bits[i] = toHalfBits(values[i]);
  return bits;
}

module.exports = { toHalfBits, fromHalfBits, toHalfArray };
