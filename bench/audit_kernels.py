#!/usr/bin/env python3
"""Audits every built-in and real kernel and prints README's audit table.

Runs `attnspec audit` on each kernel (the in-process ones that are compiled
in, the NumPy example adapter and ONNX Runtime through the process protocol
where present) with the normal and the outliers distributions at one shape,
and prints one Markdown row per kernel. Standard library only; about a
minute on a 2-core machine with every adapter built.

Usage: python3 bench/audit_kernels.py [--attnspec build/attnspec] [--out build/audit-kernels]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = "1,8,8,512,512,64,64"  # Hq = Hkv: libtorch 1.13's adapter has no GQA
DISTRIBUTIONS = ("normal", "outliers")
IN_PROCESS = ["naive-f64", "naive-f32", "online-f32", "online-bf16", "online-f16", "libtorch-sdpa-f64",
              "libtorch-sdpa-f32", "libtorch-sdpa-bf16", "onednn-f32", "onednn-bf16", "xnnpack-f32"]
PROCESS = [  # (label, command, what it needs)
    ("numpy-f32 (process)", "cmd:/usr/bin/python3 adapters/python/numpy_adapter.py --dtype float32", "/usr/bin/python3"),
    ("ort-f32 (process)", "cmd:node adapters/onnxruntime/adapter.js --dtype float32", "node"),
    ("ort-f16 (process)", "cmd:node adapters/onnxruntime/adapter.js --dtype float16", "node"),
]


def available_kernels(attnspec):
    listing = subprocess.run([attnspec, "kernels"], check=True, capture_output=True, text=True).stdout
    names, unavailable = set(), set()
    for line in listing.splitlines():
        if line and not line[0].isspace():
            names.add(line.split()[0])
            if "NOT AVAILABLE" in line:
                unavailable.add(line.split()[0])
    for name in sorted(unavailable & set(IN_PROCESS)):
        print("audit_kernels: %s is not available on this CPU (attnspec kernels says why); left out" % name,
              file=sys.stderr)
    kernels = [(name, name) for name in IN_PROCESS if name in names and name not in unavailable]
    onnx = os.path.join(ROOT, "adapters", "onnxruntime", "node_modules", "onnxruntime-node")
    for label, command, needs in PROCESS:
        if shutil.which(needs) and ("node " not in command or os.path.isdir(onnx)):
            kernels.append((label, command))
    return kernels


def fmt(x):
    return "inf" if x is None else "%.3g" % x


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attnspec", default=os.path.join(ROOT, "build", "attnspec"))
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "audit-kernels"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("| kernel | formats (in / acc / out) | componentwise max | componentwise RMS | correctly rounded | RMSE "
          "| floor RMSE | kernel / naive max | max error / bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, kernel in available_kernels(args.attnspec):
        cells = []
        for distribution in DISTRIBUTIONS:
            stem = os.path.join(args.out, "%s-%s" % (label.split()[0], distribution))
            subprocess.run([args.attnspec, "audit", "--kernel", kernel, "--dist", distribution, "--shape", SHAPE,
                            "--html", stem + ".html", "--json", stem + ".json"], check=True, cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(stem + ".json", encoding="utf-8") as f:
                cells.append(json.load(f))
        first = cells[0]
        p = [c["points"][0] for c in cells]

        def both(get):
            return " / ".join(get(x) for x in p)

        bound = both(lambda x: "none" if x["bound"]["unbounded"] == x["checked_elements"] else fmt(x["bound"]["max_ratio"]))
        formats = "%s / %s / %s" % tuple(first["formats"][k] for k in ("input", "accumulate", "output"))
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, formats, both(lambda x: fmt(x["kernel"]["componentwise_u"]["max"])),
            both(lambda x: fmt(x["kernel"]["componentwise_u"]["rms"])),
            both(lambda x: "%.1f%%" % (100 * x["kernel"]["correctly_rounded_share"])),
            both(lambda x: fmt(x["kernel"]["rmse"])), both(lambda x: fmt(x["floor"]["rmse"])),
            both(lambda x: fmt(x["kernel_naive_max_abs_ratio"])), bound))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
