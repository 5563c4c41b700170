#!/usr/bin/env python3
"""Load and faults: the ci profile through the process protocol, once with
the NumPy example adapter as it is and once behind a proxy
(tests/process/fault_injecting_proxy.py) that crashes, hangs or writes
garbage on a random 5% of the cases. Checks that the faulty run finishes,
that the cases each clause reports lost add up to exactly the faults the
proxy injected, and that every other verdict is the clean run's: each
clause judged as many cases, and judged them the same way.

Usage: python3 bench/fault_load.py [--attnspec build/attnspec] [--profile ci]
       [--rate 0.05] [--seed 7] [--case-timeout 2] [--out build/fault-load]
Exit status 0 when all of that holds, 1 otherwise. About 4 minutes here.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOST = re.compile(r"(\d+) (?:golden )?case\(s\) lost to kernel faults")
OTHERS = re.compile(r"the other (\d+) case\(s\) passed")


def run(args, name, kernel):
    report = os.path.join(args.out, name + ".json")
    command = [args.attnspec, "run", "--kernel", kernel, "--profile", args.profile, "--seed", "1", "--no-shrink",
               "--json", report, "--save-failures", os.path.join(args.out, name + "-failures")]
    env = dict(os.environ, ATTNSPEC_CASE_TIMEOUT=str(args.case_timeout))
    start = time.time()
    with open(os.path.join(args.out, name + ".log"), "w") as log:
        status = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.time() - start
    with open(report) as f:
        return status, json.load(f), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnspec", default=os.path.join(ROOT, "build", "attnspec"))
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument("--seed", default="7")
    parser.add_argument("--case-timeout", type=float, default=2.0)
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "fault-load"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    python = "/usr/bin/python3"
    adapter = "%s adapters/python/numpy_adapter.py --dtype float32" % python
    faults_log = os.path.join(args.out, "injected.txt")
    if os.path.exists(faults_log):
        os.remove(faults_log)
    proxy = "%s tests/process/fault_injecting_proxy.py --rate %g --seed %s --log %s -- %s" % (
        python, args.rate, args.seed, faults_log, adapter)

    clean_status, clean, clean_seconds = run(args, "clean", "cmd:" + adapter)
    faulty_status, faulty, faulty_seconds = run(args, "faulty", "cmd:" + proxy)
    with open(faults_log) as f:
        injected = [line.split() for line in f if line.strip()]
    kinds = {}
    for _, kind in injected:
        kinds[kind] = kinds.get(kind, 0) + 1

    problems = []
    if clean_status != 0:
        problems.append("the clean run exited with %d" % clean_status)
    lost_total, judged_clean, judged_faulty = 0, 0, 0
    by_clause = {r["clause"]: r for r in clean["results"]}
    for result in faulty["results"]:
        before = by_clause[result["clause"]]
        lost = sum(int(n) for n in LOST.findall(result["reason"]))
        lost_total += lost
        judged_clean += before["cases"]
        if lost == 0:
            judged_faulty += result["cases"]
            if (result["status"], result["cases"]) != (before["status"], before["cases"]):
                problems.append("%s: %s with %d cases, clean %s with %d" % (
                    result["clause"], result["status"], result["cases"], before["status"], before["cases"]))
            continue
        others = OTHERS.search(result["reason"])
        judged = int(others.group(1)) if others else 0
        judged_faulty += judged
        if result["status"] != "fail":
            problems.append("%s: lost %d cases but did not fail" % (result["clause"], lost))
        # Generated clauses draw a new case for each lost one; GOLDEN's and
        # VAR's cases are a fixed set, of which the lost ones are missing.
        fixed_set = result["clause"] in ("GOLDEN", "VAR")
        expected_judged = before["cases"] - lost if fixed_set else before["cases"]
        if before["status"] == "pass" and judged != expected_judged and result["clause"] != "VAR":
            problems.append("%s: judged %d other cases, expected %d" % (result["clause"], judged, expected_judged))
    if lost_total != len(injected):
        problems.append("the clauses report %d lost cases, the proxy injected %d faults" % (lost_total, len(injected)))

    print("clean run: exit %d, %.0f s; faulty run: exit %d, %.0f s" % (clean_status, clean_seconds, faulty_status,
                                                                     faulty_seconds))
    print("faults injected: %d (%s); cases reported lost: %d" % (
        len(injected), ", ".join("%s %d" % kv for kv in sorted(kinds.items())), lost_total))
    print("cases judged: %d in the clean run, %d besides the lost ones in the faulty run (GOLDEN's and VAR's fixed"
          " cases are not replaced when lost)" % (judged_clean, judged_faulty))
    for problem in problems:
        print("fault_load: PROBLEM: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
