//! Property tests: permutations are permutations, windows partition their input.

use std::collections::BTreeSet;

use ocrank_plan::{bounded, inverse, permutation, windows, Partition};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn is_permutation(p: &[usize]) -> bool {
    let mut seen = vec![false; p.len()];
    p.iter()
        .all(|&c| c < seen.len() && !std::mem::replace(&mut seen[c], true))
}

proptest! {
    #[test]
    fn every_output_is_a_permutation(seed: u64, qid in ".{0,12}", n in 0usize..200, index in 0usize..1000) {
        let p = permutation(seed, &qid, n, index);
        prop_assert_eq!(p.len(), n);
        prop_assert!(is_permutation(&p));
        let inv = inverse(&p);
        for (pos, &c) in p.iter().enumerate() {
            prop_assert_eq!(inv[c], pos);
        }
    }

    #[test]
    fn deterministic(seed: u64, qid in "[a-z0-9]{1,8}", n in 0usize..60, index in 0usize..50) {
        prop_assert_eq!(permutation(seed, &qid, n, index), permutation(seed, &qid, n, index));
    }

    #[test]
    fn different_indices_and_qids_differ(seed: u64, qid in "[a-z0-9]{1,8}", index in 1usize..1000) {
        // With 30 candidates a collision has probability 1/30! per pair.
        let n = 30;
        let a = permutation(seed, &qid, n, index);
        prop_assert_ne!(&a, &permutation(seed, &qid, n, index + 1));
        prop_assert_ne!(&a, &permutation(seed, &format!("{qid}x"), n, index));
        prop_assert_ne!(&a, &permutation(seed.wrapping_add(1), &qid, n, index));
        prop_assert_ne!(&a, &(0..n).collect::<Vec<_>>());
    }

    #[test]
    fn windows_partition_the_input(n in 0usize..250, width in 1usize..40, rr: bool, seed: u64) {
        let partition = if rr { Partition::RoundRobin } else { Partition::Contiguous };
        let p = permutation(seed, "w", n, 1);
        let ws = windows(&p, width, partition);
        prop_assert_eq!(ws.len(), n.div_ceil(width));
        prop_assert!(ws.iter().all(|w| !w.is_empty() && w.len() <= width));
        let flat: Vec<usize> = ws.iter().flatten().copied().collect();
        prop_assert_eq!(flat.len(), n);
        prop_assert_eq!(flat.iter().copied().collect::<BTreeSet<_>>(), p.iter().copied().collect::<BTreeSet<_>>());
        // Presentation order is kept inside every window.
        let pos = inverse(&p);
        for w in &ws {
            prop_assert!(w.windows(2).all(|x| pos[x[0]] < pos[x[1]]));
        }
        if partition == Partition::Contiguous {
            prop_assert_eq!(flat, p);
        }
    }

    #[test]
    fn round_robin_sizes_differ_by_at_most_one(n in 1usize..400, width in 1usize..50) {
        let p: Vec<usize> = (0..n).collect();
        let ws = windows(&p, width, Partition::RoundRobin);
        let max = ws.iter().map(Vec::len).max().unwrap();
        let min = ws.iter().map(Vec::len).min().unwrap();
        prop_assert!(max - min <= 1);
    }

    #[test]
    fn bounded_stays_in_range(seed: u64, m in 1u64..u64::MAX) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        for _ in 0..8 {
            prop_assert!(bounded(&mut rng, m) < m);
        }
    }
}

#[test]
fn permutations_are_roughly_uniform() {
    // All 6 orders of 3 candidates over 6000 indices: each near 1000.
    let mut counts = std::collections::BTreeMap::new();
    for index in 1..=6000 {
        *counts
            .entry(permutation(9, "u", 3, index))
            .or_insert(0usize) += 1;
    }
    assert_eq!(counts.len(), 6);
    for (p, c) in counts {
        assert!((850..1150).contains(&c), "{p:?}: {c}");
    }
    // Position of candidate 0 over n = 10 is uniform too.
    let mut pos0 = [0usize; 10];
    for index in 1..=10_000 {
        let p = permutation(1, "v", 10, index);
        pos0[p.iter().position(|&c| c == 0).unwrap()] += 1;
    }
    assert!(pos0.iter().all(|&c| (850..1150).contains(&c)), "{pos0:?}");
}
