"""Tests of scripts/ensemble_scores.py, which combines trained scorers (the
mean of several audits' readouts; the weight soup is `ocrank soup`, tested
in crates/engine/tests/soup.rs).

    python3 -m unittest discover -s scripts/tests

(`cargo test -p ocrank --test scripts` runs the same.) The tests read
committed audits under reports/training/.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

from report_io import audit_windows  # noqa: E402


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args],
                          capture_output=True, text=True, cwd=ROOT)

AUDITS = os.path.join(ROOT, "reports", "training")


class EnsembleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "ensemble.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def test_ensemble_of_an_audit_with_itself_is_that_audit(self):
        audit = os.path.join(AUDITS, "invariant-d40", "student-invariant")
        r = run("ensemble_scores.py", audit, audit, "--out", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = {(rec["qid"], rec["permutation"], rec["candidate"]): rec["score"]
                for w in audit_windows(audit) for rec in w["records"]}
        got = {}
        with open(self.out) as f:
            for line in f:
                rec = json.loads(line)
                got[(rec["qid"], rec["permutation"], rec["candidate"])] = rec["score"]
        self.assertEqual(set(got), set(want))
        self.assertEqual(len(got), 43 * 20)
        for k in want:
            self.assertAlmostEqual(got[k], want[k], places=12)

    def test_ensemble_is_the_mean_of_its_members(self):
        a = os.path.join(AUDITS, "invariant-d40", "student-invariant")
        b = os.path.join(AUDITS, "invariant-d40-seed1", "student-invariant")
        r = run("ensemble_scores.py", a, b, "--out", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(AUDITS, "invariant-d40-seed1", "ensemble-seeds01.jsonl")) as f:
            committed = [json.loads(line) for line in f]
        with open(self.out) as f:
            got = [json.loads(line) for line in f]
        self.assertEqual(got, committed)

    def test_refuses_audits_with_other_settings(self):
        a = os.path.join(AUDITS, "invariant-d40", "student-invariant")
        other = os.path.join(AUDITS, "invariant-c400", "student-invariant")  # 400 characters
        r = run("ensemble_scores.py", a, other, "--out", self.out)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not the same audit setting", r.stderr)
        self.assertIn("max_chars", r.stderr)


if __name__ == "__main__":
    unittest.main()
