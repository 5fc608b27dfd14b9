#!/usr/bin/env python3
"""Summary of OC-SFT training logs side by side (reports/training/width10/crossed.md):
per run, the mean consistency value over the first steps and over the rest
(after lambda's warm-up), the supervised loss over the constant score's on the
same windows for the rest, the median step time, how many of the drawn windows
are first windows of their pool (BM25 ranks 1 to WIDTH) and the mean
within-window variance of the drawn windows' labels (windows rebuilt from the
run's train.json by scripts/train_curve.py, which checks every logged query id
against its window).

    scripts/stage_logs.py RUN_DIR [RUN_DIR ...] [--warmup 12]

Prints Markdown.
"""
import argparse
import json
import statistics
from pathlib import Path

from train_curve import logged_windows, training_windows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--warmup", type=int, default=12)
    a = ap.parse_args()
    k = a.warmup
    print(f"| run | consistency, steps 1-{k} | consistency, steps {k + 1}- | supervised / constant, "
          f"steps {k + 1}- | median step (s) | first windows drawn | within-window label variance |")
    print("|---|---|---|---|---|---|---|")
    for r in a.runs:
        run = Path(r)
        log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
        steps = logged_windows(run, log, training_windows(run))
        drawn = [(start == 0, statistics.pvariance(ys)) for ws in steps for _, start, ys in ws]
        c = [d["consistency"] for d in log]
        ratio = sum(d["supervised"] for d in log[k:]) / sum(d["constant"] for d in log[k:])
        print(f"| `{run.name}` | {statistics.fmean(c[:k]):.2f} | {statistics.fmean(c[k:]):.2f} | {ratio:.2f} | "
              f"{statistics.median(d['seconds'] for d in log):.1f} | {sum(f for f, _ in drawn)}/{len(drawn)} | "
              f"{statistics.fmean(v for _, v in drawn):.3f} |")


if __name__ == "__main__":
    main()
