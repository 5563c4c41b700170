"""random: small random cases that exercise every feature, for cross-checks.

Features are drawn in blocks of 12 consecutive cases: within a block every
option of every feature appears (12 is a multiple of each option count),
in a shuffled order, so any count >= 12 covers everything. Case i depends
only on (seed, i). A draw that some format cannot round with certainty is
replaced, so that neither compare nor a reader of expected.json ever has to
refuse a generated case.
"""

import math
import os
import random
import time
from fractions import Fraction

from .attention import compute_checked, round_result, visible_keys
from .cases import Case, write_case
from .errors import AmbiguousRounding, BadInput, PrecisionInsufficient
from .expected import check_expected_strings, save_expected
from .gradients import compute_gradients_checked
from .layouts import laid_out_results
from .formats import FORMATS, is_representable, near_midpoint, pow2, round_fraction
from .npy import shape_size

RANDOM_BLOCK = 12
RANDOM_FEATURES = {
    "dtype": list(FORMATS),
    "causal": [None, "top_left", "bottom_right"],
    "window": [None, "top_left", "bottom_right"],
    "alibi": [None, "top_left", "bottom_right"],
    "sinks": [None, "finite", "mixed"],
    "descales": [None, "powers_of_two", "float32"],
    "mask": [None, "bool", "additive"],
    "mask_shape": ["broadcast", "full", "batch_only", "heads_only"],
    "group": [1, 2, 3, 4],  # Hq / Hkv
    "lengths": ["L<S", "L>S", "any"],
    "widths": ["d_v=d_k", "d_v!=d_k"],
    "scale": ["default", "explicit"],
    "softcap": [None, "set"],
    "ties": [False, True],
    "fully_masked_row": [False, True],
}
EXPLICIT_SCALES = [0.5, 0.25, 0.375, 1.0, 0.125, 1.5]
SOFTCAPS = [1.0, 2.0, 4.0, 0.75, 8.0]
ADDITIVE_VALUES = [0.0, 0.0, -1.5, 0.25, -3.0, 1.0, -0.5, -math.inf, -math.inf]


