"""attnspec cases (SPEC.md section 4): read and validate a case directory, or write one.

A case's q, k and v are the kernel's inputs; with descales (q_descale.npy,
k_descale.npy, v_descale.npy) the real inputs that attention is defined on
are those times their factors, and Case.q_row, k_row and v_row give them.

Validation follows the spec field by field; write_case reads back what it
wrote, so that a generator (random_cases.py, scripts/make_golden_cases.py)
cannot write a case this reference would reject.
"""

import json
from fractions import Fraction
import math
import os
from dataclasses import dataclass

from .errors import BadInput
from .formats import FORMATS, is_representable
from .npy import read_npy, write_npy
from .layouts import check_layout

CASE_FORMAT = "attnspec-case/1"
CASE_FIELDS = (
    "format", "dtype", "batch", "q_heads", "kv_heads", "q_len", "kv_len",
    "d_k", "d_v", "scale", "softcap", "causal", "mask", "provenance",
)
# Optional fields: absent means null (written only when set).
OPTIONAL_FIELDS = ("window", "alibi", "sinks", "descales", "backward", "layout", "merge")
# The descale factors' files (case.json's "descales": true), [B, Hkv] each.
DESCALE_NAMES = ("q", "k", "v")
SIZE_FIELDS = ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "d_k", "d_v")


@dataclass
class Case:
    """A case: case.json fields plus the arrays as flat lists in C order."""

    path: str
    dtype: str
    batch: int
    q_heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    d_k: int
    d_v: int
    scale: object  # float or None
    softcap: object  # float or None
    causal: object  # None, "top_left" or "bottom_right"
    window: object  # None or {"left": int or None, "right": int or None, "alignment": ...}
    alibi: object  # None or {"alignment": ...}
    alibi_slopes: object  # flat list ([Hq] or [B, Hq]) or None
    sinks: object  # flat list [Hq] of sink logits (-inf: none for that head) or None
    mask_kind: object  # None, "bool" or "additive"
    q: list  # q, k, v: the kernel's inputs (before any descales)
    k: list
    v: list
    mask: object  # flat list or None
    mask_shape: object  # (B or 1, Hq or 1, L, S) or None
    # None, or {"q": [...], "k": [...], "v": [...]}: flat [B, Hkv] factors.
    descales: object = None
    # None, or case.json's "layout" recipe (SPEC.md section 2.5, layouts.py).
    layout: object = None
    # None, or the flat [B, Hq, L, d_v] gradient of the loss w.r.t. the
    # output ("backward": true, dout.npy; SPEC.md section 2.6).
    dout: object = None

    # The rows below are the real inputs (SPEC.md section 2.4): the kernel's
    # inputs times their (batch, kv head)'s factor, exactly, as Fractions
    # where finite (a float32 factor times a 53-bit value need not be a
    # float); NaN and infinities stay floats (a factor is > 0). Without
    # descales, the case's floats as they are.
    def _real(self, values, name, b, g):
        if self.descales is None:
            return values
        factor = Fraction(self.descales[name][b * self.kv_heads + g])
        return [Fraction(x) * factor if math.isfinite(x) else x for x in values]

    def q_row(self, b, h, i):
        start = ((b * self.q_heads + h) * self.q_len + i) * self.d_k
        g = h // (self.q_heads // self.kv_heads)  # a query head reads its kv head's factor
        return self._real(self.q[start:start + self.d_k], "q", b, g)

    def k_row(self, b, g, j):
        start = ((b * self.kv_heads + g) * self.kv_len + j) * self.d_k
        return self._real(self.k[start:start + self.d_k], "k", b, g)

    def v_row(self, b, g, j):
        start = ((b * self.kv_heads + g) * self.kv_len + j) * self.d_v
        return self._real(self.v[start:start + self.d_v], "v", b, g)

    def dout_row(self, b, h, i):
        start = ((b * self.q_heads + h) * self.q_len + i) * self.d_v
        return self.dout[start:start + self.d_v]

    def alibi_bias(self, b, h, i, j):
        """-slope |i + off - j| as an exact Fraction (0 without ALiBi)."""
        if self.alibi is None:
            return Fraction(0)
        slope = self.alibi_slopes[b * self.q_heads + h]  # [B, Hq]; read_case broadcasts [Hq]
        off = 0 if self.alibi["alignment"] == "top_left" else self.kv_len - self.q_len
        return -Fraction(slope) * abs(i + off - j)

    def sink(self, h):
        """Head h's sink logit as a Fraction, or None (no sinks, or -inf)."""
        if self.sinks is None or self.sinks[h] == -math.inf:
            return None
        return Fraction(self.sinks[h])

    def mask_at(self, b, h, i, j):
        """The mask entry for (b, h, i, j), broadcasting size-1 dimensions."""
        mb = b if self.mask_shape[0] > 1 else 0
        mh = h if self.mask_shape[1] > 1 else 0
        return self.mask[((mb * self.mask_shape[1] + mh) * self.q_len + i) * self.kv_len + j]


