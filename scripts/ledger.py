#!/usr/bin/env python3
"""The false-alarm ledger, checkable: each seed of a sweep keeps its JSON
reports (one per kernel, `attnspec run --json-dir`) packed with the
binary's hash, the commit, the CPU kind and the time into one compressed
file (`pack`); the ledger line of a seed is built from that file, its
result counted from the reports' clause statuses (`build`); `verify`
checks that every kept seed has its line in the ledger, equal to the one
built from it, and counts the older lines that have no reports behind
them. Only the Python standard library.

  ledger.py pack --reports-dir DIR --out-dir DIR --commit C --kind K --profile P
                 --kernels KS --clauses CS --seed N --binary FILE [--date D]
  ledger.py build FILE...
  ledger.py verify [--ledger bench/false_alarm_ledger.tsv] [--sweeps bench/sweeps]

Exit status: 0 fine, 1 verify found a disagreement, 2 bad input (the file
and field named).
"""
import argparse
import datetime
import gzip
import hashlib
import json
import os
import sys

SCHEMA = "attnspec-sweep-seed/1"
FIELDS = ("date", "commit", "cpu_kind", "profile", "kernels", "clauses", "seed")


class BadInput(Exception):
    pass


def result_line(reports):
    """The run's last line ("N passed, M failed, K skipped", ...), counted
    from the clause statuses as `attnspec run` counts them."""
    counts = {"pass": 0, "fail": 0, "skip": 0, "incomplete": 0}
    unavailable = 0
    allow = False
    for report in reports:
        allow = allow or bool(report.get("allow_incomplete"))
        if not report.get("available", True):
            unavailable += 1
        for r in report["results"]:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
    line = f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped"
    if counts["incomplete"]:
        why = "allowed by --allow-incomplete" if allow else "failing the run; --allow-incomplete to accept"
        line += f", {counts['incomplete']} incomplete ({why})"
    if unavailable:
        line += f", {unavailable} kernel(s) not available here"
    return line


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pack(args):
    reports = []
    names = sorted(n for n in os.listdir(args.reports_dir) if n.endswith(".json"))
    if not names:
        raise BadInput(f"{args.reports_dir}: no KERNEL.json report in it")
    for name in names:
        path = os.path.join(args.reports_dir, name)
        try:
            report = json.load(open(path))
        except (OSError, ValueError) as e:
            raise BadInput(f"{path}: not a JSON report ({e})")
        for field, want in (("seed", args.seed), ("profile", args.profile)):
            if report.get(field) != want:
                raise BadInput(f"{path}: field '{field}' is {report.get(field)!r}, expected {want!r}")
        kind = (report.get("platform") or {}).get("cpu_kind")
        if kind != args.kind:
            raise BadInput(f"{path}: field 'platform.cpu_kind' is {kind!r}, expected {args.kind!r}")
        reports.append(report)
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    seed_file = {
        "schema": SCHEMA, "date": date, "commit": args.commit, "cpu_kind": args.kind, "profile": args.profile,
        "kernels": args.kernels, "clauses": args.clauses, "seed": args.seed,
        "binary_sha256": sha256_of(args.binary), "reports": reports,
    }
    selection = hashlib.sha1(f"{args.kernels}|{args.clauses}".encode()).hexdigest()[:8]
    stamp = date.replace("-", "").replace(":", "")
    out = os.path.join(args.out_dir, f"{stamp}_{args.commit}_{args.kind}_{args.profile}_{selection}_seed{args.seed}.json.gz")
    os.makedirs(args.out_dir, exist_ok=True)
    partial = out + ".partial"
    with gzip.open(partial, "wt") as f:
        json.dump(seed_file, f, separators=(",", ":"), sort_keys=True)
    os.replace(partial, out)
    print(out)


def load_seed_file(path):
    try:
        with gzip.open(path, "rt") as f:
            seed_file = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise BadInput(f"{path}: not a gzip-compressed JSON file ({e})")
    if seed_file.get("schema") != SCHEMA:
        raise BadInput(f"{path}: field 'schema' is {seed_file.get('schema')!r}, expected {SCHEMA!r}")
    for field in FIELDS + ("binary_sha256", "reports"):
        if field not in seed_file:
            raise BadInput(f"{path}: field '{field}' is missing")
    return seed_file


def ledger_line(seed_file):
    cells = [str(seed_file[f]) for f in FIELDS] + [result_line(seed_file["reports"])]
    return "\t".join(cells)


def build(args):
    for path in args.files:
        print(ledger_line(load_seed_file(path)))


def verify(args):
    try:
        lines = open(args.ledger).read().splitlines()
    except OSError as e:
        raise BadInput(f"{args.ledger}: cannot read the ledger ({e})")
    entries = lines[1:]  # after the header
    seed_files = sorted(os.path.join(args.sweeps, n) for n in os.listdir(args.sweeps)
                        if n.endswith(".json.gz")) if os.path.isdir(args.sweeps) else []
    backed, contradicted, problems = set(), set(), []
    for path in seed_files:
        built = ledger_line(load_seed_file(path))
        if built in entries:
            backed.add(built)
            continue
        # The same seed of the same sweep with another result, or none.
        key = built.split("\t")[:7]
        near = [e for e in entries if e.split("\t")[:7] == key]
        contradicted.update(near)
        problems.append(f"{path}: the ledger has " + (f"'{near[0]}', the reports say '{built}'" if near else f"no line '{built}'"))
    for p in problems:
        print("ledger: " + p, file=sys.stderr)
    # The lines' dates in file order: a hand merge left some out of order.
    dates = [e.split("\t")[0] for e in entries]
    out_of_order = sum(1 for a, b in zip(dates, dates[1:]) if b < a)
    older = len(entries) - len(backed) - len(contradicted)
    print(f"ledger: {len(entries)} lines, {len(backed)} of them built from kept reports ({len(seed_files)} seed files "
          f"in {args.sweeps}), {older} older lines with no reports behind them, {out_of_order} line(s) dated before "
          f"the line above; {len(problems)} disagreement(s)")
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="pack one seed's reports into a compressed seed file")
    p.add_argument("--reports-dir", required=True, help="the seed's `attnspec run --json-dir` folder")
    p.add_argument("--out-dir", required=True, help="where seed files are kept (bench/sweeps)")
    p.add_argument("--commit", required=True, help="the commit the binary was built from")
    p.add_argument("--kind", required=True, help="the CPU kind the run reported")
    p.add_argument("--profile", required=True, help="quick, ci or full")
    p.add_argument("--kernels", required=True, help="the sweep's KERNELS, as the ledger writes them")
    p.add_argument("--clauses", required=True, help="the sweep's CLAUSES, or 'all'")
    p.add_argument("--seed", required=True, type=int, help="the seed")
    p.add_argument("--binary", required=True, help="the attnspec binary that ran (its SHA-256 is kept)")
    p.add_argument("--date", help="UTC time of the run's end, YYYY-MM-DDTHH:MMZ (default: now)")
    b = sub.add_parser("build", help="print the ledger line of each seed file")
    b.add_argument("files", nargs="+", help="seed files (*.json.gz)")
    v = sub.add_parser("verify", help="check the ledger against the kept seed files")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    v.add_argument("--ledger", default=os.path.join(root, "bench", "false_alarm_ledger.tsv"), help="the ledger (TSV)")
    v.add_argument("--sweeps", default=os.path.join(root, "bench", "sweeps"), help="the folder of seed files")
    args = parser.parse_args()
    try:
        if args.command == "pack":
            pack(args)
        elif args.command == "build":
            build(args)
        else:
            return verify(args)
    except BadInput as e:
        print(f"ledger: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
