'use strict';
// Minimal NPY reader and writer for the attnspec-case/1 arrays (spec/SPEC.md
// section 4): reads '<f8' and '|b1' arrays of NPY versions 1-3 in C order,
// writes '<f4' and '<f2' arrays as NPY 1.0. Anything else is refused with a
// message naming the file, so a malformed case fails loudly rather than
// being misread.

const fs = require('fs');
const os = require('os');

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // "\x93NUMPY"

function parseHeader(text, file) {
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) throw new Error(`${file}: unreadable NPY header ${JSON.stringify(text)}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`${file}: bad shape (${shape[1]})`);
  return { descr: descr[1], fortranOrder: fortran[1] === 'True', shape: dims };
}

// Returns { descr, shape, data } with data a Float64Array ('<f8') or a
// Uint8Array of 0/1 ('|b1').
function readNpy(file) {
  const bytes = fs.readFileSync(file);
  if (bytes.length < 10 || !bytes.subarray(0, 6).equals(MAGIC)) throw new Error(`${file}: not an NPY file`);
  const major = bytes[6];
  let headerLength;
  let headerStart;
  if (major === 1) {
    headerLength = bytes.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    headerLength = bytes.readUInt32LE(8);
    headerStart = 12;
  } else {
    throw new Error(`${file}: NPY version ${major} is not supported`);
  }
  const dataStart = headerStart + headerLength;
  const header = parseHeader(bytes.subarray(headerStart, dataStart).toString(major === 3 ? 'utf8' : 'latin1'), file);
  if (header.fortranOrder) throw new Error(`${file}: Fortran order is not supported`);
  const count = header.shape.reduce((a, b) => a * b, 1);
  const body = bytes.subarray(dataStart);
  let data;
  if (header.descr === '<f8') {
    if (body.length < count * 8) throw new Error(`${file}: truncated (${body.length} bytes for ${count} doubles)`);
    // Copy into a fresh buffer: the data offset need not be 8-byte aligned.
    data = new Float64Array(count);
    Buffer.from(data.buffer).set(body.subarray(0, count * 8));
  } else if (header.descr === '|b1') {
    if (body.length < count) throw new Error(`${file}: truncated (${body.length} bytes for ${count} bools)`);
    data = Uint8Array.from(body.subarray(0, count));
    if (data.some((b) => b > 1)) throw new Error(`${file}: bool mask holds bytes other than 0 and 1`);
  } else {
    throw new Error(`${file}: dtype ${header.descr} is not supported (want <f8 or |b1)`);
  }
  return { descr: header.descr, shape: header.shape, data };
}

// Writes a typed array as NPY 1.0 with descr '<f4' (Float32Array) or '<f2'
// (Uint16Array of IEEE half bit patterns). Written beside the target and
// renamed, so a reader never sees half a file.
function writeNpy(file, descr, shape, data) {
  const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${tuple}, }`;
  // Pad with spaces so that magic + version + length + header ends on a
  // 64-byte boundary, the last byte being '\n'.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  const prefix = Buffer.alloc(10);
  MAGIC.copy(prefix, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  // Typed arrays are in host byte order; NPY '<' means little-endian.
  if (os.endianness() !== 'LE') throw new Error('big-endian hosts are not supported');
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const partial = `${file}.partial`;
  fs.writeFileSync(partial, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(partial, file);
}

module.exports = { readNpy, writeNpy };
