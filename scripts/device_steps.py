"""How many training steps fit the GPU budget (scripts/device-train.sh, STEPS=auto).

    python3 scripts/device_steps.py DEVICE_CHECK_JSON BUDGET_SECONDS [SLOWDOWN] [--stage]

Reads the LoRA step times (single-order, OC-SFT) and the f32 window rate that
`ocrank device-check` measured at the training window, and prints the largest
step count, at most the protocol's 300 and a multiple of 4 (checkpoints every
STEPS/4), such that the slowest chain ends within BUDGET, every time
multiplied by SLOWDOWN for sharing the GPU with the other chains. Fixed
costs: 60 s (model loads, compare, archive).

The chains, side by side:
- default (`device-train.sh train`, scripts/train_report.sh with PARALLEL=1):
  one per objective; the slowest is OC-SFT's: training, checkpoint selection
  on 13 held-out DL21 queries x 3 orders x 2 windows at 4 checkpoints, the
  DL19 audit of 43 queries x 10 orders x 2 windows.
- --stage (`device-train.sh stage`, scripts/width10_stage.sh with SELECT=1):
  OC-SFT's lane (training, checkpoint selection as above, the DL19 audit of
  the selected checkpoint) and the controls' lane (single-order, then
  perm-aug: two trainings at the single-order step time, two selections,
  two audits).
"""
import json
import sys

PROTOCOL_STEPS = 300
SELECT_WINDOWS = 4 * 13 * 3 * 2
AUDIT_WINDOWS = 43 * 10 * 2
FIXED_SECONDS = 60.0


def steps_that_fit(report, budget, slowdown, stage=False):
    step = {t["objective"]: t["median_step_seconds"] for t in report["training"] if "objective" in t}
    rate = [s["sequential"]["windows_per_second"] for s in report["scoring"] if "sequential" in s]
    needed = ("oc-sft", "single-order") if stage else ("oc-sft",)
    if any(o not in step for o in needed) or not rate:
        raise ValueError(f"the device check lacks a step time of {' or '.join(needed)}, or a window rate")
    left = budget / slowdown - FIXED_SECONDS
    # One recipe's evaluation: checkpoint selection, then the DL19 audit.
    evaluation = (SELECT_WINDOWS + AUDIT_WINDOWS) / rate[0]
    if stage:
        # Each lane's steps: what is left after its evaluations, over its step cost.
        fit = min((left - evaluation) / step["oc-sft"],
                  (left - 2 * evaluation) / (2 * step["single-order"]))
    else:
        fit = (left - evaluation) / step["oc-sft"]
    steps = max(int(fit), 0) // 4 * 4
    if steps < 8:
        raise ValueError(f"only {steps} steps fit: step {step['oc-sft']:.2f} s, evaluation {evaluation:.0f} s")
    return min(PROTOCOL_STEPS, steps)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--stage"]
    report = json.load(open(args[0]))
    slowdown = float(args[2]) if len(args) > 2 else 1.5
    try:
        print(steps_that_fit(report, float(args[1]), slowdown, stage="--stage" in sys.argv))
    except ValueError as e:
        print(f"device_steps: {e}", file=sys.stderr)
        sys.exit(1)
