//! Page images for a model that can look: one PDF page (or a region of it) rendered by
//! PDFium, or a picture, as a PNG of at most a given number of bytes.
//!
//! Rendering runs where extraction runs (the isolated worker, under its memory and time
//! limits): a request travels as [`ExtractOptions::render`](crate::ExtractOptions) and the
//! answer is one image object whose `data` is the PNG in base64. An image larger than the
//! budget is rendered again smaller — the scale times the square root of budget over size,
//! a little less — until it fits, and the answer says it was scaled. A page of text is
//! written as grey PNG (a third of the bytes of colour, nothing lost); colour stays colour.

use std::io::Cursor;

use base64::Engine as _;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::model::{ContentType, Structure};
use crate::objects::{ObjectSink, Place};
use crate::{DocumentKind, ExtractError, ExtractInput, Extraction, FileKind, Fragment};

/// What to render instead of extracting text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderRequest {
    /// 1-based page of a PDF (1 for a picture).
    pub page: u32,
    /// Dots per inch to start from (a PDF; a picture starts at its own size).
    pub dpi: u32,
    /// Only this part: `[x0, y0, x1, y1]` in whole PDF points from the page's bottom-left
    /// corner (a PDF), or in pixels from the top-left corner (a picture) — the systems of
    /// [`crate::Positions`].
    pub region: Option<[i64; 4]>,
    /// The PNG's largest size in bytes.
    pub max_bytes: u64,
}

/// The most pixels rendered at once (a 4 MiB-pixel page is ~16 MB of RGBA): a larger page
/// or region starts at a lower resolution.
pub const MAX_RENDER_PIXELS: f64 = 16_000_000.0;
/// The longest side of a rendering, in pixels: a page of degenerate size (a MediaBox
/// 99 999 996 points by 1) within [`MAX_RENDER_PIXELS`] would otherwise be a bitmap of
/// 100 million pixels by one.
pub const MAX_RENDER_SIDE: f64 = 16_384.0;
/// The highest resolution rendered.
pub const MAX_DPI: u32 = 600;
/// A side shorter than this many pixels shows nothing: the budget is too small.
const MIN_SIDE: u32 = 16;
/// Renderings tried before giving up on a budget.
const MAX_ATTEMPTS: usize = 12;
/// The largest picture decoded (pixels), and the memory its decoder may take.
const MAX_PICTURE_PIXELS: u64 = 100_000_000;
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

fn refused(reason: impl ToString) -> ExtractError {
    ExtractError::Malformed {
        format: "render".into(),
        reason: reason.to_string(),
    }
}

/// Pixels in RGBA order, row by row.
struct Raster {
    rgba: Vec<u8>,
    width: u32,
    height: u32,
}

/// A PNG and what it shows.
struct Png {
    bytes: Vec<u8>,
    width: u32,
    height: u32,
    grey: bool,
}

/// `raster` as a PNG, over white where it is transparent: grey when every pixel is, else RGB.
fn encode(raster: &mut Raster) -> Result<Png, ExtractError> {
    let (pixels, _) = raster.rgba.as_chunks_mut::<4>();
    for p in pixels.iter_mut() {
        let [r, g, b, a] = *p;
        if a < 255 {
            let over_white = |c: u8| {
                let (c, a) = (u16::from(c), u16::from(a));
                u8::try_from((c * a + 255 * (255 - a)) / 255).unwrap_or(255)
            };
            *p = [over_white(r), over_white(g), over_white(b), 255];
        }
    }
    let grey = pixels.iter().all(|[r, g, b, _]| r == g && g == b);
    let (data, color): (Vec<u8>, _) = if grey {
        (
            pixels.iter().map(|[r, ..]| *r).collect(),
            ExtendedColorType::L8,
        )
    } else {
        (
            pixels
                .iter()
                .flat_map(|[r, g, b, _]| [*r, *g, *b])
                .collect(),
            ExtendedColorType::Rgb8,
        )
    };
    let mut bytes = Vec::new();
    PngEncoder::new_with_quality(&mut bytes, CompressionType::Best, FilterType::Adaptive)
        .write_image(&data, raster.width, raster.height, color)
        .map_err(|e| refused(format!("PNG encoding: {e}")))?;
    Ok(Png {
        bytes,
        width: raster.width,
        height: raster.height,
        grey,
    })
}

