#!/usr/bin/env python3
"""Independent high-precision reference for attnspec: the command line.

Why this file exists: the C++ certified reference (spec/SPEC.md section 5)
must not be the only judge of itself. The package scripts/independent/
recomputes attention with a different method and different code (Python's
`decimal` at 120 digits, checked at 160, integer-only rounding; see its
__init__.py); this file only parses arguments and maps errors to exit
statuses. Standard library only (Python 3.11).

Subcommands (see --help of each):
  expected CASE_DIR...                    write expected.json into each case
  compare CASE_DIR --format F --ref FILE  check the C++ reference bit for bit
  random OUT_DIR --count N --seed S       write random cases for cross-checks

Exit status: 0 success, 1 mismatch (compare), 2 bad input,
3 this implementation cannot decide (precision insufficient or an ambiguous
rounding).
"""

import argparse
import sys

from independent import (
    EXPECTED_FORMAT, FORMATS, OUTPUT_DIGITS, AmbiguousRounding, BadInput, PrecisionInsufficient,
    cmd_compare, cmd_expected, cmd_random,
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="independent_reference.py",
        description="Independent high-precision reference for attnspec cases "
                    "(Python decimal at 120 digits, checked at 160).",
        epilog="Exit status: 0 success, 1 mismatch (compare), 2 bad input, "
               "3 precision insufficient or ambiguous rounding.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "expected", help="write expected.json into case directories",
        description="Compute out, lse and weights of each case and write CASE_DIR/expected.json "
                    f"({EXPECTED_FORMAT}): C-order lists of {OUTPUT_DIGITS}-significant-digit strings, "
                    "'0' for exact zero, '-inf' for the lse of a fully masked row, 'nan'.",
    )
    p.add_argument("case_dirs", nargs="+", metavar="CASE_DIR", help="an attnspec-case/1 directory")
    p.set_defaults(func=cmd_expected)

    p = sub.add_parser(
        "compare", help="compare the C++ reference's output with this one, bit for bit",
        description="Round this script's results to FORMAT and compare them bit for bit with the "
                    "C++ reference's ref.npy (<f8, [B,Hq,L,d_v]) and optionally ref_lse.npy "
                    "(<f8, [B,Hq,L]). NaN equals NaN; +0 and -0 differ. Prints one summary "
                    "line; on mismatch also the first 5 differences, and exits 1. Exits 3 if "
                    "a value cannot be rounded with certainty from 120 digits.",
    )
    p.add_argument("case_dir", metavar="CASE_DIR", help="the attnspec-case/1 directory the reference ran on")
    p.add_argument("--format", required=True, choices=list(FORMATS), help="target number format")
    p.add_argument("--ref", required=True, metavar="FILE", help="the reference output, <f8 [B,Hq,L,d_v]")
    p.add_argument("--ref-lse", metavar="FILE", help="the reference lse, <f8 [B,Hq,L]")
    p.add_argument("--gradients", action="store_true",
                   help="also compare the gradients of a case with dout.npy (SPEC.md section 2.6): "
                        "FILE_dq.npy, FILE_dk.npy, FILE_dv.npy and, with sinks, FILE_dsink.npy beside --ref FILE.npy")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "random", help="write random small cases covering every feature",
        description="Write N case directories OUT_DIR/case_000 ... with expected.json, covering "
                    "every dtype, GQA, L != S, d_v != d_k, scale, softcap, both causal kinds, "
                    "bool and additive masks (broadcast and full), fully masked rows, sliding windows, "
                    "ALiBi, sinks, descales (powers of two and full float32 factors), NaN in "
                    "keys no row can see, and tied keys whose value means are rounding "
                    "midpoints. Every case is checked to be decidable in every format. Case i "
                    "depends only on (seed, i); any N >= 12 covers every feature.",
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="folder for case_000, case_001, ...")
    p.add_argument("--count", type=int, required=True, metavar="N", help="number of cases")
    p.add_argument("--layouts", type=int, default=0, metavar="N",
                   help="also N laid-out cases (varlen, KV caches, paged), after the COUNT dense ones")
    p.add_argument("--backward", type=int, default=0, metavar="N",
                   help="also N dense cases with dout.npy (\"backward\": true, SPEC.md section 2.6), after the "
                        "laid-out ones, each decidable in every format for the gradients too")
    p.add_argument("--seed", type=int, required=True, metavar="S", help="random seed")
    p.set_defaults(func=cmd_random)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (PrecisionInsufficient, AmbiguousRounding) as exc:
        print(f"cannot decide: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
