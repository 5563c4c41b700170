#!/usr/bin/env python3
"""The Findings run: every real kernel (and the Python example adapter)
through `attnspec run`, a clause x kernel matrix in Markdown, and a check
that each kernel fails exactly the clauses listed for it below, so the
README's Findings section and CI cannot drift apart.

Usage: scripts/findings.py [--attnspec build/attnspec] [--profile ci] [--seed 1]
                           [--out build/findings] [--only NAME ...] [--markdown FILE]
Exit status 0 when every kernel's failing clauses are the expected ones,
1 otherwise (the differences are printed), 2 usage error.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, --kernel argument ({numpy_python} and {node} are filled in), the
# clauses it is known to fail (each explained in README.md, Findings).
KERNELS = [
    ("numpy-float64", "cmd:{numpy_python} adapters/python/numpy_adapter.py --dtype float64", []),
    ("numpy-float32", "cmd:{numpy_python} adapters/python/numpy_adapter.py --dtype float32", []),
    ("libtorch-sdpa-f64", "libtorch-sdpa-f64", ["MASKNAN", "FULLMASK", "NANPROP"]),
    ("libtorch-sdpa-f32", "libtorch-sdpa-f32", ["MASKNAN", "FULLMASK", "NANPROP"]),
    ("libtorch-sdpa-bf16", "libtorch-sdpa-bf16", ["MASKNAN", "FULLMASK", "NANPROP"]),
    ("onednn-f32", "onednn-f32", ["MASKNAN", "FULLMASK", "NANPROP", "GOLDEN"]),
    ("onednn-bf16", "onednn-bf16", ["MASKNAN", "FULLMASK", "NANPROP", "GOLDEN"]),
    ("xnnpack-f32", "xnnpack-f32", ["MASKNAN", "FULLMASK", "SHIFT", "NANPROP", "GOLDEN"]),
    ("onnxruntime-float32", "cmd:{node} adapters/onnxruntime/adapter.js --dtype float32", ["MASKNAN", "NANPROP", "GOLDEN"]),
    ("onnxruntime-float16", "cmd:{node} adapters/onnxruntime/adapter.js --dtype float16",
     ["MASKNAN", "NANPROP", "GOLDEN", "TEMP"]),
]


def numpy_python():
    """Debian's python3-numpy lives with /usr/bin/python3, which need not be
    the python3 first on PATH."""
    for candidate in ("/usr/bin/python3", sys.executable, shutil.which("python3")):
        if candidate and subprocess.run([candidate, "-c", "import numpy"], capture_output=True).returncode == 0:
            return candidate
    sys.exit("findings: no python3 with NumPy found (scripts/install-deps.sh installs python3-numpy)")


def run_kernel(attnspec, name, argument, args):
    report = os.path.join(args.out, name + ".json")
    if os.path.exists(report):
        os.remove(report)
    command = [attnspec, "run", "--kernel", argument, "--profile", args.profile, "--seed", str(args.seed),
               "--json", report, "--save-failures", os.path.join(args.out, "failures")]
    start = time.time()
    with open(os.path.join(args.out, name + ".log"), "w") as log:
        status = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    seconds = time.time() - start
    if status not in (0, 1) or not os.path.exists(report):
        print("findings: %s: attnspec run exited with %d; see %s.log" % (name, status, os.path.join(args.out, name)))
        return None, seconds
    with open(report) as f:
        return json.load(f), seconds


def cell(result):
    status = result["status"].upper()
    if result["informative"] and status == "FAIL":
        status = "DIFF"
    return status


def markdown(reports, args):
    names = [name for name, _ in reports]
    lines = ["| clause | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    clauses = [r["clause"] for r in reports[0][1]["results"]]
    for clause in clauses:
        row = []
        for _, report in reports:
            result = next(r for r in report["results"] if r["clause"] == clause)
            row.append(cell(result))
        lines.append("| %s | %s |" % (clause, " | ".join(row)))
    worst = []
    for _, report in reports:
        prec = next(r for r in report["results"] if r["clause"] == "PREC")
        if prec["max_error_u"] is None:
            worst.append("-")
        else:
            worst.append("%.3g u (bound %.3g u)" % (prec["max_error_u"], prec["bound_u"]))
    lines.append("| PREC worst element | %s |" % " | ".join(worst))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description="Run the Findings: every real kernel under attnspec run.")
    parser.add_argument("--attnspec", default=os.path.join(ROOT, "build", "attnspec"))
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "findings"))
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if not os.access(args.attnspec, os.X_OK):
        parser.error("no attnspec binary at %s (build it first: scripts/build.sh)" % args.attnspec)
    unknown = set(args.only) - {name for name, _, _ in KERNELS}
    if unknown:
        parser.error("unknown kernel(s) for --only: %s" % ", ".join(sorted(unknown)))
    node = shutil.which("node") or "node"
    os.makedirs(args.out, exist_ok=True)
    python = None
    reports, surprises = [], []
    for name, argument, expected in KERNELS:
        if args.only and name not in args.only:
            continue
        if "{numpy_python}" in argument and python is None:
            python = numpy_python()
        argument = argument.format(numpy_python=python, node=node)
        print("findings: %-20s ..." % name, end=" ", flush=True)
        report, seconds = run_kernel(args.attnspec, name, argument, args)
        if report is None:
            surprises.append("%s: no report" % name)
            print("no report")
            continue
        failed = sorted(r["clause"] for r in report["results"] if r["status"] == "fail" and not r["informative"])
        print("%d s, fails: %s" % (seconds, " ".join(failed) or "nothing"))
        reports.append((name, report))
        if expected is not None and failed != sorted(expected):
            surprises.append("%s: fails %s, expected %s" % (name, failed or "nothing", sorted(expected) or "nothing"))
    if reports:
        table = markdown(reports, args)
        print("\nFindings (%s profile, seed %d):\n\n%s" % (args.profile, args.seed, table))
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table)
    for surprise in surprises:
        print("findings: UNEXPECTED: " + surprise)
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
