"""What each Findings kernel is expected to show, kept as data in
expected/NAME.json, and the comparison of a run's report against it.

Used by scripts/findings.py. A file holds, for the quick profile and seed 1
(the runs CI makes and docs/findings/ keeps), the whole verdict vector:
every clause's status, a skipped clause's reason, the share of cases the
kernel declined, and a failing clause's signatures (the labels `attnspec
run --json` gives what broke: a failing golden case, lost cases). Other
profiles and seeds draw other problems, so for them only the set of
failing clauses is compared (the "beyond_quick" differences). Format:

  {"kernel": NAME,
   "available": true | false | [CPU kinds on which it must run],
   "quick_seed_1": {"measured": WHERE, "clauses": {CLAUSE: STATUS or
                    {"status": STATUS, "reason": SKIP REASON,
                     "declined_share": SHARE, "signatures": [LABEL, ...]}}}
                   or null (no whole vector measured yet),
   "fails": [CLAUSE, ...]          (only where quick_seed_1 is null),
   "on_cpu_kind": {KIND: {CLAUSE: as in clauses}},
   "beyond_quick": {"also_fails": [CLAUSE, ...], "passes": [CLAUSE, ...]}}

STATUS is pass, fail, diff (an informative clause that differs), skip or
incomplete; "declined_share" is 0 and "signatures" empty unless given.
"""
import json
import os
import re

STATUSES = ("pass", "fail", "diff", "skip", "incomplete")
KEYS = ("kernel", "available", "quick_seed_1", "fails", "on_cpu_kind", "beyond_quick", "why")


class BadExpectation(Exception):
    """An expected/ file that does not follow the format: names the file
    and field, and what was expected there."""


def _fail(path, field, expected):
    raise BadExpectation("%s: %s: expected %s" % (path, field, expected))


def _clause_entry(path, field, value):
    if isinstance(value, str):
        value = {"status": value}
    if not isinstance(value, dict):
        _fail(path, field, "a status or an object")
    unknown = set(value) - {"status", "reason", "declined_share", "signatures"}
    if unknown:
        _fail(path, field + "." + sorted(unknown)[0], "no such field (status, reason, declined_share, signatures)")
    if value.get("status") not in STATUSES:
        _fail(path, field + ".status", "one of " + ", ".join(STATUSES))
    share = value.get("declined_share", 0)
    if not isinstance(share, (int, float)) or not 0 <= share <= 1:
        _fail(path, field + ".declined_share", "a number from 0 to 1")
    signatures = value.get("signatures", [])
    if not isinstance(signatures, list) or not all(isinstance(s, str) for s in signatures):
        _fail(path, field + ".signatures", "a list of strings")
    return {"status": value["status"], "reason": value.get("reason"),
            "declined_share": round(float(share), 3), "signatures": sorted(set(signatures))}


def _clause_list(path, field, value):
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        _fail(path, field, "a list of clause names")
    return value


