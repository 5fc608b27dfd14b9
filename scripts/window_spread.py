#!/usr/bin/env python3
"""How far an audit's scores spread within a window, and how much of each
pool its frozen threshold keeps.

For each audit directory (`ocrank audit` output: windows.jsonl and
results.json) prints one Markdown row: the standard deviation of all scores,
the mean over windows of the scores' standard deviation within the window
(population sd, the 0-1 score scale of the audit), and the share of scored
slots at or above the frozen threshold `t` of results.json. A retained-set
overlap near 1 means little when that share is near 1: the threshold then
keeps almost every candidate under every order.

    scripts/window_spread.py AUDIT_DIR... [--out FILE.md]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path


def row(audit):
    results = json.loads((audit / "results.json").read_text())
    t = results["threshold"]["t"]
    scores, within = [], []
    with open(audit / "windows.jsonl") as f:
        for n, line in enumerate(f, 1):
            try:
                s = [r["score"] for r in json.loads(line)["records"]]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                sys.exit(f"{audit / 'windows.jsonl'}:{n}: not a scored window ({e})")
            scores += s
            if len(s) > 1:
                within.append(statistics.pstdev(s))
    if not scores:
        sys.exit(f"{audit / 'windows.jsonl'}: no scored windows")
    kept = sum(x >= t for x in scores) / len(scores)
    return (f"| `{audit}` | {len(scores)} | {statistics.pstdev(scores):.4f} | "
            f"{statistics.mean(within):.4f} | {t:.4f} | {kept:.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("audits", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lines = [
        "Command: `scripts/window_spread.py " + " ".join(map(str, args.audits)) + "`",
        "",
        "| audit | scored slots | score sd | mean within-window sd | frozen t | share at or above t |",
        "|---|---|---|---|---|---|",
    ] + [row(a) for a in args.audits]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