def _reject_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise BadInput(f"duplicate field in case.json: {keys}")
    return dict(pairs)


def _check_positive_finite_or_null(meta, name, where):
    value = meta[name]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{where}: {name} must be null or a number")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise BadInput(f"{where}: {name} must be finite and > 0")
    return value


def _check_meta(meta, where):
    """Validate case.json fields; return them normalised."""
    if not isinstance(meta, dict):
        raise BadInput(f"{where}: case.json must hold an object")
    unknown = set(meta) - set(CASE_FIELDS) - set(OPTIONAL_FIELDS)
    missing = set(CASE_FIELDS) - set(meta)
    if unknown or missing:
        raise BadInput(f"{where}: unknown fields {sorted(unknown)}, missing fields {sorted(missing)}")
    if meta["format"] != CASE_FORMAT:
        raise BadInput(f"{where}: format must be {CASE_FORMAT!r}")
    if meta["dtype"] not in FORMATS:
        raise BadInput(f"{where}: unknown dtype {meta['dtype']!r}")
    for name in SIZE_FIELDS:
        n = meta[name]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise BadInput(f"{where}: {name} must be an integer >= 1")
    if meta["q_heads"] % meta["kv_heads"] != 0:
        raise BadInput(f"{where}: q_heads must be a multiple of kv_heads")
    if meta["causal"] not in (None, "top_left", "bottom_right"):
        raise BadInput(f"{where}: causal must be null, 'top_left' or 'bottom_right'")
    window = meta.get("window")
    if window is not None:
        if not isinstance(window, dict) or set(window) != {"left", "right", "alignment"}:
            raise BadInput(f"{where}: window must be null or an object with left, right and alignment")
        for side in ("left", "right"):
            n = window[side]
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
                raise BadInput(f"{where}: window.{side} must be null or an integer >= 0")
        if window["alignment"] not in ("top_left", "bottom_right"):
            raise BadInput(f"{where}: window.alignment must be 'top_left' or 'bottom_right'")
    alibi = meta.get("alibi")
    if alibi is not None and (not isinstance(alibi, dict) or set(alibi) != {"alignment"}
                              or alibi["alignment"] not in ("top_left", "bottom_right")):
        raise BadInput(f"{where}: alibi must be null or {{'alignment': 'top_left' or 'bottom_right'}}")
    if meta.get("sinks") not in (None, False, True):
        raise BadInput(f"{where}: sinks must be null, false or true")
    if meta.get("descales") not in (None, False, True):
        raise BadInput(f"{where}: descales must be null, false or true")
    if meta.get("backward") not in (None, False, True):
        raise BadInput(f"{where}: backward must be null, false or true")
    if meta.get("backward") and (meta.get("descales") or meta.get("layout") is not None or meta.get("merge")):
        raise BadInput(f"{where}: backward is for dense cases without descales")
    if meta.get("merge") not in (None, False, True):
        raise BadInput(f"{where}: merge must be null, false or true")
    if meta["mask"] not in (None, "bool", "additive"):
        raise BadInput(f"{where}: mask must be null, 'bool' or 'additive'")
    if not isinstance(meta["provenance"], dict):
        raise BadInput(f"{where}: provenance must be an object")
    meta = dict(meta)
    meta["scale"] = _check_positive_finite_or_null(meta, "scale", where)
    meta["softcap"] = _check_positive_finite_or_null(meta, "softcap", where)
    return meta