/// Render at `scale` (of the starting size), then smaller until the PNG fits `max_bytes`.
/// The PNG and the scale it was made at.
fn fit(
    max_bytes: u64,
    mut scale: f64,
    mut render: impl FnMut(f64) -> Result<Raster, ExtractError>,
) -> Result<(Png, f64), ExtractError> {
    for _ in 0..MAX_ATTEMPTS {
        let mut raster = render(scale)?;
        let small = raster.width.min(raster.height) <= MIN_SIDE;
        let png = encode(&mut raster)?;
        drop(raster);
        let size = png.bytes.len() as u64;
        if size <= max_bytes {
            return Ok((png, scale));
        }
        if small {
            break;
        }
        // PNG size grows about as the pixel count: the side as its square root.
        scale *= ((max_bytes as f64 / size as f64).sqrt() * 0.9).clamp(0.05, 0.9);
    }
    Err(refused(format!(
        "no rendering fits in {max_bytes} bytes (one {MIN_SIDE} pixels wide would not show \
         anything): allow more bytes, or ask for a smaller region"
    )))
}

/// Render `request` of the file in `input` into one image object (see the module).
pub(crate) fn render(
    input: &ExtractInput<'_>,
    request: &RenderRequest,
) -> Result<Extraction, ExtractError> {
    let (png, mut meta) = match input.detected.kind {
        FileKind::Document(DocumentKind::Pdf) => render_pdf(input, request)?,
        FileKind::Image => render_picture(input.bytes, request)?,
        _ => {
            return Err(refused(format!(
                "{} is not a PDF or a picture: only those are rendered",
                input.detected.mime
            )))
        }
    };
    meta.insert("mime_type".into(), json!("image/png"));
    meta.insert("width".into(), json!(png.width));
    meta.insert("height".into(), json!(png.height));
    meta.insert("bytes".into(), json!(png.bytes.len()));
    meta.insert("grey".into(), json!(png.grey));
    if let Some(r) = request.region {
        meta.insert("region".into(), json!(r));
    }
    let mut sink = ObjectSink::new(input.locator, input.file_hash);
    let page =
        (input.detected.kind == FileKind::Document(DocumentKind::Pdf)).then_some(request.page);
    sink.push(
        ContentType::Image,
        base64::engine::general_purpose::STANDARD.encode(&png.bytes),
        Place {
            fragment: Fragment {
                page,
                ..Fragment::default()
            },
            ..Place::default()
        },
        serde_json::Value::Object(meta),
    );
    Ok(Extraction {
        objects: sink.objects,
        structure: Structure::default(),
    })
}

type Meta = serde_json::Map<String, serde_json::Value>;

