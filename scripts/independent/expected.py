"""expected.json (SPEC.md section 4): out, lse and weights as 60-digit strings.

Readers (the C++ tests) round the strings, not the values behind them, so
the strings of a case are checked to round as the values do, in every
format, before they are written.
"""

import json
import os
import time
from decimal import Decimal

from .approx import Approx
from .attention import OUTPUT_DIGITS, compute_checked, round_result, significant_string
from .cases import read_case
from .errors import AmbiguousRounding
from .formats import FORMATS, same_bits

EXPECTED_FORMAT = "attnspec-expected/1"
# Names the command rather than this module: it is written into every
# expected.json, golden cases included.
GENERATOR = "scripts/independent_reference.py (python decimal, 120 digits, checked at 160)"


def expected_document(results):
    return {
        "format": EXPECTED_FORMAT,
        "digits": OUTPUT_DIGITS,
        "generator": GENERATOR,
        "out": [significant_string(a) for a in results.out],
        "lse": [significant_string(a) for a in results.lse],
        "weights": [significant_string(a) for a in results.weights],
    }


def check_expected_strings(results, formats=tuple(FORMATS.values())):
    """Make sure the 60-digit strings can stand in for the values.

    Readers of expected.json (the C++ tests) round each string to a format.
    That gives the correct rounding unless a value lies within about 1e-60
    of a midpoint without being on it, or sits on one but needs more than
    60 digits. Raises AmbiguousRounding (or PrecisionInsufficient) if so,
    or if a value cannot be rounded with certainty at all.
    """
    for name, values in results.items():
        for index, a in enumerate(values):
            written = Approx(Decimal(significant_string(a).replace("inf", "Infinity")), True)
            for fmt in formats:
                if not same_bits(round_result(a, fmt), round_result(written, fmt)):
                    raise AmbiguousRounding(
                        f"{name}[{index}]: its {OUTPUT_DIGITS}-digit string rounds differently "
                        f"in {fmt.name} from the value itself"
                    )


def save_expected(case_dir, results):
    """Write expected.json for results that passed check_expected_strings."""
    with open(os.path.join(case_dir, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected_document(results), f, indent=1)
        f.write("\n")


def write_expected(case_dir):
    """Compute a case and write its expected.json; return the checked results."""
    case = read_case(case_dir)
    results = compute_checked(case)
    check_expected_strings(results)
    save_expected(case_dir, results)
    return results


def cmd_expected(args):
    for case_dir in args.case_dirs:
        start = time.perf_counter()
        results = write_expected(case_dir)
        print(
            f"expected: {case_dir}: wrote expected.json ({len(results.out)} out, "
            f"{len(results.lse)} lse, {len(results.weights)} weights) in "
            f"{time.perf_counter() - start:.2f} s"
        )
    return 0
