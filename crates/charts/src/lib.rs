//! Charts as SVG, shared by `muster sim --svg` and the dashboard.
//!
//! Every chart is a standalone, valid SVG document (`render`): a titled
//! plot with labelled axes and units, round value ticks, time axes with
//! dated ticks (or days since a trace's start), a legend, and an accessible
//! text alternative (`<title>` and `<desc>` referenced by `aria-labelledby`,
//! and `html_table` for a page that shows the numbers too). Colours are the
//! Okabe-Ito palette, readable with the common colour-vision deficiencies.
//! `stack` puts several charts in one document.
//!
//! ```text
//!   TimeChart { series: [Series (t, v)...] } --render--> <svg> lines over a time axis
//!   BarChart  { bars: [(label, count)...], log_y } --render--> <svg> bars, log or linear
//!   wait_bins(waits) -> bars for a wait-time histogram on readable log-spaced bins
//!   slowdown_bins(bounded_slowdown(wait, run, tau)...) -> bars for a slowdown histogram
//! ```
//!
//! Pure: no clock, no files; times are arguments.

mod ticks;

pub use ticks::{civil_from_days, time_ticks, value_label, value_ticks};

use std::fmt::Write as _;

/// Okabe-Ito colours, in the order series take them.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7", "#000000",
];

const MARGIN_LEFT: f64 = 64.0;
const MARGIN_RIGHT: f64 = 16.0;
const MARGIN_TOP: f64 = 48.0;
const MARGIN_BOTTOM: f64 = 52.0;

/// How a series is reduced when it has more points than the plot has
/// pixel columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// The time-weighted mean of the step function in each column.
    Mean,
    /// The largest value in each column.
    Max,
}

/// One line of a time chart: a step function, each value holding until the
/// next point's time.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// (time, value), times ascending.
    pub points: Vec<(i64, f64)>,
    /// How to reduce it to the plot's width.
    pub reduce: Reduce,
}

/// Lines over a time axis.
#[derive(Clone, Debug)]
pub struct TimeChart {
    /// A prefix for the ids inside the SVG, unique in a page.
    pub id: String,
    /// Shown above the plot.
    pub title: String,
    /// The value axis's label, with its unit (`utilization (%)`).
    pub y_label: String,
    /// The value axis's top (100 for a percentage); the data's maximum when
    /// None.
    pub y_max: Option<f64>,
    /// Added to every time to make it a Unix time: with it ticks are dates
    /// (UTC), without it days since the start.
    pub epoch: Option<i64>,
    /// The lines.
    pub series: Vec<Series>,
    /// Size in pixels.
    pub width: f64,
    /// Size in pixels.
    pub height: f64,
}

/// Bars, one per category.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// A prefix for the ids inside the SVG, unique in a page.
    pub id: String,
    /// Shown above the plot.
    pub title: String,
    /// The category axis's label.
    pub x_label: String,
    /// The value axis's label, with its unit.
    pub y_label: String,
    /// (category, value).
    pub bars: Vec<(String, f64)>,
    /// A logarithmic value axis (powers of ten), for counts spanning orders
    /// of magnitude; zero bars are empty.
    pub log_y: bool,
    /// Size in pixels.
    pub width: f64,
    /// Size in pixels.
    pub height: f64,
}

/// The wait-time bins: readable, roughly logarithmic, upper bounds in
/// seconds (exclusive).
pub const WAIT_BINS: &[(&str, i64)] = &[
    ("0 s", 1),
    ("< 1 min", 60),
    ("1–10 min", 600),
    ("10–60 min", 3_600),
    ("1–6 h", 21_600),
    ("6–24 h", 86_400),
    ("1–7 d", 604_800),
    ("≥ 7 d", i64::MAX),
];

/// Counts of `waits` (seconds) in `WAIT_BINS`, as bars.
pub fn wait_bins(waits: impl IntoIterator<Item = i64>) -> Vec<(String, f64)> {
    let mut counts = vec![0u64; WAIT_BINS.len()];
    for w in waits {
        let k = WAIT_BINS
            .iter()
            .position(|(_, hi)| w < *hi)
            .unwrap_or(WAIT_BINS.len() - 1);
        counts[k] += 1;
    }
    WAIT_BINS
        .iter()
        .zip(counts)
        .map(|((l, _), c)| (l.to_string(), c as f64))
        .collect()
}