def load(directory, name):
    """expected/NAME.json, checked; BadExpectation names what is wrong."""
    path = os.path.join(directory, name + ".json")
    if not os.path.exists(path):
        raise BadExpectation("%s: no such file (every Findings kernel has one; "
                             "write it with scripts/findings.py --accept after a reviewed run)" % path)
    try:
        with open(path) as f:
            data = json.load(f)
    except ValueError as e:
        raise BadExpectation("%s: not JSON: %s" % (path, e))
    if not isinstance(data, dict):
        _fail(path, "(top level)", "an object")
    unknown = set(data) - set(KEYS)
    if unknown:
        _fail(path, sorted(unknown)[0], "no such field (%s)" % ", ".join(KEYS))
    if data.get("kernel") != name:
        _fail(path, "kernel", "'%s', the file's name" % name)
    available = data.get("available", True)
    if not (isinstance(available, bool) or
            (isinstance(available, list) and all(isinstance(k, str) for k in available))):
        _fail(path, "available", "true, false or a list of CPU kinds")
    quick = data.get("quick_seed_1")
    clauses = None
    if quick is not None:
        if not isinstance(quick, dict) or not isinstance(quick.get("clauses"), dict):
            _fail(path, "quick_seed_1.clauses", "an object of clause entries")
        clauses = {c: _clause_entry(path, "quick_seed_1.clauses." + c, v) for c, v in quick["clauses"].items()}
        if "fails" in data:
            _fail(path, "fails", "nothing: the whole vector (quick_seed_1) says what fails")
    elif available is not False:
        _clause_list(path, "fails", data.get("fails"))
    on_kind = data.get("on_cpu_kind", {})
    if not isinstance(on_kind, dict):
        _fail(path, "on_cpu_kind", "an object of CPU kinds")
    kinds = {kind: {c: _clause_entry(path, "on_cpu_kind.%s.%s" % (kind, c), v) for c, v in entries.items()}
             for kind, entries in on_kind.items()}
    beyond = data.get("beyond_quick", {})
    if not isinstance(beyond, dict) or set(beyond) - {"also_fails", "passes"}:
        _fail(path, "beyond_quick", "an object with also_fails and passes")
    return {"path": path, "available": available, "clauses": clauses, "fails": data.get("fails", []),
            "on_cpu_kind": kinds,
            "also_fails": _clause_list(path, "beyond_quick.also_fails", beyond.get("also_fails", [])),
            "passes": _clause_list(path, "beyond_quick.passes", beyond.get("passes", [])),
            "data": data}


def must_be_available(expected, kind):
    available = expected["available"]
    return available if isinstance(available, bool) else kind in available


def signatures_of(result):
    """A report line's failure signatures. Reports written before attnspec
    gave them ("signatures" absent) name the same things in their reason."""
    if "signatures" in result:
        return sorted(set(result["signatures"]))
    if result["status"] != "fail":
        return []
    found = []
    golden = re.search(r"judged golden case\(s\) fail \(([^)]*)\)", result["reason"])
    if result["clause"] == "GOLDEN" and golden:
        found += ["golden:" + n.strip() for n in golden.group(1).split(",")]
    elif result["clause"] == "GOLDEN" and re.match(r"[a-z0-9_]+: ", result["reason"]):
        # Older still: GOLDEN stopped at its first failing case, which
        # began the reason (the others were not judged).
        found.append("golden:" + result["reason"].split(":")[0])
    if "lost to kernel faults" in result["reason"]:
        found.append("faults")
    return sorted(set(found))


def entry_of(result):
    """A report line as a clause entry."""
    status = result["status"]
    if status == "fail" and result.get("informative"):
        status = "diff"
    return {"status": status, "reason": result["reason"] if status == "skip" else None,
            "declined_share": round(float(result.get("declined_share") or 0), 3),
            "signatures": signatures_of(result) if status in ("fail", "diff") else []}


def failing(entries):
    """The failing set the coarse check compares: FAIL, and INCOMPLETE as CLAUSE?."""
    return sorted([c for c, e in entries.items() if e["status"] == "fail"] +
                  [c + "?" for c, e in entries.items() if e["status"] == "incomplete"])


def _describe(entry):
    text = entry["status"].upper()
    if entry["status"] == "skip" and entry["reason"] is not None:
        text += " (%s)" % entry["reason"]
    return text


