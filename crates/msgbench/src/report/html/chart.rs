//! The two chart shapes the report draws, with plotters' SVG backend:
//! x/y charts (lines and points, linear or log axes) and dot plots (one
//! line per category, values on a linear or log axis).
//!
//! Data marks are drawn in [`PALETTE`] colours and reference marks in
//! [`REFERENCE`] greys; after drawing, every element in a data colour gets
//! `class="data-series"` and every element in a reference grey
//! `class="reference"`, so a test (or a reader's stylesheet) can find them.
//! Text in the SVG is plain `<text>` (no font files: the browser lays it
//! out), escaped by plotters.

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

/// Size of every chart, pixels (the page scales it to its width).
pub const SIZE: (u32, u32) = (900, 400);

/// Size of a chart in a grid of small multiples (two to a row).
pub const SMALL: (u32, u32) = (470, 330);

/// Colours of data series, in order (never black or grey).
pub const PALETTE: [(u8, u8, u8); 20] = [
    (0x1F, 0x77, 0xB4),
    (0xD6, 0x27, 0x28),
    (0x2C, 0xA0, 0x2C),
    (0xFF, 0x7F, 0x0E),
    (0x94, 0x67, 0xBD),
    (0x8C, 0x56, 0x4B),
    (0xE3, 0x77, 0xC2),
    (0x17, 0xBE, 0xCF),
    (0xBC, 0xBD, 0x22),
    (0x0B, 0x3D, 0x91),
    (0x6B, 0x8E, 0x23),
    (0xB8, 0x86, 0x0B),
    (0x8B, 0x00, 0x8B),
    (0x00, 0x80, 0x80),
    (0xFF, 0x45, 0x00),
    (0x48, 0x3D, 0x8B),
    (0x9A, 0xCD, 0x32),
    (0xC7, 0x15, 0x85),
    (0x46, 0x82, 0xB4),
    (0x80, 0x00, 0x00),
];

/// Greys of reference marks (published figures, tolerance bands).
pub const REFERENCE: [(u8, u8, u8); 3] =
    [(0x55, 0x55, 0x55), (0x99, 0x99, 0x99), (0xD8, 0xD8, 0xD8)];

/// Colour of a floor line (the machine's bare round trip measured in the
/// same run): near black, neither a data colour nor a reference grey.
pub const FLOOR: (u8, u8, u8) = (0x11, 0x11, 0x11);

/// How a series' points are marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A triangle.
    Triangle,
    /// A cross.
    Cross,
    /// A filled square.
    Square,
    /// No marker (a line only).
    None,
}

/// One series: data (a palette colour) or reference (a grey).
#[derive(Debug, Clone)]
pub struct Series {
    /// Shown in the legend (escaped by the page).
    pub label: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Colour: an index into [`PALETTE`], or into [`REFERENCE`] when
    /// `reference` is set.
    pub colour: usize,
    /// A reference mark rather than data.
    pub reference: bool,
    /// The run's floor (drawn in [`FLOOR`], tagged `class="floor"`).
    pub floor: bool,
    /// Join the points with a line.
    pub line: bool,
    /// Draw that line dashed (unpinned beside pinned, p99 beside p50).
    pub dashed: bool,
    /// How points are marked.
    pub marker: Marker,
}

impl Series {
    /// A data series in palette colour `colour`, points joined.
    pub fn data(label: String, points: Vec<(f64, f64)>, colour: usize) -> Series {
        Series {
            label,
            points,
            colour,
            reference: false,
            floor: false,
            line: true,
            dashed: false,
            marker: Marker::Circle,
        }
    }

    /// A reference series in grey `grey`, marked with crosses, unjoined.
    pub fn reference(label: String, points: Vec<(f64, f64)>, grey: usize) -> Series {
        Series {
            label,
            points,
            colour: grey,
            reference: true,
            floor: false,
            line: false,
            dashed: false,
            marker: Marker::Cross,
        }
    }

    /// A floor line through `points` (two ends of a level), dotted, no
    /// markers; its label should say "floor".
    pub fn floor(label: String, points: Vec<(f64, f64)>) -> Series {
        Series {
            label,
            points,
            colour: 0,
            reference: true,
            floor: true,
            line: true,
            dashed: true,
            marker: Marker::None,
        }
    }

    /// How its line is drawn, for the legend.
    pub fn line_style(&self) -> Line {
        match (self.line, self.dashed) {
            (false, _) => Line::None,
            (true, false) => Line::Solid,
            (true, true) => Line::Dashed,
        }
    }

    /// Its colour.
    pub fn rgb(&self) -> RGBColor {
        let (r, g, b) = if self.floor {
            FLOOR
        } else if self.reference {
            REFERENCE[self.colour % REFERENCE.len()]
        } else {
            PALETTE[self.colour % PALETTE.len()]
        };
        RGBColor(r, g, b)
    }

    /// Its colour as `#RRGGBB`.
    pub fn hex(&self) -> String {
        hex(self.rgb())
    }
}

