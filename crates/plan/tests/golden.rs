//! Golden values: the permutation plan must be reproducible forever. If one of
//! these fails, the algorithm (or a dependency's output stream) changed and
//! every published audit's orders with it. Do not update the expected values;
//! fix the code. `tests/reference_permutation.py` is an independent Python
//! implementation of the documented algorithm that prints the same values.

use ocrank_plan::{permutation, windows, BscPlan, Partition, PermutationPlan};

#[test]
fn golden_permutations() {
    let cases: &[(u64, &str, usize, usize, &[usize])] = &[
        (0, "1037798", 10, 1, &[2, 0, 1, 9, 7, 4, 5, 6, 3, 8]),
        (0, "1037798", 10, 2, &[2, 8, 6, 3, 4, 5, 7, 9, 0, 1]),
        (
            42,
            "264014",
            20,
            1,
            &[
                4, 10, 19, 2, 17, 7, 3, 5, 18, 14, 12, 1, 8, 15, 11, 0, 6, 16, 13, 9,
            ],
        ),
        (
            42,
            "264014",
            20,
            9,
            &[
                19, 10, 2, 12, 13, 18, 1, 5, 6, 9, 3, 8, 4, 17, 7, 15, 11, 16, 0, 14,
            ],
        ),
        (12345, "q", 5, 3, &[4, 2, 1, 3, 0]),
        (u64::MAX, "Ünïcode qid", 7, 1000, &[1, 3, 6, 2, 0, 4, 5]),
    ];
    for &(seed, qid, n, index, expected) in cases {
        assert_eq!(
            permutation(seed, qid, n, index),
            expected,
            "permutation({seed}, {qid:?}, {n}, {index})"
        );
    }
}

#[test]
fn index_zero_is_canonical() {
    for n in [0, 1, 2, 5, 100] {
        assert_eq!(permutation(7, "q", n, 0), (0..n).collect::<Vec<_>>());
    }
}

#[test]
fn plan_orders_match_permutation() {
    let plan = PermutationPlan::new(42, 10);
    let orders = plan.orders("264014", 20);
    assert_eq!(orders.len(), 10);
    assert_eq!(orders[0], (0..20).collect::<Vec<_>>());
    for (i, o) in orders.iter().enumerate() {
        assert_eq!(o, &permutation(42, "264014", 20, i));
    }
}

#[test]
fn paper_setting_contiguous_and_round_robin() {
    // 100 candidates, B = 20: 5 windows of 20 either way.
    let p: Vec<usize> = (0..100).collect();
    let c = windows(&p, 20, Partition::Contiguous);
    assert_eq!(c.len(), 5);
    assert_eq!(c[1], (20..40).collect::<Vec<_>>());
    let r = windows(&p, 20, Partition::RoundRobin);
    assert_eq!(r.len(), 5);
    assert_eq!(r[1], (0..20).map(|k| 1 + 5 * k).collect::<Vec<_>>());
}

#[test]
fn round_robin_small_example() {
    // n = 7, B = 3: W = 3 windows, sizes 3, 2, 2.
    let w = windows(&[10, 11, 12, 13, 14, 15, 16], 3, Partition::RoundRobin);
    assert_eq!(w, vec![vec![10, 13, 16], vec![11, 14], vec![12, 15]]);
    let c = windows(&[10, 11, 12, 13, 14, 15, 16], 3, Partition::Contiguous);
    assert_eq!(c, vec![vec![10, 11, 12], vec![13, 14, 15], vec![16]]);
    assert!(windows(&[], 3, Partition::RoundRobin).is_empty());
}

#[test]
fn partition_parse_and_display() {
    for p in [Partition::Contiguous, Partition::RoundRobin] {
        assert_eq!(p.to_string().parse::<Partition>().unwrap(), p);
    }
    assert_eq!(
        "Round_Robin".parse::<Partition>().unwrap(),
        Partition::RoundRobin
    );
    assert!("zigzag".parse::<Partition>().is_err());
    // Display and the serde names agree (kebab-case).
    assert_eq!(
        serde_json::to_string(&Partition::RoundRobin).unwrap(),
        "\"round-robin\""
    );
    let p: Partition = serde_json::from_str("\"contiguous\"").unwrap();
    assert_eq!(p, Partition::Contiguous);
}

#[test]
fn bsc_groups_are_disjoint_and_cover_the_plan() {
    let bsc = BscPlan::new(3, 4, 3).unwrap();
    assert!(bsc.stability_measurable());
    assert_eq!(bsc.total(), 12);
    assert_eq!(bsc.group_indices(0), 0..4);
    assert_eq!(bsc.group_indices(2), 8..12);
    assert_eq!(bsc.group_of(5), Some(1));
    assert_eq!(bsc.group_of(12), None);
    let groups = bsc.orders("q1", 9);
    let flat: Vec<Vec<usize>> = groups.into_iter().flatten().collect();
    assert_eq!(flat, bsc.plan().orders("q1", 9));
    assert!(!BscPlan::new(3, 4, 1).unwrap().stability_measurable());
    assert!(BscPlan::new(3, 0, 2).is_err());
    assert!(BscPlan::new(3, 2, 0).is_err());
}