fn render_pdf(
    input: &ExtractInput<'_>,
    request: &RenderRequest,
) -> Result<(Png, Meta), ExtractError> {
    use pdfium_render::prelude::{PdfBitmap, PdfBitmapFormat, PdfPoints, PdfRenderConfig};
    let path = input.options.pdfium_library.as_ref().ok_or_else(|| {
        refused(
            "PDFium is not provisioned (the model folder's libpdfium.so): pages cannot be rendered",
        )
    })?;
    let lib = crate::pdfium::library(path).map_err(refused)?;
    let doc = crate::pdfium::open(lib, input.bytes).map_err(refused)?;
    let count = doc.page_count();
    if request.page == 0 || request.page > count {
        return Err(refused(format!(
            "page {} of a {count}-page PDF",
            request.page
        )));
    }
    let page = doc.page(request.page).map_err(refused)?;
    let (w_pt, h_pt) = (
        f64::from(page.width().value),
        f64::from(page.height().value),
    );
    if !(w_pt > 0.0 && h_pt > 0.0) {
        return Err(refused("the page has no size"));
    }
    // The part shown, in points: the region (within the page), else the page.
    let shown = match request.region {
        Some([x0, y0, x1, y1]) => {
            let (w, h) = ((x1 - x0).abs() as f64, (y1 - y0).abs() as f64);
            if w < 1.0 || h < 1.0 {
                return Err(refused("the region is empty"));
            }
            (w.min(w_pt), h.min(h_pt))
        }
        None => (w_pt, h_pt),
    };
    // A region must show some of the page: its corners on the page's bitmap at one pixel
    // a point, clamped to the page.
    if let Some([x0, y0, x1, y1]) = request.region {
        let at_one = PdfRenderConfig::new().scale_page_by_factor(1.0);
        let corner = |x: i64, y: i64| {
            page.points_to_pixels(PdfPoints::new(x as f32), PdfPoints::new(y as f32), &at_one)
                .map_err(|e| refused(format!("PDFium: {e:?}")))
        };
        let ((ax, ay), (bx, by)) = (corner(x0, y0)?, corner(x1, y1)?);
        let (w, h) = (w_pt.round() as i32, h_pt.round() as i32);
        let inside_x = ax.max(bx).min(w) - ax.min(bx).max(0);
        let inside_y = ay.max(by).min(h) - ay.min(by).max(0);
        if inside_x < 1 || inside_y < 1 {
            return Err(refused(format!(
                "the region [{x0}, {y0}, {x1}, {y1}] lies outside page {} ({w_pt:.0} x \
                 {h_pt:.0} points): give a box on the page, as positions show it",
                request.page
            )));
        }
    }
    // Start at the resolution asked for, lower when that would be too many pixels, or a
    // side too long.
    let mut dpi = f64::from(request.dpi.clamp(1, MAX_DPI));
    let pixels = shown.0 * shown.1 * (dpi / 72.0).powi(2);
    if pixels > MAX_RENDER_PIXELS {
        dpi *= (MAX_RENDER_PIXELS / pixels).sqrt();
    }
    let longest = shown.0.max(shown.1) * dpi / 72.0;
    if longest > MAX_RENDER_SIDE {
        dpi *= MAX_RENDER_SIDE / longest;
    }
    let start = dpi;
    let (png, scale) = fit(request.max_bytes, 1.0, |scale| {
        let factor = (start * scale / 72.0) as f32;
        let config = PdfRenderConfig::new().scale_page_by_factor(factor);
        // The region's corners on the page's bitmap (PDFium maps points to pixels, with the
        // page's rotation and origin), clamped to it.
        let full = (
            (w_pt * f64::from(factor)).round() as i32,
            (h_pt * f64::from(factor)).round() as i32,
        );
        let (left, top, right, bottom) = match request.region {
            Some([x0, y0, x1, y1]) => {
                let corner = |x: i64, y: i64| {
                    page.points_to_pixels(
                        PdfPoints::new(x as f32),
                        PdfPoints::new(y as f32),
                        &config,
                    )
                    .map_err(|e| refused(format!("PDFium: {e:?}")))
                };
                let (ax, ay) = corner(x0, y0)?;
                let (bx, by) = corner(x1, y1)?;
                (
                    ax.min(bx).max(0),
                    ay.min(by).max(0),
                    ax.max(bx).min(full.0),
                    ay.max(by).min(full.1),
                )
            }
            None => (0, 0, full.0, full.1),
        };
        let (width, height) = ((right - left).max(1), (bottom - top).max(1));
        let mut bitmap = PdfBitmap::empty(width, height, PdfBitmapFormat::BGRA)
            .map_err(|e| refused(format!("PDFium bitmap: {e:?}")))?;
        let config = config.set_origin(-left, -top);
        page.render_into_bitmap_with_config(&mut bitmap, &config)
            .map_err(|e| refused(format!("PDFium rendering: {e:?}")))?;
        Ok(Raster {
            rgba: bitmap.as_rgba_bytes(),
            width: width as u32,
            height: height as u32,
        })
    })?;
    let mut meta = Meta::new();
    meta.insert("page".into(), json!(request.page));
    meta.insert("dpi".into(), json!((start * scale).round()));
    if (start * scale).round() < f64::from(request.dpi).round() {
        meta.insert("requested_dpi".into(), json!(request.dpi));
        meta.insert(
            "note".into(),
            json!(format!(
                "rendered at {} dpi instead of {}: {}",
                (start * scale).round(),
                request.dpi,
                if scale < 1.0 {
                    format!("the PNG must fit in {} bytes", request.max_bytes)
                } else {
                    format!(
                        "at most {MAX_RENDER_PIXELS} pixels, and {MAX_RENDER_SIDE} a side, are \
                         rendered at once"
                    )
                }
            )),
        );
    }
    Ok((png, meta))
}

