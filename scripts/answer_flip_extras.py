#!/usr/bin/env python3
"""The numbers of reports/answer-flip/README.md's "Reading" that are not in
the `ocrank answer` reports, from their committed results.json files:
questions where the batched scorer's canonical top 5 equals BM25's (and
whether the two runs' independently decoded answers agree there), distinct
answers per question, the answer flip on yes/no questions, and exact matches.

    scripts/answer_flip_extras.py [reports/answer-flip]
"""
import json
import statistics
import sys
from pathlib import Path

YES_NO = ("yes", "no")


def per_question(path):
    return {q["qid"]: q for q in json.loads(Path(path).read_text())["per_question"]}


def extras(root):
    root = Path(root)
    batched = per_question(root / "answers-off-the-shelf-batched/results.json")
    bm25 = per_question(root / "answers-bm25/results.json")
    student = per_question(root / "answers-student-invariant/results.json")
    same = [q for q in batched
            if batched[q]["permutations"][0]["passages"] == bm25[q]["permutations"][0]["passages"]]
    distinct = [q["distinct_answers"] for q in batched.values()]
    orders = max(len(q["permutations"]) for q in batched.values())
    yes_no = [q for q in batched.values() if q["gold"].lower() in YES_NO]
    other = [q for q in batched.values() if q["gold"].lower() not in YES_NO]
    exact = {}
    for name, run in [("batched", batched), ("student", student), ("bm25", bm25)]:
        em = [q for q in run.values() if q["em_canonical"] == 1]
        exact[name] = (len(em), sum(q["gold"].lower() in YES_NO for q in em))
    return {
        "same_top5_as_bm25": len(same),
        "same_answer_there": sum(batched[q]["permutations"][0]["answer"]
                                 == bm25[q]["permutations"][0]["answer"] for q in same),
        "distinct_answers_mean": statistics.mean(distinct),
        "orders": orders,
        "all_orders_differ": sum(d == orders for d in distinct),
        "all_orders_agree": sum(d == 1 for d in distinct),
        "flip_yes_no": (len(yes_no), statistics.mean(q["answer_flip"] for q in yes_no) if yes_no else None),
        "flip_other": (len(other), statistics.mean(q["answer_flip"] for q in other) if other else None),
        "exact": exact,
    }


def main():
    e = extras(sys.argv[1] if len(sys.argv) > 1 else "reports/answer-flip")
    print(f"batched canonical top 5 == BM25 top 5 (same order): {e['same_top5_as_bm25']} questions; "
          f"same answer in {e['same_answer_there']}")
    print(f"batched: distinct answers per question {e['distinct_answers_mean']:.2f} of {e['orders']} orders; "
          f"all orders differ on {e['all_orders_differ']}, all agree on {e['all_orders_agree']}")
    (n_yn, f_yn), (n_o, f_o) = e["flip_yes_no"], e["flip_other"]
    print(f"batched answer flip: yes/no questions ({n_yn}) {f_yn:.2f}, others ({n_o}) {f_o:.2f}")
    for name, (n, yn) in e["exact"].items():
        print(f"{name}: exact matches (canonical) {n}, of them yes/no {yn}")


if __name__ == "__main__":
    main()
