"""How many training steps fit the GPU budget (scripts/device-train.sh, STEPS=auto).

    python3 scripts/device_steps.py DEVICE_CHECK_JSON BUDGET_SECONDS [SLOWDOWN]

Reads the LoRA step times (single-order, OC-SFT) and the f32 window rate that
`ocrank device-check` measured at the training window, and prints the largest
step count, at most the protocol's 300 and a multiple of 4 (checkpoints every
STEPS/4), such that the slowest chain of scripts/train_report.sh (PARALLEL=1:
OC-SFT training, checkpoint selection on 13 held-out DL21 queries x 3 orders x
2 windows at 4 checkpoints, the DL19 audit of 43 queries x 10 orders x 2
windows) ends within BUDGET, every time multiplied by SLOWDOWN for sharing
the GPU with the other chains. Fixed costs: 60 s (model loads, compare,
archive).
"""
import json
import sys

PROTOCOL_STEPS = 300
SELECT_WINDOWS = 4 * 13 * 3 * 2
AUDIT_WINDOWS = 43 * 10 * 2
FIXED_SECONDS = 60.0


def steps_that_fit(report, budget, slowdown):
    step = {t["objective"]: t["median_step_seconds"] for t in report["training"] if "objective" in t}
    rate = [s["sequential"]["windows_per_second"] for s in report["scoring"] if "sequential" in s]
    if "oc-sft" not in step or not rate:
        raise ValueError("the device check has no OC-SFT step time or no window rate")
    evaluation = (SELECT_WINDOWS + AUDIT_WINDOWS) / rate[0]
    left = budget / slowdown - FIXED_SECONDS - evaluation
    steps = int(left / step["oc-sft"]) // 4 * 4
    if steps < 8:
        raise ValueError(f"only {steps} steps fit: step {step['oc-sft']:.2f} s, evaluation {evaluation:.0f} s")
    return min(PROTOCOL_STEPS, steps)


if __name__ == "__main__":
    report = json.load(open(sys.argv[1]))
    slowdown = float(sys.argv[3]) if len(sys.argv) > 3 else 1.5
    try:
        print(steps_that_fit(report, float(sys.argv[2]), slowdown))
    except ValueError as e:
        print(f"device_steps: {e}", file=sys.stderr)
        sys.exit(1)
