//! Slot readout: the next-token distribution at a slot, restricted to the
//! four grade tokens and renormalised; readouts and CapCal (SPEC.md
//! sections 2 and 4).

use serde::{Deserialize, Serialize};

/// A slot's grade distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradeDist {
    /// p_0..p_3, renormalised over the four grade tokens.
    pub probs: [f64; 4],
    /// Total probability of the four grade tokens before renormalising.
    pub mass: f64,
}

impl GradeDist {
    /// From a full-vocabulary logit row (softmax in f64 for precision).
    pub fn from_logits(logits: &[f32], grade_ids: &[u32; 4]) -> GradeDist {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let z: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
        let raw: Vec<f64> = grade_ids
            .iter()
            .map(|&id| (logits[id as usize] as f64 - max).exp() / z)
            .collect();
        let mass: f64 = raw.iter().sum();
        let mut probs = [0.0; 4];
        for (p, r) in probs.iter_mut().zip(&raw) {
            *p = r / mass;
        }
        GradeDist { probs, mass }
    }

    pub fn expected_grade(&self) -> f64 {
        self.probs
            .iter()
            .enumerate()
            .map(|(g, p)| g as f64 * p)
            .sum()
    }

    /// Entropy divided by ln 4, in [0, 1].
    pub fn normalized_entropy(&self) -> f64 {
        -self
            .probs
            .iter()
            .filter(|&&p| p > 0.0)
            .map(|p| p * p.ln())
            .sum::<f64>()
            / 4f64.ln()
    }

    /// CapCal: p_cal = p - alpha * H(p) * (p_probe - uniform), clipped at 0
    /// and renormalised. The mass is kept from the uncalibrated reading.
    pub fn calibrated(&self, probe: &GradeDist, alpha: f64) -> GradeDist {
        let h = self.normalized_entropy();
        let mut probs = [0.0; 4];
        for ((p, &raw), &prior) in probs.iter_mut().zip(&self.probs).zip(&probe.probs) {
            *p = (raw - alpha * h * (prior - 0.25)).max(0.0);
        }
        let total: f64 = probs.iter().sum();
        if total > 0.0 {
            for p in &mut probs {
                *p /= total;
            }
        } else {
            probs = [0.25; 4];
        }
        GradeDist {
            probs,
            mass: self.mass,
        }
    }
}

/// How a grade distribution becomes a score in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Readout {
    /// E[g] / 3 (default).
    #[default]
    Expected,
    /// P(g >= 2) = p_2 + p_3.
    PGe2,
    /// argmax grade / 3 (ties to the lower grade).
    Argmax,
}

impl Readout {
    pub fn score(self, d: &GradeDist) -> f64 {
        match self {
            Readout::Expected => d.expected_grade() / 3.0,
            Readout::PGe2 => d.probs[2] + d.probs[3],
            Readout::Argmax => {
                let mut best = 0;
                for g in 1..4 {
                    if d.probs[g] > d.probs[best] {
                        best = g;
                    }
                }
                best as f64 / 3.0
            }
        }
    }
}

impl std::str::FromStr for Readout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "expected" => Ok(Readout::Expected),
            "p-ge2" | "pge2" => Ok(Readout::PGe2),
            "argmax" => Ok(Readout::Argmax),
            _ => Err(format!("unknown readout {s:?} (expected, p-ge2, argmax)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readouts() {
        let d = GradeDist {
            probs: [0.1, 0.2, 0.3, 0.4],
            mass: 1.0,
        };
        assert!((Readout::Expected.score(&d) - 2.0 / 3.0).abs() < 1e-12);
        assert!((Readout::PGe2.score(&d) - 0.7).abs() < 1e-12);
        assert_eq!(Readout::Argmax.score(&d), 1.0);
    }

    #[test]
    fn from_logits_renormalises_and_reports_mass() {
        let mut logits = vec![0f32; 10];
        logits[3] = 2.0;
        let d = GradeDist::from_logits(&logits, &[3, 4, 5, 6]);
        let z = 2f64.exp() + 9.0;
        assert!((d.mass - (2f64.exp() + 3.0) / z).abs() < 1e-9);
        assert!((d.probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(d.probs[0] > d.probs[1]);
    }

    #[test]
    fn capcal_removes_the_probe_prior() {
        // A flat reading pulled away from the probe's favourite grade.
        let p = GradeDist {
            probs: [0.25; 4],
            mass: 1.0,
        };
        let probe = GradeDist {
            probs: [0.7, 0.1, 0.1, 0.1],
            mass: 1.0,
        };
        let c = p.calibrated(&probe, 1.0);
        assert!(c.probs[0] < 0.25 && c.probs[1] > 0.25);
        assert!((c.probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // A confident reading (entropy 0) is left alone.
        let sure = GradeDist {
            probs: [0.0, 0.0, 0.0, 1.0],
            mass: 1.0,
        };
        assert_eq!(sure.calibrated(&probe, 1.0).probs, sure.probs);
        // A uniform probe changes nothing.
        let flat = GradeDist {
            probs: [0.25; 4],
            mass: 1.0,
        };
        assert_eq!(p.calibrated(&flat, 1.0).probs, p.probs);
    }
}