def feature_plan(seed, index):
    """The features of random case number index."""
    block, position = divmod(index, RANDOM_BLOCK)
    plan = {}
    for name, options in RANDOM_FEATURES.items():
        column = options * (RANDOM_BLOCK // len(options))
        random.Random(f"attnspec-random/{seed}/{block}/{name}").shuffle(column)
        plan[name] = column[position]
    return plan


def small_value(rng, fmt):
    """k * 2^e with small k and e: exactly representable in every format."""
    value = rng.randint(-7, 7) * 2.0 ** rng.randint(-2, 1)
    assert is_representable(value, fmt)
    return value


def midpoint_values(rng, fmt, n):
    """n values of fmt whose mean is exactly a rounding midpoint of fmt.

    With a = 2^e + k*ulp, the target mean is a + ulp/2. For even n, half the
    values are a and half a + ulp. For odd n the sum needs an odd number of
    half-ulps, which only a value from the binade below supplies:
    2^e - ulp/2; the remaining n - 1 values a + c_i*ulp make up the rest.
    k is 0 or 1 so ties round both down and up to even.
    """
    e = rng.randint(-1, 1)
    ulp = pow2(e - fmt.p + 1)
    k = rng.randint(0, 1)
    a = pow2(e) + k * ulp
    if n % 2 == 0:
        values = [a] * (n // 2) + [a + ulp] * (n // 2)
    else:
        ulps = k + (n + 1) // 2  # the others sum to (n-1)*a + ulps*ulp
        share = [ulps // (n - 1) + (1 if t < ulps % (n - 1) else 0) for t in range(n - 1)]
        values = [pow2(e) - ulp / 2] + [a + c * ulp for c in share]
    mean = sum(values) / n
    assert mean == a + ulp / 2 and Fraction(round_fraction(mean, fmt)) != mean
    sign = rng.choice([1, -1])
    values = [float(sign * x) for x in values]
    assert all(is_representable(x, fmt) for x in values)
    rng.shuffle(values)
    return values


def _random_sizes(rng, plan):
    group = plan["group"]
    kv_heads = rng.randint(1, max(1, min(2, 5 // group)))
    low_s = 2 if plan["ties"] else 1  # a tie needs two keys
    if plan["lengths"] == "L<S":
        L = rng.randint(1, 4)
        S = rng.randint(max(L + 1, low_s), 5)
    elif plan["lengths"] == "L>S":
        S = rng.randint(low_s, 4)
        L = rng.randint(S + 1, 5)
    else:
        L, S = rng.randint(1, 5), rng.randint(low_s, 5)
    d_k = rng.randint(1, 5)
    d_v = d_k if plan["widths"] == "d_v=d_k" else rng.choice([n for n in range(1, 6) if n != d_k])
    return {"batch": rng.randint(1, 2), "q_heads": group * kv_heads, "kv_heads": kv_heads,
            "q_len": L, "kv_len": S, "d_k": d_k, "d_v": d_v}


def _random_window(seed, index, alignment, S):
    """A window of the alignment drawn (None: no window); each side
    unbounded or 0 to S. Its own generator, so that adding windows left the
    other features' draws as they were."""
    if alignment is None:
        return None
    rng = random.Random(f"attnspec-random/{seed}/{index}/window")
    side = lambda: None if rng.random() < 0.25 else rng.randint(0, S)
    return {"left": side(), "right": side(), "alignment": alignment}


def _random_slopes(seed, index, alignment, B, Hq):
    """ALiBi slopes ((shape, values) or None): [Hq] or [B, Hq], each a
    float32 value: the paper's 2^(-8k/Hq), or small multiples of 1/8. Its
    own generator, as _random_window's."""
    if alignment is None:
        return None
    rng = random.Random(f"attnspec-random/{seed}/{index}/alibi")
    shape = (B, Hq) if rng.random() < 0.5 else (Hq,)
    paper = rng.random() < 0.5
    values = [2.0 ** (-8 * (h % Hq + 1) / Hq) if paper else rng.randint(0, 8) / 8 for h in range(shape_size(shape))]
    return shape, [round_fraction(Fraction(x), FORMATS["float32"]) for x in values]


def _random_sinks(seed, index, kind, Hq):
    """Sink logits ([Hq] list or None): quarters in [-2, 2] ("finite"), or
    per head -inf (no sink), a quarter or a large 8 to 128 ("mixed"). Its
    own generator, as _random_window's."""
    if kind is None:
        return None
    rng = random.Random(f"attnspec-random/{seed}/{index}/sinks")
    if kind == "finite":
        return [rng.randint(-8, 8) / 4 for _ in range(Hq)]
    return [rng.choice([-math.inf, rng.randint(-8, 8) / 4, 2.0 ** rng.randint(3, 7)]) for _ in range(Hq)]


def _random_descales(seed, index, kind, B, Hkv):
    """Descale factors (None, or {"q", "k", "v"} flat [B, Hkv] lists), each
    in [2^-8, 2^8): powers of two ("powers_of_two", real inputs still in the
    case's format), or float32 values with all 24 significand bits, the last
    one set ("float32", real inputs of up to 24 bits more than the format's).
    Its own generator, as _random_window's."""
    if kind is None:
        return None
    rng = random.Random(f"attnspec-random/{seed}/{index}/descales")

    def factor():
        exponent = rng.randint(-8, 7)
        if kind == "powers_of_two":
            return 2.0 ** exponent
        significand = 2 * rng.randint(2**22, 2**23 - 1) + 1  # odd, in [2^23, 2^24)
        return math.ldexp(significand, exponent - 23)

    return {name: [factor() for _ in range(B * Hkv)] for name in ("q", "k", "v")}


def _random_mask(rng, plan, sizes):
    B, Hq, L, S = sizes["batch"], sizes["q_heads"], sizes["q_len"], sizes["kv_len"]
    mb, mh = {"broadcast": (1, 1), "full": (B, Hq), "batch_only": (B, 1), "heads_only": (1, Hq)}[plan["mask_shape"]]
    shape = (mb, mh, L, S)
    if plan["mask"] == "bool":
        values = [rng.random() < 0.75 for _ in range(shape_size(shape))]
        blocked = False
    else:
        values = [rng.choice(ADDITIVE_VALUES) for _ in range(shape_size(shape))]
        blocked = -math.inf
    if plan["fully_masked_row"]:
        row = rng.randrange(mb * mh * L)
        values[row * S:(row + 1) * S] = [blocked] * S
    return shape, values


def random_case(rng, plan, seed, index, poison=True):
    """Draw one case following plan; returns (meta, q, k, v, mask, slopes, sinks, descales).

    poison: NaN in the keys and values no row can see (not for laid-out
    cases, whose sequences see other keys than the dense rows do)."""
    fmt = FORMATS[plan["dtype"]]
    if fmt.p > 29:
        # A float64 input times a float32 factor is not a binary64 number:
        # attnspec refuses descales with such inputs (SPEC 2.4).
        plan = dict(plan, descales=None)
    sizes = _random_sizes(rng, plan)
    B, Hq, Hkv = sizes["batch"], sizes["q_heads"], sizes["kv_heads"]
    L, S, dk, dv = sizes["q_len"], sizes["kv_len"], sizes["d_k"], sizes["d_v"]
    q = [small_value(rng, fmt) for _ in range(B * Hq * L * dk)]
    k, v = [], []
    for _ in range(B * Hkv):
        if plan["ties"]:
            # Identical keys: every visible key of a row has the same logit.
            key = [small_value(rng, fmt) for _ in range(dk)]
            k += key * S
            columns = [midpoint_values(rng, fmt, S) for _ in range(dv)]
            v += [columns[t][j] for j in range(S) for t in range(dv)]
        else:
            k += [small_value(rng, fmt) for _ in range(S * dk)]
            v += [small_value(rng, fmt) for _ in range(S * dv)]
    mask = None if plan["mask"] is None else _random_mask(rng, plan, sizes)
    meta = dict(sizes)
    meta.update({
        "dtype": fmt.name,
        "scale": None if plan["scale"] == "default" else rng.choice(EXPLICIT_SCALES),
        "softcap": None if plan["softcap"] is None else rng.choice(SOFTCAPS),
        "causal": plan["causal"],
        "window": _random_window(seed, index, plan["window"], S),
        "alibi": None if plan["alibi"] is None else {"alignment": plan["alibi"]},
        "sinks": None if plan["sinks"] is None else True,
        "descales": None if plan["descales"] is None else True,
        "mask": plan["mask"],
    })
    slopes = _random_slopes(seed, index, plan["alibi"], B, Hq)
    sinks = _random_sinks(seed, index, plan["sinks"], Hq)
    descales = _random_descales(seed, index, plan["descales"], B, Hkv)
    poisoned = _poison_unread_keys(meta, k, v, mask) if poison else 0
    covers = [f"{name}={value}" for name, value in plan.items()] + [f"nan_in_blocked_keys={poisoned}"]
    meta["provenance"] = {"generator": "scripts/independent_reference.py random", "seed": seed,
                          "index": index, "covers": covers}
    return meta, ((B, Hq, L, dk), q), ((B, Hkv, S, dk), k), ((B, Hkv, S, dv), v), mask, slopes, sinks, descales


def _poison_unread_keys(meta, k, v, mask):
    """Put NaN into keys and values that no row can see; return how many.

    SPEC.md 2.3: blocked keys and values are never read, so NaN there must
    not reach any result (the 0 * NaN leak of pytorch#101967).
    """
    case = Case(path=None, dtype=meta["dtype"], batch=meta["batch"], q_heads=meta["q_heads"],
                kv_heads=meta["kv_heads"], q_len=meta["q_len"], kv_len=meta["kv_len"],
                d_k=meta["d_k"], d_v=meta["d_v"], scale=None, softcap=None, causal=meta["causal"],
                window=meta["window"], alibi=None, alibi_slopes=None, sinks=None,
                mask_kind=meta["mask"], q=[], k=k, v=v, mask=None if mask is None else mask[1],
                mask_shape=None if mask is None else mask[0])
    group = case.q_heads // case.kv_heads
    seen = {(b, h // group, j) for b in range(case.batch) for h in range(case.q_heads)
            for i in range(case.q_len) for j, _ in visible_keys(case, b, h, i)}
    count = 0
    for b in range(case.batch):
        for g in range(case.kv_heads):
            for j in range(case.kv_len):
                if (b, g, j) not in seen:
                    start_k = ((b * case.kv_heads + g) * case.kv_len + j) * case.d_k
                    start_v = ((b * case.kv_heads + g) * case.kv_len + j) * case.d_v
                    k[start_k:start_k + case.d_k] = [math.nan] * case.d_k
                    v[start_v:start_v + case.d_v] = [math.nan] * case.d_v
                    count += 1
    return count


def decidable_everywhere(case):
    """Results of a case whose every value (and string) rounds with certainty to every format."""
    results = compute_checked(case)
    check_expected_strings(results)
    return results


def random_layout(rng, meta):
    """A layout recipe for a dense case (SPEC.md sections 2.5 and 4): varlen
    or a KV cache, contiguous or paged, with empty sequences and padding."""
    B, L, S = meta["batch"], meta["q_len"], meta["kv_len"]
    kv_lens = [rng.randint(0, S) for _ in range(B)]
    if rng.random() < 0.5:
        return {"kind": "varlen", "q_lens": [rng.randint(0, L) for _ in range(B)], "kv_lens": kv_lens,
                "padding_q_rows": rng.randint(0, 2), "padding_k_rows": rng.randint(0, 2)}
    page_size = rng.choice([0, 0, 1, 2, 3, 16])
    layout = {"kind": "kv_cache", "kv_lens": kv_lens, "new_len": rng.randint(0, min(kv_lens)),
              "page_size": page_size, "spare_slots": 0 if page_size else rng.randint(0, 2),
              "spare_pages": rng.randint(0, 2) if page_size else 0, "page_order": []}
    if page_size and rng.random() < 0.5:
        pages = max(1, sum(-(-n // page_size) for n in kv_lens) + layout["spare_pages"])
        layout["page_order"] = rng.sample(range(pages), pages)
    return layout


def write_layout_case(args, index):
    """A laid-out random case (no mask, no descales), redrawn until every
    format's rounding of its sequences' results is certain; no expected.json
    (its results are its sequences', in the layout's arrangement)."""
    plan = dict(feature_plan(args.seed, index), mask=None, descales=None)
    rng = random.Random(f"attnspec-random/{args.seed}/layout/{index}")
    case_dir = os.path.join(args.out_dir, f"case_{index:03d}")
    for attempt in range(50):
        meta, q, k, v, mask, slopes, sinks, descales = random_case(rng, plan, args.seed, index, poison=False)
        meta["layout"] = random_layout(rng, meta)
        case = write_case(case_dir, meta, q, k, v, mask, slopes, sinks, descales)
        try:
            for fmt in FORMATS.values():
                laid_out_results(case, fmt)
            return meta["layout"]["kind"], attempt
        except (PrecisionInsufficient, AmbiguousRounding):
            continue
    raise RuntimeError(f"{case_dir}: no decidable draw in 50 attempts")


def write_backward_case(args, index):
    """A dense random case with dout.npy (SPEC.md section 2.6; no descales,
    which a backward problem does not carry), redrawn until its results and
    gradients round with certainty in every format. dO is drawn like the
    inputs, with whole zero rows now and then."""
    plan = dict(feature_plan(args.seed, index), descales=None)
    rng = random.Random(f"attnspec-random/{args.seed}/backward/{index}")
    case_dir = os.path.join(args.out_dir, f"case_{index:03d}")
    for attempt in range(50):
        meta, q, k, v, mask, slopes, sinks, descales = random_case(rng, plan, args.seed, index)
        fmt = FORMATS[meta["dtype"]]
        rows, dv = meta["batch"] * meta["q_heads"] * meta["q_len"], meta["d_v"]
        dout = []
        for _ in range(rows):
            dout += [0.0] * dv if rng.random() < 0.15 else [small_value(rng, fmt) for _ in range(dv)]
        meta["backward"] = True
        case = write_case(case_dir, meta, q, k, v, mask, slopes, sinks, descales, dout)
        try:
            results = decidable_everywhere(case)
            gradients = compute_gradients_checked(case)
            for fmt in FORMATS.values():
                for _, values in gradients.items():
                    for a in values:
                        round_result(a, fmt)
        except (PrecisionInsufficient, AmbiguousRounding):
            continue
        save_expected(case_dir, results)
        return attempt
    raise RuntimeError(f"{case_dir}: no decidable draw in 50 attempts")


def cmd_random(args):
    if args.count < 0 or args.layouts < 0 or args.backward < 0:
        raise BadInput("--count, --layouts and --backward must be >= 0")
    start = time.perf_counter()
    tally = {name: {} for name in RANDOM_FEATURES}
    observed, redraws = {}, 0
    for index in range(args.count):
        plan = feature_plan(args.seed, index)
        rng = random.Random(f"attnspec-random/{args.seed}/case/{index}")
        case_dir = os.path.join(args.out_dir, f"case_{index:03d}")
        for attempt in range(50):
            case = write_case(case_dir, *random_case(rng, plan, args.seed, index))
            try:
                results = decidable_everywhere(case)
                break
            except (PrecisionInsufficient, AmbiguousRounding):
                continue  # redraw: compare, or a reader of expected.json, could not decide it
        else:
            raise RuntimeError(f"{case_dir}: no decidable draw in 50 attempts")
        save_expected(case_dir, results)
        for name, value in plan.items():
            tally[name][str(value)] = tally[name].get(str(value), 0) + 1
        for name, n in observed_features(case, results).items():
            observed[name] = observed.get(name, 0) + n
        redraws += attempt
    kinds = {}
    for index in range(args.count, args.count + args.layouts):
        kind, attempts = write_layout_case(args, index)
        kinds[kind] = kinds.get(kind, 0) + 1
        redraws += attempts
    first_backward = args.count + args.layouts
    for index in range(first_backward, first_backward + args.backward):
        redraws += write_backward_case(args, index)
    print(f"random: wrote {args.count} cases, {args.layouts} laid-out ones "
          f"({', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items())) or 'none'}) and {args.backward} "
          f"with dout to {args.out_dir} "
          f"in {time.perf_counter() - start:.2f} s ({redraws} undecidable draws replaced)")
    print("planned features (cases):")
    for name, counts in tally.items():
        print(f"  {name}: " + ", ".join(f"{value} x{n}" for value, n in sorted(counts.items())))
    print("observed: " + ", ".join(f"{name} {n}" for name, n in observed.items()))
    return 0


def observed_features(case, results):
    """What a generated case actually exercises, counted in cases, rows or values."""
    fmt = FORMATS[case.dtype]
    S = case.kv_len
    row_weights = [results.weights[r * S:(r + 1) * S] for r in range(len(results.lse))]
    tied_rows = 0
    for weights in row_weights:
        visible = [w.value for w in weights if not w.is_exact_zero()]
        if len(visible) >= 2 and all(x.is_finite() for x in visible) and len(set(visible)) == 1:
            tied_rows += 1
    midpoints = 0
    for a in results.out:
        if a.exact and a.value.is_finite() and a.value != 0:
            x = Fraction(a.value)
            if Fraction(round_fraction(x, fmt)) != x and near_midpoint(x, fmt, Fraction(0)):
                midpoints += 1
    return {
        "GQA cases": int(case.q_heads > case.kv_heads),
        "L<S cases": int(case.q_len < case.kv_len),
        "L>S cases": int(case.q_len > case.kv_len),
        "d_v!=d_k cases": int(case.d_v != case.d_k),
        "rows": len(results.lse),
        "fully masked rows": sum(1 for r in row_weights if all(w.is_exact_zero() for w in r)),
        "rows with a sink": sum(1 for b in range(case.batch) for h in range(case.q_heads)
                                for _ in range(case.q_len) if case.sink(h) is not None),
        "descaled cases": int(case.descales is not None),
        "rows with tied weights": tied_rows,
        "outputs exactly on a midpoint": midpoints,
        "NaN-poisoned unread keys": sum(1 for x in case.k[::case.d_k] if math.isnan(x)),
    }