/// A decoder for the picture in `bytes`, its format guessed from them, its memory bounded.
fn picture_reader(bytes: &[u8]) -> Result<image::ImageReader<Cursor<&[u8]>>, ExtractError> {
    let mut reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| refused(format!("picture: {e}")))?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    Ok(reader)
}

fn render_picture(bytes: &[u8], request: &RenderRequest) -> Result<(Png, Meta), ExtractError> {
    use image::ImageDecoder as _;
    let bad = |e: image::ImageError| refused(format!("picture: {e}"));
    // The header's size is checked before a pixel is decoded.
    let decoder = picture_reader(bytes)?.into_decoder().map_err(bad)?;
    let (w, h) = decoder.dimensions();
    if u64::from(w) * u64::from(h) > MAX_PICTURE_PIXELS {
        return Err(refused(format!(
            "a picture of {w}x{h} pixels is too large to render"
        )));
    }
    let picture = image::DynamicImage::from_decoder(decoder).map_err(bad)?;
    // The part shown: the region (within the picture), else the whole.
    let (l, t, r, b) = match request.region {
        Some([x0, y0, x1, y1]) => {
            let clamp = |v: i64, max: u32| u32::try_from(v.max(0)).unwrap_or(u32::MAX).min(max);
            let (l, t) = (clamp(x0.min(x1), w), clamp(y0.min(y1), h));
            let (r, b) = (clamp(x0.max(x1), w), clamp(y0.max(y1), h));
            if r <= l || b <= t {
                return Err(refused("the region is empty or outside the picture"));
            }
            (l, t, r, b)
        }
        None => (0, 0, w, h),
    };
    let (pw, ph) = (r - l, b - t);
    let pixels = f64::from(pw) * f64::from(ph);
    let mut start: f64 = 1.0;
    if pixels > MAX_RENDER_PIXELS {
        start = (MAX_RENDER_PIXELS / pixels).sqrt();
    }
    let longest = f64::from(pw.max(ph)) * start;
    if longest > MAX_RENDER_SIDE {
        start *= MAX_RENDER_SIDE / longest;
    }
    let size = |scale: f64, w: u32, h: u32| {
        (
            ((f64::from(w) * scale).round() as u32).clamp(1, w.max(1)),
            ((f64::from(h) * scale).round() as u32).clamp(1, h.max(1)),
        )
    };
    // Scaled once to the starting size, by averaging (memory: the scaled picture only, never
    // a float copy of the whole: a 100-million-pixel picture fits the worker's memory), and
    // the decoded picture let go; each smaller try scales that.
    let (sw, sh) = size(start, pw, ph);
    let base: image::RgbaImage = {
        use image::GenericImageView as _;
        let shown = picture.try_view(l, t, pw, ph).map_err(bad)?;
        image::imageops::thumbnail(&*shown, sw, sh)
    };
    drop(picture);
    let (png, scale) = fit(request.max_bytes, 1.0, |scale| {
        let (tw, th) = size(scale, sw, sh);
        let scaled = if (tw, th) == (sw, sh) {
            base.clone()
        } else {
            image::imageops::thumbnail(&base, tw, th)
        };
        Ok(Raster {
            width: scaled.width(),
            height: scaled.height(),
            rgba: scaled.into_raw(),
        })
    })?;
    let scale = start * scale;
    let mut meta = Meta::new();
    meta.insert("original_width".into(), json!(w));
    meta.insert("original_height".into(), json!(h));
    if scale < 1.0 {
        meta.insert("scale".into(), json!((scale * 1000.0).round() / 1000.0));
        meta.insert(
            "note".into(),
            json!(format!(
                "scaled to {:.0}% to fit in {} bytes",
                scale * 100.0,
                request.max_bytes
            )),
        );
    }
    Ok((png, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Locator;

    fn rendered(
        bytes: &[u8],
        name: &str,
        request: RenderRequest,
    ) -> Result<(Vec<u8>, Meta), ExtractError> {
        let options = crate::ExtractOptions {
            render: Some(request),
            ..crate::pdf::tests::with_pdfium()
        };
        let locator = Locator::root(name);
        let detected = crate::detect(bytes, name);
        let e = crate::extract(&ExtractInput {
            bytes,
            locator: &locator,
            file_hash: "abcdef",
            detected: &detected,
            options: &options,
        })?;
        assert_eq!(e.objects.len(), 1);
        let o = &e.objects[0];
        assert_eq!(o.content_type, ContentType::Image);
        let png = base64::engine::general_purpose::STANDARD
            .decode(&o.data)
            .unwrap();
        Ok((png, o.metadata.clone()))
    }

    fn survey() -> Vec<u8> {
        std::fs::read(crate::testing::crate_dir().join("../fixtures/formats/survey-report.pdf"))
            .unwrap()
    }

    /// The PNG's own header says what it is: width and height.
    fn png_size(png: &[u8]) -> (u32, u32) {
        let decoded = image::load_from_memory_with_format(png, image::ImageFormat::Png).unwrap();
        (decoded.width(), decoded.height())
    }

    #[test]
    fn a_page_fits_each_byte_budget_and_says_when_it_was_scaled() {
        let pdf = survey();
        let mut widths = Vec::new();
        for budget in [10_000u64, 100_000, 1_000_000] {
            let (png, meta) = rendered(
                &pdf,
                "s.pdf",
                RenderRequest {
                    page: 1,
                    dpi: 150,
                    region: None,
                    max_bytes: budget,
                },
            )
            .unwrap();
            assert!(png.len() as u64 <= budget, "{} > {budget}", png.len());
            assert_eq!(meta["bytes"], png.len());
            let (w, h) = png_size(&png);
            assert_eq!(
                (json!(w), json!(h)),
                (meta["width"].clone(), meta["height"].clone())
            );
            // A4 keeps its proportions.
            assert!(
                (f64::from(h) / f64::from(w) - 842.0 / 595.0).abs() < 0.02,
                "{w}x{h}"
            );
            widths.push(w);
            if budget == 10_000 {
                assert!(
                    meta["note"].as_str().unwrap().contains("10000 bytes"),
                    "{meta:?}"
                );
                assert_eq!(meta["requested_dpi"], 150);
            }
        }
        // More bytes, more pixels: at 1 MB the page is at the 150 dpi asked for.
        assert!(
            widths[0] < widths[1] && widths[1] <= widths[2],
            "{widths:?}"
        );
        assert_eq!(widths[2], (595.0f64 * 150.0 / 72.0).round() as u32);
    }

    #[test]
    fn a_region_is_the_part_of_the_page_inside_it() {
        let pdf = survey();
        // The first line's box (see the positions test): 72 765.5 273.2 788.9 points.
        let (png, meta) = rendered(
            &pdf,
            "s.pdf",
            RenderRequest {
                page: 1,
                dpi: 144,
                region: Some([72, 765, 274, 789]),
                max_bytes: 1_000_000,
            },
        )
        .unwrap();
        let (w, h) = png_size(&png);
        assert_eq!((w, h), (404, 48), "{meta:?}");
        // It is not blank: the title's glyphs are dark.
        let img = image::load_from_memory(&png).unwrap().to_luma8();
        assert!(img.pixels().filter(|p| p.0[0] < 100).count() > 500);
        // Below the text, the same size of page is white.
        let (blank, _) = rendered(
            &pdf,
            "s.pdf",
            RenderRequest {
                page: 1,
                dpi: 144,
                region: Some([72, 100, 274, 124]),
                max_bytes: 1_000_000,
            },
        )
        .unwrap();
        let img = image::load_from_memory(&blank).unwrap().to_luma8();
        assert_eq!(img.pixels().filter(|p| p.0[0] < 100).count(), 0);
    }

    #[test]
    fn a_page_of_degenerate_size_is_rendered_within_both_sides_bounds() {
        // 71 999 997 points by 0.72: at 100 dpi within the pixel bound (100 M by 1), but a
        // side of 100 million pixels.
        let pdf = crate::made_pdf::one_page([0.0, 0.0, 71_999_997.0, 0.72], "", 0);
        let (png, meta) = rendered(
            &pdf,
            "thin.pdf",
            RenderRequest {
                page: 1,
                dpi: 100,
                region: None,
                max_bytes: 1_000_000,
            },
        )
        .unwrap();
        let (w, h) = png_size(&png);
        assert!(
            f64::from(w) <= MAX_RENDER_SIDE && f64::from(h) <= MAX_RENDER_SIDE,
            "{w}x{h} {meta:?}"
        );
        assert!(
            meta["note"].as_str().unwrap().contains("a side"),
            "{meta:?}"
        );
    }

    #[test]
    fn a_region_wholly_off_the_page_is_refused() {
        let pdf = survey();
        let off = |region| {
            rendered(
                &pdf,
                "s.pdf",
                RenderRequest {
                    page: 1,
                    dpi: 100,
                    region: Some(region),
                    max_bytes: 1_000_000,
                },
            )
        };
        for region in [
            [5000, 5000, 6000, 6000],
            [-300, -300, -10, -10],
            [700, 100, 900, 200],
        ] {
            let why = off(region).unwrap_err().to_string();
            assert!(why.contains("lies outside page 1"), "{region:?}: {why}");
        }
        // Partly on the page: the part on it.
        let (png, _) = off([500, 700, 900, 900]).unwrap();
        let (w, h) = png_size(&png);
        assert!(w > 1 && h > 1, "{w}x{h}");
    }

    #[test]
    fn pictures_are_scaled_to_fit_and_other_files_and_pages_are_refused() {
        // A noisy colour picture: PNG cannot squeeze it, so it is scaled.
        let mut noise = image::RgbImage::new(800, 600);
        let mut x: u32 = 12345;
        for p in noise.pixels_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *p = image::Rgb([x as u8, (x >> 8) as u8, (x >> 16) as u8]);
        }
        let mut bytes = Vec::new();
        noise
            .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
            .unwrap();
        let (png, meta) = rendered(
            &bytes,
            "noise.png",
            RenderRequest {
                page: 1,
                dpi: 100,
                region: None,
                max_bytes: 100_000,
            },
        )
        .unwrap();
        assert!(png.len() <= 100_000);
        assert!(meta["scale"].as_f64().unwrap() < 0.5, "{meta:?}");
        assert_eq!(meta["grey"], false);
        let (crop, _) = rendered(
            &bytes,
            "noise.png",
            RenderRequest {
                page: 1,
                dpi: 100,
                region: Some([10, 20, 110, 70]),
                max_bytes: 1_000_000,
            },
        )
        .unwrap();
        assert_eq!(png_size(&crop), (100, 50));

        let pdf = survey();
        // A picture whose header claims 60 000 x 60 000 pixels (a few bytes of file) is
        // refused before a pixel is decoded.
        let mut bomb = Vec::new();
        image::codecs::png::PngEncoder::new(&mut bomb)
            .write_image(&[0u8; 1], 1, 1, ExtendedColorType::L8)
            .unwrap();
        let ihdr = 16;
        bomb[ihdr..ihdr + 4].copy_from_slice(&60_000u32.to_be_bytes());
        bomb[ihdr + 4..ihdr + 8].copy_from_slice(&60_000u32.to_be_bytes());
        // The IHDR chunk's CRC-32 (type and data), as a decoder checks it.
        let crc = !bomb[12..29].iter().fold(!0u32, |crc, &b| {
            (0..8).fold(crc ^ u32::from(b), |c, _| {
                if c & 1 == 1 {
                    (c >> 1) ^ 0xedb8_8320
                } else {
                    c >> 1
                }
            })
        });
        bomb[29..33].copy_from_slice(&crc.to_be_bytes());
        let why = rendered(
            &bomb,
            "bomb.png",
            RenderRequest {
                page: 1,
                dpi: 100,
                region: None,
                max_bytes: 100_000,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(why.contains("60000x60000 pixels is too large"), "{why}");

        let page9 = rendered(
            &pdf,
            "s.pdf",
            RenderRequest {
                page: 9,
                dpi: 100,
                region: None,
                max_bytes: 100_000,
            },
        );
        let why = page9.unwrap_err().to_string();
        assert!(
            why.contains("page 9 of a ") && why.contains("-page PDF"),
            "{why}"
        );
        let tiny = rendered(
            &pdf,
            "s.pdf",
            RenderRequest {
                page: 1,
                dpi: 100,
                region: None,
                max_bytes: 50,
            },
        );
        assert!(tiny
            .unwrap_err()
            .to_string()
            .contains("no rendering fits in 50 bytes"));
        let text = rendered(
            b"plain words",
            "a.txt",
            RenderRequest {
                page: 1,
                dpi: 100,
                region: None,
                max_bytes: 100_000,
            },
        );
        assert!(text
            .unwrap_err()
            .to_string()
            .contains("only those are rendered"));
    }
}
