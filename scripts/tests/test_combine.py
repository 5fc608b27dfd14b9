"""Tests of the scripts that combine trained scorers: scripts/soup_adapters.py
(one adapter with the members' mean weight update) and
scripts/ensemble_scores.py (the mean of several audits' readouts).

    python3 -m unittest discover -s scripts/tests

(`cargo test -p ocrank --test scripts` runs the same.) The soup tests build
small random adapters; the ensemble tests read committed audits under
reports/training/.
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import soup_adapters  # noqa: E402
from report_io import audit_windows  # noqa: E402

MODULES = ["base_model.model.model.layers.0.self_attn.q_proj",
           "base_model.model.model.layers.0.mlp.down_proj",
           "base_model.model.model.layers.1.self_attn.v_proj"]
SHAPES = {"q_proj": (6, 5), "down_proj": (4, 7), "v_proj": (3, 5)}  # (out, in)


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args],
                          capture_output=True, text=True, cwd=ROOT)


def write_adapter(directory, rng, rank=2, alpha=4.0, **config):
    os.makedirs(directory, exist_ok=True)
    cfg = {"base_model_name_or_path": "base.gguf", "bias": "none", "peft_type": "LORA",
           "r": rank, "lora_alpha": alpha, "target_modules": ["q_proj", "v_proj", "down_proj"]}
    cfg.update(config)
    with open(os.path.join(directory, "adapter_config.json"), "w") as f:
        json.dump(cfg, f)
    tensors = {}
    for m in MODULES:
        out, inp = SHAPES[m.rsplit(".", 1)[1]]
        tensors[f"{m}.lora_A.weight"] = ([rank, inp], soup_adapters.array(
            "f", [rng.uniform(-1, 1) for _ in range(rank * inp)]))
        tensors[f"{m}.lora_B.weight"] = ([out, rank], soup_adapters.array(
            "f", [rng.uniform(-1, 1) for _ in range(out * rank)]))
    soup_adapters.write_safetensors(os.path.join(directory, "adapter_model.safetensors"),
                                    tensors, {"format": "pt"})
    return tensors


class SoupTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_update_is_the_members_mean(self):
        rng = random.Random(7)
        members = [write_adapter(self.path(f"m{i}"), rng) for i in range(3)]
        r = run("soup_adapters.py", *(self.path(f"m{i}") for i in range(3)),
                "--out", self.path("soup"), "--check", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.path("soup/adapter_config.json")) as f:
            cfg = json.load(f)
        self.assertEqual((cfg["r"], cfg["lora_alpha"]), (6, 12.0))  # same scale 2
        souped = soup_adapters.read_safetensors(self.path("soup/adapter_model.safetensors"))
        for m in MODULES:
            want = [soup_adapters.update(t, m, 2.0) for t in members]
            got = soup_adapters.update(souped, m, 2.0)
            for i, row in enumerate(got):
                for j, x in enumerate(row):
                    mean = sum(w[i][j] for w in want) / 3
                    self.assertAlmostEqual(x, mean, places=5, msg=f"{m}[{i},{j}]")
        # Not the factor-wise mean: with different A's that is another update.
        naive = {}
        for name in members[0]:
            shape = members[0][name][0]
            naive[name] = (shape, [sum(t[name][1][k] for t in members) / 3
                                   for k in range(len(members[0][name][1]))])
        m = MODULES[0]
        naive_update = soup_adapters.update(naive, m, 2.0)
        self.assertGreater(max(abs(a - b) for ra, rb in zip(naive_update, soup_adapters.update(souped, m, 2.0))
                               for a, b in zip(ra, rb)), 1e-3)

    def test_soup_of_one_adapter_with_itself_is_that_adapter(self):
        rng = random.Random(1)
        member = write_adapter(self.path("m"), rng)
        r = run("soup_adapters.py", self.path("m"), self.path("m"), "--out", self.path("soup"))
        self.assertEqual(r.returncode, 0, r.stderr)
        souped = soup_adapters.read_safetensors(self.path("soup/adapter_model.safetensors"))
        for m in MODULES:
            for ra, rb in zip(soup_adapters.update(member, m, 2.0), soup_adapters.update(souped, m, 2.0)):
                for a, b in zip(ra, rb):
                    self.assertAlmostEqual(a, b, places=6)

    def test_refuses_members_that_differ(self):
        rng = random.Random(2)
        write_adapter(self.path("a"), rng)
        write_adapter(self.path("rank"), rng, rank=3, alpha=6.0)
        write_adapter(self.path("scale"), rng, alpha=8.0)
        write_adapter(self.path("targets"), rng, target_modules=["q_proj"])
        for other, word in [("rank", "rank r"), ("scale", "scale"), ("targets", "target_modules")]:
            r = run("soup_adapters.py", self.path("a"), self.path(other), "--out", self.path("o"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(word, r.stderr)
            self.assertIn(self.path(other), r.stderr)
        self.assertFalse(os.path.exists(self.path("o")))

    def test_bad_files_are_named(self):
        rng = random.Random(3)
        write_adapter(self.path("a"), rng)
        write_adapter(self.path("b"), rng)
        weights = self.path("b/adapter_model.safetensors")
        with open(weights, "rb") as f:
            raw = f.read()
        with open(weights, "wb") as f:
            f.write(raw[:-8])  # the last tensor's data cut short
        r = run("soup_adapters.py", self.path("a"), self.path("b"), "--out", self.path("o"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(weights, r.stderr)
        self.assertIn("data_offsets", r.stderr)
        with open(self.path("b/adapter_config.json"), "w") as f:
            f.write("{not json")
        r = run("soup_adapters.py", self.path("a"), self.path("b"), "--out", self.path("o"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("b/adapter_config.json", r.stderr)
        r = run("soup_adapters.py", self.path("a"), "--out", self.path("o"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("at least two", r.stderr)

    def test_header_is_aligned_safetensors(self):
        rng = random.Random(4)
        write_adapter(self.path("a"), rng)
        with open(self.path("a/adapter_model.safetensors"), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        self.assertEqual(n % 8, 0)
        self.assertEqual(header["__metadata__"], {"format": "pt"})


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
