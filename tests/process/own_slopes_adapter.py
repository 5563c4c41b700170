#!/usr/bin/env python3
"""The NumPy example adapter as a kernel that computes its ALiBi slopes
itself from the head count, as ggml does from max_bias: it declares
`alibi_paper_slopes_only` and replaces whatever slopes a case carries by
the ALiBi paper's for its number of query heads. attnspec must send such a
kernel the paper's slopes (check-adapter's ALiBi probes, ALIBI's draws);
were it to send others, this kernel's outputs would differ from the
reference and the run would fail. Used by tests/process/own_slopes_test.sh.

Usage: own_slopes_adapter.py [--dtype float32]   (NumPy, as the example)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "python"))
import numpy as np  # noqa: E402
import numpy_adapter  # noqa: E402

example_hello = numpy_adapter.hello
example_run_case = numpy_adapter.run_case


def paper_slopes(heads):
    """The ALiBi paper's slopes, rounded to float32 (SPEC 2.2): 2^(-8(h+1)/n)
    for the first n = bit_floor(heads), then the odd steps of 2n's."""
    n = 1 << (heads.bit_length() - 1)
    slopes = [2.0 ** (-8.0 * (h + 1) / n) if h < n else 2.0 ** (-4.0 * (2 * (h - n + 1) - 1) / n)
              for h in range(heads)]
    return np.asarray(slopes, dtype=np.float32).astype(np.float64)


def hello(dtype_name):
    reply = example_hello(dtype_name)
    reply["capabilities"]["alibi_paper_slopes_only"] = True
    return reply


def run_case(directory, dtype, kind="dense"):
    path = os.path.join(directory, "alibi_slopes.npy")
    if os.path.exists(path):
        with open(os.path.join(directory, "case.json")) as f:
            heads = json.load(f)["q_heads"]
        given = np.load(path)
        np.save(path, np.broadcast_to(paper_slopes(heads), given.shape).astype(given.dtype))
    return example_run_case(directory, dtype, kind)


numpy_adapter.hello = hello
numpy_adapter.run_case = run_case

if __name__ == "__main__":
    numpy_adapter.main()