/// A colour as plotters writes it in SVG: `#RRGGBB`, upper case.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// No line (points only).
    None,
    /// A solid line.
    Solid,
    /// A dashed line.
    Dashed,
}

/// One legend entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Colour, `#RRGGBB`.
    pub colour: String,
    /// Marker of the points.
    pub marker: Marker,
    /// Line style.
    pub line: Line,
    /// Label (escaped by the page).
    pub label: String,
}

/// A drawn chart: its title, the SVG and the legend entries.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Heading above the chart.
    pub title: String,
    /// The SVG element, data marks tagged.
    pub svg: String,
    /// Legend: one entry per labelled series.
    pub legend: Vec<Entry>,
    /// Drawn at [`SMALL`], for a grid of small multiples.
    pub small: bool,
}

/// An x/y chart to draw.
#[derive(Debug, Clone)]
pub struct XyPlot {
    /// Heading.
    pub title: String,
    /// x axis description.
    pub x_desc: String,
    /// y axis description.
    pub y_desc: String,
    /// Logarithmic x axis.
    pub x_log: bool,
    /// Logarithmic y axis.
    pub y_log: bool,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Draw at [`SMALL`] (one of a grid of small multiples), else [`SIZE`].
    pub small: bool,
}

/// An anyhow error from a plotters error.
pub fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// The range of `vals`, widened a little (and kept positive on a log axis).
pub fn span(vals: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let vals: Vec<f64> = vals
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        (
            (lo - pad).min(if lo >= 0.0 { 0.0 } else { lo - pad }),
            hi + pad,
        )
    }
}

/// A value as an axis label: 1.2k, 3.4M, 0.5.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (d, s) = match a {
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    let t = if x.fract().abs() < 1e-9 || x.abs() >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    format!("{t}{s}")
}

/// Draws `p`; `None` when it has no data points.
pub fn xy(p: &XyPlot) -> Result<Option<Chart>> {
    if !p
        .series
        .iter()
        .any(|s| !s.reference && !s.points.is_empty())
    {
        return Ok(None);
    }
    let all = || p.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = span(all().map(|q| q.0), p.x_log);
    let (y0, y1) = span(all().map(|q| q.1), p.y_log);
    let svg = match (p.x_log, p.y_log) {
        (false, false) => draw_xy(p, x0..x1, y0..y1),
        (true, false) => draw_xy(p, (x0..x1).log_scale(), y0..y1),
        (false, true) => draw_xy(p, x0..x1, (y0..y1).log_scale()),
        (true, true) => draw_xy(p, (x0..x1).log_scale(), (y0..y1).log_scale()),
    }?;
    let dashes: Vec<bool> = p
        .series
        .iter()
        .filter(|s| s.line && s.points.len() > 1)
        .map(|s| s.dashed)
        .collect();
    Ok(Some(Chart {
        title: p.title.clone(),
        svg: dash_lines(&tag_marks(&svg), &dashes),
        legend: legend(&p.series),
        small: p.small,
    }))
}

/// The legend of `series`, one entry per label.
pub fn legend(series: &[Series]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for s in series {
        if !s.label.is_empty() && !out.iter().any(|e| e.label == s.label) {
            out.push(Entry {
                colour: s.hex(),
                marker: s.marker,
                line: s.line_style(),
                label: s.label.clone(),
            });
        }
    }
    out
}

/// Dashes the series lines of `svg` whose flag in `dashes` is set: the
/// tagged `<polyline>`s are the series' lines, in the order drawn (one
/// per series with a line and two points or more).
pub fn dash_lines(svg: &str, dashes: &[bool]) -> String {
    let mut flags = dashes.iter();
    let mut out = String::with_capacity(svg.len() + 64 * dashes.len());
    for line in svg.lines() {
        let series_line = line.starts_with("<polyline class=\"");
        match (series_line, series_line.then(|| flags.next()).flatten()) {
            (true, Some(true)) => {
                out.push_str("<polyline stroke-dasharray=\"7 4\"");
                out.push_str(&line["<polyline".len()..]);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn draw_xy<X, Y>(p: &XyPlot, x: X, y: Y) -> Result<String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let size = if p.small { SMALL } else { SIZE };
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x, y)
            .map_err(err)?;
        // Small multiples are shown near their drawn size: larger text.
        let text = if p.small { 14 } else { 12 };
        chart
            .configure_mesh()
            .x_desc(p.x_desc.as_str())
            .y_desc(p.y_desc.as_str())
            .label_style(("sans-serif", text))
            .axis_desc_style(("sans-serif", text))
            .x_label_formatter(&|v| short(*v))
            .y_label_formatter(&|v| short(*v))
            .light_line_style(RGBColor(0xF0, 0xF0, 0xF0))
            .draw()
            .map_err(err)?;
        for s in &p.series {
            let c = s.rgb();
            if s.line && s.points.len() > 1 {
                let style = c.stroke_width(2);
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), style))
                    .map_err(err)?;
            }
            draw_markers(&mut chart, s, c)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_markers<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    s: &Series,
    c: RGBColor,
) -> Result<()>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let pts = s.points.iter().copied();
    let r = match s.marker {
        Marker::Circle => chart
            .draw_series(pts.map(|q| Circle::new(q, 4, c.filled())))
            .map(|_| ()),
        Marker::Triangle => chart
            .draw_series(pts.map(|q| TriangleMarker::new(q, 5, c.filled())))
            .map(|_| ()),
        Marker::Cross => chart
            .draw_series(pts.map(|q| Cross::new(q, 5, c.stroke_width(2))))
            .map(|_| ()),
        Marker::Square => chart
            .draw_series(
                pts.map(|q| EmptyElement::at(q) + Rectangle::new([(-4, -4), (4, 4)], c.filled())),
            )
            .map(|_| ()),
        Marker::None => Ok(()),
    };
    r.map_err(|e| err(format!("{e:?}")))
}

