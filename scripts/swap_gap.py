#!/usr/bin/env python3
"""The swap gap: how much a batched scorer's score of a candidate moves when
only the order inside its window changes, set beside how much it moves when
a reshuffle of the pool gives it other window-mates.

    scripts/swap_gap.py reverse POOLS.json --width B --depth N > REVERSED.json
    ocrank score --pools REVERSED.json --depth N --width B ... --out REVERSED.jsonl
    scripts/swap_gap.py report AUDIT_DIR REVERSED.jsonl [AUDIT_DIR REVERSED.jsonl ...] [--out FILE.md]
    scripts/swap_gap.py --synthetic      # self-check on scores with known effects

`reverse` writes the rank_llm pools with every contiguous block of B among
the first N candidates reversed: scored with the same settings, its windows
are the canonical windows (permutation 0 of an audit) in reversed order. At
B = 2 that is the swap `[a, b]` -> `[b, a]`, the only other order of the
window and OC-SFT's view B there.

`report` pairs each candidate's canonical score (the audit's permutation 0,
from its windows.jsonl) with its score in the reversed window and reports:

- swap gap: RMS and mean absolute difference of the two scores (score units,
  E[g]/3), and the share of windows whose candidates change order (at B = 2:
  the pair flips);
- reshuffle spread: the RMS deviation of a candidate's scores over the
  audit's M permutations from their mean (with the M/(M-1) correction), where
  each permutation also changes its window-mates.

The swap-gap RMS divided by sqrt(2) is the same spread for two orders of one
window: if the reshuffle spread is much larger, the window-mates, not the
order inside the window, are what moves the scores.
"""
import argparse
import collections
import json
import math
import random
import statistics
import sys

from report_io import audit_windows, read_jsonl, write_report


def reverse(args):
    try:
        pools = json.load(open(args.pools))
    except (OSError, ValueError) as e:
        sys.exit(f"{args.pools}: {e}")
    for i, p in enumerate(pools):
        hits = p.get("hits")
        if not isinstance(hits, list):
            sys.exit(f"{args.pools}: pool {i + 1} ({p.get('query')!r}): no list `hits`")
        top = hits[: args.depth]
        out = []
        for k in range(0, len(top), args.width):
            out.extend(reversed(top[k : k + args.width]))
        p["hits"] = out
    json.dump(pools, sys.stdout)


def audit_records(audit):
    """(qid, permutation, window, candidate, slot, score) of every scored slot."""
    for w in audit_windows(audit):
        for r in w["records"]:
            yield r["qid"], r["permutation"], r["window"], r["candidate"], r["slot"], r["score"]


def score_records(path):
    for _, r in read_jsonl(path):
        for k in ("qid", "candidate", "window", "score"):
            if k not in r:
                sys.exit(f"{path}: a record has no `{k}`: {json.dumps(r)[:200]}")
        yield r["qid"], r.get("permutation", 0), r["window"], r["candidate"], r.get("slot"), r["score"]


def flips(a, b):
    """Does the order of the candidates within a window change between two
    score maps (candidate -> score)? Ties count as no order."""
    c = sorted(a)
    for i in range(len(c)):
        for j in range(i + 1, len(c)):
            x = a[c[i]] - a[c[j]]
            y = b[c[i]] - b[c[j]]
            if x * y < 0:
                return True
    return False


def gap_stats(canonical, reversed_, label):
    """canonical, reversed_: lists of (qid, perm, window, cand, slot, score);
    canonical holds every permutation of the audit, reversed_ one order."""
    by_cand = collections.defaultdict(list)
    can = {}
    can_win = collections.defaultdict(dict)
    for q, p, w, c, s, v in canonical:
        by_cand[(q, c)].append(v)
        if p == 0:
            can[(q, c)] = v
            can_win[(q, w)][c] = v
    rev_win = collections.defaultdict(dict)
    for q, p, w, c, s, v in reversed_:
        rev_win[(q, w)][c] = v
    if set(rev_win) != set(can_win):
        missing = sorted(set(can_win) - set(rev_win))[:3]
        extra = sorted(set(rev_win) - set(can_win))[:3]
        sys.exit(f"{label}: windows differ from the audit's canonical ones (missing {missing}, extra {extra})")
    gaps, flipped = [], 0
    for key, a in can_win.items():
        b = rev_win[key]
        if set(a) != set(b):
            sys.exit(f"{label}: window {key} holds {sorted(b)} reversed but {sorted(a)} in the audit")
        gaps.extend(b[c] - a[c] for c in a)
        flipped += flips(a, b)
    devs, m = [], None
    for vs in by_cand.values():
        m = len(vs)
        if m < 2:
            continue
        mu = statistics.fmean(vs)
        devs.extend((v - mu) ** 2 * m / (m - 1) for v in vs)
    rms = math.sqrt(statistics.fmean(g * g for g in gaps))
    return {
        "windows": len(can_win),
        "candidates": len(gaps),
        "swap_rms": rms,
        "swap_mean_abs": statistics.fmean(abs(g) for g in gaps),
        "swap_mean": statistics.fmean(gaps),
        "swap_spread": rms / math.sqrt(2),
        "windows_reordered": flipped / len(can_win),
        "reshuffle_spread": math.sqrt(statistics.fmean(devs)) if devs else float("nan"),
        "permutations": m,
        "score_sd": statistics.pstdev([v for *_, v in canonical]),
    }


