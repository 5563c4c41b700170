"""NPY files without numpy: read versions 1.0, 2.0 and 3.0, write 1.0.

Why not numpy: it may be missing on CI machines, and this reference is to
depend on the standard library only. Arrays are kept as (shape tuple, flat
list in C order).
"""

import ast
import struct

from .errors import BadInput

NPY_MAGIC = b"\x93NUMPY"
# descr -> (struct code, item size); '|b1' is handled separately.
NPY_FLOAT_CODES = {"<f8": ("d", 8), "<f4": ("f", 4)}
NPY_DESCRS = ("<f8", "<f4", "|b1")


def shape_size(shape):
    """Number of elements of an array of this shape (1 for a scalar)."""
    size = 1
    for n in shape:
        size *= n
    return size


def _parse_npy_header(text, path):
    """Parse the header dictionary and check it describes an array we read."""
    try:
        header = ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise BadInput(f"{path}: unreadable NPY header: {exc}") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise BadInput(f"{path}: NPY header must have exactly descr, fortran_order, shape")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    if descr not in NPY_DESCRS:
        raise BadInput(f"{path}: dtype {descr!r} not supported (need one of {', '.join(NPY_DESCRS)})")
    if fortran is not False:
        raise BadInput(f"{path}: Fortran order not supported (need C order)")
    if not isinstance(shape, tuple) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise BadInput(f"{path}: bad shape {shape!r}")
    return descr, shape


def read_npy(path):
    """Read an NPY file; return (descr, shape, flat values in C order)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None
    if data[:6] != NPY_MAGIC or len(data) < 10:
        raise BadInput(f"{path}: not an NPY file")
    major = data[6]
    if major == 1:
        (header_len,) = struct.unpack_from("<H", data, 8)
        start, encoding = 10, "latin1"
    elif major in (2, 3):
        if len(data) < 12:
            raise BadInput(f"{path}: truncated NPY header")
        (header_len,) = struct.unpack_from("<I", data, 8)
        # Version 3 only changes the header encoding to UTF-8.
        start, encoding = 12, ("latin1" if major == 2 else "utf8")
    else:
        raise BadInput(f"{path}: NPY version {major}.{data[7]} not supported")
    body_start = start + header_len
    if len(data) < body_start:
        raise BadInput(f"{path}: truncated NPY header")
    descr, shape = _parse_npy_header(data[start:body_start].decode(encoding), path)
    body = data[body_start:]
    count = shape_size(shape)
    if descr == "|b1":
        if len(body) != count:
            raise BadInput(f"{path}: expected {count} bytes of data, found {len(body)}")
        if any(byte > 1 for byte in body):
            raise BadInput(f"{path}: bool array holds a byte other than 0 or 1")
        return descr, shape, [byte == 1 for byte in body]
    code, size = NPY_FLOAT_CODES[descr]
    if len(body) != count * size:
        raise BadInput(f"{path}: expected {count * size} bytes of data, found {len(body)}")
    return descr, shape, list(struct.unpack(f"<{count}{code}", body))


def write_npy(path, descr, shape, values):
    """Write an NPY version 1.0 file (C order, little-endian)."""
    shape = tuple(shape)
    if descr not in NPY_DESCRS:
        raise ValueError(f"cannot write dtype {descr!r}")
    if len(values) != shape_size(shape):
        raise ValueError(f"{path}: {len(values)} values for shape {shape}")
    shape_text = repr(shape)  # Python tuple syntax, as numpy writes it: (3,) or (2, 3)
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}"
    # numpy pads the header with spaces so the data starts on a 64-byte boundary.
    pad = -(10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    if descr == "|b1":
        body = bytes(1 if x else 0 for x in values)
    else:
        code, _ = NPY_FLOAT_CODES[descr]
        body = struct.pack(f"<{len(values)}{code}", *values)
    with open(path, "wb") as f:
        f.write(NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + body)
