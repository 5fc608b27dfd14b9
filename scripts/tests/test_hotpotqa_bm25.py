"""Tests of scripts/hotpotqa_bm25.py: HotpotQA pools in BM25 order, their
qrels and the BM25 run.

    python3 -m unittest discover -s scripts/tests
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "hotpotqa_bm25.py")


def example(qid, question, context, supporting):
    return {"_id": qid, "question": question, "answer": "x", "type": "bridge",
            "level": "hard", "context": context,
            "supporting_facts": [[t, 0] for t in supporting]}


class HotpotBm25Test(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, examples, jsonl=True):
        src = os.path.join(self.d, "hotpot.jsonl" if jsonl else "hotpot.json")
        with open(src, "w") as f:
            if jsonl:
                f.write("".join(json.dumps(e) + "\n" for e in examples))
            else:
                json.dump(examples, f)
        out = [os.path.join(self.d, n) for n in ("pools.jsonl", "qrels.txt", "bm25.trec")]
        r = subprocess.run([sys.executable, SCRIPT, src, "--pools", out[0], "--qrels", out[1],
                            "--run", out[2]], capture_output=True, text=True)
        return r, out

    def read(self, path):
        with open(path) as f:
            return f.read().splitlines()

    def test_bm25_value_order_qrels_and_pools(self):
        examples = [
            example("q1", "Apple?", [["B b", ["cherry"]], ["A", ["apple ", "", " banana"]]], ["A"]),
            example("q2", "date", [["C  D", ["apple"]], ["E", ["date date"]]], ["E"]),
        ]
        for jsonl in (True, False):
            r, (pools, qrels, run) = self.run_script(examples, jsonl)
            self.assertEqual(r.returncode, 0, r.stderr)
            # Four paragraphs of lengths 1, 2, 1, 2: avgdl 1.5; "apple" is in two.
            idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
            want = idf * 1 * 1.9 / (1 + 0.9 * (1 - 0.4 + 0.4 * 2 / 1.5))
            lines = [l.split() for l in self.read(run)]
            self.assertEqual([l[2] for l in lines], ["A", "B_b", "E", "C_D"])
            self.assertEqual([l[3] for l in lines], ["1", "2", "1", "2"])
            self.assertAlmostEqual(float(lines[0][4]), want, places=6)
            self.assertEqual(float(lines[1][4]), 0.0)
            self.assertEqual(sorted(self.read(qrels)),
                             ["q1 0 A 1", "q1 0 B_b 0", "q2 0 C_D 0", "q2 0 E 1"])
            p = [json.loads(l) for l in self.read(pools)]
            self.assertEqual(p[0], {"qid": "q1", "query": "Apple?", "candidates": [
                {"id": "A", "text": "apple banana", "grade": 1},
                {"id": "B_b", "text": "cherry", "grade": 0}]})
            self.assertEqual([c["id"] for c in p[1]["candidates"]], ["E", "C_D"])

    def test_ties_keep_the_context_order(self):
        r, (_, _, run) = self.run_script(
            [example("q", "zzz", [["P", ["a"]], ["Q", ["b"]], ["R", ["c"]]], ["Q"])])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([l.split()[2] for l in self.read(run)], ["P", "Q", "R"])

    def test_bad_input_is_named(self):
        cases = [
            (example("q", "a", [["A", ["a"]]], ["Z"]), "not in the context"),
            (example("q", "a", [["A B", ["a"]], ["A  B", ["b"]]], []), "same id"),
            (example("q", "a", [["A", ["a"]], ["A", ["b"]]], []), "repeated paragraph title"),
            ({"_id": "q", "question": "a", "context": []}, "supporting_facts"),
        ]
        for ex, message in cases:
            r, _ = self.run_script([ex])
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(message, r.stderr)
            self.assertIn("example 1", r.stderr)


if __name__ == "__main__":
    unittest.main()
