"""The errors behind the command line's exit statuses 2 and 3.

They live apart so that every module can raise them and the command line
(scripts/independent_reference.py) can map each to its exit status, while
`random` catches the two ArithmeticErrors to redraw an undecidable case.
"""


class BadInput(ValueError):
    """A case or array that does not follow SPEC.md section 4 (exit 2)."""


class PrecisionInsufficient(ArithmeticError):
    """The 120- and 160-digit runs disagree in the first 60 digits (exit 3)."""


class AmbiguousRounding(ArithmeticError):
    """An approximate value lies too close to a rounding midpoint (exit 3)."""