/// The bounded-slowdown bins: upper bounds (exclusive), roughly
/// logarithmic; 1 is a job that started at once (or ran shorter than the
/// bound and waited no longer than it).
pub const SLOWDOWN_BINS: &[(&str, f64)] = &[
    ("1", 1.000_001),
    ("1–2", 2.0),
    ("2–5", 5.0),
    ("5–10", 10.0),
    ("10–100", 100.0),
    ("≥ 100", f64::INFINITY),
];

/// Bounded slowdown: `max(1, (wait + run) / max(run, tau))`, seconds; `tau`
/// keeps very short jobs from dominating (10 s in the simulator's summary).
pub fn bounded_slowdown(wait: i64, run: i64, tau: f64) -> f64 {
    ((wait + run) as f64 / (run as f64).max(tau)).max(1.0)
}

/// Counts of `slowdowns` in `SLOWDOWN_BINS`, as bars.
pub fn slowdown_bins(slowdowns: impl IntoIterator<Item = f64>) -> Vec<(String, f64)> {
    let mut counts = vec![0u64; SLOWDOWN_BINS.len()];
    for x in slowdowns {
        let k = SLOWDOWN_BINS
            .iter()
            .position(|(_, hi)| x < *hi)
            .unwrap_or(SLOWDOWN_BINS.len() - 1);
        counts[k] += 1;
    }
    SLOWDOWN_BINS
        .iter()
        .zip(counts)
        .map(|((l, _), c)| (l.to_string(), c as f64))
        .collect()
}

/// Text for XML character data and attribute values.
pub fn escape(t: &str) -> String {
    let mut s = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => s.push(' '),
            c => s.push(c),
        }
    }
    s
}

/// The opening of a chart's document: size, accessible name and
/// description, white background, title.
fn open(s: &mut String, id: &str, w: f64, h: f64, title: &str, desc: &str) {
    let id = escape(id);
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<title id=\"{id}-title\">{}</title>", escape(title));
    let _ = writeln!(s, "<desc id=\"{id}-desc\">{}</desc>", escape(desc));
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{MARGIN_LEFT}\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        escape(title)
    );
}

/// The value axis: grid lines, tick labels and the rotated label.
fn value_axis(s: &mut String, ticks: &[(f64, String)], x0: f64, x1: f64, label: &str) {
    for (y, text) in ticks {
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            x0 - 4.0,
            y + 4.0,
            escape(text)
        );
    }
    let (top, bottom) = ticks.iter().fold((f64::MAX, f64::MIN), |(a, b), (y, _)| {
        (a.min(*y), b.max(*y))
    });
    let mid = (top + bottom) / 2.0;
    let _ = writeln!(
        s,
        "<text x=\"14\" y=\"{mid:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {mid:.1})\">{}</text>",
        escape(label)
    );
}

impl TimeChart {
    /// The time range of all series.
    fn span(&self) -> (i64, i64) {
        let mut it = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let first = it.next().unwrap_or(0);
        let (lo, hi) = it.fold((first, first), |(a, b), t| (a.min(t), b.max(t)));
        (lo, hi.max(lo + 1))
    }

    /// One value per pixel column for `series` over `[t0, t1]`.
    fn columns(series: &Series, t0: i64, t1: i64, cols: usize) -> Vec<Option<f64>> {
        let mut sum = vec![0.0f64; cols];
        let mut time = vec![0.0f64; cols];
        let mut max: Vec<Option<f64>> = vec![None; cols];
        let span = (t1 - t0) as f64;
        let col_of = |t: i64| ((((t - t0) as f64 / span) * cols as f64) as usize).min(cols - 1);
        let pts = &series.points;
        for (i, (t, v)) in pts.iter().enumerate() {
            let end = pts.get(i + 1).map_or(t1, |p| p.0).max(*t);
            let (c0, c1) = (col_of(*t), col_of(end));
            for c in c0..=c1 {
                let lo = t0 as f64 + span * c as f64 / cols as f64;
                let hi = t0 as f64 + span * (c + 1) as f64 / cols as f64;
                let dt = (end as f64).min(hi) - (*t as f64).max(lo);
                if dt > 0.0 || c == c0 {
                    sum[c] += v * dt.max(0.0);
                    time[c] += dt.max(0.0);
                    max[c] = Some(max[c].map_or(*v, |m: f64| m.max(*v)));
                }
            }
        }
        match series.reduce {
            Reduce::Max => max,
            Reduce::Mean => (0..cols)
                .map(|c| match time[c] > 0.0 {
                    true => Some(sum[c] / time[c]),
                    false => max[c],
                })
                .collect(),
        }
    }

