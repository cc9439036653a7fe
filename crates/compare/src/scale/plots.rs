//! The report as SVG charts (plotters' SVG backend: text is written as SVG `<text>` elements, so no font is read
//! or needed; the viewer renders it with its own sans-serif).
//!
//! * `scale-waiters-latency.svg` — hand-off latency p50 (solid) and p99 (dashed) against N, per contender, one
//!   panel per server;
//! * `scale-waiters-cost.svg` — notifications per release and KiB read per acquisition against N, per contender
//!   (solid ZooKeeper, dashed embedded);
//! * `scale-locks.svg` — acquisitions per second against the number of lock paths K, per server;
//! * `scale-size.svg` — resident memory, snapshot size, restart-to-first-read time and read p99 against the
//!   number of znodes, per server.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::locks::LocksRow;
use super::servers::ServerKind;
use super::size::SizeRow;
use super::waiters::{Contender, WaitersRow};
use super::Report;

const FONT: &str = "sans-serif";

fn contender_colour(contender: Contender) -> RGBColor {
    match contender {
        Contender::Zklock => RGBColor(31, 119, 180),
        Contender::Curator => RGBColor(255, 127, 14),
        Contender::ZookeeperClient => RGBColor(44, 160, 44),
        Contender::Naive => RGBColor(214, 39, 40),
    }
}

fn server_colour(server: ServerKind) -> RGBColor {
    match server {
        ServerKind::Zookeeper => RGBColor(127, 127, 127),
        ServerKind::Embedded => RGBColor(31, 119, 180),
    }
}

/// One line of a chart.
struct Line {
    colour: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// One entry of a chart's legend (drawn once, below the panels).
struct Key {
    label: String,
    colour: RGBColor,
    dashed: bool,
}

impl Key {
    fn new(label: impl Into<String>, colour: RGBColor, dashed: bool) -> Key {
        Key {
            label: label.into(),
            colour,
            dashed,
        }
    }
}

/// A tick label: at most three significant digits, no trailing zeros, k and M for thousands and millions.
fn compact(v: f64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// One panel: title, axis descriptions, lines; log scales unless said otherwise.
struct Panel {
    title: String,
    x_desc: String,
    y_desc: String,
    y_log: bool,
    lines: Vec<Line>,
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

/// Range of the positive values, padded for a log axis (or from 0 for a linear one).
fn range(values: impl Iterator<Item = f64>, log: bool) -> Option<(f64, f64)> {
    let values: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        return None;
    }
    Some(if log {
        (lo / 1.6, hi * 1.6)
    } else {
        (0.0, hi * 1.15)
    })
}

fn draw_panel(area: &DrawingArea<SVGBackend, Shift>, panel: &Panel) -> Result<()> {
    let xs = panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let ys = panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (Some((x0, x1)), Some((y0, y1))) = (range(xs, true), range(ys, panel.y_log)) else {
        area.draw(&Text::new(
            format!("{}: no data", panel.title),
            (20, 40),
            (FONT, 16).into_font(),
        ))
        .map_err(err)?;
        return Ok(());
    };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, (FONT, 17))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(45)
        .y_label_area_size(70);
    // The two kinds of y axis give two chart types; one drawing routine serves both.
    macro_rules! finish {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(panel.x_desc.as_str())
                .y_desc(panel.y_desc.as_str())
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 14))
                .x_labels(8)
                .y_labels(8)
                .x_label_formatter(&|v| compact(*v))
                .y_label_formatter(&|v| compact(*v))
                .bold_line_style(RGBColor(225, 225, 225))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(err)?;
            for line in &panel.lines {
                if line.points.is_empty() {
                    continue;
                }
                let colour = line.colour;
                let style = colour.stroke_width(2);
                if line.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(line.points.iter().copied(), 7, 5, style))
                        .map_err(err)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(line.points.iter().copied(), style))
                        .map_err(err)?;
                }
                chart
                    .draw_series(line.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(err)?;
            }
        }};
    }
    // Ticks at the measured sizes on x, and at 1-2-5 steps on a log y axis (plotters' own log ticks are only
    // powers of ten, which leaves less than a decade bare).
    let mut x_ticks: Vec<f64> = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    x_ticks.sort_by(f64::total_cmp);
    x_ticks.dedup();
    let x = (x0..x1).log_scale().with_key_points(x_ticks);
    if panel.y_log {
        let y = (y0..y1).log_scale().with_key_points(one_two_five(y0, y1));
        finish!(builder.build_cartesian_2d(x, y).map_err(err)?);
    } else {
        finish!(builder.build_cartesian_2d(x, y0..y1).map_err(err)?);
    }
    Ok(())
}

