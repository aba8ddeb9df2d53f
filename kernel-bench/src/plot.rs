//! Drawing a [`Report`] as a line chart, like the TFLOPS charts of Triton's
//! tutorials: SVG through plotters' SVG backend, PNG through its bitmap
//! backend, rendered at twice the size and averaged down for smooth lines.
//!
//! Lines, dash patterns, spread bands and the legend are drawn here with
//! plotters' basic elements in pixel space; plotters draws the frame, grid,
//! ticks, axis labels and title.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::text::Typeset;
use crate::{BenchError, LineStyle, Measurement, Report};

/// Width of the plot in pixels (PNG) or user units (SVG).
pub(crate) const WIDTH: u32 = 1024;
/// Height of the plot.
pub(crate) const HEIGHT: u32 = 640;
/// PNGs are drawn this many times larger, then averaged down (anti-aliasing).
const PNG_SUPERSAMPLE: u32 = 2;
/// The font family the plot asks for; [`Typeset`] sets it in DejaVu Sans.
const FONT: &str = "sans-serif";

pub(crate) fn svg(report: &Report) -> Result<String, BenchError> {
    let fail = |reason: String| BenchError::Plot { format: "svg", reason };
    let mut out = String::new();
    {
        let root = Typeset::vector(SVGBackend::with_string(&mut out, (WIDTH, HEIGHT))).into_drawing_area();
        draw(report, &root, 1.0).map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(out)
}

pub(crate) fn png(report: &Report) -> Result<Vec<u8>, BenchError> {
    let fail = |reason: String| BenchError::Plot { format: "png", reason };
    let s = PNG_SUPERSAMPLE;
    let (w, h) = (WIDTH * s, HEIGHT * s);
    let mut big = vec![255u8; w as usize * h as usize * 3];
    {
        let root = Typeset::raster(BitMapBackend::with_buffer(&mut big, (w, h))).into_drawing_area();
        draw(report, &root, f64::from(s)).map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    let pixels = downsample(&big, WIDTH as usize, HEIGHT as usize, s as usize);
    encode_png(&pixels, WIDTH, HEIGHT).map_err(|e| fail(e.to_string()))
}

/// Averages each `s`×`s` block of an RGB image of `(w·s)`×`(h·s)` pixels.
fn downsample(src: &[u8], w: usize, h: usize, s: usize) -> Vec<u8> {
    let src_w = w * s;
    let mut out = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                let mut sum = 0u32;
                for dy in 0..s {
                    for dx in 0..s {
                        sum += u32::from(src[((y * s + dy) * src_w + x * s + dx) * 3 + c]);
                    }
                }
                out[(y * w + x) * 3 + c] = ((sum + (s * s / 2) as u32) / (s * s) as u32) as u8;
            }
        }
    }
    out
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

/// How values map onto an axis: linear, or logarithmic with a base.
#[derive(Clone, Copy)]
enum Scale {
    Linear,
    Log(f64),
}

impl Scale {
    fn forward(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log(base) => v.log(base),
        }
    }

    fn can_show(self, v: f64) -> bool {
        v.is_finite() && (matches!(self, Scale::Linear) || v > 0.0)
    }

    /// The label of a tick at axis position `t` with tick spacing `step`.
    fn label(self, t: f64, step: f64) -> String {
        match self {
            Scale::Linear => format_linear(t, step),
            Scale::Log(base) => {
                let v = base.powf(t);
                let whole = t.fract() == 0.0;
                if whole && (1.0..9.0e15).contains(&v) && (base != 10.0 || t <= 6.0) {
                    format!("{v:.0}")
                } else if whole && base == 10.0 {
                    format!("1e{t}")
                } else {
                    format_significant(v)
                }
            }
        }
    }
}

/// One provider's points in axis space (`x`, value, min, max), sorted by x;
/// `None` where the point failed or cannot be shown on the axis.
type Series = Vec<Option<(f64, f64, f64, f64)>>;

fn series(report: &Report, p: usize, xs: Scale, ys: Scale) -> Series {
    let mut points: Vec<(f64, Option<Measurement>)> = report.column(p).map(|(x, m)| (x.as_f64(), m)).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
        .into_iter()
        .map(|(x, m)| {
            let m = m.filter(|m| ys.can_show(m.value))?;
            let (lo, hi) =
                (if ys.can_show(m.min) { m.min } else { m.value }, if ys.can_show(m.max) { m.max } else { m.value });
            Some((xs.forward(x), ys.forward(m.value), ys.forward(lo), ys.forward(hi)))
        })
        .collect()
}

