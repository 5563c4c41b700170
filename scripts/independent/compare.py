"""compare: the C++ reference's rounded results against ours, bit for bit.

A laid-out case (SPEC.md section 2.5) is compared in its layout's
arrangement, each sequence computed on its own (layouts.py). The C++
reference writes its results already rounded to the format and
widened to float64, so agreement is equality of bits (any NaN equals any
NaN); a value this reference cannot round with certainty stops the
comparison (exit 3) instead of being guessed.
"""

from .attention import compute_checked, round_result
from .cases import read_array, read_case
from .errors import BadInput
from .formats import FORMATS, same_bits
from .gradients import compute_gradients_checked, gradient_shapes
from .layouts import laid_out_results


def unflatten_index(flat, shape):
    index = []
    for n in reversed(shape):
        index.append(flat % n)
        flat //= n
    return ",".join(str(x) for x in reversed(index))


def cmd_compare(args):
    fmt = FORMATS[args.format]
    case = read_case(args.case_dir)
    if case.layout is not None:
        # Each sequence on its own, in the layout's arrangement (layouts.py).
        out, lse, out_shape, lse_shape = laid_out_results(case, fmt)
        expected_of = {"out": out, "lse": lse}
    else:
        out_shape = (case.batch, case.q_heads, case.q_len, case.d_v)
        lse_shape = out_shape[:3]
        results = compute_checked(case, kinds=("out", "lse"))
        expected_of = {name: [round_result(a, fmt) for a in getattr(results, name)] for name in ("out", "lse")}
    got = {"out": read_array(args.ref, "<f8", out_shape)}
    if args.ref_lse is not None:
        got["lse"] = read_array(args.ref_lse, "<f8", lse_shape)
    shapes = {"out": out_shape, "lse": lse_shape}
    if args.gradients:
        # FILE_dq.npy, FILE_dk.npy, FILE_dv.npy (and FILE_dsink.npy) beside --ref.
        if case.dout is None:
            raise BadInput(f"{args.case_dir}: --gradients, but the case has no dout.npy (\"backward\": true)")
        stem = args.ref[:-4] if args.ref.endswith(".npy") else args.ref
        gradients = compute_gradients_checked(case)
        for name, shape in gradient_shapes(case).items():
            expected_of[name] = [round_result(a, fmt) for a in getattr(gradients, name)]
            got[name] = read_array(f"{stem}_{name}.npy", "<f8", shape)
            shapes[name] = shape
    counts, mismatches = {}, []
    for name, values in got.items():
        expected = expected_of[name]
        agree = 0
        for index, (e, g) in enumerate(zip(expected, values)):
            if same_bits(e, g):
                agree += 1
            else:
                mismatches.append((name, index, e, g))
        counts[name] = f"{agree}/{len(values)} {name}"
    summary = ", ".join(counts.values())
    if not mismatches:
        print(f"compare: {args.case_dir} format={fmt.name}: {summary} agree")
        return 0
    print(f"compare: {args.case_dir} format={fmt.name}: MISMATCH: {summary} agree")
    for name, index, e, g in mismatches[:5]:
        print(f"  {name}[{unflatten_index(index, shapes[name])}]: expected {e.hex()}, got {g.hex()}")
    if len(mismatches) > 5:
        print(f"  ... and {len(mismatches) - 5} more")
    return 1