/// 1, 2, 5, 10, 20, 50, … between `lo` and `hi` (thinned to every decade when there are too many).
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                ticks.push(v);
            }
        }
        decade *= 10.0;
    }
    if ticks.len() > 10 {
        ticks.retain(|v| (v.log10() - v.log10().round()).abs() < 1e-9);
    }
    ticks
}

/// Height of one row of the legend, pixels.
const KEY_ROW: u32 = 24;

/// Draws `panels` side by side (`columns` per row) into `path` under `title`, with the legend `keys` below them.
fn draw(path: &Path, title: &str, columns: usize, panels: &[Panel], keys: &[Key], note: &str) -> Result<()> {
    let rows = panels.len().div_ceil(columns).max(1);
    let width = 560 * columns as u32;
    let per_row = (width / 230).max(1) as usize;
    let key_rows = keys.len().div_ceil(per_row) as u32 + u32::from(!note.is_empty());
    let size = (width, 420 * rows as u32 + 40 + key_rows * KEY_ROW + 12);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, (FONT, 20)).map_err(err)?;
    let (charts, legend) = root.split_vertically(420 * rows as u32);
    let areas = charts.split_evenly((rows, columns));
    for (area, panel) in areas.iter().zip(panels) {
        draw_panel(area, panel)?;
    }
    for (i, key) in keys.iter().enumerate() {
        let x = 40 + (i % per_row) as i32 * 230;
        let y = 6 + (i / per_row) as i32 * KEY_ROW as i32 + KEY_ROW as i32 / 2;
        let style = key.colour.stroke_width(2);
        if key.dashed {
            for dash in 0..3 {
                let x0 = x + dash * 10;
                legend
                    .draw(&PathElement::new(vec![(x0, y), (x0 + 6, y)], style))
                    .map_err(err)?;
            }
        } else {
            legend
                .draw(&PathElement::new(vec![(x, y), (x + 26, y)], style))
                .map_err(err)?;
        }
        legend
            .draw(&Circle::new((x + 13, y), 3, key.colour.filled()))
            .map_err(err)?;
        legend
            .draw(&Text::new(
                key.label.clone(),
                (x + 34, y - 7),
                (FONT, 14).into_font(),
            ))
            .map_err(err)?;
    }
    if !note.is_empty() {
        let y = 6 + (key_rows as i32 - 1) * KEY_ROW as i32 + 4;
        legend
            .draw(&Text::new(
                note.to_string(),
                (40, y),
                (FONT, 13).into_font().color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn contender_keys(rows: &[WaitersRow]) -> Vec<Key> {
    Contender::ALL
        .iter()
        .filter(|&&c| rows.iter().any(|r| r.contender == c))
        .map(|&c| Key::new(c.label(), contender_colour(c), false))
        .collect()
}

fn server_keys() -> Vec<Key> {
    ServerKind::BOTH
        .iter()
        .map(|&s| Key::new(s.label(), server_colour(s), false))
        .collect()
}

/// Draws every chart the report has data for into `out`; returns the files written.
pub fn draw_all(report: &Report, out: &Path) -> Result<Vec<String>> {
    let mut written = Vec::new();
    let quick = report.meta.options.as_ref().is_some_and(|o| o.quick);
    let note = if quick { " (--quick smoke sizes)" } else { "" };
    let mut chart =
        |file: &str, title: &str, columns: usize, panels: &[Panel], keys: &[Key], caption: &str| {
            let path = out.join(file);
            draw(&path, &format!("{title}{note}"), columns, panels, keys, caption)?;
            written.push(path.display().to_string());
            Result::<()>::Ok(())
        };
    if !report.waiters.is_empty() {
        let keys = contender_keys(&report.waiters);
        for (file, title, panels, caption) in [
            (
                "scale-waiters-latency.svg",
                "Hand-off latency with N sessions queued on one lock",
                waiters_latency(&report.waiters),
                "solid: p50, dashed: p99; from a holder's release call to the next holder's acquire returning",
            ),
            (
                "scale-waiters-cost.svg",
                "What one hand-off costs, by queue length",
                waiters_cost(&report.waiters),
                "solid: ZooKeeper 3.8, dashed: embedded; counted by a proxy between the clients and the server",
            ),
        ] {
            chart(file, title, 2, &panels, &keys, caption)?;
        }
    }
    if !report.locks.is_empty() {
        chart(
            "scale-locks.svg",
            "Many independent locks",
            1,
            &[locks(&report.locks)],
            &server_keys(),
            "",
        )?;
    }
    if !report.size.is_empty() {
        chart(
            "scale-size.svg",
            "Server size",
            2,
            &size(&report.size),
            &server_keys(),
            "",
        )?;
    }
    Ok(written)
}

fn waiter_points(
    rows: &[WaitersRow],
    server: ServerKind,
    contender: Contender,
    f: impl Fn(&WaitersRow) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.server == server && r.contender == contender && r.ok())
        .filter_map(|r| f(r).map(|y| (r.waiters as f64, y)))
        .filter(|&(_, y)| y > 0.0)
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

fn waiters_latency(rows: &[WaitersRow]) -> Vec<Panel> {
    ServerKind::BOTH
        .iter()
        .filter(|&&s| rows.iter().any(|r| r.server == s))
        .map(|&server| {
            let mut lines = Vec::new();
            for contender in Contender::ALL {
                for dashed in [false, true] {
                    lines.push(Line {
                        colour: contender_colour(contender),
                        dashed,
                        points: waiter_points(rows, server, contender, |r| {
                            if dashed {
                                r.p99_ms
                            } else {
                                r.p50_ms
                            }
                        }),
                    });
                }
            }
            Panel {
                title: server.label().to_string(),
                x_desc: "sessions queued on the lock (N)".into(),
                y_desc: "hand-off latency (ms)".into(),
                y_log: true,
                lines,
            }
        })
        .collect()
}

fn waiters_cost(rows: &[WaitersRow]) -> Vec<Panel> {
    let panel = |title: &str, y_desc: &str, f: &dyn Fn(&WaitersRow) -> Option<f64>| {
        let mut lines = Vec::new();
        for contender in Contender::ALL {
            for server in ServerKind::BOTH {
                lines.push(Line {
                    colour: contender_colour(contender),
                    dashed: server == ServerKind::Embedded,
                    points: waiter_points(rows, server, contender, f),
                });
            }
        }
        Panel {
            title: title.into(),
            x_desc: "sessions queued on the lock (N)".into(),
            y_desc: y_desc.into(),
            y_log: true,
            lines,
        }
    };
    vec![
        panel("Watch notifications per release", "notifications", &|r| {
            r.notifications_per_release
        }),
        panel("Bytes read per acquisition (all clients)", "KiB", &|r| {
            r.bytes_per_acquisition.map(|b| b / 1024.0)
        }),
    ]
}

/// One solid line per server through the points `point` finds for it in `rows`, in the order of x.
fn server_lines<R>(rows: &[R], point: impl Fn(&R, ServerKind) -> Option<(f64, f64)>) -> Vec<Line> {
    ServerKind::BOTH
        .iter()
        .map(|&server| {
            let mut points: Vec<(f64, f64)> = rows.iter().filter_map(|r| point(r, server)).collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line {
                colour: server_colour(server),
                dashed: false,
                points,
            }
        })
        .collect()
}

fn locks(rows: &[LocksRow]) -> Panel {
    let sessions = rows.first().map_or(0, |r| r.sessions);
    let lines = server_lines(rows, |r, server| {
        let y = r
            .acquisitions_per_sec
            .filter(|_| r.server == server && r.status == "ok")?;
        Some((r.lock_paths as f64, y))
    });
    Panel {
        title: format!("Total acquisitions per second, {sessions} sessions"),
        x_desc: "independent lock paths (K)".into(),
        y_desc: "acquisitions / s".into(),
        y_log: false,
        lines,
    }
}

fn size(rows: &[SizeRow]) -> Vec<Panel> {
    let panel = |title: &str, y_desc: &str, f: &dyn Fn(&SizeRow) -> Option<f64>| {
        let lines = server_lines(rows, |r, server| {
            let y = f(r).filter(|_| r.server == server && r.ok())?;
            Some((r.znodes as f64, y))
        });
        Panel {
            title: title.into(),
            x_desc: "znodes".into(),
            y_desc: y_desc.into(),
            y_log: true,
            lines,
        }
    };
    vec![
        panel("Resident memory", "MiB", &|r| r.rss_mib),
        panel("Newest snapshot", "MB", &|r| {
            r.snapshot_bytes.map(|b| b as f64 / 1e6)
        }),
        panel("Restart to first read", "ms", &|r| r.restart_read_ms),
        panel("getData latency p99", "ms", &|r| r.read_p99_ms),
    ]
}
