#!/usr/bin/env python3
"""The declined shares the Findings kernels show, read from expected/
(their quick, seed-1 verdict vectors): how many clause lines have
declines, how many of those PASS, and the largest share on a PASS, the
figures spec/SPEC.md section 7.3 gives for the 10% threshold of INCOMPLETE.
Standard library only.

Usage: python3 scripts/declined_shares.py [--top N]
"""
import argparse
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description="Declined shares of the Findings kernels (expected/).")
    parser.add_argument("--top", type=int, default=10, help="list the N largest shares (default 10)")
    args = parser.parse_args()
    lines = []
    for path in sorted(glob.glob(os.path.join(ROOT, "expected", "*.json"))):
        with open(path) as f:
            data = json.load(f)
        for clause, entry in ((data.get("quick_seed_1") or {}).get("clauses") or {}).items():
            if isinstance(entry, dict) and entry.get("declined_share", 0) > 0:
                lines.append((entry["declined_share"], entry["status"], data["kernel"], clause))
    lines.sort(key=lambda line: (-line[0], line[2], line[3]))
    for share, status, kernel, clause in lines[:args.top]:
        print("%5.1f%%  %-10s  %-24s  %s" % (100 * share, status.upper(), kernel, clause))
    passing = [line for line in lines if line[1] == "pass"]
    print("%d clause lines with declines, %d of them PASS; the largest share on a PASS: %s" %
          (len(lines), len(passing), "%.1f%% (%s, %s)" % (100 * passing[0][0], passing[0][2], passing[0][3])
           if passing else "none"))


if __name__ == "__main__":
    main()
