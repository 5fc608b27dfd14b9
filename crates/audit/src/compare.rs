//! `ocrank compare`: several audits side by side. Each variant is compared
//! with the first audit (the baseline) by a paired bootstrap over the queries
//! both scored; p-values are Holm-adjusted within each measure across the
//! variants.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ocrank_metrics::stats::{holm, paired_bootstrap, Bootstrap};
use serde::Serialize;

/// The part of an audit's `results.json` a comparison needs.
#[derive(Debug, Clone)]
pub struct AuditResults {
    pub dir: PathBuf,
    pub label: String,
    pub collection: BTreeMap<String, f64>,
    pub per_query: BTreeMap<String, BTreeMap<String, f64>>,
}

pub fn load(dir: &Path) -> Result<AuditResults, String> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}:{}: {e}", path.display(), e.line()))?;
    fn field<T: serde::de::DeserializeOwned>(
        v: &serde_json::Value,
        path: &Path,
        name: &str,
    ) -> Result<T, String> {
        serde_json::from_value(v[name].clone())
            .map_err(|e| format!("{}: {name}: {e}", path.display()))
    }
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let sc = &v["settings"]["scorer"];
    let label = if sc.is_null() {
        format!("{name} (external scores)")
    } else {
        let mut parts = vec![
            sc["mode"].as_str().unwrap_or("?").to_string(),
            format!("B={}", sc["width"]),
            sc["partition"].as_str().unwrap_or("?").to_string(),
        ];
        if !sc["capcal"].is_null() {
            parts.push("capcal".into());
        }
        format!("{name} ({})", parts.join(", "))
    };
    Ok(AuditResults {
        dir: dir.to_path_buf(),
        label,
        collection: field(&v, &path, "collection")?,
        per_query: field(&v, &path, "per_query")?,
    })
}

/// The BSC@K curve point of an audit as a variant of its own (the averaged
/// scores of G >= 2 disjoint groups of K permutations), or None when the
/// audit has no such point (a single group has no measurable instability).
pub fn load_bsc(dir: &Path, k: usize) -> Result<Option<AuditResults>, String> {
    let base = load(dir)?;
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}:{}: {e}", path.display(), e.line()))?;
    let Some(points) = v["bsc"].as_array() else {
        return Ok(None);
    };
    for p in points {
        let groups = p["groups"].as_u64().unwrap_or(0);
        if p["k"].as_u64() != Some(k as u64) || groups < 2 || p["per_query"].is_null() {
            continue;
        }
        fn parse<T: serde::de::DeserializeOwned>(
            p: &serde_json::Value,
            path: &Path,
            name: &str,
        ) -> Result<T, String> {
            serde_json::from_value(p[name].clone())
                .map_err(|e| format!("{}: bsc {name}: {e}", path.display()))
        }
        let name = base.label.split(" (").next().unwrap_or("").to_string();
        return Ok(Some(AuditResults {
            dir: dir.to_path_buf(),
            label: format!("{name} BSC@{k} ({groups} groups)"),
            collection: parse(p, &path, "collection")?,
            per_query: parse(p, &path, "per_query")?,
        }));
    }
    Ok(None)
}

/// The last `k` components of a path, joined by `/`.
fn tail(dir: &Path, k: usize) -> String {
    let parts: Vec<String> = dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts[parts.len().saturating_sub(k)..].join("/")
}