def read_array(path, descr, shape):
    got_descr, got_shape, values = read_npy(path)
    if got_descr != descr:
        raise BadInput(f"{path}: dtype {got_descr}, expected {descr}")
    if tuple(got_shape) != tuple(shape):
        raise BadInput(f"{path}: shape {got_shape}, expected {tuple(shape)}")
    return values


def _flagged_array(case_dir, meta, flag, file_name, shape):
    """The <f8 array a case.json flag announces, or None; the file without
    the flag is an error."""
    path = os.path.join(case_dir, file_name)
    if not meta.get(flag):
        if os.path.exists(path):
            raise BadInput(f"{path}: present but case.json has no {flag}")
        return None
    return read_array(path, "<f8", shape)


def read_case(case_dir):
    """Read and validate a case directory (SPEC.md section 4)."""
    where = os.path.join(case_dir, "case.json")
    try:
        with open(where, encoding="utf-8") as f:
            meta = json.load(f, object_pairs_hook=_reject_duplicate_keys)
    except OSError as exc:
        raise BadInput(f"{where}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where}: invalid JSON: {exc}") from None
    meta = _check_meta(meta, where)
    B, Hq, Hkv = meta["batch"], meta["q_heads"], meta["kv_heads"]
    L, S, dk, dv = meta["q_len"], meta["kv_len"], meta["d_k"], meta["d_v"]
    fmt = FORMATS[meta["dtype"]]
    arrays = {}
    for name, shape in (("q", (B, Hq, L, dk)), ("k", (B, Hkv, S, dk)), ("v", (B, Hkv, S, dv))):
        path = os.path.join(case_dir, f"{name}.npy")
        values = read_array(path, "<f8", shape)
        for x in values:
            if not is_representable(x, fmt):
                raise BadInput(f"{path}: value {x!r} is not representable in {fmt.name}")
        arrays[name] = values
    slopes = None
    slopes_path = os.path.join(case_dir, "alibi_slopes.npy")
    if meta.get("alibi") is None:
        if os.path.exists(slopes_path):
            raise BadInput(f"{slopes_path}: present but case.json has no alibi")
    else:
        descr, slopes_shape, slopes = read_npy(slopes_path)
        if descr != "<f8" or tuple(slopes_shape) not in ((Hq,), (B, Hq)):
            raise BadInput(f"{slopes_path}: {descr} {slopes_shape}, expected <f8 [{Hq}] or [{B}, {Hq}]")
        if not all(is_representable(x, FORMATS["float32"]) and math.isfinite(x) for x in slopes):
            raise BadInput(f"{slopes_path}: slopes must be finite float32 values")
        if len(slopes_shape) == 1 and B > 1:
            slopes = slopes * B  # [Hq] broadcast: one row per batch entry
    sinks = _flagged_array(case_dir, meta, "sinks", "sinks.npy", (Hq,))
    if sinks is not None and not all(
        x == -math.inf or (math.isfinite(x) and is_representable(x, FORMATS["float32"])) for x in sinks
    ):
        raise BadInput(f"{os.path.join(case_dir, 'sinks.npy')}: sinks must be float32 values, finite or -inf")
    descales = None
    descale_paths = {name: os.path.join(case_dir, f"{name}_descale.npy") for name in DESCALE_NAMES}
    if not meta.get("descales"):
        for path in descale_paths.values():
            if os.path.exists(path):
                raise BadInput(f"{path}: present but case.json has no descales")
    else:
        descales = {}
        for name, path in descale_paths.items():
            factors = read_array(path, "<f8", (B, Hkv))
            for index, x in enumerate(factors):
                if not (math.isfinite(x) and x > 0 and is_representable(x, FORMATS["float32"])):
                    raise BadInput(f"{path}: factor {x!r} of (batch {index // Hkv}, kv head {index % Hkv}) "
                                   "must be a float32 value, finite and > 0")
            descales[name] = factors
    dout = _flagged_array(case_dir, meta, "backward", "dout.npy", (B, Hq, L, dv))
    for x in dout or []:
        if not is_representable(x, fmt):
            raise BadInput(f"{os.path.join(case_dir, 'dout.npy')}: value {x!r} is not representable in {fmt.name}")
    mask, mask_shape = None, None
    mask_path = os.path.join(case_dir, "mask.npy")
    if meta["mask"] is None:
        if os.path.exists(mask_path):
            raise BadInput(f"{mask_path}: present but case.json has mask null")
    else:
        descr, mask_shape, mask = read_npy(mask_path)
        want = "|b1" if meta["mask"] == "bool" else "<f8"
        if descr != want:
            raise BadInput(f"{mask_path}: dtype {descr}, expected {want}")
        if (len(mask_shape) != 4 or mask_shape[0] not in (1, B) or mask_shape[1] not in (1, Hq)
                or mask_shape[2:] != (L, S)):
            raise BadInput(f"{mask_path}: shape {mask_shape}, expected [{B} or 1, {Hq} or 1, {L}, {S}]")
        if meta["mask"] == "additive":
            for x in mask:
                if math.isnan(x) or x == math.inf:
                    raise BadInput(f"{mask_path}: additive mask holds {x!r} (only finite and -inf allowed)")
    return Case(
        path=case_dir, dtype=meta["dtype"], batch=B, q_heads=Hq, kv_heads=Hkv, q_len=L,
        kv_len=S, d_k=dk, d_v=dv, scale=meta["scale"], softcap=meta["softcap"],
        causal=meta["causal"], window=meta.get("window"), alibi=meta.get("alibi"), alibi_slopes=slopes,
        sinks=sinks, mask_kind=meta["mask"], q=arrays["q"], k=arrays["k"],
        v=arrays["v"], mask=mask, mask_shape=mask_shape, descales=descales,
        layout=check_layout(meta.get("layout"), meta, where), dout=dout,
    )


