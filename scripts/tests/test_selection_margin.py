"""Tests of scripts/selection_margin.py (how decisive an `ocrank select`
choice is): on a selection written here, whose answers are known by hand,
and on a bad input.

    python3 -m unittest discover -s scripts/tests
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "selection_margin.py")


def selection(candidates):
    """`ocrank select`'s JSON for candidates {name: {qid: nDCG@10}}; the
    highest mean is selected, as select does."""
    rows = [{"candidate": n, "adapter": f"runs/x/{n}", "per_query": pq,
             "ndcg_at_10_mean": sum(pq.values()) / len(pq)} for n, pq in candidates.items()]
    best = max(rows, key=lambda r: r["ndcg_at_10_mean"])
    qids = sorted(next(iter(candidates.values())))
    return {"command": "ocrank select ...", "heldout_queries": qids, "permutations": 3,
            "candidates": rows, "selected": best}


class MarginTest(unittest.TestCase):
    def run_on(self, doc):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sel.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            out = os.path.join(d, "margin.md")
            p = subprocess.run([sys.executable, SCRIPT, path, "--out", out],
                               capture_output=True, text=True)
            result = json.load(open(os.path.join(d, "margin.json"))) if p.returncode == 0 else None
            return p, result

    def test_clear_loser_and_tie(self):
        qids = [f"q{i}" for i in range(8)]
        best = {q: 0.6 for q in qids}
        # Lower by 0.2 on every query: the interval is [-0.2, -0.2].
        worse = {q: 0.4 for q in qids}
        # Above on half the queries, below on the others, by the same
        # amount: mean 0, and the interval spans 0.
        tie = {q: 0.6 + (0.1 if i % 2 else -0.1) for i, q in enumerate(qids)}
        p, r = self.run_on(selection({"a@10": worse, "b@20": best, "c@30": tie}))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(r["selected"], "b@20")
        by = {c["candidate"]: c["minus_selected"] for c in r["candidates"]}
        self.assertAlmostEqual(by["a@10"][0], -0.2)
        self.assertAlmostEqual(by["a@10"][1], -0.2)
        self.assertAlmostEqual(by["a@10"][2], -0.2)
        self.assertAlmostEqual(by["c@30"][0], 0.0)
        self.assertLess(by["c@30"][1], 0.0)
        self.assertGreater(by["c@30"][2], 0.0)
        self.assertEqual(r["not_told_apart"], ["c@30"])
        self.assertIn("a@10 | 0.4000 | -0.2000 [-0.2000, -0.2000] *", p.stdout)

    def test_candidate_missing_a_query_is_refused(self):
        doc = selection({"a@1": {"q1": 0.5, "q2": 0.4}, "b@2": {"q1": 0.6, "q2": 0.5}})
        del doc["candidates"][0]["per_query"]["q2"]
        p, _ = self.run_on(doc)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("candidates[0] (a@1)", p.stderr)


if __name__ == "__main__":
    unittest.main()
