#!/usr/bin/env python3
"""The Findings run: every real kernel (and the Python example adapter)
through `attnspec run`, a clause x kernel matrix in Markdown, and a check
of each kernel's report against its expectations in expected/NAME.json
(scripts/expectations.py), so docs/findings/, README and CI cannot drift
apart. In the quick profile with seed 1 (CI's runs and the kept reports)
the whole verdict vector is compared: every clause's status, a skip's
reason, the declined share and the failure signatures; in other profiles
or seeds, the failing clauses.

Usage: scripts/findings.py [--attnspec build/attnspec] [--profile ci] [--seed 1]
                           [--out build/findings] [--only NAME ...] [--ci]
                           [--reports] [--accept] [--markdown FILE]
--ci runs only the kernels CI runs (those without "ci": False below);
--reports runs nothing and reads the reports an earlier run left in --out;
--accept writes each report's vector into expected/NAME.json (after you
have reviewed the differences the check printed; quick profile, seed 1).
Exit status 0 when every kernel shows what is expected and runs exactly
where it is expected to (a kernel whose library has no code path for this
CPU is reported as not available, with the reason, and its column says
N/A), 1 otherwise (the differences are printed), 2 usage error or a
malformed expected/ file.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

import expectations

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = os.path.join(ROOT, "expected")

# name, --kernel argument ({numpy_python}, {venv_python} and {node} are
# filled in), and options: "env" runs it with those environment variables;
# "cpu_kinds" runs it only on those CPU kinds (a capped ISA is only news on
# a CPU above it); "ci": False leaves it out of CI's run (--ci), to keep CI
# under 45 minutes. What each kernel is expected to show (its verdict
# vector, whether it runs on a CPU kind, what differs between kinds and
# profiles) is data in expected/NAME.json (scripts/expectations.py); the
# comments here say why, and docs/findings/ has the evidence.
AVX512_KINDS = ("avx512", "avx512-bf16")
KERNELS = [
    # The example adapter (NumPy), in float64 and float32: it must fail nothing.
    # Its kept reports (docs/findings/numpy-adapter/) are checked in CI; it
    # is not run there live (173 s of a clean-clone run that took 46.5
    # minutes on 2026-12-07, over the 45-minute target), since
    # tests/process/numpy_*_test.sh drive the same adapter through the
    # protocol's layouts and backward.
    ("numpy-float64", "cmd:{numpy_python} adapters/python/numpy_adapter.py --dtype float64", {"ci": False}),
    ("numpy-float32", "cmd:{numpy_python} adapters/python/numpy_adapter.py --dtype float32", {"ci": False}),
    # Its backward (autograd through the math composition) reads blocked
    # keys' values too: NaN there reaches dQ through P = 0 times dP = NaN
    # (GRADMASK), as its forward's P V does (MASKNAN).
    ("libtorch-sdpa-f64", "libtorch-sdpa-f64", {}),
    ("libtorch-sdpa-f32", "libtorch-sdpa-f32", {}),
    # Its bfloat16 matmul accumulates P V in bfloat16 on small shapes: in
    # the ci profile's small problems its largest error exceeds twice the
    # naive composition's (PRECREL). On AVX2, where the matmul is ATen's
    # own gemm, the quick profile's seed 1 already shows it in PRECTIGHT
    # (README, Findings 7).
    ("libtorch-sdpa-bf16", "libtorch-sdpa-bf16", {}),
    # Kept report in docs/findings/onednn-2.6.3/, checked in CI; not run
    # there live (118 s: it creates, and so JIT-compiles, three primitives
    # a problem).
    ("onednn-f32", "onednn-f32", {"ci": False}),
    # oneDNN 2.6 has bf16 primitives only from AVX-512 (avx512_core) up.
    ("onednn-bf16", "onednn-bf16", {}),
    # Its flushed subnormals show in GOLDEN's subnormal_output case (and
    # its fully masked row there too).
    ("xnnpack-f32", "xnnpack-f32", {}),
    ("onnxruntime-float32", "cmd:{node} adapters/onnxruntime/adapter.js --dtype float32", {}),
    # Its float16 logits overflow (NaN outputs) in TEMP, ROWSUM and
    # PRECTIGHT in quick; in the ci profile's larger draws in SCALE, BATCH,
    # LINV and PERMKV too.
    ("onnxruntime-float16", "cmd:{node} adapters/onnxruntime/adapter.js --dtype float16", {}),
    # ONNX Runtime's GroupQueryAttention contrib operator: its causal path
    # gives 0 for a row with a NaN logit, and its dense P V lets a NaN value
    # that causal masking or a window blocks reach the row (README 8).
    ("onnxruntime-gqa-float32", "cmd:{node} adapters/onnxruntime/adapter.js --op group_query_attention", {}),
    ("onnxruntime-gqa-float16",
     "cmd:{node} adapters/onnxruntime/adapter.js --op group_query_attention --dtype float16", {}),
    # PyTorch 2 (PyPI torch in .venv, requirements.txt): SDPA on the CPU,
    # one backend each through torch.nn.attention.sdpa_kernel
    # (adapters/pytorch/torch_adapter.py). Every one lets NaN at blocked
    # keys reach the output (MASKNAN) and, through P = 0 times dP = NaN,
    # dQ (GRADMASK). The CPU flash kernel's running maximum drops NaN
    # logits (std::max), so a row whose every logit is NaN is taken for a
    # fully masked one and outputs 0 (NANPROP); its bfloat16 and float16
    # backward adds each block of queries' dV into the input type
    # (GRADPREC, and GRADPERM in bfloat16); its math composition lets NaN
    # at a blocked key reach the output of rows that see other keys
    # (NANPROP, GOLDEN's fully_masked_row). docs/findings/pytorch-2.15.md, findings 11-13. CI runs
    # one of the eight columns live, the flash backend's bfloat16 (two and
    # a half minutes on 2 cores), and checks the kept reports of all eight;
    # the math backend's glue is tested in CI by
    # tests/process/pytorch_real_test.sh.
    ("torch-flash-float64",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flash --dtype float64", {"ci": False}),
    ("torch-flash-float32",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flash --dtype float32", {"ci": False}),
    ("torch-flash-bfloat16", "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flash --dtype bfloat16", {}),
    ("torch-flash-float16",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flash --dtype float16", {"ci": False}),
    ("torch-math-float64",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend math --dtype float64", {"ci": False}),
    # Its float32 errors on tile-sized problems exceed twice the naive
    # composition's, as libtorch 1.13's do (README, Findings 6; docs/findings/pytorch-2.15.md, 12).
    ("torch-math-float32",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend math --dtype float32", {"ci": False}),
    ("torch-math-bfloat16",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend math --dtype bfloat16", {"ci": False}),
    ("torch-math-float16",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend math --dtype float16", {"ci": False}),
    # llama.cpp's ggml_flash_attn_ext (npm @node-llama-cpp/linux-x64,
    # adapters/ggml), its AVX2 build, which runs on every CPU kind of this
    # project's machines. Its tiled path (64 queries or more) multiplies
    # the weights of blocked keys, 0, into their values, so NaN there
    # reaches the output (MASKNAN, WINDOW, NANPROP); with a softcap it sets
    # a partial tile's padding keys to -inf before tanh, which makes their
    # logits -softcap (UNIFORM, SOFTCAP and SCALE with F32 keys); its F16
    # accumulator misses the tight tier (PRECTIGHT). docs/findings/ggml-3.22.1.md, findings 14-17.
    # ALiBi is declared with the paper's slopes only (ggml computes them
    # from max_bias): with F16 keys, SHIFT's shifted copy (a constant per
    # row through an additive mask, beside ALiBi) is declined in 22% of
    # its cases, where the value over ggml's slope is no F16 number
    # (INCOMPLETE).
    ("ggml-haswell-kv-f32", "ggml-haswell-kv-f32", {"ci": False}),
    ("ggml-haswell-kv-f16", "ggml-haswell-kv-f16", {}),
    # ggml's other builds this project's CPUs run (x64 baseline, SSE4.2,
    # AVX), each its own kernel: the same findings. The baseline build's
    # tiled path takes every d_v (one float32 lane), so finding 15's
    # padding keys reach more draws and fail PREC too with F32 keys.
    # docs/findings/ggml-3.22.1.md.
    ("ggml-x64-kv-f32", "ggml-x64-kv-f32", {"ci": False}),
    ("ggml-x64-kv-f16", "ggml-x64-kv-f16", {"ci": False}),
    ("ggml-sse42-kv-f32", "ggml-sse42-kv-f32", {"ci": False}),
    ("ggml-sse42-kv-f16", "ggml-sse42-kv-f16", {"ci": False}),
    ("ggml-sandybridge-kv-f32", "ggml-sandybridge-kv-f32", {"ci": False}),
    ("ggml-sandybridge-kv-f16", "ggml-sandybridge-kv-f16", {"ci": False}),
    # PyTorch 2.15's FlexAttention on the CPU (torch_adapter.py --backend
    # flex), eager: PyTorch's unfused composition; no backward on the CPU.
    # Compiled (--compile) it is no column: its compilations (about 30 s
    # each here) and C++ compile errors make a quick column take hours
    # (docs/findings/pytorch-2.15.md, finding 24). Eager, its composition multiplies
    # the zero weights of blocked keys into their values, so NaN there
    # reaches the output (MASKNAN, WINDOW, NANPROP, GOLDEN's
    # fully_masked_row), as the MATH backend's does (finding 12).
    # docs/findings/pytorch-2.15.md.
    # float64 fails what float32 fails (its first run's precision failures
    # were the adapter's float32 ALiBi slopes: finding 25, withdrawn).
    ("torch-flex-float64",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flex --dtype float64", {"ci": False}),
    ("torch-flex-float32",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flex --dtype float32", {"ci": False}),
    ("torch-flex-bfloat16",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flex --dtype bfloat16", {"ci": False}),
    ("torch-flex-float16",
     "cmd:{venv_python} adapters/pytorch/torch_adapter.py --backend flex --dtype float16", {"ci": False}),
    # OpenVINO 2026.4.1's ScaledDotProductAttention (opset13) on the CPU
    # plugin (PyPI openvino in .venv, adapters/openvino/openvino_adapter.py).
    # --precision is INFERENCE_PRECISION_HINT; on an AVX2 CPU the plugin
    # lowers bf16 and f16 to f32, so those columns run the f32 code (every
    # figure of their reports equals the f32 column's). "plain" is the op
    # alone (decomposed, then a Snippets MHA Subgraph), "kvcache" the
    # stateful LLM pattern that reaches the plugin's own SDPA node. Both add
    # the mask to the logits and multiply every key's weight into its value,
    # so NaN or Inf at blocked keys reaches the output (MASKNAN, NANPROP,
    # GOLDEN); a row with no visible key gives NaN (plain) or, under a bool
    # mask, the mean of its values (kvcache: -FLT_MAX for false) (FULLMASK).
    # docs/findings/openvino-2026.4.1.md, findings 18-20.
    ("openvino-f32", "cmd:{venv_python} adapters/openvino/openvino_adapter.py --precision f32", {"ci": False}),
    ("openvino-bf16", "cmd:{venv_python} adapters/openvino/openvino_adapter.py --precision bf16", {"ci": False}),
    ("openvino-f16", "cmd:{venv_python} adapters/openvino/openvino_adapter.py --precision f16", {"ci": False}),
    ("openvino-kvcache-f32",
     "cmd:{venv_python} adapters/openvino/openvino_adapter.py --path kvcache --precision f32", {"ci": False}),
    # PagedAttentionExtension (--path paged): always causal bottom-right,
    # pages of 32 rows only (causal_only, page_sizes), no masks. A row
    # whose logits are all -Inf because of an infinite query outputs 0
    # (NANPROP, finding 26); PERMQ and PERMKV need problems without causal
    # masking, which it declines (INCOMPLETE, listed as CLAUSE?).
    ("openvino-paged-f32",
     "cmd:{venv_python} adapters/openvino/openvino_adapter.py --path paged --precision f32", {"ci": False}),
    # ONNX Runtime 1.30's MultiHeadAttention contrib operator (a float32
    # kernel on the CPU; float16 runs it between the Casts ORT inserts):
    # without masks or causal masking it runs MLAS's flash
    # kernel, which ORT_DISABLE_FLASH_ATTENTION=1 switches off; masked rows
    # take the unfused path, which gives NaN for a fully masked row
    # (FULLMASK) and lets NaN at blocked keys through (MASKNAN, NANPROP, as
    # README 1). onnxruntime-web 1.30's WASM build (one thread) running
    # Attention, GroupQueryAttention and MultiHeadAttention fails what
    # onnxruntime-node fails, and its SGEMM rounds the scaled logits once
    # per 128 of d_k (PRECREL, in MultiHeadAttention's draws).
    # docs/findings/onnxruntime-1.30.md, findings 40-43. Not in CI (its time limit).
    ("onnxruntime-mha-float32", "cmd:{node} adapters/onnxruntime/adapter.js --op multi_head_attention", {"ci": False}),
    ("onnxruntime-mha-float32-noflash",
     "cmd:{node} adapters/onnxruntime/adapter.js --op multi_head_attention", {"ci": False, "env": {"ORT_DISABLE_FLASH_ATTENTION": "1"}}),
    ("onnxruntime-mha-float16",
     "cmd:{node} adapters/onnxruntime/adapter.js --op multi_head_attention --dtype float16", {"ci": False}),
    ("onnxruntime-web-float32", "cmd:{node} adapters/onnxruntime/adapter.js --runtime web", {"ci": False}),
    ("onnxruntime-web-float16", "cmd:{node} adapters/onnxruntime/adapter.js --runtime web --dtype float16", {"ci": False}),
    ("onnxruntime-web-gqa-float32",
     "cmd:{node} adapters/onnxruntime/adapter.js --runtime web --op group_query_attention", {"ci": False}),
    ("onnxruntime-web-gqa-float16",
     "cmd:{node} adapters/onnxruntime/adapter.js --runtime web --op group_query_attention --dtype float16", {"ci": False}),
    ("onnxruntime-web-mha-float32",
     "cmd:{node} adapters/onnxruntime/adapter.js --runtime web --op multi_head_attention", {"ci": False}),
    ("onnxruntime-web-mha-float16",
     "cmd:{node} adapters/onnxruntime/adapter.js --runtime web --op multi_head_attention --dtype float16", {"ci": False}),
    # JAX 0.10.2's jax.nn.dot_product_attention, implementation xla, on
    # the CPU (PyPI jax and jaxlib in .venv, adapters/jax/jax_adapter.py).
    # Its masks select a finite -0.7 * float32 max for blocked logits and
    # P V multiplies every key's weight into its value, so NaN or Inf at
    # blocked keys reaches the output (MASKNAN, WINDOW, NANPROP) and dQ
    # (GRADMASK), and a row with no visible key gives the mean of V
    # (FULLMASK). XLA on the CPU flushes subnormals, which SPEC 6.11 allows
    # for since 2026-12-07 (finding 32). Each new shape costs a jax.jit
    # compilation (0.5-1.8 s): a column takes 27-45 minutes here.
    # docs/findings/jax-0.10.2.md, findings 30 on. Not in CI (its time limit).
    ("jax-float64", "cmd:{venv_python} adapters/jax/jax_adapter.py --dtype float64", {"ci": False}),
    ("jax-float32", "cmd:{venv_python} adapters/jax/jax_adapter.py --dtype float32", {"ci": False}),
    # bfloat16 also: the lse rounded to bfloat16 (LSE, SPLITKV, finding
    # 36) and XLA aborting the process on some backward shapes (GRADSUM,
    # GRADLIN, GRADGQA lose cases to kernel faults, finding 35).
    ("jax-bfloat16", "cmd:{venv_python} adapters/jax/jax_adapter.py --dtype bfloat16", {"ci": False}),
    # float16 as bfloat16's lse (finding 36); its backward forms dP = dO V^T
    # in float16, which overflows to Inf above 65504 and turns into NaN
    # where every exact gradient is finite (GRADLIN, finding 37).
    ("jax-float16", "cmd:{venv_python} adapters/jax/jax_adapter.py --dtype float16 --fallback-precision", {"ci": False}),
    # On an AVX-512 machine, the AVX2 code paths too, through the caps the
    # libraries read (XNNPACK has none; libtorch's bf16 matmul is chosen
    # from CPUID, not from a cap, so it is not repeated here).
    ("onednn-f32@avx2", "onednn-f32", {"env": {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "cpu_kinds": AVX512_KINDS}),
    ("onednn-bf16@avx2", "onednn-bf16", {"env": {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "cpu_kinds": AVX512_KINDS}),
    ("libtorch-sdpa-f32@avx2", "libtorch-sdpa-f32", {"env": {"ATEN_CPU_CAPABILITY": "avx2"}, "cpu_kinds": AVX512_KINDS}),
]
EXIT_UNAVAILABLE = 3  # attnspec run: the kernel cannot run on this machine


def cpu_kind():
    """The CPU kind as attnspec names it (adapters/cpu.cpp)."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        return "avx512-bf16" if "avx512_bf16" in flags else "avx512"
    return "avx2" if "avx2" in flags else "baseline"