def write_case(case_dir, meta, q, k, v, mask=None, slopes=None, sinks=None, descales=None, dout=None):
    """Write case.json and the arrays of a case.

    meta holds every case.json field except "format"; q, k, v and mask are
    (shape, flat values) pairs, sinks a flat [Hq] list, descales None or
    {"q": ..., "k": ..., "v": ...} of flat [B, Hkv] lists, dout None or a
    flat [B, Hq, L, d_v] list (meta then says "backward": True). The case is read
    back, so that a generator cannot write a case this script would reject.
    """
    os.makedirs(case_dir, exist_ok=True)
    doc = {"format": CASE_FORMAT}
    doc.update({name: meta[name] for name in CASE_FIELDS if name != "format"})
    doc.update({name: meta[name] for name in OPTIONAL_FIELDS if meta.get(name) is not None})
    with open(os.path.join(case_dir, "case.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    for name, (shape, values) in (("q", q), ("k", k), ("v", v)):
        write_npy(os.path.join(case_dir, f"{name}.npy"), "<f8", shape, values)
    slopes_path = os.path.join(case_dir, "alibi_slopes.npy")
    if slopes is not None:
        write_npy(slopes_path, "<f8", slopes[0], slopes[1])
    elif os.path.exists(slopes_path):
        os.remove(slopes_path)
    sinks_path = os.path.join(case_dir, "sinks.npy")
    if sinks is not None:
        write_npy(sinks_path, "<f8", (len(sinks),), sinks)
    elif os.path.exists(sinks_path):
        os.remove(sinks_path)
    for name in DESCALE_NAMES:
        path = os.path.join(case_dir, f"{name}_descale.npy")
        if descales is not None:
            write_npy(path, "<f8", (meta["batch"], meta["kv_heads"]), descales[name])
        elif os.path.exists(path):
            os.remove(path)
    dout_path = os.path.join(case_dir, "dout.npy")
    if dout is not None:
        shape = (meta["batch"], meta["q_heads"], meta["q_len"], meta["d_v"])
        write_npy(dout_path, "<f8", shape, dout)
    elif os.path.exists(dout_path):
        os.remove(dout_path)
    mask_path = os.path.join(case_dir, "mask.npy")
    if mask is not None:
        descr = "|b1" if meta["mask"] == "bool" else "<f8"
        write_npy(mask_path, descr, mask[0], mask[1])
    elif os.path.exists(mask_path):
        os.remove(mask_path)
    return read_case(case_dir)
