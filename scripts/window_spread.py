#!/usr/bin/env python3
"""How far an audit's scores spread within a window, and how much of each
pool its frozen threshold keeps.

For each audit directory (`ocrank audit` output: windows.jsonl and
results.json) writes one Markdown row: the standard deviation of all scores,
the mean over windows of the scores' standard deviation within the window
(population sd, the 0-1 score scale of the audit), and the share of scored
slots at or above the frozen threshold `t` of results.json. A retained-set
overlap near 1 means little when that share is near 1: the threshold then
keeps almost every candidate under every order.

    scripts/window_spread.py AUDIT_DIR... --out FILE.md   (and FILE.json)
"""
import argparse
import json
import statistics
import sys

from report_io import audit_windows, write_report


def spread(audit):
    try:
        with open(f"{audit}/results.json") as f:
            t = json.load(f)["threshold"]["t"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{audit}/results.json: no frozen threshold `threshold.t` ({e})")
    scores, within = [], []
    for w in audit_windows(audit):
        s = [r["score"] for r in w["records"]]
        scores += s
        if len(s) > 1:
            within.append(statistics.pstdev(s))
    if not scores:
        sys.exit(f"{audit}/windows.jsonl: no scored windows")
    return {
        "audit": audit,
        "slots": len(scores),
        "score_sd": statistics.pstdev(scores),
        "within_window_sd": statistics.mean(within),
        "threshold": t,
        "share_at_or_above_t": sum(x >= t for x in scores) / len(scores),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("audits", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = [spread(a) for a in args.audits]
    text = "\n".join(
        ["| audit | scored slots | score sd | mean within-window sd | frozen t | share at or above t |",
         "|---|---|---|---|---|---|"]
        + [f"| `{r['audit']}` | {r['slots']} | {r['score_sd']:.4f} | {r['within_window_sd']:.4f} | "
           f"{r['threshold']:.4f} | {r['share_at_or_above_t']:.3f} |" for r in rows]) + "\n"
    write_report(args.out, "scripts/window_spread.py", text, {"audits": rows})
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
