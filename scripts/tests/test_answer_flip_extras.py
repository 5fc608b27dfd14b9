"""Tests of scripts/answer_flip_extras.py on hand-made `ocrank answer` results.

    python3 -m unittest discover -s scripts/tests
"""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import answer_flip_extras  # noqa: E402


def question(qid, gold, perms, flip=None, em=0.0):
    answers = [a for _, a in perms]
    return {"qid": qid, "gold": gold, "answer_flip": flip, "em_canonical": em,
            "distinct_answers": len(set(answers)),
            "permutations": [{"permutation": i, "passages": p, "answer": a}
                             for i, (p, a) in enumerate(perms)]}


class ExtrasTest(unittest.TestCase):
    def test_counts_from_results(self):
        with tempfile.TemporaryDirectory() as d:
            def write(name, questions):
                os.makedirs(os.path.join(d, name))
                with open(os.path.join(d, name, "results.json"), "w") as f:
                    json.dump({"per_question": questions}, f)
            write("answers-off-the-shelf-batched", [
                question("q1", "yes", [(["a", "b"], "yes"), (["b", "a"], "no")], flip=1.0, em=1.0),
                question("q2", "Paris", [(["c", "d"], "Lyon"), (["d", "c"], "Lyon")], flip=0.0),
            ])
            write("answers-bm25", [
                question("q1", "yes", [(["a", "b"], "yes")], em=1.0),
                question("q2", "Paris", [(["d", "c"], "Paris")], em=1.0),
            ])
            write("answers-student-invariant", [
                question("q1", "yes", [(["b", "a"], "no"), (["b", "a"], "no")], flip=0.0),
                question("q2", "Paris", [(["c", "d"], "Paris"), (["c", "d"], "Paris")], flip=0.0, em=1.0),
            ])
            e = answer_flip_extras.extras(d)
        # Only q1's canonical top 2 matches BM25's, in the same order; its answers agree.
        self.assertEqual((e["same_top5_as_bm25"], e["same_answer_there"]), (1, 1))
        self.assertEqual(e["distinct_answers_mean"], 1.5)
        self.assertEqual((e["orders"], e["all_orders_differ"], e["all_orders_agree"]), (2, 1, 1))
        self.assertEqual(e["flip_yes_no"], (1, 1.0))
        self.assertEqual(e["flip_other"], (1, 0.0))
        self.assertEqual(e["exact"], {"batched": (1, 1), "student": (1, 0), "bm25": (2, 1)})


if __name__ == "__main__":
    unittest.main()