def compare(expected, report, kind, profile, seed):
    """Surprises (a list of lines) of one kernel's report; empty when it
    shows what is expected. kind: the CPU kind the report was measured on."""
    got = {r["clause"]: entry_of(r) for r in report["results"]}
    if expected["clauses"] is not None and profile == "quick" and seed == 1:
        want = dict(expected["clauses"])
        want.update(expected["on_cpu_kind"].get(kind, {}))
        surprises = []
        for clause in sorted(set(want) | set(got), key=lambda c: (c not in want, c)):
            if clause not in got:
                surprises.append("%s: not in the report, expected %s" % (clause, _describe(want[clause])))
                continue
            if clause not in want:
                surprises.append("%s: %s, not expected at all (a new clause? accept it)" % (clause, _describe(got[clause])))
                continue
            w, g = want[clause], got[clause]
            if w["status"] != g["status"]:
                surprises.append("%s: %s, expected %s" % (clause, _describe(g), _describe(w)))
                continue
            if w["status"] == "skip" and w["reason"] is not None and w["reason"] != g["reason"]:
                surprises.append("%s: skipped because '%s', expected '%s'" % (clause, g["reason"], w["reason"]))
            if w["declined_share"] != g["declined_share"]:
                surprises.append("%s: the kernel declined %.1f%% of its cases, expected %.1f%%" %
                                 (clause, 100 * g["declined_share"], 100 * w["declined_share"]))
            if w["signatures"] != g["signatures"]:
                new = sorted(set(g["signatures"]) - set(w["signatures"]))
                gone = sorted(set(w["signatures"]) - set(g["signatures"]))
                surprises.append("%s: fails with %s, expected %s (new: %s; gone: %s)" %
                                 (clause, g["signatures"] or "no signature", w["signatures"] or "no signature",
                                  ", ".join(new) or "none", ", ".join(gone) or "none"))
        return surprises
    # The coarse check: another profile or seed, or no whole vector kept.
    if expected["clauses"] is not None:
        want_entries = dict(expected["clauses"])
        want_entries.update(expected["on_cpu_kind"].get(kind, {}))
        want = set(failing(want_entries))
    else:
        want = set(expected["fails"]) | set(failing(expected["on_cpu_kind"].get(kind, {})))
    if profile != "quick":
        want = (want - set(expected["passes"])) | set(expected["also_fails"])
    have = failing(got)
    if have != sorted(want):
        return ["fails %s, expected %s (only the failing clauses are compared: %s)" %
                (have or "nothing", sorted(want) or "nothing",
                 "no whole verdict vector is kept for it" if expected["clauses"] is None
                 else "the vector kept is for the quick profile, seed 1")]
    return []


def accept(directory, name, report, kind, where):
    """Writes expected/NAME.json's vector from a reviewed quick, seed-1
    report, keeping the file's other fields; clauses the file overrides on
    this CPU kind keep their vector entry, and take the report's in the
    override."""
    path = os.path.join(directory, name + ".json")
    data = {"kernel": name}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    old = (data.get("quick_seed_1") or {}).get("clauses", {})
    overrides = data.get("on_cpu_kind", {}).get(kind, {})
    clauses = {}
    for result in report["results"]:
        entry = entry_of(result)
        if result["clause"] in overrides:
            overrides[result["clause"]] = _compact(entry)
            if result["clause"] in old:
                clauses[result["clause"]] = old[result["clause"]]
                continue
        clauses[result["clause"]] = _compact(entry)
    data["quick_seed_1"] = {"measured": where, "clauses": clauses}
    data.pop("fails", None)
    order = {k: i for i, k in enumerate(KEYS)}
    data = dict(sorted(data.items(), key=lambda kv: order.get(kv[0], len(KEYS))))
    with open(path + ".tmp", "w") as f:
        f.write(dumps(data))
    os.replace(path + ".tmp", path)


def dumps(data):
    """An expected/ file's text: a clause entry a line, so that a review
    of a change reads one line per clause that moved."""
    def block(entries, indent):
        inner = ",\n".join("%s%s: %s" % (" " * (indent + 1), json.dumps(k), json.dumps(v)) for k, v in entries.items())
        return "{\n%s\n%s}" % (inner, " " * indent) if entries else "{}"
    lines = []
    for key, value in data.items():
        if key == "quick_seed_1" and value is not None:
            text = '{\n   "measured": %s,\n   "clauses": %s\n  }' % (json.dumps(value["measured"]),
                                                                    block(value["clauses"], 3))
        elif key == "on_cpu_kind":
            text = "{\n%s\n  }" % ",\n".join('   %s: %s' % (json.dumps(k), json.dumps(v)) for k, v in value.items())
        else:
            text = json.dumps(value)
        lines.append("  %s: %s" % (json.dumps(key), text))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _compact(entry):
    out = {k: v for k, v in entry.items() if v not in (None, 0, 0.0, [])}
    return out["status"] if list(out) == ["status"] else out