    /// The description for `<desc>`: what is plotted and its range.
    pub fn describe(&self) -> String {
        let (t0, t1) = self.span();
        let when = |t: i64| match self.epoch {
            Some(e) => {
                let (y, m, d) = civil_from_days((t + e).div_euclid(86_400));
                format!("{y:04}-{m:02}-{d:02}")
            }
            None => format!("day {}", t.div_euclid(86_400)),
        };
        let mut out = format!("{}, from {} to {}.", self.y_label, when(t0), when(t1));
        for s in &self.series {
            let (mut lo, mut hi) = (f64::MAX, f64::MIN);
            for (_, v) in &s.points {
                lo = lo.min(*v);
                hi = hi.max(*v);
            }
            if s.points.is_empty() {
                let _ = write!(out, " {}: no data.", s.name);
            } else {
                let _ = write!(
                    out,
                    " {}: between {} and {}.",
                    s.name,
                    value_label(lo),
                    value_label(hi)
                );
            }
        }
        out
    }

    /// The chart as an SVG document.
    pub fn render(&self) -> String {
        let (w, h) = (self.width, self.height);
        let (x0, x1) = (MARGIN_LEFT, w - MARGIN_RIGHT);
        let (y0, y1) = (MARGIN_TOP, h - MARGIN_BOTTOM);
        let (t0, t1) = self.span();
        let data_max = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        let (vticks, top) = match self.y_max {
            Some(m) => (value_ticks(m, 5).0, m),
            None => value_ticks(data_max, 5),
        };
        let top = if top > 0.0 { top } else { 1.0 };
        let y_of = |v: f64| y1 - (y1 - y0) * (v / top).clamp(0.0, 1.0);
        let mut s = String::new();
        open(&mut s, &self.id, w, h, &self.title, &self.describe());
        let ticks: Vec<(f64, String)> = vticks
            .iter()
            .filter(|v| **v <= top + 1e-9)
            .map(|v| (y_of(*v), value_label(*v)))
            .collect();
        value_axis(&mut s, &ticks, x0, x1, &self.y_label);
        // The time axis.
        let x_of = |t: i64| x0 + (x1 - x0) * (t - t0) as f64 / (t1 - t0) as f64;
        let e = self.epoch.unwrap_or(0);
        let want = ((x1 - x0) / 110.0).max(2.0) as usize;
        for (t, label) in time_ticks(t0 + e, t1 + e, want, self.epoch.is_some()) {
            let x = x_of(t - e);
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{y1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#999\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y1 + 5.0,
                y1 + 18.0,
                escape(&label)
            );
        }
        let time_label = match self.epoch {
            Some(_) => "time (UTC)",
            None => "time since the start",
        };
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{time_label}</text>",
            (x0 + x1) / 2.0,
            h - 8.0
        );
        let _ = writeln!(
            s,
            "<rect x=\"{x0}\" y=\"{y0}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#999\"/>",
            x1 - x0,
            y1 - y0
        );
        let cols = (x1 - x0).max(1.0) as usize;
        for (k, series) in self.series.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let mut pts = String::new();
            for (c, v) in Self::columns(series, t0, t1, cols).iter().enumerate() {
                if let Some(v) = v {
                    let _ = write!(pts, "{:.1},{:.1} ", x0 + c as f64 + 0.5, y_of(*v));
                }
            }
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>",
                pts.trim_end()
            );
        }
        legend(&mut s, self.series.iter().map(|s| s.name.as_str()), x1);
        s.push_str("</svg>\n");
        s
    }
}

/// Legend entries, right-aligned on the title's line.
fn legend<'a>(s: &mut String, names: impl Iterator<Item = &'a str>, right: f64) {
    let names: Vec<&str> = names.collect();
    let mut x = right;
    for (k, name) in names.iter().enumerate().rev() {
        let colour = PALETTE[k % PALETTE.len()];
        let text_w = 7.0 * name.chars().count() as f64;
        x -= text_w;
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"30\" width=\"12\" height=\"4\" fill=\"{colour}\"/>\
             <text x=\"{x:.1}\" y=\"36\">{}</text>",
            x - 16.0,
            escape(name)
        );
        x -= 28.0;
    }
}

/// A bar chart's value to its height as a fraction of the plot.
type Scale = Box<dyn Fn(f64) -> f64>;

