//! SVG charts of a `pith bench db` run, written by hand (a few lines of
//! SVG do not justify a plotting dependency): QPS per workload and engine
//! (log scale), and latency CDFs per read workload and memory limit.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

const COLORS: [&str; 6] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];
const W: f64 = 900.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 60.0;
const TOP: f64 = 40.0;

fn engines(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        if let Some(e) = r["engine"].as_str() {
            if !v.iter().any(|x| x == e) {
                v.push(e.to_string());
            }
        }
    }
    v
}

/// The memory limit as the table shows it, in MiB (`unlimited` for none,
/// as the chart files have been named).
fn limit_label(r: &Value) -> String {
    match r["mem_limit_bytes"].as_u64().unwrap_or(0) {
        0 => "unlimited".into(),
        l => super::report::limit_text(l),
    }
}

fn header(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\" text-anchor=\"middle\">{title}</text>\n",
        W / 2.0
    )
}

fn legend(svg: &mut String, names: &[String]) {
    for (i, e) in names.iter().enumerate() {
        let x = W - 150.0;
        let y = TOP + 14.0 * i as f64;
        let _ = writeln!(svg, "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{e}</text>", y, COLORS[i % COLORS.len()], x + 14.0, y + 9.0);
    }
}

/// Log10 axis ticks between `lo` and `hi` (powers of ten).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (a..=b).map(|e| 10f64.powi(e)).collect()
}

/// Writes `qps.svg` and one `cdf-<workload>-<limit>.svg` per read phase.
pub fn write(dir: &Path, rows: &[Value]) -> std::io::Result<Vec<String>> {
    let rows: Vec<&Value> = rows
        .iter()
        .filter(|r| r["error"].is_null() && r["qps"].as_f64().is_some_and(|q| q > 0.0))
        .collect();
    let owned: Vec<Value> = rows.iter().map(|r| (*r).clone()).collect();
    let names = engines(&owned);
    let mut written = Vec::new();
    // QPS bars, log scale.
    let groups: Vec<String> = {
        let mut g: Vec<String> = Vec::new();
        for r in &rows {
            let label = format!(
                "{} {}t {}",
                r["workload"].as_str().unwrap_or("?"),
                r["threads"],
                limit_label(r)
            );
            if !g.contains(&label) {
                g.push(label);
            }
        }
        g
    };
    if !groups.is_empty() {
        let qs: Vec<f64> = rows.iter().filter_map(|r| r["qps"].as_f64()).collect();
        let (lo, hi) = (
            qs.iter().cloned().fold(f64::MAX, f64::min).max(1.0),
            qs.iter().cloned().fold(0.0, f64::max),
        );
        let ticks = log_ticks(lo / 2.0, hi);
        let (ymin, ymax) = (
            ticks[0].log10(),
            ticks[ticks.len() - 1].log10().max(ticks[0].log10() + 1.0),
        );
        let y =
            |q: f64| H - BOTTOM - (q.max(1.0).log10() - ymin) / (ymax - ymin) * (H - BOTTOM - TOP);
        let mut svg = header("Operations per second (log scale), per workload and engine");
        for t in &ticks {
            let y0 = y(*t);
            let _ = writeln!(svg, "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y0}\" y2=\"{y0}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{t:.0}</text>", W - 160.0, LEFT - 4.0, y0 + 4.0);
        }
        let gw = (W - 160.0 - LEFT) / groups.len() as f64;
        let bw = gw * 0.8 / names.len().max(1) as f64;
        for (gi, g) in groups.iter().enumerate() {
            let gx = LEFT + gw * gi as f64 + gw * 0.1;
            let _ = writeln!(
                svg,
                "<text transform=\"translate({},{}) rotate(30)\">{g}</text>",
                gx,
                H - BOTTOM + 12.0
            );
            for (ei, e) in names.iter().enumerate() {
                let Some(r) = rows.iter().find(|r| {
                    r["engine"].as_str() == Some(e)
                        && format!(
                            "{} {}t {}",
                            r["workload"].as_str().unwrap_or("?"),
                            r["threads"],
                            limit_label(r)
                        ) == *g
                }) else {
                    continue;
                };
                let q = r["qps"].as_f64().unwrap_or(0.0);
                let _ = writeln!(svg, "<rect x=\"{}\" y=\"{}\" width=\"{bw}\" height=\"{}\" fill=\"{}\"><title>{e}: {q:.0} ops/s</title></rect>", gx + bw * ei as f64, y(q), (H - BOTTOM - y(q)).max(0.0), COLORS[ei % COLORS.len()]);
            }
        }
        legend(&mut svg, &names);
        svg.push_str("</svg>\n");
        std::fs::write(dir.join("qps.svg"), svg)?;
        written.push("qps.svg".to_string());
    }
    // Latency CDFs per read workload and limit.
    let mut phases: Vec<(String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r["cdf"].is_array()) {
        let p = (
            r["workload"].as_str().unwrap_or("?").to_string(),
            limit_label(r),
        );
        if !phases.contains(&p) {
            phases.push(p);
        }
    }
    for (workload, limit) in phases {
        let series: Vec<(usize, Vec<(f64, f64)>)> = rows
            .iter()
            .filter(|r| r["workload"].as_str() == Some(&workload) && limit_label(r) == limit)
            .filter_map(|r| {
                let e = names
                    .iter()
                    .position(|n| Some(n.as_str()) == r["engine"].as_str())?;
                let pts = r["cdf"]
                    .as_array()?
                    .iter()
                    .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                    .collect();
                Some((e, pts))
            })
            .collect();
        let all: Vec<f64> = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .filter(|&v| v > 0.0)
            .collect();
        if all.is_empty() {
            continue;
        }
        let ticks = log_ticks(
            all.iter().cloned().fold(f64::MAX, f64::min),
            all.iter().cloned().fold(0.0, f64::max),
        );
        let (xmin, xmax) = (
            ticks[0].log10(),
            ticks[ticks.len() - 1].log10().max(ticks[0].log10() + 1.0),
        );
        let x =
            |us: f64| LEFT + (us.max(ticks[0]).log10() - xmin) / (xmax - xmin) * (W - 160.0 - LEFT);
        let y = |q: f64| H - BOTTOM - q * (H - BOTTOM - TOP);
        let mut svg = header(&format!(
            "Latency CDF: {workload}, memory {limit} (x: microseconds, log scale)"
        ));
        for t in &ticks {
            let x0 = x(*t);
            let _ = writeln!(svg, "<line x1=\"{x0}\" x2=\"{x0}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x0}\" y=\"{}\" text-anchor=\"middle\">{t}</text>", H - BOTTOM, H - BOTTOM + 14.0);
        }
        for q in [0.0, 0.5, 0.9, 1.0] {
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{q}</text>",
                LEFT - 4.0,
                y(q) + 4.0
            );
        }
        for (e, pts) in &series {
            let path: Vec<String> = pts
                .iter()
                .map(|(q, us)| format!("{:.1},{:.1}", x(*us), y(*q)))
                .collect();
            let _ = writeln!(
                svg,
                "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"{}\" points=\"{}\"/>",
                COLORS[e % COLORS.len()],
                path.join(" ")
            );
        }
        legend(&mut svg, &names);
        svg.push_str("</svg>\n");
        let file = format!("cdf-{workload}-{}.svg", limit.replace(' ', ""));
        std::fs::write(dir.join(&file), svg)?;
        written.push(file);
    }
    Ok(written)
}
