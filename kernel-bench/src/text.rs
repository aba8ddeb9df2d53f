//! Text in the plots, set in the embedded DejaVu Sans.
//!
//! [`Typeset`] wraps a plotters drawing backend and answers its text calls
//! itself: it measures labels with the real font metrics (so plotters sizes
//! the label areas to the text), and on bitmaps it rasterizes the glyphs with
//! ab_glyph, keeping each glyph's side bearing and kerning. (plotters' own
//! `ab_glyph` text drops the side bearings, so letters run together.) On SVG
//! the text stays `<text>` elements for the viewer to render.
//!
//! Sizes follow plotters' convention: a style of size `s` is set at an em of
//! `s / 1.24` pixels, which is the `font-size` plotters' SVG backend writes.

use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, GlyphId, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

/// DejaVu Sans 2.37; license in `assets/LICENSE-DejaVu.txt`.
static FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// The parsed embedded font, or `None` if it cannot be parsed (then SVG text
/// is measured roughly by plotters, and bitmaps report an error).
fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).ok()).as_ref()
}

/// The horizontal metrics of one line of text, in pixels.
struct Line {
    scale: PxScale,
    width: f32,
    ascent: f32,
    /// Negative: below the baseline.
    descent: f32,
}

fn measure(font: &FontRef<'static>, text: &str, size: f64) -> Option<Line> {
    let scale = font.pt_to_px_scale((size / 1.24) as f32)?;
    let scaled = font.as_scaled(scale);
    let mut width = 0.0;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            width += scaled.kern(p, id);
        }
        width += scaled.h_advance(id);
        prev = Some(id);
    }
    Some(Line { scale, width, ascent: scaled.ascent(), descent: scaled.descent() })
}

/// A drawing backend whose text is measured, and on bitmaps drawn, with the
/// embedded font; every other call goes to `inner` unchanged.
pub(crate) struct Typeset<DB> {
    inner: DB,
    /// Draw glyphs as pixels (bitmaps) rather than passing text on (SVG).
    rasterize: bool,
}

impl<DB: DrawingBackend> Typeset<DB> {
    /// Wraps a bitmap backend: text is drawn as anti-aliased pixels.
    pub(crate) fn raster(inner: DB) -> Self {
        Typeset { inner, rasterize: true }
    }

    /// Wraps a vector backend: text is measured here, drawn by `inner`.
    pub(crate) fn vector(inner: DB) -> Self {
        Typeset { inner, rasterize: false }
    }
}

impl<DB: DrawingBackend> DrawingBackend for Typeset<DB> {
    type ErrorType = DB::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        match font().and_then(|f| measure(f, text, style.size())) {
            Some(l) => Ok((l.width.ceil() as u32, (l.ascent - l.descent).ceil() as u32)),
            None => self.inner.estimate_text_size(text, style),
        }
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        let font = font();
        let line = font.and_then(|f| measure(f, text, style.size()));
        if !self.rasterize {
            return self.inner.draw_text(text, style, pos);
        }
        let (Some(font), Some(line)) = (font, line) else {
            return Err(DrawingErrorKind::FontError("the embedded DejaVu Sans font cannot be read".into()));
        };
        if color.alpha == 0.0 {
            return Ok(());
        }
        // The anchor, from the top-left corner of the unrotated text box.
        let height = line.ascent - line.descent;
        let anchor = style.anchor();
        let ax = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => line.width / 2.0,
            HPos::Right => line.width,
        };
        let ay = match anchor.v_pos {
            VPos::Top => 0.0,
            VPos::Center => height / 2.0,
            VPos::Bottom => height,
        };
        let transform = style.transform();
        let (w, h) = self.inner.get_size();
        let scaled = font.as_scaled(line.scale);
        let mut caret = 0.0;
        let mut prev: Option<GlyphId> = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                caret += scaled.kern(p, id);
            }
            let glyph = id.with_scale_and_position(line.scale, ab_glyph::point(caret - ax, line.ascent - ay));
            caret += scaled.h_advance(id);
            prev = Some(id);
            let Some(outline) = font.outline_glyph(glyph) else { continue };
            let bounds = outline.px_bounds();
            let mut result = Ok(());
            outline.draw(|gx, gy, coverage| {
                if result.is_err() || coverage <= 0.0 {
                    return;
                }
                // Pixel offset from the anchor, rotated about it.
                let (dx, dy) = transform.transform(bounds.min.x as i32 + gx as i32, bounds.min.y as i32 + gy as i32);
                let (x, y) = (pos.0 + dx, pos.1 + dy);
                if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                    let alpha = color.alpha * f64::from(coverage.min(1.0));
                    result = self.inner.draw_pixel((x, y), BackendColor { alpha, rgb: color.rgb });
                }
            });
            result?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_parses_and_measures() {
        let font = font().expect("embedded font");
        let wide = measure(font, "WWWW", 20.0).unwrap();
        let narrow = measure(font, "iiii", 20.0).unwrap();
        assert!(wide.width > 2.0 * narrow.width);
        assert!(wide.ascent > 0.0 && wide.descent < 0.0);
        assert_eq!(measure(font, "", 20.0).unwrap().width, 0.0);
    }
}
