//! Small dependency-free SVG charts for the audit report: per-query
//! instability, nDCG@10 across permutations, and the BSC@K curve.

use std::fmt::Write;

const W: f64 = 720.0;
const H: f64 = 360.0;
const L: f64 = 60.0; // left margin
const B: f64 = 50.0; // bottom margin
const T: f64 = 40.0; // top margin
const R: f64 = 20.0; // right margin

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

struct Frame {
    svg: String,
    ymin: f64,
    ymax: f64,
}

impl Frame {
    fn new(title: &str, ylabel: &str, ymin: f64, ymax: f64) -> Frame {
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
            W / 2.0,
            esc(title)
        );
        let ymax = if ymax > ymin { ymax } else { ymin + 1.0 };
        for i in 0..=4 {
            let v = ymin + (ymax - ymin) * i as f64 / 4.0;
            let y = H - B - (H - B - T) * i as f64 / 4.0;
            let _ = writeln!(svg, "<line x1=\"{L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.2}</text>", W - R, L - 6.0, y + 4.0);
        }
        let _ = writeln!(
            svg,
            "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            (H - B + T) / 2.0,
            esc(ylabel)
        );
        Frame { svg, ymin, ymax }
    }

    fn y(&self, v: f64) -> f64 {
        H - B - (H - B - T) * (v - self.ymin) / (self.ymax - self.ymin)
    }

    fn x(&self, i: usize, n: usize) -> f64 {
        L + (W - L - R) * (i as f64 + 0.5) / n.max(1) as f64
    }

    fn finish(mut self, xlabel: &str) -> String {
        let _ = writeln!(
            self.svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</svg>",
            (W + L - R) / 2.0,
            H - 10.0,
            esc(xlabel)
        );
        self.svg
    }
}

/// One bar per item (e.g. tau-PSI per query), with a reference line.
pub fn bars(
    title: &str,
    ylabel: &str,
    items: &[(String, f64)],
    reference: Option<(f64, &str)>,
) -> String {
    let ymax = items
        .iter()
        .map(|x| x.1)
        .fold(reference.map_or(0.0, |r| r.0), f64::max)
        * 1.1;
    let mut f = Frame::new(title, ylabel, 0.0, ymax.max(1e-9));
    let n = items.len();
    let bw = ((W - L - R) / n.max(1) as f64 * 0.8).max(1.0);
    for (i, (label, v)) in items.iter().enumerate() {
        let (x, y) = (f.x(i, n), f.y(*v));
        let _ = writeln!(f.svg, "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"#4c78a8\"><title>{}: {v:.4}</title></rect>", x - bw / 2.0, (H - B - y).max(0.0), esc(label));
    }
    if let Some((v, label)) = reference {
        let y = f.y(v);
        let _ = writeln!(f.svg, "<line x1=\"{L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e45756\" stroke-dasharray=\"5,3\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#e45756\">{}</text>", W - R, W - R, y - 4.0, esc(label));
    }
    f.finish(&format!("{n} queries, sorted"))
}

/// Per item a vertical range [low, high] with a marker (e.g. nDCG@10 worst
/// to best permutation, canonical order marked).
pub fn ranges(title: &str, ylabel: &str, items: &[(String, f64, f64, f64)]) -> String {
    let mut f = Frame::new(title, ylabel, 0.0, 1.0);
    let n = items.len();
    for (i, (label, lo, hi, mark)) in items.iter().enumerate() {
        let x = f.x(i, n);
        let _ = writeln!(f.svg, "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#4c78a8\" stroke-width=\"3\"><title>{}: {lo:.4} .. {hi:.4}</title></line><circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#e45756\"/>", f.y(*lo), f.y(*hi), esc(label), f.y(*mark));
    }
    f.finish(&format!(
        "{n} queries (bar: worst to mean over permutations; dot: canonical order)"
    ))
}

/// Lines over x positions (e.g. the BSC@K curve).
pub fn lines(title: &str, ylabel: &str, xs: &[usize], series: &[(&str, Vec<f64>)]) -> String {
    let all: Vec<f64> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
    let ymax = all.iter().copied().fold(0.0, f64::max).max(1e-9) * 1.1;
    let mut f = Frame::new(title, ylabel, 0.0, ymax);
    let colors = ["#4c78a8", "#e45756", "#54a24b", "#b279a2"];
    let n = xs.len();
    for (si, (name, ys)) in series.iter().enumerate() {
        let c = colors[si % colors.len()];
        let pts: Vec<String> = ys
            .iter()
            .enumerate()
            .map(|(i, y)| format!("{:.1},{:.1}", f.x(i, n), f.y(*y)))
            .collect();
        let _ = writeln!(
            f.svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
            pts.join(" ")
        );
        for (i, y) in ys.iter().enumerate() {
            let _ = writeln!(f.svg, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"><title>{name} K={}: {y:.4}</title></circle>", f.x(i, n), f.y(*y), xs[i]);
        }
        let _ = writeln!(
            f.svg,
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{}</text>",
            L + 10.0,
            T + 16.0 + 16.0 * si as f64,
            esc(name)
        );
    }
    for (i, x) in xs.iter().enumerate() {
        let _ = writeln!(
            f.svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{x}</text>",
            f.x(i, n),
            H - B + 16.0
        );
    }
    f.finish("K (permutations averaged)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg() {
        let b = bars(
            "t",
            "y",
            &[("q<1>".into(), 0.3), ("q2".into(), 0.6)],
            Some((0.5, "random")),
        );
        assert!(
            b.starts_with("<svg") && b.trim_end().ends_with("</svg>") && b.contains("q&lt;1&gt;")
        );
        assert_eq!(b.matches("<rect x=").count(), 2);
        let r = ranges("t", "y", &[("q".into(), 0.2, 0.5, 0.4)]);
        assert!(r.contains("<circle"));
        let l = lines("t", "y", &[1, 2, 3], &[("tau", vec![0.5, 0.4, 0.3])]);
        assert_eq!(l.matches("<circle").count(), 3);
    }
}