impl BarChart {
    /// The description for `<desc>`: every bar's value.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .bars
            .iter()
            .map(|(l, v)| format!("{l}: {}", value_label(*v)))
            .collect();
        format!(
            "{} by {}: {}.",
            self.y_label,
            self.x_label,
            parts.join(", ")
        )
    }

    /// The chart as an SVG document.
    pub fn render(&self) -> String {
        let (w, h) = (self.width, self.height);
        let (x0, x1) = (MARGIN_LEFT, w - MARGIN_RIGHT);
        let (y0, y1) = (MARGIN_TOP, h - MARGIN_BOTTOM);
        let max = self.bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
        let mut s = String::new();
        open(&mut s, &self.id, w, h, &self.title, &self.describe());
        // Heights as a fraction of the plot, and the value ticks.
        let (frac, ticks): (Scale, Vec<(f64, String)>) = if self.log_y {
            let decades = max.max(1.0).log10().ceil().max(1.0);
            let frac = move |v: f64| {
                if v <= 0.0 {
                    0.0
                } else {
                    // 1 sits a little above the axis so single jobs show.
                    ((v.log10() + 0.3) / (decades + 0.3)).clamp(0.0, 1.0)
                }
            };
            let ticks = (0..=decades as i32)
                .map(|d| {
                    let v = 10f64.powi(d);
                    (y1 - (y1 - y0) * frac(v), value_label(v))
                })
                .collect();
            (Box::new(frac), ticks)
        } else {
            let (vt, top) = value_ticks(max, 5);
            let top = if top > 0.0 { top } else { 1.0 };
            let ticks = vt
                .iter()
                .map(|v| (y1 - (y1 - y0) * v / top, value_label(*v)))
                .collect();
            (Box::new(move |v: f64| (v / top).clamp(0.0, 1.0)), ticks)
        };
        let mut ticks = ticks;
        if self.log_y {
            ticks.insert(0, (y1, "0".to_string()));
        }
        let label = match self.log_y {
            true => format!("{} (log scale)", self.y_label),
            false => self.y_label.clone(),
        };
        value_axis(&mut s, &ticks, x0, x1, &label);
        let n = self.bars.len().max(1) as f64;
        let bar_w = (x1 - x0) / n;
        for (k, (name, v)) in self.bars.iter().enumerate() {
            let bh = (y1 - y0) * frac(*v);
            let x = x0 + k as f64 * bar_w;
            let _ = writeln!(
                s,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\"><title>{}: {}</title></rect>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x + bar_w * 0.15,
                y1 - bh,
                bar_w * 0.7,
                PALETTE[2],
                escape(name),
                value_label(*v),
                x + bar_w / 2.0,
                (y1 - bh - 4.0).max(y0 - 2.0),
                value_label(*v),
                x + bar_w / 2.0,
                y1 + 16.0,
                escape(name)
            );
        }
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{y1}\" x2=\"{x1}\" y2=\"{y1}\" stroke=\"#999\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (x0 + x1) / 2.0,
            h - 8.0,
            escape(&self.x_label)
        );
        s.push_str("</svg>\n");
        s
    }

    /// The numbers as an HTML table, the text alternative a page shows
    /// beside the picture.
    pub fn html_table(&self) -> String {
        let mut s = format!(
            "<table><caption>{}</caption><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>",
            escape(&self.title),
            escape(&self.x_label),
            escape(&self.y_label)
        );
        for (l, v) in &self.bars {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td></tr>",
                escape(l),
                value_label(*v)
            );
        }
        s.push_str("</tbody></table>");
        s
    }
}

/// Several charts' documents in one, one below the other, under `title`.
pub fn stack(title: &str, charts: &[String]) -> String {
    let dims = |doc: &str| -> (f64, f64) {
        let attr = |name: &str| {
            doc.split_once(&format!(" {name}=\""))
                .and_then(|(_, rest)| rest.split('"').next())
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (attr("width"), attr("height"))
    };
    let width = charts.iter().map(|c| dims(c).0).fold(0.0f64, f64::max);
    let height: f64 = 32.0 + charts.iter().map(|c| dims(c).1).sum::<f64>();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\">",
        escape(title)
    );
    let _ = writeln!(s, "<title>{}</title>", escape(title));
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{MARGIN_LEFT}\" y=\"22\" font-size=\"17\" font-weight=\"bold\">{}</text>",
        escape(title)
    );
    let mut y = 32.0;
    for c in charts {
        let h = dims(c).1;
        // A nested <svg> placed with x/y: the chart's own root, moved.
        let inner = c.replacen("<svg ", &format!("<svg x=\"0\" y=\"{y}\" "), 1);
        s.push_str(&inner);
        y += h;
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests;
