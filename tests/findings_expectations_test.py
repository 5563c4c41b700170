"""scripts/findings.py against expected/: a kept report that shows what its
expected/ file says passes, and each kind of change the file keeps fails
the check: a PASS turned SKIP or INCOMPLETE, a new failure signature, a
changed declined share, a skip for another reason. A malformed file stops
the run with status 2 and names the file and field. Standard library only.

Usage: python3 tests/findings_expectations_test.py
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = "onednn-f32"  # a kept report that fails GOLDEN, and skips clauses
KEPT = os.path.join(ROOT, "docs", "findings", "onednn-2.6.3", KERNEL + ".json")


class FindingsExpectations(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="findings-expectations-")
        self.out = os.path.join(self.dir, "reports")
        self.expected = os.path.join(self.dir, "expected")
        os.makedirs(self.out)
        os.makedirs(self.expected)
        shutil.copy(os.path.join(ROOT, "expected", KERNEL + ".json"), self.expected)
        with open(KEPT) as f:
            self.report = json.load(f)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def check(self, report, *extra):
        with open(os.path.join(self.out, KERNEL + ".json"), "w") as f:
            json.dump(report, f)
        run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "findings.py"), "--reports",
                              "--out", self.out, "--only", KERNEL, "--expected", self.expected] + list(extra),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        return run.returncode, run.stdout

    def changed(self, clause, **fields):
        report = copy.deepcopy(self.report)
        line = next(r for r in report["results"] if r["clause"] == clause)
        line.update(fields)
        return report

    def test_the_kept_report_matches(self):
        status, output = self.check(self.report)
        self.assertEqual(status, 0, output)

    def test_a_pass_turned_skip_fails(self):
        status, output = self.check(self.changed("SCALE", status="skip", reason="the kernel lacks scale"))
        self.assertEqual(status, 1, output)
        self.assertIn("SCALE: SKIP (the kernel lacks scale), expected PASS", output)

    def test_a_pass_turned_incomplete_fails(self):
        status, output = self.check(self.changed("SCALE", status="incomplete"))
        self.assertEqual(status, 1, output)
        self.assertIn("SCALE: INCOMPLETE, expected PASS", output)

    def test_a_new_failure_signature_fails(self):
        # A second golden case failing beside the known one: the clause
        # still fails, as expected, but not the same way.
        golden = next(r for r in self.report["results"] if r["clause"] == "GOLDEN")
        status, output = self.check(self.changed(
            "GOLDEN", signatures=["golden:fully_masked_row", "golden:subnormal_output"],
            reason=golden["reason"].replace("(fully_masked_row)", "(fully_masked_row, subnormal_output)")))
        self.assertEqual(status, 1, output)
        self.assertIn("new: golden:subnormal_output", output)

    def test_reports_without_signatures_are_read_from_their_reason(self):
        golden = next(r for r in self.report["results"] if r["clause"] == "GOLDEN")
        self.assertNotIn("signatures", golden)  # the kept report predates them
        status, output = self.check(self.changed(
            "GOLDEN", reason=golden["reason"].replace("(fully_masked_row)", "(fully_masked_row, subnormal_output)")))
        self.assertEqual(status, 1, output)
        self.assertIn("new: golden:subnormal_output", output)

    def test_a_changed_declined_share_fails(self):
        status, output = self.check(self.changed("PREC", declined=25, declined_share=0.2))
        self.assertEqual(status, 1, output)
        self.assertIn("PREC: the kernel declined 20.0% of its cases, expected 0.0%", output)

    def test_a_skip_for_another_reason_fails(self):
        skipped = next(r for r in self.report["results"] if r["status"] == "skip")
        status, output = self.check(self.changed(skipped["clause"], reason="some other reason"))
        self.assertEqual(status, 1, output)
        self.assertIn("%s: skipped because 'some other reason'" % skipped["clause"], output)

    def test_other_profiles_compare_the_failing_clauses_only(self):
        report = self.changed("SCALE", status="skip", reason="the kernel lacks scale")
        report["profile"] = "ci"
        self.assertEqual(self.check(report)[0], 0)
        status, output = self.check(self.changed("SCALE", status="fail") | {"profile": "ci"})
        self.assertEqual(status, 1, output)
        self.assertIn("only the failing clauses are compared", output)

    def test_accept_writes_the_vector_the_check_then_matches(self):
        report = self.changed("SCALE", status="skip", reason="the kernel lacks scale")
        status, output = self.check(report, "--accept")
        self.assertEqual(status, 0, output)
        self.assertEqual(self.check(report)[0], 0)
        self.assertEqual(self.check(self.report)[0], 1)

    def test_a_malformed_file_stops_the_run_naming_file_and_field(self):
        path = os.path.join(self.expected, KERNEL + ".json")
        with open(path) as f:
            data = json.load(f)
        data["quick_seed_1"]["clauses"]["SCALE"] = "passed"
        with open(path, "w") as f:
            json.dump(data, f)
        status, output = self.check(self.report)
        self.assertEqual(status, 2, output)
        self.assertIn("%s: quick_seed_1.clauses.SCALE.status: expected one of pass, fail, diff, skip, incomplete"
                      % path, output)

    def test_every_findings_kernel_has_one_file_and_every_file_a_kernel(self):
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import expectations
        import findings
        names = {name for name, _, _ in findings.KERNELS}
        files = {f[:-len(".json")] for f in os.listdir(os.path.join(ROOT, "expected")) if f.endswith(".json")}
        self.assertEqual(files, names)
        for name in sorted(names):
            expectations.load(os.path.join(ROOT, "expected"), name)  # raises BadExpectation if malformed

    def test_a_missing_file_stops_the_run(self):
        os.remove(os.path.join(self.expected, KERNEL + ".json"))
        status, output = self.check(self.report)
        self.assertEqual(status, 2, output)
        self.assertIn("no such file", output)


if __name__ == "__main__":
    unittest.main()