/// Audits whose directories share a name (`a/student` and `b/student`) are
/// named by as many trailing path components as tell them apart, so that a
/// table's rows say which is which. Variants of one directory (its BSC@K
/// point) keep their own suffix and are not counted as a clash.
pub fn disambiguate(audits: &mut [AuditResults]) {
    let dirs: Vec<PathBuf> = audits.iter().map(|a| a.dir.clone()).collect();
    for a in audits.iter_mut() {
        let depth = a.dir.components().count().max(1);
        let k = (1..=depth)
            .find(|&k| {
                dirs.iter()
                    .filter(|d| **d != a.dir)
                    .all(|d| tail(d, k) != tail(&a.dir, k))
            })
            .unwrap_or(depth);
        let name = tail(&a.dir, 1);
        if k > 1 && a.label.starts_with(&name) {
            a.label = format!("{}{}", tail(&a.dir, k), &a.label[name.len()..]);
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub measure: String,
    pub variant: String,
    pub value: f64,
    pub baseline: f64,
    /// variant - baseline, paired over `n` queries.
    pub difference: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
    pub p_holm: f64,
    pub n: usize,
}

/// Paired differences of every variant against `audits[0]` on each measure.
pub fn compare(audits: &[AuditResults], measures: &[String], boot: Bootstrap) -> Vec<Row> {
    let Some((base, variants)) = audits.split_first() else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for m in measures {
        let mut family = Vec::new();
        for v in variants {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (q, vals) in &v.per_query {
                if let (Some(x), Some(y)) =
                    (vals.get(m), base.per_query.get(q).and_then(|bq| bq.get(m)))
                {
                    a.push(*x);
                    b.push(*y);
                }
            }
            let Some(d) = paired_bootstrap(&a, &b, boot) else {
                continue;
            };
            family.push(Row {
                measure: m.clone(),
                variant: v.label.clone(),
                value: a.iter().sum::<f64>() / a.len() as f64,
                baseline: b.iter().sum::<f64>() / b.len() as f64,
                difference: d.estimate,
                low: d.low,
                high: d.high,
                p_value: d.p_value,
                p_holm: f64::NAN,
                n: d.n,
            });
        }
        let adjusted = holm(&family.iter().map(|r| r.p_value).collect::<Vec<_>>());
        for (r, p) in family.iter_mut().zip(adjusted) {
            r.p_holm = p;
        }
        rows.extend(family);
    }
    rows
}

/// One Markdown table: measure, variant, value vs baseline, difference with
/// its 95% interval, Holm-adjusted p, significance at 0.05.
pub fn render_markdown(audits: &[AuditResults], rows: &[Row]) -> String {
    let mut s = String::new();
    if let Some(base) = audits.first() {
        s.push_str(&format!("Baseline: {}\n\n", base.label));
    }
    s.push_str("| measure | variant | value | baseline | difference [95% CI] | p (Holm) | n |\n|---|---|---|---|---|---|---|\n");
    for r in rows {
        let star = if r.p_holm < 0.05 { " *" } else { "" };
        s.push_str(&format!(
            "| {} | {} | {:.4} | {:.4} | {:+.4} [{:+.4}, {:+.4}] | {:.4}{star} | {} |\n",
            r.measure, r.variant, r.value, r.baseline, r.difference, r.low, r.high, r.p_holm, r.n
        ));
    }
    s.push_str("\n`*`: significant at 0.05 after Holm adjustment within the measure (paired bootstrap over the queries both audits scored).\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit(label: &str, vals: &[f64]) -> AuditResults {
        AuditResults {
            dir: PathBuf::from(label),
            label: label.into(),
            collection: BTreeMap::new(),
            per_query: vals
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        format!("q{i}"),
                        BTreeMap::from([("tau_psi".to_string(), *v)]),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn paired_differences_against_the_baseline_with_holm() {
        let base = audit("base", &[0.5, 0.52, 0.48, 0.51, 0.49, 0.5, 0.53, 0.47]);
        let same = audit("same", &[0.5, 0.52, 0.48, 0.51, 0.49, 0.5, 0.53, 0.47]);
        let lower = audit("lower", &[0.1, 0.12, 0.08, 0.11, 0.09, 0.1, 0.13, 0.07]);
        let boot = Bootstrap {
            resamples: 2000,
            seed: 1,
            level: 0.95,
        };
        let rows = compare(&[base, same, lower], &["tau_psi".to_string()], boot);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].difference, 0.0);
        assert!(rows[0].p_holm > 0.5);
        assert!((rows[1].difference + 0.4).abs() < 1e-12);
        assert!(rows[1].high < 0.0 && rows[1].p_holm < 0.05);
        assert!(rows[1].p_holm >= rows[1].p_value);
    }

    #[test]
    fn audits_named_alike_are_told_apart_by_their_paths() {
        let mut audits = vec![
            audit("reports/x/student", &[0.5]),
            audit("reports/y/student", &[0.5]),
            audit("reports/y/base", &[0.5]),
        ];
        for a in &mut audits {
            let name = tail(&a.dir, 1);
            a.label = format!("{name} (invariant, B=10, contiguous)");
        }
        // A BSC variant of the first directory is not a clash with it.
        let mut bsc = audits[0].clone();
        bsc.label = "student BSC@2 (5 groups)".into();
        audits.push(bsc);
        disambiguate(&mut audits);
        assert_eq!(audits[0].label, "x/student (invariant, B=10, contiguous)");
        assert_eq!(audits[1].label, "y/student (invariant, B=10, contiguous)");
        assert_eq!(audits[2].label, "base (invariant, B=10, contiguous)");
        assert_eq!(audits[3].label, "x/student BSC@2 (5 groups)");
    }
}
