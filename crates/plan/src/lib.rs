//! ocrank-plan: which orders a pool is presented in, and how an order is cut
//! into windows (SPEC.md sections 2-4).
//!
//! Everything here is a pure function of its arguments and must stay
//! reproducible forever: an audit re-run next year on another machine must
//! present every pool in exactly the same orders. The golden tests in
//! `tests/golden.rs` pin the outputs; changing them is a breaking change of
//! every published audit.
//!
//! # The permutation algorithm (version 1)
//!
//! Permutation `index` of a pool of `n` candidates of query `qid` under `seed`:
//!
//! 1. `index == 0` is the canonical order, the identity `[0, 1, .., n - 1]`;
//!    no random numbers are drawn.
//! 2. Otherwise a 32-byte key is the SHA-256 digest of the byte string
//!    `b"ocrank-plan/permutation/v1\0"` ++ `seed` (8 bytes, little endian) ++
//!    `index` as u64 (8 bytes, little endian) ++ `qid.len()` as u64 (8 bytes,
//!    little endian) ++ the UTF-8 bytes of `qid`. The length prefix makes the
//!    encoding injective.
//! 3. The key seeds ChaCha20 (20 rounds, RFC 7539 block function, nonce 0,
//!    block counter starting at 0; `rand_chacha::ChaCha20Rng::from_seed`).
//!    A 64-bit draw is two consecutive 32-bit output words, the first one the
//!    low half (`RngCore::next_u64`).
//! 4. Fisher-Yates from the back: starting from the identity, for
//!    `i = n - 1` down to `1`, draw `j` uniformly from `0..=i` and swap
//!    positions `i` and `j`.
//! 5. A uniform draw from `0..m` (see [`bounded`]) rejects a 64-bit draw `x`
//!    while `x < 2^64 mod m` and returns `x mod m`; it is exactly unbiased and
//!    implemented here rather than borrowed from `rand`, whose algorithms may
//!    change between versions.
//!
//! The result `p` is a presentation order: `p[s]` is the canonical index of
//! the candidate shown at presentation position `s`.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Domain separator of the permutation key (algorithm version 1).
const PERMUTATION_DOMAIN: &[u8] = b"ocrank-plan/permutation/v1\0";

/// Errors of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("unknown partition {0:?}: expected \"contiguous\" or \"round-robin\"")]
    UnknownPartition(String),
    #[error("invalid BSC plan: {0}")]
    InvalidBscPlan(String),
}

/// The 32-byte ChaCha20 key of permutation `index` of query `qid` (step 2 of
/// the crate docs).
fn permutation_key(seed: u64, qid: &str, index: usize) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(PERMUTATION_DOMAIN);
    h.update(seed.to_le_bytes());
    h.update((index as u64).to_le_bytes());
    h.update((qid.len() as u64).to_le_bytes());
    h.update(qid.as_bytes());
    h.finalize().into()
}

/// A uniform draw from `0..m` (`m >= 1`), exactly unbiased: 64-bit draws
/// below `2^64 mod m` are rejected, the accepted one is reduced mod `m`.
pub fn bounded<R: RngCore + ?Sized>(rng: &mut R, m: u64) -> u64 {
    assert!(m >= 1, "bounded draw from an empty range");
    // 2^64 mod m, computed without 128-bit arithmetic.
    let reject_below = m.wrapping_neg() % m;
    loop {
        let x = rng.next_u64();
        if x >= reject_below {
            return x % m;
        }
    }
}

/// Permutation `index` of a pool of `pool_size` candidates for query `qid`
/// under `seed`: a presentation order of canonical candidate indices.
///
/// Index 0 is the canonical order (identity). Platform-independent and stable
/// forever; the algorithm is documented in the crate docs.
pub fn permutation(seed: u64, qid: &str, pool_size: usize, index: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pool_size).collect();
    if index == 0 || pool_size < 2 {
        return order;
    }
    let mut rng = ChaCha20Rng::from_seed(permutation_key(seed, qid, index));
    for i in (1..pool_size).rev() {
        let j = bounded(&mut rng, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// The inverse of a presentation order: `inverse(p)[c]` is the presentation
/// position of canonical candidate `c`.
pub fn inverse(presentation: &[usize]) -> Vec<usize> {
    let mut inv = vec![usize::MAX; presentation.len()];
    for (pos, &c) in presentation.iter().enumerate() {
        inv[c] = pos;
    }
    inv
}

/// M permutations of every pool: indices `0..count` (index 0 canonical).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermutationPlan {
    pub seed: u64,
    /// Number of permutations M, the canonical order included.
    pub count: usize,
}

impl PermutationPlan {
    pub fn new(seed: u64, count: usize) -> Self {
        Self { seed, count }
    }

    /// Permutation `index` of this plan (see [`permutation`]).
    pub fn order(&self, qid: &str, pool_size: usize, index: usize) -> Vec<usize> {
        permutation(self.seed, qid, pool_size, index)
    }

    /// All `count` presentation orders of the pool of `qid`, permutation 0 first.
    pub fn orders(&self, qid: &str, pool_size: usize) -> Vec<Vec<usize>> {
        (0..self.count)
            .map(|i| permutation(self.seed, qid, pool_size, i))
            .collect()
    }
}

/// How a presentation order is cut into windows (SPEC.md section 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Partition {
    /// Slots 1..B, B+1..2B, ... in presentation order.
    #[default]
    Contiguous,
    /// With W = ceil(n / B) windows, presentation position j goes to window j mod W.
    RoundRobin,
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Partition::Contiguous => "contiguous",
            Partition::RoundRobin => "round-robin",
        })
    }
}

