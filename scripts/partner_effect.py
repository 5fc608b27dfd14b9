#!/usr/bin/env python3
"""Does a batched scorer grade the candidate or the window? For every scored
slot of an audit (all its permutations), the candidate's score is set beside
its own target and its window-mates' targets.

    scripts/partner_effect.py AUDIT_DIR [AUDIT_DIR ...] --labels LABELS.jsonl [--out FILE.md]
    scripts/partner_effect.py --synthetic     # self-check on scores with known weights

Targets are an `ocrank label` file (e.g. the MiniLM teacher's labels of the
audited pools, the targets the students were trained on). Everything is
centred on its query's mean first, so query difficulty drops out. Reported:

- mates' score correlation: the correlation of the scores of two candidates
  in the same window (every pair of slots), against the same correlation of
  their targets. A scorer that grades each candidate on its own inherits
  the targets' correlation; one that grades the window gives every slot the
  same score (near 1).
- own / mates weight: least-squares weights of the candidate's own target
  and of its window-mates' mean target in its score (score = a * own +
  b * mates + e). A candidate-wise scorer has b near 0; a window-wise one
  b near a x (B - 1) (every target counts the same).
- the correlation of the score with the own target and with the mates'.
"""
import argparse
import collections
import json
import random
import statistics
import sys

from report_io import audit_windows, read_labels, write_report



def windows_of(audit):
    """Every scored window: (qid, [(candidate, score) in slot order])."""
    for w in audit_windows(audit):
        recs = sorted(w["records"], key=lambda r: r["slot"])
        yield w["qid"], [(r["candidate"], r["score"]) for r in recs]


def centre(values_by_query):
    return {q: statistics.fmean(v) for q, v in values_by_query.items()}


def ols2(y, x1, x2):
    """Least squares y = a x1 + b x2 (centred data, no intercept)."""
    s11 = sum(a * a for a in x1)
    s22 = sum(b * b for b in x2)
    s12 = sum(a * b for a, b in zip(x1, x2))
    s1y = sum(a * c for a, c in zip(x1, y))
    s2y = sum(b * c for b, c in zip(x2, y))
    det = s11 * s22 - s12 * s12
    if det <= 0:
        return float("nan"), float("nan")
    return (s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det


def stats(windows, labels, label):
    windows = [w for w in windows if len(w[1]) >= 2]
    missing = {(q, c) for q, cs in windows for c, _ in cs if (q, c) not in labels}
    if missing:
        ex = sorted(missing)[:3]
        sys.exit(f"{label}: {len(missing)} scored candidates have no label, e.g. {ex}")
    by_q_s, by_q_l = collections.defaultdict(list), collections.defaultdict(list)
    for q, cs in windows:
        for c, s in cs:
            by_q_s[q].append(s)
            by_q_l[q].append(labels[(q, c)])
    ms, ml = centre(by_q_s), centre(by_q_l)
    pair_s, pair_t = ([], []), ([], [])
    y, own, mates = [], [], []
    width = max(len(cs) for _, cs in windows)
    for q, cs in windows:
        s = [v - ms[q] for _, v in cs]
        t = [labels[(q, c)] - ml[q] for c, _ in cs]
        for i in range(len(cs)):
            for j in range(len(cs)):
                if i != j:
                    pair_s[0].append(s[i])
                    pair_s[1].append(s[j])
                    pair_t[0].append(t[i])
                    pair_t[1].append(t[j])
            y.append(s[i])
            own.append(t[i])
            mates.append(statistics.fmean(t[:i] + t[i + 1 :]))
    a, b = ols2(y, own, mates)
    return {
        "windows": len(windows),
        "width": width,
        "mates_score_corr": statistics.correlation(*pair_s),
        "mates_target_corr": statistics.correlation(*pair_t),
        "own_weight": a,
        "mates_weight": b,
        "corr_own": statistics.correlation(y, own),
        "corr_mates": statistics.correlation(y, mates),
    }


def synthetic():
    """Two scorers on 20 queries x 20 candidates, B = 2, 10 random orders:
    one grades the candidate (score = target + noise), one the window
    (score = mean target of the window + noise)."""
    rng = random.Random(7)
    labels, cand, win = {}, [], []
    for q in range(20):
        ids = [f"{q}-{i}" for i in range(20)]
        for c in ids:
            labels[(str(q), c)] = rng.uniform(0, 3)
        for _ in range(10):
            order = rng.sample(ids, 20)
            for k in range(0, 20, 2):
                pair = order[k : k + 2]
                t = [labels[(str(q), c)] for c in pair]
                cand.append((str(q), [(c, t[i] + rng.gauss(0, 0.1)) for i, c in enumerate(pair)]))
                m = sum(t) / 2
                win.append((str(q), [(c, m + rng.gauss(0, 0.1)) for c in pair]))
    a = stats(cand, labels, "candidate-wise")
    b = stats(win, labels, "window-wise")
    print(json.dumps({"candidate-wise": a, "window-wise": b}, indent=1))
    assert abs(a["mates_score_corr"] - a["mates_target_corr"]) < 0.05, a
    assert abs(a["own_weight"] - 1) < 0.05 and abs(a["mates_weight"]) < 0.05, a
    assert b["mates_score_corr"] > 0.9, b
    assert abs(b["own_weight"] - 0.5) < 0.05 and abs(b["mates_weight"] - 0.5) < 0.05, b
    print("synthetic: ok")


def main():
    if sys.argv[1:] == ["--synthetic"]:
        return synthetic()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("audits", nargs="+")
    ap.add_argument("--labels", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    labels = read_labels(args.labels)
    lines = [
        "| audit | windows | mates' score corr | mates' target corr | own weight | mates' weight | corr with own target | corr with mates' target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out = {}
    for d in args.audits:
        st = stats(list(windows_of(d)), labels, d)
        out[d] = st
        lines.append(
            f"| `{d}` (B = {st['width']}) | {st['windows']} | {st['mates_score_corr']:.3f} | "
            f"{st['mates_target_corr']:.3f} | {st['own_weight']:.4f} | {st['mates_weight']:.4f} | "
            f"{st['corr_own']:.3f} | {st['corr_mates']:.3f} |"
        )
    text = "\n".join(lines) + "\n"
    if args.out:
        write_report(args.out, "scripts/partner_effect.py", text, {"labels": args.labels, "audits": out})
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
