"""Independent high-precision reference for attnspec (Python standard library only).

Why this package exists: the C++ certified reference (spec/SPEC.md section 5)
must not be the only judge of itself. This package recomputes scaled
dot-product attention, as defined in spec/SPEC.md section 2, with a
different method and different code: Python's `decimal` at 120 significant
digits, every result recomputed at 160 digits and required to agree to 60.
Results are rounded to a number format (SPEC.md section 3) with integer
arithmetic only, from the exact rational value of the decimal result, and
refused where a 120-digit approximation cannot decide the rounding.

Modules, each using only those listed before it:
  errors        the exceptions behind exit statuses 2 and 3
  npy           NPY reader and writer (no numpy: it may be missing on CI)
  formats       the six number formats; rounding of exact rationals
  cases         case directories (SPEC.md section 4): read and validate, write
  approx        decimal values that remember whether they are exact
  attention     attention at 120 digits, checked at 160; rounding a result
  expected      expected.json and the `expected` subcommand
  compare       the `compare` subcommand: the C++ reference, bit for bit
  random_cases  the `random` subcommand: random cases covering every feature

The command line is scripts/independent_reference.py. The names below are
what scripts/make_golden_cases.py and the command line use.
"""

from .approx import Approx, decimal_context
from .attention import (
    CHECK_DIGITS, OUTPUT_DIGITS, WORKING_DIGITS, compute, compute_checked, exact_dot,
    round_result, significant_string,
)
from .cases import read_case, write_case
from .compare import cmd_compare
from .errors import AmbiguousRounding, BadInput, PrecisionInsufficient
from .expected import EXPECTED_FORMAT, cmd_expected, write_expected
from .formats import FORMATS, is_representable, round_fraction, same_bits
from .npy import read_npy, shape_size, write_npy
from .random_cases import cmd_random

__all__ = [
    "AmbiguousRounding", "Approx", "BadInput", "CHECK_DIGITS", "EXPECTED_FORMAT", "FORMATS",
    "OUTPUT_DIGITS", "PrecisionInsufficient", "WORKING_DIGITS", "cmd_compare", "cmd_expected",
    "cmd_random", "compute", "compute_checked", "decimal_context", "exact_dot",
    "is_representable", "read_case", "read_npy", "round_fraction", "round_result", "same_bits",
    "shape_size", "significant_string", "write_case", "write_expected", "write_npy",
]
