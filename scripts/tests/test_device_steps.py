"""Tests of scripts/device_steps.py (STEPS=auto of scripts/device-train.sh).

    python3 -m unittest discover -s scripts/tests
"""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import device_steps  # noqa: E402


def report(single, oc, rate):
    # The shape `ocrank device-check` writes (crates/cli/src/cmd/device_check.rs).
    return {
        "training": [{"objective": "single-order", "median_step_seconds": single},
                     {"objective": "oc-sft", "median_step_seconds": oc}],
        "scoring": [{"shape": "smollm2-135m",
                     "sequential": {"median_seconds": 1.0, "windows_per_second": rate},
                     "packed": {"median_seconds": 0.5, "windows_per_second": 2 * rate}}],
    }


class StepsTest(unittest.TestCase):
    def test_fast_device_runs_the_protocol(self):
        self.assertEqual(device_steps.steps_that_fit(report(0.1, 0.2, 100.0), 480, 1.5), 300)

    def test_slow_steps_are_scaled_to_the_budget_in_fours(self):
        # 480 / 1.5 = 320 s; minus 60 fixed and (312 + 860) / 20 = 58.6 s of
        # evaluation leaves 201.4 s: 201 steps of 1 s, rounded down to 200.
        steps = device_steps.steps_that_fit(report(0.5, 1.0, 20.0), 480, 1.5)
        self.assertEqual(steps, 200)
        self.assertEqual(steps % 4, 0)

    def test_too_slow_is_an_error(self):
        with self.assertRaises(ValueError):
            device_steps.steps_that_fit(report(5.0, 10.0, 5.0), 480, 1.5)

    def test_stage_fits_the_slower_lane(self):
        # 320 s - 60 fixed = 260 s; one recipe's evaluation (selection and
        # audit) is (312 + 860) / 20 = 58.6 s. OC-SFT's lane: (260 - 58.6)
        # / 1.0 = 201 steps; the controls' lane (two trainings, two
        # evaluations): (260 - 117.2) / (2 * 0.35) = 204; the slower
        # decides, rounded down to a multiple of 4.
        self.assertEqual(device_steps.steps_that_fit(report(0.35, 1.0, 20.0), 480, 1.5, stage=True), 200)
        # Single-order steps above about half OC-SFT's make the controls'
        # lane the slower: (260 - 117.2) / (2 * 0.6) = 119 -> 116.
        self.assertEqual(device_steps.steps_that_fit(report(0.6, 1.0, 20.0), 480, 1.5, stage=True), 116)

    def test_stage_needs_the_single_order_step(self):
        r = report(0.1, 0.2, 100.0)
        r["training"] = [t for t in r["training"] if t["objective"] != "single-order"]
        self.assertEqual(device_steps.steps_that_fit(r, 480, 1.5), 300)
        with self.assertRaises(ValueError):
            device_steps.steps_that_fit(r, 480, 1.5, stage=True)

    def test_missing_measurements_are_an_error(self):
        r = report(0.1, 0.2, 100.0)
        r["training"] = [{"shape": "smollm2-135m", "error": "training step: out of memory"}]
        with self.assertRaises(ValueError):
            device_steps.steps_that_fit(r, 480, 1.5)


if __name__ == "__main__":
    unittest.main()
