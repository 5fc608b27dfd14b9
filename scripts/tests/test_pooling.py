"""Tests of the scripts behind the training reports' difference tables:
scripts/seed_pooled.py (treatment minus control pooled over training
seeds or starts), scripts/retention.py (decision sets across orders),
scripts/bsc_match.py (one forward against a control averaged over K
orders) and scripts/paired_vs_run.py (an audit against a TREC run). Each runs on small audits written here, whose answers are known
by hand, and once on committed audits against the committed tables.

    python3 -m unittest discover -s scripts/tests

(`cargo test -p ocrank --test scripts` runs the same.)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
B20 = os.path.join(ROOT, "reports", "training", "width10", "b20")


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args],
                          capture_output=True, text=True, cwd=ROOT)


def write_audit(directory, per_query, *, width=10, permutations=2, t=0.5, windows=(), bsc=None):
    """An audit directory as `ocrank audit --out` leaves it, reduced to
    what the scripts read: results.json and windows.jsonl (one record per
    (qid, permutation): {candidate: score})."""
    os.makedirs(directory)
    results = {"per_query": per_query,
               "spec": {"permutations": permutations, "seed": 0},
               "settings": {"scorer": {"width": width, "max_chars": 300}, "depth": 20,
                            "pools_sha256": "pools"},
               "threshold": {"t": t}}
    if bsc is not None:
        results["bsc"] = [{"k": k, "groups": g, "per_query": pq} for k, (g, pq) in bsc.items()]
    with open(os.path.join(directory, "results.json"), "w") as f:
        json.dump(results, f)
    with open(os.path.join(directory, "windows.jsonl"), "w") as f:
        for (qid, perm), scores in windows:
            records = [{"candidate": c, "score": s} for c, s in scores.items()]
            f.write(json.dumps({"qid": qid, "permutation": perm, "window": 0, "records": records}) + "\n")
    return directory


def measures(tau, ndcg=0.5, overlap=1.0):
    return {"tau_psi": tau, "ndcg_at_10": ndcg, "ndcg_at_10_mean": ndcg, "ndcg_at_10_worst": ndcg,
            "retained_set_overlap": overlap}


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def report(self, name):
        with open(self.path(name).rsplit(".", 1)[0] + ".json") as f:
            return json.load(f)


class SeedPooledTest(Tmp):
    QUERIES = {"q1": 0.40, "q2": 0.50, "q3": 0.55, "q4": 0.30}

    def pair(self, name, shift, jitter=None, width=10):
        control = write_audit(self.path(f"{name}-control"),
                              {q: measures(x) for q, x in self.QUERIES.items()})
        treatment = write_audit(self.path(f"{name}-treatment"), {
            q: measures(x + shift + (jitter or {}).get(q, 0.0)) for q, x in self.QUERIES.items()},
            width=width)
        return ["--pair", treatment, control]

    def test_pooled_difference_is_the_mean_over_pairs(self):
        r = run("seed_pooled.py", *self.pair("a", -0.1), *self.pair("b", -0.3),
                "--measures", "tau_psi", "--out", self.path("pooled.md"))
        self.assertEqual(r.returncode, 0, r.stderr)
        got = self.report("pooled.md")["measures"]["tau_psi"]
        for (mean, lo, hi), want in zip(got["per_seed"], (-0.1, -0.3)):
            # A constant per-query difference leaves the bootstrap nothing to vary.
            for x in (mean, lo, hi):
                self.assertAlmostEqual(x, want, places=12)
        for x in got["pooled"]:
            self.assertAlmostEqual(x, -0.2, places=12)
        self.assertAlmostEqual(got["seed_spread"], 0.2, places=12)

    def test_pooled_interval_covers_a_varying_difference(self):
        jitter = {"q1": 0.08, "q2": -0.04, "q3": 0.0, "q4": -0.04}
        r = run("seed_pooled.py", *self.pair("a", -0.1, jitter), *self.pair("b", -0.1),
                "--measures", "tau_psi", "--out", self.path("pooled.md"))
        self.assertEqual(r.returncode, 0, r.stderr)
        mean, lo, hi = self.report("pooled.md")["measures"]["tau_psi"]["pooled"]
        self.assertAlmostEqual(mean, -0.1, places=12)
        self.assertLess(lo, mean)
        self.assertGreater(hi, mean)
        # Each query's difference is averaged over the pairs before the
        # bootstrap: the pooled values lie within [-0.12, -0.06].
        self.assertGreaterEqual(lo, -0.12 - 1e-12)
        self.assertLessEqual(hi, -0.06 + 1e-12)

    def test_refuses_a_pair_scored_with_other_settings(self):
        r = run("seed_pooled.py", *self.pair("a", -0.1, width=20), "--out", self.path("pooled.md"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("differ in scorer", r.stderr)

    def test_refuses_audits_of_other_queries(self):
        args = self.pair("a", -0.1)
        other = write_audit(self.path("other"), {"q1": measures(0.4)})
        r = run("seed_pooled.py", *args, "--pair", other, args[2], "--out", self.path("pooled.md"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("queries differ", r.stderr)

    def test_committed_b20_table_is_reproduced(self):
        # The pooled M = 10 table of the B = 20 report, recomputed from the
        # committed audits with the command recorded in its JSON twin.
        committed = os.path.join(B20, "seed-pooled-m10-oc-sft-spread-vs-single-order.json")
        with open(committed) as f:
            want = json.load(f)
        args = want["command"].split()[1:]
        out = args.index("--out") + 1
        args[out] = self.path("pooled.md")
        r = run("seed_pooled.py", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = self.report("pooled.md")
        self.assertEqual(got["measures"], want["measures"])


class RetentionTest(Tmp):
    # q1: six candidates; order 1 swaps c3 with c4 and c5 with c6.
    # At t = 3.5 order 0 keeps {c1, c2, c3}, order 1 {c1, c2, c4}: overlap 2/4.
    # Top 5: {c1..c5} and {c1, c2, c3, c4, c6}: Jaccard 4/6 (the bottom 5
    # sets would agree: 1).
    Q1_0 = {"c1": 6.0, "c2": 5.0, "c3": 4.0, "c4": 3.0, "c5": 2.0, "c6": 1.0}
    Q1_1 = {**Q1_0, "c3": 3.0, "c4": 4.0, "c5": 1.0, "c6": 2.0}
    # q2: every score above t under both orders: the pool is kept whole.
    Q2 = {"d1": 9.0, "d2": 8.0, "d3": 7.0, "d4": 6.0, "d5": 5.0, "d6": 4.0}

    def audit(self, name, q1_overlap=0.5):
        windows = [(("q1", 0), self.Q1_0), (("q1", 1), self.Q1_1), (("q2", 0), self.Q2), (("q2", 1), self.Q2)]
        return write_audit(self.path(name), {"q1": measures(0.3, overlap=q1_overlap),
                                             "q2": measures(0.0, overlap=1.0)},
                           t=3.5, windows=windows)

    def test_decision_sets_by_hand(self):
        a = self.audit("a")
        r = run("retention.py", "--pair", a, a, "--out", self.path("ret.md"))
        self.assertEqual(r.returncode, 0, r.stderr)
        got = self.report("ret.md")["audits"][a]
        c = got["collection"]
        self.assertAlmostEqual(c["overlap_frozen"], (0.5 + 1) / 2, places=12)
        self.assertAlmostEqual(c["overlap_top5"], (4 / 6 + 1) / 2, places=12)
        self.assertAlmostEqual(c["keeps_whole_pool"], 0.5, places=12)
        # c3 and c4 are each kept under one order only; nothing in q2 flips.
        self.assertAlmostEqual(c["share_flipping"], (2 / 6 + 0) / 2, places=12)
        self.assertEqual(got["cut_queries"], 1)
        self.assertAlmostEqual(got["overlap_frozen_where_cut"], 0.5, places=12)
        # An audit against itself differs by exactly zero.
        for m, d in self.report("ret.md")["differences"].items():
            self.assertEqual(d["pooled"], [0.0, 0.0, 0.0], m)

    def test_refuses_results_that_disagree_with_the_windows(self):
        a = self.audit("a", q1_overlap=2 / 3)
        r = run("retention.py", "--pair", a, a, "--out", self.path("ret.md"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("query q1", r.stderr)
        self.assertIn("recomputed", r.stderr)

    def test_refuses_a_query_with_one_order(self):
        a = write_audit(self.path("a"), {"q1": measures(0.3)}, t=3.5, windows=[(("q1", 0), self.Q1_0)])
        r = run("retention.py", "--pair", a, a, "--out", self.path("ret.md"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("needs 2 or more", r.stderr)


class BscMatchTest(Tmp):
    def test_one_forward_against_the_control_at_each_k(self):
        q = ["q1", "q2"]
        control = write_audit(self.path("control"), {x: measures(0.5) for x in q}, permutations=4,
                              bsc={1: (4, {x: measures(0.5) for x in q}),
                                   2: (2, {x: measures(0.4, ndcg=0.6) for x in q})})
        treatment = write_audit(self.path("treatment"), {x: measures(0.2, ndcg=0.55) for x in q},
                                permutations=4,
                                bsc={1: (4, {x: measures(0.2, ndcg=0.55) for x in q}),
                                     2: (2, {x: measures(0.1, ndcg=0.58) for x in q})})
        r = run("bsc_match.py", "--pair", treatment, control, "--out", self.path("bsc.md"))
        self.assertEqual(r.returncode, 0, r.stderr)
        d = self.report("bsc.md")["differences"]
        self.assertAlmostEqual(d["tau_psi"]["1"]["pooled"][0], 0.2 - 0.5, places=12)
        self.assertAlmostEqual(d["tau_psi"]["2"]["pooled"][0], 0.2 - 0.4, places=12)
        self.assertAlmostEqual(d["ndcg_at_10_mean"]["2"]["pooled"][0], 0.55 - 0.6, places=12)
        r = run("bsc_match.py", "--same-k", "--pair", treatment, control, "--out", self.path("same.md"))
        self.assertEqual(r.returncode, 0, r.stderr)
        d = self.report("same.md")["differences"]
        self.assertAlmostEqual(d["tau_psi"]["2"]["pooled"][0], 0.1 - 0.4, places=12)
        self.assertAlmostEqual(d["ndcg_at_10_mean"]["2"]["pooled"][0], 0.58 - 0.6, places=12)

    def test_refuses_a_control_without_a_curve(self):
        q = {"q1": measures(0.5)}
        control = write_audit(self.path("control"), q)
        treatment = write_audit(self.path("treatment"), q)
        r = run("bsc_match.py", "--pair", treatment, control, "--out", self.path("bsc.md"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no BSC curve", r.stderr)


class PairedVsRunTest(Tmp):
    """scripts/paired_vs_run.py: a trained scorer against the first stage's
    run (the issue's "above BM25" comparisons)."""

    def eval_q(self, name, per_query):
        # `ocrank eval -q` lines as trec_eval -q prints them, with the summary row.
        path = self.path(name)
        with open(path, "w") as f:
            for q, x in per_query.items():
                f.write(f"ndcg_cut_10           \t{q}\t{x:.4f}\n")
            f.write(f"ndcg_cut_10           \tall\t{sum(per_query.values()) / len(per_query):.4f}\n")
        return path

    def test_audit_against_a_run(self):
        run_file = self.eval_q("bm25.txt", {"q1": 0.5, "q2": 0.25, "q3": 0.75})
        a = write_audit(self.path("a"), {"q1": measures(0.1, ndcg=0.6), "q2": measures(0.1, ndcg=0.25),
                                         "q3": measures(0.1, ndcg=0.7)})
        r = run("paired_vs_run.py", a, run_file)
        self.assertEqual(r.returncode, 0, r.stderr)
        # (+0.1 + 0 − 0.05) / 3; the "all" row is not a query.
        self.assertIn("3 queries: audit ndcg_at_10 0.5167, run 0.5000, difference +0.0167", r.stdout)
        self.assertIn("higher on 1 queries, lower on 1, equal on 1", r.stdout)

    def test_seeds_pooled_by_comma(self):
        run_file = self.eval_q("bm25.txt", {"q1": 0.5, "q2": 0.5})
        a = write_audit(self.path("a"), {"q1": measures(0.1, ndcg=0.7), "q2": measures(0.1, ndcg=0.5)})
        b = write_audit(self.path("b"), {"q1": measures(0.1, ndcg=0.5), "q2": measures(0.1, ndcg=0.3)})
        r = run("paired_vs_run.py", f"{a},{b}", run_file)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("audit ndcg_at_10 0.5000, run 0.5000, difference +0.0000 [-0.1000, +0.1000]", r.stdout)

    def test_refuses_disjoint_queries(self):
        run_file = self.eval_q("bm25.txt", {"q9": 0.5})
        a = write_audit(self.path("a"), {"q1": measures(0.1)})
        r = run("paired_vs_run.py", a, run_file)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no query in common", r.stderr)


if __name__ == "__main__":
    unittest.main()