impl FromStr for Partition {
    type Err = Error;

    /// Accepts `contiguous` and `round-robin` (also `round_robin`,
    /// `roundrobin`, `rr`), case-insensitively.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "contiguous" => Ok(Partition::Contiguous),
            "round-robin" | "round_robin" | "roundrobin" | "rr" => Ok(Partition::RoundRobin),
            _ => Err(Error::UnknownPartition(s.to_string())),
        }
    }
}

/// Cut a presentation order (candidate indices) into windows of at most `width`.
///
/// Contiguous: slots 1..B, B+1..2B, ...; round-robin: with W = ceil(n / width)
/// windows, the j-th candidate of the presentation (0-based) goes to window
/// j mod W, keeping presentation order inside a window. Both give the same
/// number of windows, W; round-robin window sizes differ by at most one. An
/// empty presentation gives no window.
///
/// # Panics
/// If `width == 0`.
pub fn windows(presentation: &[usize], width: usize, partition: Partition) -> Vec<Vec<usize>> {
    assert!(width >= 1, "window width must be at least 1");
    let n = presentation.len();
    match partition {
        Partition::Contiguous => presentation.chunks(width).map(<[usize]>::to_vec).collect(),
        Partition::RoundRobin => {
            let w = n.div_ceil(width);
            let mut out: Vec<Vec<usize>> = vec![Vec::with_capacity(n.div_ceil(w.max(1))); w];
            for (j, &c) in presentation.iter().enumerate() {
                out[j % w].push(c);
            }
            out
        }
    }
}

/// Batched self-consistency (SPEC.md section 4): `groups` disjoint groups of
/// `k` permutations each. Group g holds permutation indices `g*k .. (g+1)*k`
/// of the underlying [`PermutationPlan`] with `count = groups * k`, so group 0
/// contains the canonical order. A candidate's BSC@K score is its mean score
/// over one group; BSC@K stability is measured across the groups' averaged
/// score vectors and needs `groups >= 2` ([`BscPlan::stability_measurable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BscPlan {
    pub seed: u64,
    /// Permutations averaged per group (K).
    pub k: usize,
    /// Number of disjoint groups (G).
    pub groups: usize,
}

impl BscPlan {
    /// `k >= 1` and `groups >= 1`; a single group can rank but cannot measure
    /// BSC@K stability.
    pub fn new(seed: u64, k: usize, groups: usize) -> Result<Self, Error> {
        if k == 0 {
            return Err(Error::InvalidBscPlan("K must be at least 1".into()));
        }
        if groups == 0 {
            return Err(Error::InvalidBscPlan("need at least one group".into()));
        }
        Ok(Self { seed, k, groups })
    }

    /// Whether stability across groups can be measured (G >= 2). With one
    /// group BSC@K instability is unknown and must not be reported as 0.
    pub fn stability_measurable(&self) -> bool {
        self.groups >= 2
    }

    /// Total permutations to score, G x K.
    pub fn total(&self) -> usize {
        self.groups * self.k
    }

    /// The plan of all G x K permutations to score.
    pub fn plan(&self) -> PermutationPlan {
        PermutationPlan::new(self.seed, self.total())
    }

    /// Permutation indices of group `g`.
    pub fn group_indices(&self, g: usize) -> Range<usize> {
        assert!(
            g < self.groups,
            "group {g} out of range (G = {})",
            self.groups
        );
        g * self.k..(g + 1) * self.k
    }

    /// The group a permutation index belongs to, if any.
    pub fn group_of(&self, index: usize) -> Option<usize> {
        (index < self.total()).then(|| index / self.k)
    }

    /// Presentation orders per group: `out[g][i]` is permutation `g*k + i`.
    pub fn orders(&self, qid: &str, pool_size: usize) -> Vec<Vec<Vec<usize>>> {
        (0..self.groups)
            .map(|g| {
                self.group_indices(g)
                    .map(|i| permutation(self.seed, qid, pool_size, i))
                    .collect()
            })
            .collect()
    }
}