def numpy_python():
    """Debian's python3-numpy lives with /usr/bin/python3, which need not be
    the python3 first on PATH."""
    for candidate in ("/usr/bin/python3", sys.executable, shutil.which("python3")):
        if candidate and subprocess.run([candidate, "-c", "import numpy"], capture_output=True).returncode == 0:
            return candidate
    sys.exit("findings: no python3 with NumPy found (scripts/install-deps.sh installs python3-numpy)")


def venv_python():
    """The project's virtual environment (scripts/install-deps.sh makes it
    from requirements.txt), where PyTorch 2 lives."""
    python = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.access(python, os.X_OK):
        sys.exit("findings: no %s (scripts/install-deps.sh makes the virtual environment)" % python)
    return python


def run_kernel(attnspec, name, argument, env, args):
    report = os.path.join(args.out, name + ".json")
    if args.reports:  # the committed reports of an earlier run, read again
        if not os.path.exists(report):
            return None, 0
        with open(report) as f:
            kept = json.load(f)
        # What the run cost: its clauses' seconds, summed (attnspec run
        # spreads them over one worker per core, so the wall time is about
        # this over the cores).
        return kept, sum(r.get("seconds") or 0 for r in kept["results"])
    if os.path.exists(report):
        os.remove(report)
    command = [attnspec, "run", "--kernel", argument, "--profile", args.profile, "--seed", str(args.seed),
               "--json", report, "--save-failures", os.path.join(args.out, "failures")]
    start = time.time()
    with open(os.path.join(args.out, name + ".log"), "w") as log:
        status = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env=dict(os.environ, **env)).returncode
    seconds = time.time() - start
    if status not in (0, 1, EXIT_UNAVAILABLE) or not os.path.exists(report):
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
    clauses = [r["clause"] for _, report in reports for r in report["results"]]
    clauses = sorted(set(clauses), key=clauses.index)
    for clause in clauses:
        row = []
        for _, report in reports:
            result = next((r for r in report["results"] if r["clause"] == clause), None)
            row.append(cell(result) if result else "N/A")
        lines.append("| %s | %s |" % (clause, " | ".join(row)))
    worst = []
    for _, report in reports:
        prec = next((r for r in report["results"] if r["clause"] == "PREC"), None)
        if prec is None or prec["max_error_u"] is None:
            worst.append("-")
        else:
            worst.append("%.3g u (bound %.3g u)" % (prec["max_error_u"], prec["bound_u"]))
    lines.append("| PREC worst element | %s |" % " | ".join(worst))
    where = []
    for _, report in reports:
        platform = report.get("platform", {})
        text = platform.get("cpu_kind", "?")
        if platform.get("code_path"):
            text += ": " + platform["code_path"]
        if not report.get("available", True):
            text += "; not available: " + report.get("unavailable", "")
        where.append(text.replace("|", "/"))
    lines.append("| measured on | %s |" % " | ".join(where))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description="Run the Findings: every real kernel under attnspec run.")
    parser.add_argument("--attnspec", default=os.path.join(ROOT, "build", "attnspec"),
                        help="the attnspec binary (default: build/attnspec)")
    parser.add_argument("--profile", default="ci",
                        help="quick, ci or full (default ci; expected/ keeps whole vectors for quick)")
    parser.add_argument("--seed", type=int, default=1, help="the run's seed (default 1)")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "findings"),
                        help="where reports, logs and failures go (default build/findings)")
    parser.add_argument("--only", nargs="*", default=[], metavar="NAME", help="only these kernels")
    parser.add_argument("--ci", action="store_true", help="only the kernels CI runs")
    parser.add_argument("--reports", action="store_true",
                        help="run nothing: read the reports (NAME.json) an earlier run left in --out, "
                             "check them and print their table (docs/findings/ keeps such runs)")
    parser.add_argument("--accept", action="store_true",
                        help="write each report's verdict vector into expected/NAME.json "
                             "(quick profile, seed 1; review the differences first)")
    parser.add_argument("--expected", default=EXPECTED, help=argparse.SUPPRESS)  # tests point it elsewhere
    parser.add_argument("--markdown", metavar="FILE", help="also write the table to FILE")
    args = parser.parse_args()
    if not args.reports and not os.access(args.attnspec, os.X_OK):
        parser.error("no attnspec binary at %s (build it first: scripts/build.sh)" % args.attnspec)
    if args.accept and not args.reports and (args.profile != "quick" or args.seed != 1):
        parser.error("--accept keeps vectors of the quick profile with seed 1 only (this run: %s, seed %d)" %
                     (args.profile, args.seed))
    unknown = set(args.only) - {name for name, _, _ in KERNELS}
    if unknown:
        parser.error("unknown kernel(s) for --only: %s" % ", ".join(sorted(unknown)))
    try:
        # Every file is read first, so a malformed one stops the run before
        # any kernel has been run.
        expected = {name: expectations.load(args.expected, name) for name, _, _ in KERNELS
                    if not args.only or name in args.only}
    except expectations.BadExpectation as e:
        print("findings: %s" % e, file=sys.stderr)
        return 2
    node = shutil.which("node") or "node"
    os.makedirs(args.out, exist_ok=True)
    kind = cpu_kind()
    print("findings: CPU kind %s" % kind)
    python = venv = None
    reports, surprises = [], []
    total_seconds = 0.0
    for name, argument, options in KERNELS:
        if args.only and name not in args.only:
            continue
        if args.ci and options.get("ci", True) is False:
            # A column CI leaves out must have a kept report, which a test
            # checks (findings_reports_match_expectations_*): else CI
            # would judge nothing of it.
            kept = glob.glob(os.path.join(ROOT, "docs", "findings", "*", name + ".json"))
            print("findings: %-22s not run: left out of CI's run (--ci); kept report: %s" %
                  (name, os.path.relpath(kept[0], ROOT) if kept else "none"))
            if not kept:
                surprises.append("%s: left out of CI's run, and no kept report in docs/findings/*/" % name)
            continue
        if "cpu_kinds" in options and kind not in options["cpu_kinds"]:
            print("findings: %-22s not run: only on %s CPUs (this one is %s)" % (name, " or ".join(options["cpu_kinds"]), kind))
            continue
        if "{numpy_python}" in argument and python is None and not args.reports:
            python = numpy_python()
        if "{venv_python}" in argument and venv is None and not args.reports:
            venv = venv_python()
        argument = argument.format(numpy_python=python, venv_python=venv, node=node)
        print("findings: %-22s ..." % name, end=" ", flush=True)
        report, seconds = run_kernel(args.attnspec, name, argument, options.get("env", {}), args)
        if report is None:
            surprises.append("%s: no report" % name)
            print("no report")
            continue
        reports.append((name, report))
        # A kept report is judged on the CPU kind it was measured on.
        measured_on = report.get("platform", {}).get("cpu_kind", kind) if args.reports else kind
        if not report.get("available", True):
            print("not available on this CPU: %s" % report.get("unavailable"))
            if expectations.must_be_available(expected[name], measured_on):
                surprises.append("%s: not available on this %s CPU, expected to run: %s" %
                                 (name, measured_on, report.get("unavailable")))
            continue
        if not expectations.must_be_available(expected[name], measured_on):
            surprises.append("%s: ran, expected to be reported as not available" % name)
        failed = expectations.failing({r["clause"]: expectations.entry_of(r) for r in report["results"]})
        print("%d s%s, fails: %s" % (seconds, " of clauses" if args.reports else "", " ".join(failed) or "nothing"))
        total_seconds += seconds
        profile, seed = report.get("profile", args.profile), report.get("seed", args.seed)
        if args.accept:
            if (profile, seed) != ("quick", 1):
                surprises.append("%s: not accepted: expected/ keeps vectors of the quick profile with seed 1, "
                                 "this report is of %s, seed %s" % (name, profile, seed))
                continue
            kept = os.path.relpath(os.path.join(args.out, name + ".json"), ROOT)
            where = kept if args.reports and not kept.startswith("..") else \
                "a run of scripts/findings.py --profile quick on an %s CPU, %s" % (measured_on, time.strftime("%Y-%m-%d"))
            expectations.accept(args.expected, name, report, measured_on, where)
            print("findings: %-22s expected/%s.json rewritten from this report" % (name, name))
            continue
        found = expectations.compare(expected[name], report, measured_on, profile, seed)
        surprises += ["%s: %s" % (name, s) for s in found]
    if reports:
        table = markdown(reports, args)
        print("\nFindings (%s profile, seed %d):\n\n%s" % (args.profile, args.seed, table))
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table)
    if args.reports and reports:
        print("findings: the kept reports' clauses took %.1f h in all (summed over clauses)" % (total_seconds / 3600))
    for surprise in surprises:
        print("findings: UNEXPECTED: " + surprise)
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