def synthetic():
    """8 queries x 20 candidates, B = 2, M = 10. Score = content + a partner
    term (0.1 x the partner's content) + a swap term (+0.02 in slot 1) + noise
    0.005. The swap-gap RMS must come out near sqrt(0.02^2 + 2 x 0.005^2) = 0.021 and the reshuffle spread
    near 0.2 (the partner's content, sd 1), far above the swap spread (0.015)."""
    rng = random.Random(3)
    can, rev = [], []
    for q in range(8):
        content = {str(c): rng.gauss(0, 1) for c in range(20)}
        ids = list(content)
        for p in range(10):
            order = ids[:] if p == 0 else rng.sample(ids, len(ids))
            for w in range(10):
                pair = order[2 * w : 2 * w + 2]
                for s, c in enumerate(pair, 1):
                    other = pair[2 - s]
                    v = content[c] + 0.2 * content[other] + (0.02 if s == 1 else 0) + rng.gauss(0, 0.005)
                    can.append((str(q), p, w, c, s, v))
                    if p == 0:
                        s2 = 3 - s
                        v2 = content[c] + 0.2 * content[other] + (0.02 if s2 == 1 else 0) + rng.gauss(0, 0.005)
                        rev.append((str(q), 0, w, c, s2, v2))
    st = gap_stats(can, rev, "synthetic")
    print(json.dumps(st, indent=1))
    assert 0.019 < st["swap_rms"] < 0.024, st
    assert st["reshuffle_spread"] > 3 * st["swap_spread"], st
    print("synthetic: ok")


def report(args):
    pairs = args.pairs
    if len(pairs) % 2:
        sys.exit("report: give AUDIT_DIR REVERSED.jsonl pairs")
    lines = [
        "| audit | windows | swap gap RMS | mean abs | mean (reversed - canonical) | windows reordered | swap spread (RMS/sqrt 2) | reshuffle spread | ratio | score sd |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    out = {}
    for audit, rev in zip(pairs[::2], pairs[1::2]):
        st = gap_stats(list(audit_records(audit)), list(score_records(rev)), rev)
        out[audit] = st
        lines.append(
            f"| `{audit}` (M = {st['permutations']}) | {st['windows']} | {st['swap_rms']:.4f} | "
            f"{st['swap_mean_abs']:.4f} | {st['swap_mean']:+.4f} | {100 * st['windows_reordered']:.1f}% | "
            f"{st['swap_spread']:.4f} | {st['reshuffle_spread']:.4f} | "
            f"{st['reshuffle_spread'] / st['swap_spread']:.1f}x | {st['score_sd']:.4f} |"
        )
    text = "\n".join(lines) + "\n"
    if args.out:
        write_report(args.out, "scripts/swap_gap.py", text, {"audits": out})
    sys.stdout.write(text)


def main():
    if sys.argv[1:] == ["--synthetic"]:
        return synthetic()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reverse")
    r.add_argument("pools")
    r.add_argument("--width", type=int, required=True)
    r.add_argument("--depth", type=int, required=True)
    p = sub.add_parser("report")
    p.add_argument("pairs", nargs="+", metavar="AUDIT_DIR REVERSED.jsonl")
    p.add_argument("--out")
    args = ap.parse_args()
    if args.cmd == "reverse" and (args.width < 1 or args.depth < 1):
        sys.exit("--width and --depth must be at least 1")
    reverse(args) if args.cmd == "reverse" else report(args)


if __name__ == "__main__":
    main()
