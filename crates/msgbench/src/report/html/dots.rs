//! Dot plots: one line per category (a floor figure, an rtos test, a
//! validate check), each run's value a dot on it, references as grey
//! crosses and tolerance bands as grey bars; or, with `bars`, a bar chart:
//! each value a bar from zero (what a chart with one value on its x axis
//! becomes, e.g. the broker's arrangements at one size).

use anyhow::Result;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::chart::{err, legend, short, span, tag_marks, Chart, Series, REFERENCE};

/// A dot plot to draw.
#[derive(Debug, Clone)]
pub struct DotPlot {
    /// Heading.
    pub title: String,
    /// Value axis description.
    pub x_desc: String,
    /// Logarithmic value axis.
    pub x_log: bool,
    /// The categories, top to bottom (drawn through plotters, escaped).
    pub categories: Vec<String>,
    /// Series: points are (value, category index).
    pub series: Vec<Series>,
    /// Bands: (category index, low, high), drawn in the lightest grey.
    pub bands: Vec<(usize, f64, f64)>,
    /// A vertical reference line (e.g. ratio 1).
    pub rule: Option<f64>,
    /// Draw each data value as a bar from zero instead of a dot.
    pub bars: bool,
}

/// Draws `p`; `None` when it has no data points.
pub fn dots(p: &DotPlot) -> Result<Option<Chart>> {
    if p.categories.is_empty()
        || !p
            .series
            .iter()
            .any(|s| !s.reference && !s.points.is_empty())
    {
        return Ok(None);
    }
    let vals = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.0))
        .chain(p.bands.iter().flat_map(|b| [b.1, b.2]))
        .chain(p.rule);
    let (x0, x1) = span(vals, p.x_log);
    // Bars start at zero: on a linear axis only.
    let svg = if p.x_log && !p.bars {
        draw(p, (x0..x1).log_scale())
    } else {
        draw(p, x0..x1)
    }?;
    Ok(Some(Chart {
        title: p.title.clone(),
        svg: tag_marks(&svg),
        legend: legend(&p.series),
        small: false,
    }))
}

/// Height for `n` categories: room for each line, at least a small chart.
fn height(n: usize) -> u32 {
    (90 + 26 * n as u32).max(180)
}

fn draw<X>(p: &DotPlot, x: X) -> Result<String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let n = p.categories.len() as i32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, height(p.categories.len())))
            .into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(230)
            .build_cartesian_2d(x, (0..n - 1).into_segmented())
            .map_err(err)?;
        let label = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) => p.categories.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .x_desc(p.x_desc.as_str())
            .x_label_formatter(&|v| short(*v))
            .y_labels(p.categories.len() + 1)
            .y_label_formatter(&label)
            .light_line_style(RGBColor(0xF0, 0xF0, 0xF0))
            .draw()
            .map_err(err)?;
        let (r, g, b) = REFERENCE[2];
        let band = RGBColor(r, g, b).stroke_width(10);
        chart
            .draw_series(p.bands.iter().map(|&(i, lo, hi)| {
                let y = SegmentValue::CenterOf(i as i32);
                PathElement::new(vec![(lo, y.clone()), (hi, y)], band)
            }))
            .map_err(err)?;
        if let Some(v) = p.rule {
            let (r, g, b) = REFERENCE[1];
            let ends = [SegmentValue::Exact(0), SegmentValue::Last];
            chart
                .draw_series(std::iter::once(PathElement::new(
                    ends.iter().map(|y| (v, y.clone())).collect::<Vec<_>>(),
                    RGBColor(r, g, b).stroke_width(1),
                )))
                .map_err(err)?;
        }
        for s in &p.series {
            let c = s.rgb();
            let pts = s
                .points
                .iter()
                .map(|&(v, i)| (v, SegmentValue::CenterOf(i as i32)));
            if s.reference {
                chart
                    .draw_series(pts.map(|q| Cross::new(q, 6, c.stroke_width(2))))
                    .map_err(err)?;
            } else if p.bars {
                chart
                    .draw_series(pts.map(|(v, y)| {
                        PathElement::new(vec![(0.0, y.clone()), (v, y)], c.stroke_width(14))
                    }))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(pts.map(|q| Circle::new(q, 5, c.filled())))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}