/// Adds `class="data-series"` to every element drawn in a palette colour,
/// `class="reference"` to every one in a reference grey and
/// `class="floor"` to every one in the floor colour; drops the
/// `xmlns` attribute (inline SVG in HTML needs none, and the page then
/// holds no address at all).
pub fn tag_marks(svg: &str) -> String {
    let data: Vec<String> = PALETTE
        .iter()
        .map(|&(r, g, b)| hex(RGBColor(r, g, b)))
        .collect();
    let refs: Vec<String> = REFERENCE
        .iter()
        .map(|&(r, g, b)| hex(RGBColor(r, g, b)))
        .collect();
    let floor = [hex(RGBColor(FLOOR.0, FLOOR.1, FLOOR.2))];
    let paints = |line: &str, set: &[String]| {
        set.iter().any(|c| {
            line.contains(&format!("stroke=\"{c}\"")) || line.contains(&format!("fill=\"{c}\""))
        })
    };
    let mut out = String::with_capacity(svg.len() + 1024);
    for line in svg
        .replace(" xmlns=\"http://www.w3.org/2000/svg\"", "")
        .lines()
    {
        let class = if !line.starts_with('<') || line.starts_with("<text") {
            None
        } else if paints(line, &data) {
            Some("data-series")
        } else if paints(line, &refs) {
            Some("reference")
        } else if paints(line, &floor) {
            Some("floor")
        } else {
            None
        };
        match (class, line.find(' ')) {
            (Some(c), Some(i)) => {
                out.push_str(&line[..i]);
                out.push_str(&format!(" class=\"{c}\""));
                out.push_str(&line[i..]);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_xy_chart_tags_its_data_marks_and_holds_no_address() {
        let p = XyPlot {
            title: "t".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            x_log: false,
            y_log: true,
            series: vec![
                Series::data("a".into(), vec![(1.0, 10.0), (2.0, 100.0)], 0),
                Series::reference("r".into(), vec![(1.0, 50.0)], 0),
            ],
            small: false,
        };
        let c = xy(&p).unwrap().unwrap();
        assert!(c.svg.contains("class=\"data-series\""), "{}", c.svg);
        assert!(c.svg.contains("class=\"reference\""), "{}", c.svg);
        assert!(!c.svg.contains("http"), "{}", c.svg);
        assert_eq!(c.legend.len(), 2);
    }

    #[test]
    fn a_chart_without_data_is_not_drawn() {
        let p = XyPlot {
            title: "t".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            x_log: false,
            y_log: false,
            series: vec![Series::reference("r".into(), vec![(1.0, 1.0)], 0)],
            small: false,
        };
        assert!(xy(&p).unwrap().is_none());
    }

    #[test]
    fn only_the_dashed_series_line_is_dashed_and_a_floor_is_tagged() {
        let mut unpinned = Series::data("u".into(), vec![(1.0, 5.0), (2.0, 6.0)], 0);
        unpinned.dashed = true;
        let p = XyPlot {
            title: "t".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            x_log: false,
            y_log: false,
            series: vec![
                Series::data("p".into(), vec![(1.0, 10.0), (2.0, 20.0)], 0),
                unpinned,
                Series::floor("floor".into(), vec![(1.0, 2.0), (2.0, 2.0)]),
            ],
            small: true,
        };
        let c = xy(&p).unwrap().unwrap();
        let lines: Vec<&str> = c
            .svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(" class="))
            .collect();
        assert_eq!(lines.len(), 3, "the series' lines, not the axes: {}", c.svg);
        assert!(!lines[0].contains("dasharray"), "{}", lines[0]);
        assert!(lines[1].contains("stroke-dasharray"), "{}", lines[1]);
        assert!(lines[2].contains("class=\"floor\""), "{}", lines[2]);
        assert!(c.svg.contains("width=\"470\""), "small size");
        let styles: Vec<Line> = c.legend.iter().map(|e| e.line).collect();
        assert_eq!(styles, [Line::Solid, Line::Dashed, Line::Dashed]);
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(1500.0), "1.5k");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(12.0), "12");
    }
}
