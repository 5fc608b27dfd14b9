//! Isotonic calibration (pool-adjacent-violators): hand-computed fits,
//! interpolation, clamping at the ends, and monotonicity on random data.

use ocrank_metrics::calibration::{fit, Isotonic};
use proptest::prelude::*;

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
}

#[test]
fn hand_computed_pav_with_cascading_merges() {
    // y = 1 4 3 2 5 0 6 at x = 1..7, by hand:
    //   [1] [4] ; 3 < 4: [4 3] = 3.5 ; 2 < 3.5: [4 3 2] = 3 (x 3)
    //   [5] ; 0 < 5: [5 0] = 2.5 ; 2.5 < 3: [4 3 2 5 0] = 14/5 = 2.8 (x 4)
    //   [6]
    let pts: Vec<(f64, f64)> = [1.0, 4.0, 3.0, 2.0, 5.0, 0.0, 6.0]
        .iter()
        .enumerate()
        .map(|(i, &y)| (i as f64 + 1.0, y))
        .collect();
    let iso = fit(&pts).unwrap();
    assert!(close(&iso.x, &[1.0, 4.0, 7.0]), "{iso:?}");
    assert!(close(&iso.y, &[1.0, 2.8, 6.0]), "{iso:?}");
    // Linear between knots.
    assert!((iso.predict(2.5) - 1.9).abs() < 1e-12);
    assert!((iso.predict(5.5) - 4.4).abs() < 1e-12);
    assert_eq!(iso.predict(4.0), 2.8);
}

#[test]
fn ties_in_x_are_pooled_and_weigh_by_count() {
    // x = 1 twice (targets 0 and 1, mean 0.5) then (2, 0): 0 < 0.5 pools all
    // three: y = 1/3, x = (1 + 1 + 2) / 3 = 4/3. Then (3, 1).
    let iso = fit(&[(2.0, 0.0), (1.0, 1.0), (3.0, 1.0), (1.0, 0.0)]).unwrap();
    assert!(close(&iso.x, &[4.0 / 3.0, 3.0]), "{iso:?}");
    assert!(close(&iso.y, &[1.0 / 3.0, 1.0]), "{iso:?}");
    // Same x, different targets, nothing else: one knot at their mean.
    let iso = fit(&[(0.5, 3.0), (0.5, 0.0)]).unwrap();
    assert_eq!(
        iso,
        Isotonic {
            x: vec![0.5],
            y: vec![1.5]
        }
    );
    assert_eq!(iso.predict(-10.0), 1.5);
    assert_eq!(iso.predict(10.0), 1.5);
}

#[test]
fn already_monotone_data_is_reproduced_exactly() {
    let pts = [(0.1, 0.0), (0.2, 0.0), (0.35, 1.0), (0.5, 2.0), (0.9, 3.0)];
    let iso = fit(&pts).unwrap();
    assert_eq!(iso.x, pts.iter().map(|p| p.0).collect::<Vec<_>>());
    assert_eq!(iso.y, pts.iter().map(|p| p.1).collect::<Vec<_>>());
    for (x, y) in pts {
        assert_eq!(iso.predict(x), y);
    }
}

#[test]
fn predict_clamps_beyond_the_ends() {
    let iso = fit(&[(0.2, 0.5), (0.4, 1.0), (0.8, 2.5)]).unwrap();
    assert_eq!(iso.predict(-1.0), 0.5);
    assert_eq!(iso.predict(0.2), 0.5);
    assert_eq!(iso.predict(0.8), 2.5);
    assert_eq!(iso.predict(100.0), 2.5);
    assert_eq!(iso.predict(f64::INFINITY), 2.5);
    assert_eq!(iso.predict(f64::NEG_INFINITY), 0.5);
    assert!(iso.predict(f64::NAN).is_nan());
}

#[test]
fn empty_and_non_finite_input() {
    assert_eq!(fit(&[]), None);
    assert_eq!(fit(&[(f64::NAN, 1.0), (0.3, f64::INFINITY)]), None);
    // Non-finite points are left out, the rest is fitted as if they were absent.
    let with = fit(&[(0.1, 1.0), (f64::NAN, 3.0), (0.2, f64::NAN), (0.3, 2.0)]).unwrap();
    assert_eq!(with, fit(&[(0.1, 1.0), (0.3, 2.0)]).unwrap());
}

#[test]
fn deserialized_bad_knots_do_not_panic() {
    let empty: Isotonic = serde_json::from_str(r#"{"x": [], "y": []}"#).unwrap();
    assert!(empty.predict(0.5).is_nan());
    let ragged = Isotonic {
        x: vec![0.0, 1.0, 2.0],
        y: vec![0.0, 1.0],
    };
    assert_eq!(ragged.predict(0.5), 0.5);
    assert_eq!(ragged.predict(5.0), 1.0);
    let dup = Isotonic {
        x: vec![0.0, 1.0, 1.0, 2.0],
        y: vec![0.0, 1.0, 2.0, 3.0],
    };
    assert!(dup.predict(1.5).is_finite());
}

#[test]
fn serde_round_trip() {
    let iso = fit(&[(0.1, 0.0), (0.4, 2.0), (0.3, 1.0), (0.7, 3.0)]).unwrap();
    let json = serde_json::to_string(&iso).unwrap();
    assert_eq!(serde_json::from_str::<Isotonic>(&json).unwrap(), iso);
}

fn points() -> impl Strategy<Value = Vec<(f64, f64)>> {
    // Few distinct x values, so ties are common; grades 0-3 as targets.
    prop::collection::vec(
        ((0i32..40).prop_map(|x| x as f64 / 40.0), 0.0f64..3.0),
        1..80,
    )
}

proptest! {
    #[test]
    fn fit_is_monotone_within_the_targets_range(pts in points(), probes in prop::collection::vec(-0.5f64..1.5, 1..50)) {
        let iso = fit(&pts).unwrap();
        prop_assert_eq!(iso.x.len(), iso.y.len());
        prop_assert!(iso.x.windows(2).all(|w| w[0] < w[1]), "x not increasing: {:?}", iso.x);
        prop_assert!(iso.y.windows(2).all(|w| w[0] <= w[1]), "y decreasing: {:?}", iso.y);
        // Every knot is a mean of targets, so within their range.
        let (lo, hi) = pts.iter().fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p.1), h.max(p.1)));
        prop_assert!(iso.y.iter().all(|&y| y >= lo - 1e-12 && y <= hi + 1e-12));

        let mut xs = probes.clone();
        xs.extend(iso.x.iter().copied());
        xs.sort_by(f64::total_cmp);
        let ys: Vec<f64> = xs.iter().map(|&x| iso.predict(x)).collect();
        prop_assert!(ys.windows(2).all(|w| w[0] <= w[1]), "predict not monotone: {:?}", ys);
    }

    #[test]
    fn monotone_input_is_a_fixed_point(mut ys in prop::collection::vec(0.0f64..3.0, 1..50)) {
        ys.sort_by(f64::total_cmp);
        let pts: Vec<(f64, f64)> = ys.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect();
        let iso = fit(&pts).unwrap();
        prop_assert_eq!(&iso.y, &ys);
        for (x, y) in pts {
            prop_assert_eq!(iso.predict(x), y);
        }
    }
}