/// The runs of consecutive present points.
fn segments(series: &Series) -> Vec<Vec<(f64, f64, f64, f64)>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for p in series {
        match p {
            Some(p) => cur.push(*p),
            None if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            None => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// One axis of the chart in axis space (values already through its
/// [`Scale`]): its range, tick positions and tick labels.
struct AxisCoord {
    range: Range<f64>,
    ticks: Vec<f64>,
    step: f64,
    scale: Scale,
}

impl Ranged for AxisCoord {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let t = if span > 0.0 { (value - self.range.start) / span } else { 0.5 };
        (f64::from(limit.0) + t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold grid lines at the ticks; no light lines.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

impl ValueFormatter<f64> for AxisCoord {
    fn format(value: &f64) -> String {
        format_significant(*value)
    }

    fn format_ext(&self, value: &f64) -> String {
        self.scale.label(*value, self.step)
    }
}

/// An axis with some room around the data `lo..=hi` (axis space) and its
/// ticks, spaced at least `min_step` apart on a linear scale.
fn axis(lo: f64, hi: f64, scale: Scale, from_zero: bool, min_step: f64) -> AxisCoord {
    let (mut lo, mut hi) = (lo, hi);
    if from_zero && lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if matches!(scale, Scale::Log(_)) { 0.5 } else { (hi.abs() * 0.1).max(1.0) };
        lo -= if from_zero && lo == 0.0 { 0.0 } else { pad };
        hi += pad;
    }
    let span = hi - lo;
    let lo = if from_zero && lo == 0.0 { 0.0 } else { lo - span * 0.04 };
    let hi = hi + span * 0.06;
    let (ticks, step) = match scale {
        // Whole powers of the base when there are at least two of them.
        Scale::Log(_) if hi.floor() - lo.ceil() >= 1.0 => {
            let (first, last) = (lo.ceil(), hi.floor());
            let step = ((last - first) / 10.0).ceil().max(1.0);
            let n = ((last - first) / step).floor() as usize;
            ((0..=n).map(|i| first + i as f64 * step).collect(), step)
        }
        _ => nice_ticks(lo, hi, 8, min_step),
    };
    AxisCoord { range: lo..hi, ticks, step, scale }
}

/// About `target` evenly spaced round tick positions within `lo..=hi`, and
/// their spacing (1, 2, 2.5 or 5 times a power of ten, at least `min_step`).
fn nice_ticks(lo: f64, hi: f64, target: usize, min_step: f64) -> (Vec<f64>, f64) {
    let raw = ((hi - lo) / target.max(1) as f64).max(min_step);
    if !(raw.is_finite() && raw > 0.0) {
        return (vec![lo], 1.0);
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let (first, last) = ((lo / step).ceil() as i64, (hi / step).floor() as i64);
    ((first..=last).map(|i| i as f64 * step).collect(), step)
}

/// A tick label with as many decimals as the tick spacing needs.
fn format_linear(v: f64, step: f64) -> String {
    let mut decimals = (-step.log10().floor()).max(0.0) as usize;
    if (step / 10f64.powf(step.log10().floor()) - 2.5).abs() < 1e-9 {
        decimals += 1;
    }
    let s = format!("{v:.decimals$}");
    // Avoid "-0".
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// Three significant digits, without trailing zeros.
fn format_significant(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let decimals = (2.0 - v.abs().log10().floor()).clamp(0.0, 12.0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Splits a polyline into the visible pieces of a dash pattern (`on, off,
/// on, off, ...` lengths in pixels, all positive); an empty pattern is solid.
fn dash(points: &[(f64, f64)], pattern: &[f64]) -> Vec<Vec<(f64, f64)>> {
    if pattern.is_empty() || pattern.iter().any(|l| l.is_nan() || *l <= 0.0) || points.len() < 2 {
        return vec![points.to_vec()];
    }
    let on = |i: usize| i.is_multiple_of(2);
    let mut out = Vec::new();
    let mut cur = vec![points[0]];
    let (mut i, mut left) = (0, pattern[0]);
    for w in points.windows(2) {
        let ((ax, ay), (bx, by)) = (w[0], w[1]);
        let len = (bx - ax).hypot(by - ay);
        let mut t = 0.0;
        while len - t > left {
            t += left;
            let p = (ax + (bx - ax) * t / len, ay + (by - ay) * t / len);
            if on(i) {
                cur.push(p);
                out.push(std::mem::take(&mut cur));
            } else {
                cur = vec![p];
            }
            i = (i + 1) % pattern.len();
            left = pattern[i];
        }
        left -= len - t;
        if on(i) {
            cur.push((bx, by));
        }
    }
    if on(i) && cur.len() >= 2 {
        out.push(cur);
    }
    out
}

/// The dash pattern of a line style, in multiples of the line width.
fn dash_pattern(style: LineStyle) -> &'static [f64] {
    match style {
        LineStyle::Solid => &[],
        LineStyle::Dashed => &[3.7, 1.6],
        LineStyle::Dotted => &[1.0, 1.65],
        LineStyle::DashDot => &[6.4, 1.6, 1.0, 1.6],
    }
}

fn rgb(c: crate::Color) -> RGBColor {
    RGBColor(c.r, c.g, c.b)
}

/// Draws a provider's line (in its dash pattern) through pixel points.
fn draw_line<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    points: &[(f64, f64)],
    color: RGBColor,
    style: LineStyle,
    width: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let pattern: Vec<f64> = dash_pattern(style).iter().map(|l| l * width).collect();
    for piece in dash(points, &pattern) {
        let px: Vec<(i32, i32)> = piece.iter().map(|&(x, y)| (x.round() as i32, y.round() as i32)).collect();
        root.draw(&PathElement::new(px, color.stroke_width(width.round().max(1.0) as u32)))?;
    }
    Ok(())
}

/// Draws the whole chart; `s` scales every size (2 for the supersampled PNG).
fn draw<DB: DrawingBackend>(
    report: &Report,
    root: &DrawingArea<DB, Shift>,
    s: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let b = report.benchmark();
    let px = |v: f64| (v * s).round() as u32;
    let xs = if b.x_log { Scale::Log(2.0) } else { Scale::Linear };
    let ys = if b.y_log { Scale::Log(10.0) } else { Scale::Linear };
    let all: Vec<Series> = (0..b.line_vals.len()).map(|p| series(report, p, xs, ys)).collect();

    // Axis ranges: all x values, and every shown value and spread.
    let xt: Vec<f64> = b.x_vals.iter().map(|x| xs.forward(x.as_f64())).collect();
    let (xlo, xhi) = xt.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let ys_all = all.iter().flatten().flatten().flat_map(|&(_, v, lo, hi)| [v, lo, hi]);
    let (ylo, yhi) = ys_all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let has_data = ylo <= yhi;
    // With no data, an arbitrary unit range (1..10 on a log axis).
    let (ylo, yhi) = if has_data { (ylo, yhi) } else { (0.0, 1.0) };
    // Integer x values (sizes) get integer ticks.
    let x_min_step = if b.x_vals.iter().all(|x| matches!(x, crate::XVal::Int(_))) { 1.0 } else { 0.0 };
    let x_axis = axis(xlo, xhi, xs, false, x_min_step);
    let y_axis = axis(ylo, yhi, ys, matches!(ys, Scale::Linear), 0.0);

    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(&b.plot_name, (FONT, 24.0 * s).into_font())
        .margin(px(18.0))
        .x_label_area_size(px(58.0))
        .y_label_area_size(px(78.0))
        .build_cartesian_2d(x_axis, y_axis)?;
    chart
        .configure_mesh()
        .x_desc(b.x_names[0].as_str())
        .y_desc(b.ylabel.as_str())
        .bold_line_style(RGBColor(225, 225, 225).stroke_width(px(1.0)))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.stroke_width(px(1.0)))
        .set_all_tick_mark_size(px(5.0))
        .label_style((FONT, 15.0 * s).into_font())
        .axis_desc_style((FONT, 18.0 * s).into_font())
        .draw()?;

    let to_px = |x: f64, y: f64| {
        let (u, v) = chart.backend_coord(&(x, y));
        (f64::from(u), f64::from(v))
    };
    let line_w = 2.0 * s;
    let mut drawn: Vec<Vec<(f64, f64)>> = Vec::new(); // pixel polylines, for placing the legend
                                                      // The min–max spreads first, so that no band covers another provider's line.
    for (p, series) in all.iter().enumerate() {
        let color = rgb(b.style(p).0);
        for seg in segments(series) {
            // A shaded band, or an error bar for a lone point.
            let upper: Vec<(f64, f64)> = seg.iter().map(|&(x, _, _, hi)| to_px(x, hi)).collect();
            let lower: Vec<(f64, f64)> = seg.iter().map(|&(x, _, lo, _)| to_px(x, lo)).collect();
            if seg.len() > 1 {
                let band: Vec<(i32, i32)> = upper
                    .iter()
                    .chain(lower.iter().rev())
                    .map(|&(x, y)| (x.round() as i32, y.round() as i32))
                    .collect();
                root.draw(&Polygon::new(band, color.mix(0.14).filled()))?;
            } else if upper[0] != lower[0] {
                let ((x, top), (_, bottom)) = (upper[0], lower[0]);
                let cap = 4.0 * s;
                for path in [
                    vec![(x, top), (x, bottom)],
                    vec![(x - cap, top), (x + cap, top)],
                    vec![(x - cap, bottom), (x + cap, bottom)],
                ] {
                    draw_line(root, &path, color, LineStyle::Solid, s)?;
                }
            }
            drawn.extend([upper, lower]);
        }
    }
    // Then the lines, broken where points are missing, with a marker per point.
    for (p, series) in all.iter().enumerate() {
        let (color, style) = b.style(p);
        let color = rgb(color);
        for seg in segments(series) {
            let line: Vec<(f64, f64)> = seg.iter().map(|&(x, v, _, _)| to_px(x, v)).collect();
            draw_line(root, &line, color, style, line_w)?;
            for &(x, y) in &line {
                root.draw(&Circle::new((x.round() as i32, y.round() as i32), px(3.0), color.filled()))?;
            }
            drawn.push(line);
        }
    }

    let (area_x, area_y) = chart.plotting_area().get_pixel_range();
    if !has_data {
        let style = (FONT, 18.0 * s).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        let center = ((area_x.start + area_x.end) / 2, (area_y.start + area_y.end) / 2);
        root.draw(&Text::new("no data: every point failed", center, style))?;
    }
    draw_legend(report, root, (area_x, area_y), &drawn, s)
}

/// Draws the legend in the corner of the plotting area that hides the
/// fewest drawn points.
fn draw_legend<DB: DrawingBackend>(
    report: &Report,
    root: &DrawingArea<DB, Shift>,
    (area_x, area_y): (Range<i32>, Range<i32>),
    drawn: &[Vec<(f64, f64)>],
    s: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let b = report.benchmark();
    let font: TextStyle<'_> = (FONT, 15.0 * s).into_font().color(&BLACK);
    let failures = report.failures();
    let labels: Vec<String> = b
        .line_vals
        .iter()
        .zip(&b.line_names)
        .map(|(val, name)| match failures.iter().filter(|f| &f.provider == val).count() {
            0 => name.clone(),
            n => format!("{name} ({n} missing)"),
        })
        .collect();
    let mut text_w = 0u32;
    for label in &labels {
        text_w = text_w.max(root.estimate_text_size(label, &font)?.0);
    }
    let (pad, sample, gap, row) = (10.0 * s, 36.0 * s, 8.0 * s, 24.0 * s);
    let box_w = pad + sample + gap + f64::from(text_w) + pad;
    let box_h = pad * 2.0 + row * labels.len() as f64 - 4.0 * s;
    let inset = 12.0 * s;
    let (l, r) = (f64::from(area_x.start) + inset, f64::from(area_x.end) - inset - box_w);
    let (t, bot) = (f64::from(area_y.start) + inset, f64::from(area_y.end) - inset - box_h);
    // Upper left, upper right, lower right, lower left: the first with the
    // fewest points of the lines and bands under it.
    let corners = [(l, t), (r.max(l), t), (r.max(l), bot.max(t)), (l, bot.max(t))];
    let hidden = |(x0, y0): (f64, f64)| {
        let inside = |(x, y): (f64, f64)| x >= x0 && x <= x0 + box_w && y >= y0 && y <= y0 + box_h;
        let mut n = 0usize;
        for line in drawn {
            n += line.iter().filter(|p| inside(**p)).count() * 8;
            for w in line.windows(2) {
                let ((ax, ay), (bx, by)) = (w[0], w[1]);
                let steps = ((bx - ax).hypot(by - ay) / (4.0 * s)).ceil().max(1.0) as usize;
                n += (1..steps)
                    .filter(|k| {
                        inside((ax + (bx - ax) * *k as f64 / steps as f64, ay + (by - ay) * *k as f64 / steps as f64))
                    })
                    .count();
            }
        }
        n
    };
    let (x0, y0) = corners.iter().copied().min_by_key(|c| hidden(*c)).unwrap_or((l, t));
    let corner = |x: f64, y: f64| (x.round() as i32, y.round() as i32);
    root.draw(&Rectangle::new([corner(x0, y0), corner(x0 + box_w, y0 + box_h)], WHITE.mix(0.9).filled()))?;
    root.draw(&Rectangle::new(
        [corner(x0, y0), corner(x0 + box_w, y0 + box_h)],
        RGBColor(190, 190, 190).stroke_width((s.round() as u32).max(1)),
    ))?;
    for (p, label) in labels.iter().enumerate() {
        let (color, style) = b.style(p);
        let color = rgb(color);
        let yc = y0 + pad + row * p as f64 + (row - 4.0 * s) / 2.0;
        let (sx0, sx1) = (x0 + pad, x0 + pad + sample);
        root.draw(&Rectangle::new([corner(sx0, yc - 5.0 * s), corner(sx1, yc + 5.0 * s)], color.mix(0.18).filled()))?;
        draw_line(root, &[(sx0, yc), (sx1, yc)], color, style, 2.0 * s)?;
        root.draw(&Circle::new(corner((sx0 + sx1) / 2.0, yc), (3.0 * s).round() as u32, color.filled()))?;
        let text = font.clone().pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(label.as_str(), corner(sx1 + gap, yc), text))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks_are_round_and_cover_the_range() {
        let (t, step) = nice_ticks(0.0, 283.0, 8, 0.0);
        assert_eq!(step, 50.0);
        assert_eq!(t, [0.0, 50.0, 100.0, 150.0, 200.0, 250.0]);
        let (t, step) = nice_ticks(0.1, 0.34, 8, 0.0);
        assert_eq!(step, 0.05);
        assert_eq!(t.len(), 5);
        assert_eq!(format_linear(t[0], step), "0.10");
        assert_eq!(format_linear(2.5, 2.5), "2.5");
        assert_eq!(format_linear(-0.0, 1.0), "0");
        assert_eq!(nice_ticks(1.0, 1.0, 8, 0.0).0, [1.0]);
        // Integer axes never tick between integers.
        assert_eq!(nice_ticks(0.9, 2.1, 8, 1.0), (vec![1.0, 2.0], 1.0));
    }

    #[test]
    fn log_axes_tick_at_powers() {
        let a = axis(7.0, 13.0, Scale::Log(2.0), false, 0.0);
        assert!(a.range.start < 7.0 && a.range.end > 13.0);
        assert_eq!((a.ticks.first(), a.ticks.last(), a.step), (Some(&7.0), Some(&13.0), 1.0));
        assert_eq!(a.format_ext(&10.0), "1024");
        assert_eq!(Scale::Log(2.0).label(13.0, 1.0), "8192");
        assert_eq!(Scale::Log(10.0).label(-3.0, 1.0), "1e-3");
        assert_eq!(Scale::Log(10.0).label(2.0, 1.0), "100");
        assert_eq!(Scale::Log(10.0).label(7.0, 1.0), "1e7");
        assert_eq!(Scale::Log(2.0).label(-2.0, 1.0), "0.25");
        assert_eq!(Scale::Log(2.0).label(0.5, 0.5), "1.41");
        assert_eq!(format_significant(1234.6), "1235");
        assert_eq!(format_significant(0.0), "0");
    }

    #[test]
    fn linear_y_axis_starts_at_zero_for_positive_data() {
        let a = axis(20.0, 280.0, Scale::Linear, true, 0.0);
        assert_eq!(a.range.start, 0.0);
        assert!(a.range.end > 280.0);
        assert_eq!(a.ticks[0], 0.0);
        assert_eq!((a.map(&0.0, (100, 0)), a.map(&a.range.end, (100, 0))), (100, 0));
        // A constant series still gets a non-empty range.
        let a = axis(5.0, 5.0, Scale::Linear, false, 0.0);
        assert!(a.range.start < 5.0 && a.range.end > 5.0);
    }

    #[test]
    fn dash_splits_a_polyline_by_length() {
        let pieces = dash(&[(0.0, 0.0), (10.0, 0.0)], &[3.0, 2.0]);
        assert_eq!(pieces, [vec![(0.0, 0.0), (3.0, 0.0)], vec![(5.0, 0.0), (8.0, 0.0)]]);
        // Dashes continue around corners.
        let pieces = dash(&[(0.0, 0.0), (2.0, 0.0), (2.0, 2.0)], &[3.0, 10.0]);
        assert_eq!(pieces, [vec![(0.0, 0.0), (2.0, 0.0), (2.0, 1.0)]]);
        // Solid, degenerate and invalid patterns keep the line whole.
        assert_eq!(dash(&[(0.0, 0.0), (1.0, 1.0)], &[]).len(), 1);
        assert_eq!(dash(&[(0.0, 0.0), (1.0, 1.0)], &[0.0, 1.0]).len(), 1);
        for style in [LineStyle::Dashed, LineStyle::Dotted, LineStyle::DashDot] {
            assert!(dash_pattern(style).iter().all(|l| *l > 0.0));
        }
    }

    #[test]
    fn downsample_averages_blocks() {
        let src = [0u8, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255];
        assert_eq!(downsample(&src, 1, 1, 2), [191, 191, 191]);
    }
}
