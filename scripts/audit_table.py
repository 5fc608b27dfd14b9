#!/usr/bin/env python3
"""One Markdown table row per audit (`ocrank audit --out DIR`): nDCG@10 in
the canonical order, its mean and worst over the permutations, tau-PSI, the
retained-set overlap at the frozen threshold (95% bootstrap intervals from
results.json) and the share of score variance the slot explains.

    scripts/audit_table.py AUDIT_DIR [AUDIT_DIR ...]
"""
import json
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)


def cell(r, key):
    v = r["collection"].get(key)
    if v is None:
        return ""
    ci = r.get("ci", {}).get(key)
    return f"{v:.4f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{v:.4f}"


print("| audit | M | nDCG@10 canonical | mean over orders | worst | tau-PSI | overlap at frozen t | slot explains |")
print("|---|---|---|---|---|---|---|---|")
for d in sys.argv[1:]:
    try:
        r = json.load(open(f"{d}/results.json"))
    except (OSError, ValueError) as e:
        sys.exit(f"{d}/results.json: {e}")
    m = r["spec"]["scored_permutations"]
    worst = r["collection"].get("ndcg_at_10_worst")
    slot = r.get("slot_r2")
    print(
        f"| `{d}` | {m} | {cell(r, 'ndcg_at_10')} | {cell(r, 'ndcg_at_10_mean')} | "
        f"{'' if worst is None else f'{worst:.4f}'} | {cell(r, 'tau_psi')} | "
        f"{cell(r, 'retained_set_overlap')} | {'' if slot is None else f'{100 * slot:.1f}%'} |"
    )
