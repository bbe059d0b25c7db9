#!/usr/bin/env python3
"""Generate one small sample file per supported document format into fixtures/formats/.

What it writes (all about the coastal survey of Skerry Point and the harbour of Vennesund):

  survey-report.pdf     3 pages, hand-built: outline, page labels i/1/2, an image on page 3
  scanned-page.pdf      1 page that only draws a grey image (no text layer)
  scanned-letter.pdf    2 image-only pages of typed text (1-bit Flate, greyscale JPEG): for OCR
  whiteboard.png        German words on a whiteboard-like picture: for OCR
  field-handbook.docx   WordprocessingML: headings, paragraphs, an inline PNG, a 3x3 table
  harbour-budget.xlsx   SpreadsheetML: sheets Q3/Q4, shared strings, numbers, a formula, a date
  harbour-budget.xls    BIFF8 (written with xlwt): the same layout with different notes
  harbour-budget.ods    OpenDocument spreadsheet with repeated rows/columns as LibreOffice writes
  ferry-briefing.pptx   PresentationML: 3 slides with titles, bodies and speaker notes
  ferry-briefing.odp    OpenDocument presentation: 2 slides, notes on slide 2
  station-notes.odt     OpenDocument text: level 1/2 headings, paragraphs, a table
  pier.{png,jpg,gif,tiff,webp}, chart.svg           images, each a different pixel size
  foghorn.{wav,mp3,ogg,oga,flac}                    1.5 s mono audio (oga holds Opus)
  harbour.{mp4,webm,avi,mpg}                        1 s test-pattern video, no audio
and tests/expected/formats.json: what each file contains (phrases and where they are,
structure, sizes, durations) for the Rust tests to assert against. It lives outside fixtures/
so that ingesting fixtures/ does not index the expectations themselves.

Every byte is produced here: the office packages, the PDFs and the SVG are written as text
by this script, the images are drawn with Pillow, the .xls is written with xlwt, the WAV with
the standard `wave` module, and the other audio/video files are encoded by ffmpeg from the WAV
and from ffmpeg's own `testsrc` pattern.

Dependencies: Python 3.9+, Pillow and xlwt (`make format-fixtures` installs the pinned
versions into .venv-fixtures/), and ffmpeg/ffprobe on PATH (Debian package `ffmpeg`).

Output is deterministic: zip entries carry a fixed date and a fixed order, PDFs carry fixed
dates and an /ID derived from their content, ffmpeg runs single-threaded with bitexact flags and
no metadata, and file mtimes are set to 2023-01-01. Running the script twice gives
byte-identical files on the same machine (other versions of zlib, Pillow or ffmpeg may encode
the binary media differently; formats.json reads durations back from what was produced).
"""
import datetime
import hashlib
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import wave
import zipfile
import zlib
from xml.sax.saxutils import escape, quoteattr

try:
    import xlwt
    from PIL import Image, ImageDraw, ImageFont
except ImportError as err:  # pragma: no cover - a hint for people running it by hand
    sys.exit(f"{err}: run `make format-fixtures`, which installs Pillow and xlwt into .venv-fixtures/")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "formats")
EPOCH = 1672531200  # 2023-01-01T00:00:00Z
ZIP_DATE = (2023, 1, 1, 0, 0, 0)
SEP = " \u203a "  # " › " joins nested section titles in EXPECTED.json

EXPECTED = {}


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def x(text):
    """Escape text for an XML text node."""
    return escape(str(text))


def write(name, data, expected):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, (EPOCH, EPOCH))
    EXPECTED[name] = expected
    print(f"wrote fixtures/formats/{name} ({len(data)} bytes)")


def zip_package(members, stored=()):
    """A zip with members in the given order, fixed dates and modes; `stored` ones uncompressed."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            z.writestr(info, data.encode() if isinstance(data, str) else data)
    return out.getvalue()


def xml_doc(body):
    return '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' + body


def run(cmd):
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL)


def ffprobe(path):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", path],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def picture(w, h):
    """A small drawing of the pier and the lighthouse, scaled to w x h pixels."""
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    horizon = int(h * 0.6)
    for y in range(horizon):  # sky: light at the horizon, deeper blue above
        t = y / max(horizon - 1, 1)
        d.line([(0, y), (w, y)], fill=(int(70 + 110 * t), int(130 + 80 * t), int(200 + 40 * t)))
    d.rectangle([0, horizon, w, h], fill=(20, 70, 120))  # sea
    for y in range(horizon + 3, h, 4):  # waves
        d.line([(0, y), (w, y)], fill=(40, 100, 150))
    d.rectangle([0, horizon - h // 16, int(w * 0.55), horizon + h // 24], fill=(120, 80, 40))  # pier
    for px in range(w // 16, int(w * 0.55), max(w // 8, 2)):  # pier legs
        d.line([(px, horizon), (px, h)], fill=(90, 60, 30), width=max(w // 48, 1))
    cx, top, base = int(w * 0.78), int(h * 0.15), horizon + h // 20
    half_top, half_base = max(w // 32, 1), max(w // 14, 2)
    d.polygon([(cx - half_base, base), (cx - half_top, top), (cx + half_top, top), (cx + half_base, base)],
              fill=(245, 245, 240))  # tower
    band = top + (base - top) // 2
    d.rectangle([cx - half_base, band - h // 20, cx + half_base, band + h // 20], fill=(200, 30, 30))
    d.rectangle([cx - half_top, top - h // 12, cx + half_top, top], fill=(255, 220, 60))  # lamp
    d.polygon([(cx - half_top - 1, top - h // 12), (cx, top - h // 6), (cx + half_top + 1, top - h // 12)],
              fill=(60, 60, 60))  # roof
    return img


def image_bytes(img, fmt, **params):
    buf = io.BytesIO()
    img.save(buf, fmt, **params)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# PDF
# ---------------------------------------------------------------------------------------------


def pdf_string(text):
    raw = text.encode("cp1252")  # Helvetica with /WinAnsiEncoding
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


class Pdf:
    """Numbered PDF objects written in order, with a correct xref table."""

    def __init__(self):
        self.bodies = []

    def reserve(self):
        self.bodies.append(None)
        return len(self.bodies)

    def set(self, num, body):
        self.bodies[num - 1] = body.encode("latin-1") if isinstance(body, str) else body

    def add(self, body):
        num = self.reserve()
        self.set(num, body)
        return num

    def add_stream(self, entries, data):
        head = f"<< {entries} /Length {len(data)} >>\nstream\n".encode()
        return self.add(head + data + b"\nendstream")

    def to_bytes(self, root, info):
        out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for num, body in enumerate(self.bodies, start=1):
            offsets.append(len(out))
            out += f"{num} 0 obj\n".encode() + body + b"\nendobj\n"
        file_id = hashlib.md5(bytes(out)).hexdigest()
        xref = len(out)
        out += f"xref\n0 {len(self.bodies) + 1}\n0000000000 65535 f \n".encode()
        for off in offsets:
            out += f"{off:010d} 00000 n \n".encode()
        out += (
            f"trailer\n<< /Size {len(self.bodies) + 1} /Root {root} 0 R /Info {info} 0 R "
            f"/ID [<{file_id}> <{file_id}>] >>\nstartxref\n{xref}\n%%EOF\n"
        ).encode()
        return bytes(out)


def pdf_info(pdf, title):
    return pdf.add(
        b"<< /Title " + pdf_string(title) + b" /Author (Vennesund Harbour Survey)"
        b" /Producer (make-format-fixtures.py) /CreationDate (D:20230101000000Z)"
        b" /ModDate (D:20230101000000Z) >>"
    )


def pdf_text_ops(lines):
    """Content-stream operators for (font size, y, text) lines at the left margin."""
    ops = b""
    for size, y, text in lines:
        ops += f"BT /F1 {size} Tf 1 0 0 1 72 {y} Tm ".encode() + pdf_string(text) + b" Tj ET\n"
    return ops


def survey_report_pdf():
    intro = [
        "The survey of Skerry Point began with a dawn walk along the basalt cliffs.",
        "Seabird colonies on the outer skerries were counted from the survey boat.",
    ]
    install = "Install the tide gauge on the north pier before the spring tides."
    upgrade = "Upgrade the gauge firmware only after the harbour master signs the work order."
    figure = "The figure below shows the colour code painted on the gauge housing."
    pages = [  # (lines, draws the image)
        ([(20, 770, "Coastal Survey Report"), (14, 730, "1 Introduction"),
          (11, 705, intro[0]), (11, 689, intro[1])], False),
        ([(14, 770, "2 Installation"), (11, 745, install)], False),
        ([(14, 770, "2.1 Upgrading"), (11, 745, upgrade), (11, 729, figure)], True),
    ]

    pdf = Pdf()
    catalog, page_tree, outlines = pdf.reserve(), pdf.reserve(), pdf.reserve()
    font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    # An 8x6 RGB image: red and white stripes with a blue border row, like a painted gauge board.
    pixels = bytearray()
    for y in range(6):
        for px in range(8):
            if y in (0, 5):
                pixels += bytes((30, 60, 160))
            else:
                pixels += bytes((210, 30, 30)) if px // 2 % 2 == 0 else bytes((250, 250, 250))
    image = pdf.add_stream(
        "/Type /XObject /Subtype /Image /Width 8 /Height 6 /ColorSpace /DeviceRGB "
        "/BitsPerComponent 8 /Filter /FlateDecode",
        zlib.compress(bytes(pixels), 9),
    )
    page_nums = []
    for lines, with_image in pages:
        ops = pdf_text_ops(lines)
        resources = f"/Font << /F1 {font} 0 R >>"
        if with_image:
            ops += b"q 160 0 0 120 72 590 cm /Im1 Do Q\n"
            resources += f" /XObject << /Im1 {image} 0 R >>"
        contents = pdf.add_stream("", ops)
        page_nums.append(pdf.add(
            f"<< /Type /Page /Parent {page_tree} 0 R /MediaBox [0 0 595 842] "
            f"/Resources << {resources} >> /Contents {contents} 0 R >>"
        ))
    pdf.set(page_tree, f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_nums)}] /Count 3 >>")

    intro_item, install_item, upgrade_item = pdf.reserve(), pdf.reserve(), pdf.reserve()
    pdf.set(intro_item, f"<< /Title (1 Introduction) /Parent {outlines} 0 R /Next {install_item} 0 R "
                        f"/Dest [{page_nums[0]} 0 R /Fit] >>")
    pdf.set(install_item, f"<< /Title (2 Installation) /Parent {outlines} 0 R /Prev {intro_item} 0 R "
                          f"/First {upgrade_item} 0 R /Last {upgrade_item} 0 R /Count 1 "
                          f"/Dest [{page_nums[1]} 0 R /Fit] >>")
    pdf.set(upgrade_item, f"<< /Title (2.1 Upgrading) /Parent {install_item} 0 R "
                          f"/Dest [{page_nums[2]} 0 R /Fit] >>")
    pdf.set(outlines, f"<< /Type /Outlines /First {intro_item} 0 R /Last {install_item} 0 R /Count 3 >>")
    pdf.set(catalog, f"<< /Type /Catalog /Pages {page_tree} 0 R /Outlines {outlines} 0 R "
                     "/PageMode /UseOutlines /PageLabels << /Nums [0 << /S /r >> 1 << /S /D /St 1 >>] >> >>")
    info = pdf_info(pdf, "Coastal Survey Report")

    sections = ["1 Introduction", "2 Installation", "2 Installation" + SEP + "2.1 Upgrading"]
    phrases = [{"text": t, "page": 1, "section": sections[0]} for t in intro]
    phrases += [
        {"text": install, "page": 2, "section": sections[1]},
        {"text": upgrade, "page": 3, "section": sections[2]},
        {"text": figure, "page": 3, "section": sections[2]},
    ]
    write("survey-report.pdf", pdf.to_bytes(catalog, info), {
        "kind": "pdf",
        "pages": 3,
        "title": "Coastal Survey Report",
        "outline": [
            {"title": "1 Introduction", "level": 1, "page": 1},
            {"title": "2 Installation", "level": 1, "page": 2},
            {"title": "2.1 Upgrading", "level": 2, "page": 3},
        ],
        "page_labels": ["i", "1", "2"],
        "image_pages": [3],
        "images": [{"page": 3, "width": 8, "height": 6}],
        "headings": [{"text": "Coastal Survey Report", "page": 1, "font_size": 20}],
        "phrases": phrases,
    })


def scanned_page_pdf():
    # 40x30 grey "scan": a paper-coloured page with dark bars where lines of type would be.
    w, h = 40, 30
    pixels = bytearray()
    for y in range(h):
        for px in range(w):
            inked = 4 <= px < w - 4 and y % 4 == 1 and y < h - 3 and not (y == 13 and px > 24)
            pixels.append(40 if inked else 235 - (px + y) % 7)
    pdf = Pdf()
    catalog, page_tree = pdf.reserve(), pdf.reserve()
    image = pdf.add_stream(
        f"/Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceGray "
        "/BitsPerComponent 8 /Filter /FlateDecode",
        zlib.compress(bytes(pixels), 9),
    )
    contents = pdf.add_stream("", b"q 451 0 0 338 72 432 cm /Im0 Do Q\n")
    page = pdf.add(f"<< /Type /Page /Parent {page_tree} 0 R /MediaBox [0 0 595 842] "
                   f"/Resources << /XObject << /Im0 {image} 0 R >> >> /Contents {contents} 0 R >>")
    pdf.set(page_tree, f"<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>")
    pdf.set(catalog, f"<< /Type /Catalog /Pages {page_tree} 0 R >>")
    info = pdf_info(pdf, "Scanned tide log page")
    write("scanned-page.pdf", pdf.to_bytes(catalog, info), {
        "kind": "pdf",
        "pages": 1,
        "has_text": False,
        "image_pages": [1],
        "images": [{"page": 1, "width": w, "height": h}],
        "phrases": [],
    })


# ---------------------------------------------------------------------------------------------
# OCR fixtures: text that exists only as pixels
# ---------------------------------------------------------------------------------------------

# Pillow's own scalable font (bundled with Pillow, so every machine renders the same pixels).
def ocr_font(size):
    return ImageFont.load_default(size=size)


LETTER_PAGES = [
    [  # page 1: a typed letter
        (44, "Vennesund Harbour Office"),
        (30, "12 March 2023"),
        (30, ""),
        (30, "Dear Captain Ingrid Solvberg,"),
        (30, ""),
        (30, "the barnacle inspection of the north pier is finished."),
        (30, "Divers found heavy growth on the third and fourth piles"),
        (30, "and recommend scraping them before the summer ferries."),
        (30, "Please confirm the dredging schedule by Friday."),
        (30, ""),
        (30, "Yours sincerely,"),
        (30, "Torvald Eikrem, harbour engineer"),
    ],
    [  # page 2: a table of readings, typed
        (44, "Appendix: pile readings"),
        (30, ""),
        (30, "Pile 3   growth 14 mm   scraped no"),
        (30, "Pile 4   growth 11 mm   scraped no"),
        (30, "Pile 7   growth 2 mm    scraped yes"),
        (30, ""),
        (30, "The cormorant colony on the breakwater was left undisturbed."),
    ],
]


def letter_page_image(lines, dpi):
    """An A4 page at `dpi` with `lines` of black type (sizes in points), as 1-bit pixels."""
    w, h = round(8.27 * dpi), round(11.69 * dpi)
    img = Image.new("L", (w, h), 255)
    d = ImageDraw.Draw(img)
    y = round(1.0 * dpi)
    for size, text in lines:
        px = round(size * dpi / 72 / 2.4)  # the font's em in pixels: type of about 12.5 pt
        if text:
            d.text((round(0.9 * dpi), y), text, fill=0, font=ocr_font(px))
        y += round(px * 1.6)
    return img.point(lambda v: 255 if v > 128 else 0).convert("1")


def scanned_letter_pdf():
    """Two image-only pages: page 1 a 1-bit Flate scan, page 2 a greyscale JPEG (DCT) scan."""
    pdf = Pdf()
    catalog, page_tree = pdf.reserve(), pdf.reserve()
    kids, images = [], []
    for number, lines in enumerate(LETTER_PAGES, start=1):
        if number == 1:
            img = letter_page_image(lines, 200)
            raw = img.tobytes()  # 1 bit per pixel, rows padded to bytes, 1 = white
            stream = pdf.add_stream(
                f"/Type /XObject /Subtype /Image /Width {img.width} /Height {img.height} "
                "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /FlateDecode",
                zlib.compress(raw, 9),
            )
        else:
            img = letter_page_image(lines, 150).convert("L")
            stream = pdf.add_stream(
                f"/Type /XObject /Subtype /Image /Width {img.width} /Height {img.height} "
                "/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode",
                image_bytes(img, "JPEG", quality=60, optimize=True),
            )
        images.append({"page": number, "width": img.width, "height": img.height})
        contents = pdf.add_stream("", b"q 595 0 0 842 0 0 cm /Im0 Do Q\n")
        kids.append(pdf.add(f"<< /Type /Page /Parent {page_tree} 0 R /MediaBox [0 0 595 842] "
                            f"/Resources << /XObject << /Im0 {stream} 0 R >> >> /Contents {contents} 0 R >>"))
    pdf.set(page_tree, f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>")
    pdf.set(catalog, f"<< /Type /Catalog /Pages {page_tree} 0 R >>")
    info = pdf_info(pdf, "Scanned letter about the north pier")
    write("scanned-letter.pdf", pdf.to_bytes(catalog, info), {
        "kind": "pdf",
        "pages": 2,
        "has_text": False,
        "image_pages": [1, 2],
        "images": images,
        "phrases": [],
        # Only OCR finds these: the PDF has no text layer.
        "ocr_phrases": [
            {"text": "Ingrid Solvberg", "page": 1},
            {"text": "barnacle inspection", "page": 1},
            {"text": "dredging schedule", "page": 1},
            {"text": "cormorant colony", "page": 2},
        ],
    })


def whiteboard_png():
    """A photographed whiteboard: German words in dark blue on an uneven light grey."""
    w, h = 900, 360
    img = Image.new("RGB", (w, h), (226, 228, 224))
    d = ImageDraw.Draw(img)
    for y in range(h):  # uneven light: darker towards the bottom right
        shade = 232 - y * 18 // h
        d.line([(0, y), (w, y)], fill=(shade, shade + 2, shade - 3))
    ink = (24, 40, 110)
    for i, line in enumerate(["Wasserstandsmeldung", "Hafenmeisterei Vennesund", "Pegel 3,4 m um 06:00"]):
        d.text((48, 40 + i * 100), line, fill=ink, font=ocr_font(60))
    img = img.rotate(-1.5, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=(200, 200, 196))
    img = img.quantize(colors=16, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    write("whiteboard.png", image_bytes(img, "PNG", optimize=True), {
        "kind": "png", "width": w, "height": h,
        "ocr_phrases": [{"text": "Wasserstandsmeldung"}, {"text": "Hafenmeisterei Vennesund"}],
    })


# ---------------------------------------------------------------------------------------------
# Office Open XML (docx, xlsx, pptx)
# ---------------------------------------------------------------------------------------------

REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
OOXML_CT = "application/vnd.openxmlformats-officedocument"


def content_types(overrides, defaults=()):
    items = [("rels", "application/vnd.openxmlformats-package.relationships+xml"),
             ("xml", "application/xml"), *defaults]
    body = "".join(f'<Default Extension="{e}" ContentType="{t}"/>' for e, t in items)
    body += "".join(f'<Override PartName="{p}" ContentType="{t}"/>' for p, t in overrides)
    return xml_doc(f'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">{body}</Types>')


def relationships(rels):
    """rels: (id, type, target); a type without a scheme is one of the officeDocument types."""
    body = "".join(
        f'<Relationship Id="{rid}" Type="{kind if ":" in kind else REL + "/" + kind}" Target="{target}"/>'
        for rid, kind, target in rels
    )
    return xml_doc(f'<Relationships xmlns="{PKG_REL}">{body}</Relationships>')


def package_rels(main_part):
    return relationships([
        ("rId1", "officeDocument", main_part),
        ("rId2", PKG_REL + "/metadata/core-properties", "docProps/core.xml"),
    ])


def core_props(title):
    return xml_doc(
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:title>{x(title)}</dc:title><dc:creator>Vennesund Harbour Survey</dc:creator>"
        '<dcterms:created xsi:type="dcterms:W3CDTF">2023-01-01T00:00:00Z</dcterms:created>'
        '<dcterms:modified xsi:type="dcterms:W3CDTF">2023-01-01T00:00:00Z</dcterms:modified>'
        "</cp:coreProperties>"
    )


CORE_CT = ("/docProps/core.xml", "application/vnd.openxmlformats-package.core-properties+xml")

W_NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
        f'xmlns:r="{REL}" '
        'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"')


def w_para(text, style=None, extra_runs=""):
    ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{x(text)}</w:t></w:r>{extra_runs}</w:p>'


def w_inline_picture(rid, cx, cy, descr):
    return (
        '<w:r><w:drawing><wp:inline distT="0" distB="0" distL="0" distR="0">'
        f'<wp:extent cx="{cx}" cy="{cy}"/><wp:effectExtent l="0" t="0" r="0" b="0"/>'
        f'<wp:docPr id="1" name="Picture 1" descr={quoteattr(descr)}/>'
        '<wp:cNvGraphicFramePr><a:graphicFrameLocks noChangeAspect="1"/></wp:cNvGraphicFramePr>'
        '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">'
        '<pic:pic><pic:nvPicPr><pic:cNvPr id="1" name="image1.png"/><pic:cNvPicPr/></pic:nvPicPr>'
        f'<pic:blipFill><a:blip r:embed="{rid}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>'
        f'<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm>'
        '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic>'
        "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"
    )


def w_table(rows, widths):
    border = '<w:{0} w:val="single" w:sz="4" w:space="0" w:color="000000"/>'
    borders = "".join(border.format(s) for s in ("top", "left", "bottom", "right", "insideH", "insideV"))
    out = (f'<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/><w:tblBorders>{borders}</w:tblBorders>'
           '<w:tblLook w:val="04A0" w:firstRow="1" w:lastRow="0" w:firstColumn="1" w:lastColumn="0" '
           'w:noHBand="0" w:noVBand="1"/></w:tblPr><w:tblGrid>')
    out += "".join(f'<w:gridCol w:w="{wd}"/>' for wd in widths) + "</w:tblGrid>"
    for row in rows:
        out += "<w:tr>" + "".join(
            f'<w:tc><w:tcPr><w:tcW w:w="{wd}" w:type="dxa"/></w:tcPr>{w_para(cell)}</w:tc>'
            for cell, wd in zip(row, widths)
        ) + "</w:tr>"
    return out + "</w:tbl>"


def field_handbook_docx():
    safety = [
        "Every surveyor must wear a life jacket on the jetty at Vennesund.",
        "Report any loose planks on the boardwalk to the harbour office the same day.",
    ]
    boats = "The red survey dinghy is moored beside the fuel berth and must be bailed out each morning."
    equipment = "The equipment list below is checked against the storeroom ledger every quarter."
    table = [["Item", "Count", "Store"],
             ["Brass sextant", "2", "Lighthouse storeroom"],
             ["Lead sounding line", "4", "Boat shed"]]
    png = image_bytes(picture(32, 24), "PNG")
    cx, cy = 32 * 38100, 24 * 38100  # shown at 4x the pixel size (9525 EMU per pixel at 96 dpi)

    body = (
        w_para("Safety", "Heading1") + w_para(safety[0]) + w_para(safety[1])
        + w_para("Boats", "Heading2")
        + w_para(boats, extra_runs=w_inline_picture("rId2", cx, cy, "The survey dinghy beside the pier"))
        + w_para("Equipment", "Heading1") + w_para(equipment)
        + w_table(table, [3000, 1500, 3500])
        + '<w:p/><w:sectPr><w:pgSz w:w="11906" w:h="16838"/>'
        '<w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" '
        'w:footer="708" w:gutter="0"/></w:sectPr>'
    )
    document = xml_doc(f"<w:document {W_NS}><w:body>{body}</w:body></w:document>")

    def heading_style(sid, name, level, size):
        return (f'<w:style w:type="paragraph" w:styleId="{sid}"><w:name w:val="{name}"/>'
                '<w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:uiPriority w:val="9"/><w:qFormat/>'
                f'<w:pPr><w:keepNext/><w:spacing w:before="240" w:after="120"/><w:outlineLvl w:val="{level}"/></w:pPr>'
                f'<w:rPr><w:b/><w:sz w:val="{size}"/></w:rPr></w:style>')

    styles = xml_doc(
        '<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        '<w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="Calibri" w:hAnsi="Calibri" w:cs="Calibri"/>'
        '<w:sz w:val="22"/><w:lang w:val="en-GB"/></w:rPr></w:rPrDefault>'
        '<w:pPrDefault><w:pPr><w:spacing w:after="160"/></w:pPr></w:pPrDefault></w:docDefaults>'
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>'
        + heading_style("Heading1", "heading 1", 0, 32) + heading_style("Heading2", "heading 2", 1, 26)
        + '<w:style w:type="table" w:default="1" w:styleId="TableNormal"><w:name w:val="Normal Table"/>'
        '<w:tblPr><w:tblInd w:w="0" w:type="dxa"/><w:tblCellMar><w:left w:w="108" w:type="dxa"/>'
        '<w:right w:w="108" w:type="dxa"/></w:tblCellMar></w:tblPr></w:style>'
        "</w:styles>"
    )
    doc_rels = relationships([("rId1", "styles", "styles.xml"), ("rId2", "image", "media/image1.png")])
    members = [
        ("[Content_Types].xml", content_types(
            [("/word/document.xml", OOXML_CT + ".wordprocessingml.document.main+xml"),
             ("/word/styles.xml", OOXML_CT + ".wordprocessingml.styles+xml"), CORE_CT],
            [("png", "image/png")])),
        ("_rels/.rels", package_rels("word/document.xml")),
        ("docProps/core.xml", core_props("Field Handbook")),
        ("word/document.xml", document),
        ("word/styles.xml", styles),
        ("word/_rels/document.xml.rels", doc_rels),
        ("word/media/image1.png", png),
    ]
    write("field-handbook.docx", zip_package(members), {
        "kind": "docx",
        "title": "Field Handbook",
        "sections": [
            {"title": "Safety", "level": 1},
            {"title": "Boats", "level": 2},
            {"title": "Equipment", "level": 1},
        ],
        "phrases": [
            {"text": safety[0], "section": "Safety"},
            {"text": safety[1], "section": "Safety"},
            {"text": boats, "section": "Safety" + SEP + "Boats"},
            {"text": equipment, "section": "Equipment"},
        ],
        "tables": [{"section": "Equipment", "rows": table}],
        "images": [{"section": "Safety" + SEP + "Boats", "name": "word/media/image1.png",
                    "width": 32, "height": 24, "extent_emu": [cx, cy]}],
    })


# ---------------------------------------------------------------------------------------------
# Spreadsheets: one layout, three encodings (xlsx, xls, ods)
# ---------------------------------------------------------------------------------------------


class Formula:
    def __init__(self, expr, value):
        self.expr, self.value = expr, value


def budget(items, approved_on, approved_note):
    """Sheet rows {row number: [Item, Cost, Notes]}: header, five items in rows 2-6, rows 7-8
    empty, a total in row 9 (a formula where the format keeps one) and a dated approval in row 10."""
    sheet = {1: ["Item", "Cost", "Notes"]}
    for r, row in enumerate(items, start=2):
        sheet[r] = row
    sheet[9] = ["Total", Formula("SUM(B2:B6)", round(sum(row[1] for row in items), 2)), None]
    sheet[10] = ["Approved on", approved_on, approved_note]
    return sheet


BUDGETS = {
    "harbour-budget.xlsx": {
        "Q3": budget([
            ["Mooring rope", 420.5, "Order the mooring rope from the chandlery on Quay Street."],
            ["Diesel for the survey launch", 1280, "Fuel is bought at the north quay pump on Fridays."],
            ["Tide gauge batteries", 96.4, None],
            ["Chart printing", 150, "Print the new soundings chart on waterproof paper."],
            ["Radio licence", 75, None],
        ], datetime.date(2023, 9, 29),
            "Approved at the September meeting held in the Vennesund town hall."),
        "Q4": budget([
            ["Lamp bulbs for the lighthouse", 210, None],
            ["Storm shutters", 860.75, "Fit the storm shutters to the keeper's cottage in November."],
            ["Gallery paint", 315.2, "Repaint the lighthouse gallery railings before winter."],
            ["Pier lighting", 540, None],
            ["Ice grips for the jetty", 64.9, "Hand out ice grips to everyone who works on the jetty."],
        ], datetime.date(2023, 12, 15),
            "The winter budget was approved by the harbour committee in December."),
    },
    "harbour-budget.xls": {
        "Q3": budget([
            ["Mooring rope", 415, "Buy the mooring rope from the ship chandler beside the fish market."],
            ["Diesel for the survey launch", 1310, "Refuel the survey launch at the south quay pump."],
            ["Tide gauge batteries", 99, None],
            ["Chart printing", 140, "Laminate the printed soundings chart before taking it to sea."],
            ["Radio licence", 75, None],
        ], datetime.date(2023, 9, 28),
            "Signed off by the treasurer of the Vennesund harbour trust."),
        "Q4": budget([
            ["Lamp bulbs for the lighthouse", 205, None],
            ["Storm shutters", 880, "Hang the storm shutters on the boathouse windows in late October."],
            ["Gallery paint", 298.5, "Scrape the rust off the lantern room balcony before the first frost."],
            ["Pier lighting", 560, None],
            ["Ice grips for the jetty", 70, "Keep a box of ice grips by the door of the pier office."],
        ], datetime.date(2023, 12, 14),
            "The treasurer released the winter funds after the December audit."),
    },
    "harbour-budget.ods": {
        "Q3": budget([
            ["Mooring rope", 430, "The mooring rope is delivered by the coastal steamer every second week."],
            ["Diesel for the survey launch", 1250, "Diesel for the launch is logged in the fuel book at the quay."],
            ["Tide gauge batteries", 101.6, None],
            ["Chart printing", 160, "Send the corrected chart proofs to the printer in Bergvik."],
            ["Radio licence", 75, None],
        ], datetime.date(2023, 9, 27),
            "Approved by the harbour trust after a short debate about fuel prices."),
        "Q4": budget([
            ["Lamp bulbs for the lighthouse", 199.5, None],
            ["Storm shutters", 845, "Order new hinges for the storm shutters on the signal house."],
            ["Gallery paint", 330, "Sand and varnish the wooden handrail on the lighthouse stairs."],
            ["Pier lighting", 525, None],
            ["Ice grips for the jetty", 58, "Grit the slipway every morning when the temperature drops below zero."],
        ], datetime.date(2023, 12, 13),
            "The winter accounts were closed on the last working day of December."),
    },
}
COLS = "ABC"


def num_text(value):
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def excel_serial(day):
    return (day - datetime.date(1899, 12, 30)).days


def budget_expected(name, kind, keeps_formula):
    phrases, cells = [], []
    for sheet_name, sheet in BUDGETS[name].items():
        for r, row in sorted(sheet.items()):
            notes = row[2]
            if r > 1 and notes:
                phrases.append({"text": notes, "sheet": sheet_name, "row": r, "cell": f"C{r}"})
            for c, value in enumerate(row):
                if isinstance(value, Formula):
                    cell = {"sheet": sheet_name, "cell": f"{COLS[c]}{r}", "value": value.value}
                    if keeps_formula:
                        cell["formula"] = value.expr
                    cells.append(cell)
                elif isinstance(value, datetime.date):
                    cells.append({"sheet": sheet_name, "cell": f"{COLS[c]}{r}", "date": value.isoformat()})
    return {
        "kind": kind,
        "sheets": list(BUDGETS[name]),
        "header": ["Item", "Cost", "Notes"],
        "last_row": {s: max(sheet) for s, sheet in BUDGETS[name].items()},
        "empty_rows": {s: [r for r in range(1, max(sheet)) if r not in sheet] for s, sheet in BUDGETS[name].items()},
        "phrases": phrases,
        "cells": cells,
    }


def harbour_budget_xlsx():
    name = "harbour-budget.xlsx"
    strings, string_ids, refs = [], {}, 0

    def shared(text):
        nonlocal refs
        refs += 1
        if text not in string_ids:
            string_ids[text] = len(strings)
            strings.append(text)
        return string_ids[text]

    sheets = []
    for sheet in BUDGETS[name].values():
        rows = ""
        for r, row in sorted(sheet.items()):
            cells = ""
            for c, value in enumerate(row):
                ref = f"{COLS[c]}{r}"
                style = ' s="2"' if r == 1 else ""
                if value is None:
                    continue
                if isinstance(value, str):
                    cells += f'<c r="{ref}"{style} t="s"><v>{shared(value)}</v></c>'
                elif isinstance(value, Formula):
                    cells += f'<c r="{ref}" s="3"><f>{value.expr}</f><v>{num_text(value.value)}</v></c>'
                elif isinstance(value, datetime.date):
                    cells += f'<c r="{ref}" s="1"><v>{excel_serial(value)}</v></c>'
                else:
                    cells += f'<c r="{ref}" s="3"><v>{num_text(value)}</v></c>'
            rows += f'<row r="{r}" spans="1:3">{cells}</row>'
        sheets.append(xml_doc(
            f'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="{REL}">'
            f'<dimension ref="A1:C{max(sheet)}"/><sheetViews><sheetView workbookViewId="0"/></sheetViews>'
            '<sheetFormatPr defaultRowHeight="15"/><cols><col min="1" max="1" width="30" customWidth="1"/>'
            '<col min="2" max="2" width="12" customWidth="1"/><col min="3" max="3" width="70" customWidth="1"/>'
            f"</cols><sheetData>{rows}</sheetData></worksheet>"
        ))
    sst = xml_doc(
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        f'count="{refs}" uniqueCount="{len(strings)}">'
        + "".join(f"<si><t>{x(s)}</t></si>" for s in strings) + "</sst>"
    )
    styles = xml_doc(
        '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        '<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd"/></numFmts>'
        '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font>'
        '<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
        '<fills count="2"><fill><patternFill patternType="none"/></fill>'
        '<fill><patternFill patternType="gray125"/></fill></fills>'
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
        '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
        '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
        '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
        '<xf numFmtId="2" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>'
        '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
        "</styleSheet>"
    )
    sheet_names = list(BUDGETS[name])
    workbook = xml_doc(
        f'<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="{REL}">'
        '<bookViews><workbookView activeTab="0"/></bookViews><sheets>'
        + "".join(f'<sheet name="{s}" sheetId="{i}" r:id="rId{i}"/>' for i, s in enumerate(sheet_names, 1))
        + '</sheets><calcPr calcId="191029"/></workbook>'
    )
    n = len(sheet_names)
    workbook_rels = relationships(
        [(f"rId{i}", "worksheet", f"worksheets/sheet{i}.xml") for i in range(1, n + 1)]
        + [(f"rId{n + 1}", "sharedStrings", "sharedStrings.xml"), (f"rId{n + 2}", "styles", "styles.xml")]
    )
    sml = OOXML_CT + ".spreadsheetml"
    members = [
        ("[Content_Types].xml", content_types(
            [("/xl/workbook.xml", sml + ".sheet.main+xml")]
            + [(f"/xl/worksheets/sheet{i}.xml", sml + ".worksheet+xml") for i in range(1, n + 1)]
            + [("/xl/sharedStrings.xml", sml + ".sharedStrings+xml"), ("/xl/styles.xml", sml + ".styles+xml"),
               CORE_CT])),
        ("_rels/.rels", package_rels("xl/workbook.xml")),
        ("docProps/core.xml", core_props("Harbour Budget")),
        ("xl/workbook.xml", workbook),
        ("xl/_rels/workbook.xml.rels", workbook_rels),
        *[(f"xl/worksheets/sheet{i}.xml", s) for i, s in enumerate(sheets, 1)],
        ("xl/sharedStrings.xml", sst),
        ("xl/styles.xml", styles),
    ]
    write(name, zip_package(members), budget_expected(name, "xlsx", keeps_formula=True))


def harbour_budget_xls():
    name = "harbour-budget.xls"
    book = xlwt.Workbook(encoding="utf-8")
    bold = xlwt.easyxf("font: bold on")
    money = xlwt.easyxf(num_format_str="0.00")
    day = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for sheet_name, sheet in BUDGETS[name].items():
        ws = book.add_sheet(sheet_name)
        for c, width in enumerate((30, 12, 70)):
            ws.col(c).width = width * 256
        for r, row in sorted(sheet.items()):
            for c, value in enumerate(row):
                if value is None:
                    continue
                if isinstance(value, Formula):  # xlwt stores no cached result: write the value
                    ws.write(r - 1, c, value.value, money)
                elif isinstance(value, datetime.date):
                    ws.write(r - 1, c, datetime.datetime(value.year, value.month, value.day), day)
                elif isinstance(value, str):
                    ws.write(r - 1, c, value, bold if r == 1 else xlwt.Style.default_style)
                else:
                    ws.write(r - 1, c, value, money)
    buf = io.BytesIO()
    book.save(buf)
    write(name, buf.getvalue(), budget_expected(name, "xls", keeps_formula=False))


# ---------------------------------------------------------------------------------------------
# OpenDocument (ods, odp, odt)
# ---------------------------------------------------------------------------------------------

ODF_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "fo": "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0",
    "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "number": "urn:oasis:names:tc:opendocument:xmlns:datastyle:1.0",
    "of": "urn:oasis:names:tc:opendocument:xmlns:of:1.2",
    "xlink": "http://www.w3.org/1999/xlink",
    "dc": "http://purl.org/dc/elements/1.1/",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
}
ODF_NS_ATTRS = " ".join(f'xmlns:{p}="{u}"' for p, u in ODF_NS.items())


def odf_package(mimetype, content, styles, title):
    manifest = xml_doc(
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.3">'
        f'<manifest:file-entry manifest:full-path="/" manifest:version="1.3" manifest:media-type="{mimetype}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    meta = xml_doc(
        f'<office:document-meta {ODF_NS_ATTRS} office:version="1.3"><office:meta>'
        f"<dc:title>{x(title)}</dc:title><meta:generator>make-format-fixtures.py</meta:generator>"
        "<meta:creation-date>2023-01-01T00:00:00</meta:creation-date>"
        "<dc:date>2023-01-01T00:00:00</dc:date></office:meta></office:document-meta>"
    )
    return zip_package([
        ("mimetype", mimetype),  # first and stored, so `file` and sniffers see it at offset 38
        ("META-INF/manifest.xml", manifest),
        ("content.xml", content),
        ("styles.xml", styles),
        ("meta.xml", meta),
    ], stored=("mimetype",))


def odf_content(automatic_styles, body):
    return xml_doc(
        f'<office:document-content {ODF_NS_ATTRS} office:version="1.3">'
        f"<office:automatic-styles>{automatic_styles}</office:automatic-styles>"
        f"<office:body>{body}</office:body></office:document-content>"
    )


def odf_styles(styles="", automatic="", master=""):
    return xml_doc(
        f'<office:document-styles {ODF_NS_ATTRS} office:version="1.3">'
        f"<office:styles>{styles}</office:styles>"
        f"<office:automatic-styles>{automatic}</office:automatic-styles>"
        f"<office:master-styles>{master}</office:master-styles></office:document-styles>"
    )


ODS_COLUMNS, ODS_ROWS = 1024, 1048576  # LibreOffice's default sheet size


def ods_cell(value):
    if value is None:
        return "<table:table-cell/>"
    if isinstance(value, str):
        return f'<table:table-cell office:value-type="string"><text:p>{x(value)}</text:p></table:table-cell>'
    if isinstance(value, datetime.date):
        iso = value.isoformat()
        return (f'<table:table-cell table:style-name="ce2" office:value-type="date" office:date-value="{iso}">'
                f"<text:p>{iso}</text:p></table:table-cell>")
    if isinstance(value, Formula):
        # OpenFormula writes cell references in brackets: SUM(B2:B6) -> of:=SUM([.B2:.B6])
        formula = "of:=" + value.expr.replace("(", "([.").replace(":", ":.").replace(")", "])")
        return (f'<table:table-cell table:style-name="ce1" table:formula="{formula}" '
                f'office:value-type="float" office:value="{num_text(value.value)}">'
                f"<text:p>{value.value:.2f}</text:p></table:table-cell>")
    return (f'<table:table-cell table:style-name="ce1" office:value-type="float" '
            f'office:value="{num_text(value)}"><text:p>{value:.2f}</text:p></table:table-cell>')


def ods_row(row):
    """One table-row; runs of empty cells collapse into number-columns-repeated, as LibreOffice does."""
    cells, empty = "", 0
    for value in row:
        if value is None:
            empty += 1
            continue
        if empty:
            repeat = f' table:number-columns-repeated="{empty}"' if empty > 1 else ""
            cells += f"<table:table-cell{repeat}/>"
            empty = 0
        cells += ods_cell(value)
    return f"<table:table-row>{cells}</table:table-row>"  # trailing empty cells are left out


def harbour_budget_ods():
    name = "harbour-budget.ods"
    tables = ""
    for i, (sheet_name, sheet) in enumerate(BUDGETS[name].items()):
        padded = i == 1  # the second sheet is padded to the full sheet size like a formatted LO sheet
        cols = ('<table:table-column table:style-name="co1" table:default-cell-style-name="Default"/>'
                '<table:table-column table:style-name="co2" table:default-cell-style-name="Default"/>'
                '<table:table-column table:style-name="co3" table:default-cell-style-name="Default"/>')
        if padded:
            cols += (f'<table:table-column table:style-name="co2" table:number-columns-repeated="{ODS_COLUMNS - 3}" '
                     'table:default-cell-style-name="Default"/>')
        rows, r, last = "", 1, max(sheet)
        while r <= last:
            if r not in sheet:
                gap = 1
                while r + gap not in sheet:
                    gap += 1
                repeat = f' table:number-rows-repeated="{gap}"' if gap > 1 else ""
                rows += (f'<table:table-row{repeat}><table:table-cell table:number-columns-repeated="3"/>'
                         "</table:table-row>")
                r += gap
                continue
            rows += ods_row(sheet[r])
            r += 1
        if padded:
            rows += (f'<table:table-row table:number-rows-repeated="{ODS_ROWS - last}">'
                     f'<table:table-cell table:number-columns-repeated="{ODS_COLUMNS}"/></table:table-row>')
        tables += f'<table:table table:name="{sheet_name}">{cols}{rows}</table:table>'
    automatic = (
        '<style:style style:name="co1" style:family="table-column">'
        '<style:table-column-properties style:column-width="2.2in"/></style:style>'
        '<style:style style:name="co2" style:family="table-column">'
        '<style:table-column-properties style:column-width="0.9in"/></style:style>'
        '<style:style style:name="co3" style:family="table-column">'
        '<style:table-column-properties style:column-width="5in"/></style:style>'
        '<number:number-style style:name="N2"><number:number number:decimal-places="2" '
        'number:min-decimal-places="2" number:min-integer-digits="1"/></number:number-style>'
        '<number:date-style style:name="N37"><number:year number:style="long"/><number:text>-</number:text>'
        '<number:month number:style="long"/><number:text>-</number:text><number:day number:style="long"/>'
        "</number:date-style>"
        '<style:style style:name="ce1" style:family="table-cell" style:parent-style-name="Default" '
        'style:data-style-name="N2"/>'
        '<style:style style:name="ce2" style:family="table-cell" style:parent-style-name="Default" '
        'style:data-style-name="N37"/>'
    )
    content = odf_content(automatic, f"<office:spreadsheet>{tables}</office:spreadsheet>")
    styles = odf_styles('<style:style style:name="Default" style:family="table-cell"/>')
    expected = budget_expected(name, "ods", keeps_formula=True)
    expected["repeated"] = {
        "note": "Q3 and Q4 have rows 7-8 as one row with number-rows-repeated=2; Q4 is padded to "
                f"{ODS_COLUMNS} columns x {ODS_ROWS} rows with repeated empty columns/rows",
        "sheet_size": {"Q4": [ODS_COLUMNS, ODS_ROWS]},
    }
    write(name, odf_package("application/vnd.oasis.opendocument.spreadsheet", content, styles, "Harbour Budget"),
          expected)


def ferry_briefing_odp():
    slides = [
        ("Harbour Ferry Plan", "The ferry ramp at Vennesund was rebuilt with oak sleepers last spring.", None),
        ("Weather Limits", "Sailings are cancelled when the wind at Skerry Point exceeds force eight.",
         "Tell passengers that the cafe on the ferry accepts only cash this season."),
    ]
    pages = ""
    for n, (title, outline, notes) in enumerate(slides, start=1):
        pages += (
            f'<draw:page draw:name="page{n}" draw:style-name="dp1" draw:master-page-name="Default" '
            'presentation:presentation-page-layout-name="AL1T1">'
            '<draw:frame presentation:style-name="pr1" draw:layer="layout" svg:width="25.2cm" svg:height="3.5cm" '
            'svg:x="1.4cm" svg:y="0.8cm" presentation:class="title">'
            f"<draw:text-box><text:p>{x(title)}</text:p></draw:text-box></draw:frame>"
            '<draw:frame presentation:style-name="pr2" draw:layer="layout" svg:width="25.2cm" svg:height="12cm" '
            'svg:x="1.4cm" svg:y="4.9cm" presentation:class="outline">'
            f"<draw:text-box><text:list><text:list-item><text:p>{x(outline)}</text:p></text:list-item>"
            "</text:list></draw:text-box></draw:frame>"
        )
        if notes:
            pages += (
                '<presentation:notes draw:style-name="dp1">'
                f'<draw:page-thumbnail draw:layer="layout" svg:width="14cm" svg:height="10.5cm" svg:x="3.5cm" '
                f'svg:y="2.5cm" draw:page-number="{n}" presentation:class="page"/>'
                '<draw:frame draw:layer="layout" svg:width="16.8cm" svg:height="12.6cm" svg:x="2.1cm" '
                'svg:y="14.1cm" presentation:class="notes">'
                f"<draw:text-box><text:p>{x(notes)}</text:p></draw:text-box></draw:frame>"
                "</presentation:notes>"
            )
        pages += "</draw:page>"
    automatic = (
        '<style:style style:name="dp1" style:family="drawing-page"/>'
        '<style:style style:name="pr1" style:family="presentation">'
        '<style:graphic-properties draw:fill="none" draw:stroke="none"/>'
        '<style:text-properties fo:font-size="32pt" fo:font-weight="bold"/></style:style>'
        '<style:style style:name="pr2" style:family="presentation">'
        '<style:graphic-properties draw:fill="none" draw:stroke="none"/>'
        '<style:text-properties fo:font-size="20pt"/></style:style>'
    )
    content = odf_content(automatic, f"<office:presentation>{pages}</office:presentation>")
    styles = odf_styles(
        automatic='<style:page-layout style:name="PM1"><style:page-layout-properties fo:margin-top="0cm" '
                  'fo:margin-bottom="0cm" fo:margin-left="0cm" fo:margin-right="0cm" fo:page-width="28cm" '
                  'fo:page-height="15.75cm" style:print-orientation="landscape"/></style:page-layout>',
        master='<style:master-page style:name="Default" style:page-layout-name="PM1"/>',
    )
    write("ferry-briefing.odp",
          odf_package("application/vnd.oasis.opendocument.presentation", content, styles, "Ferry Briefing"), {
              "kind": "odp",
              "slides": [title for title, _, _ in slides],
              "phrases": [{"text": outline, "slide": n, "notes": False}
                          for n, (_, outline, _) in enumerate(slides, start=1)]
              + [{"text": notes, "slide": n, "notes": True}
                 for n, (_, _, notes) in enumerate(slides, start=1) if notes],
          })


def station_notes_odt():
    station = "The anemometer on the lighthouse roof was replaced after the January storm."
    calibration = "Calibrate the barometer against the reference in the harbour office every second Tuesday."
    readings = "Morning readings are written in pencil so that salt spray cannot smudge them."
    table = [["Date", "Wind", "Pressure"],
             ["2023-01-09", "North-west 6", "998 hPa"],
             ["2023-01-10", "West 4", "1004 hPa"]]
    rows = "".join(
        "<table:table-row>" + "".join(
            f'<table:table-cell table:style-name="Table1.A1" office:value-type="string">'
            f'<text:p text:style-name="{"Table_20_Heading" if i == 0 else "Table_20_Contents"}">{x(c)}</text:p>'
            "</table:table-cell>" for c in row) + "</table:table-row>"
        for i, row in enumerate(table)
    )
    body = (
        '<office:text><text:h text:style-name="Heading_20_1" text:outline-level="1">Weather Station</text:h>'
        f'<text:p text:style-name="Text_20_body">{x(station)}</text:p>'
        '<text:h text:style-name="Heading_20_2" text:outline-level="2">Calibration</text:h>'
        f'<text:p text:style-name="Text_20_body">{x(calibration)}</text:p>'
        '<text:h text:style-name="Heading_20_1" text:outline-level="1">Readings</text:h>'
        f'<text:p text:style-name="Text_20_body">{x(readings)}</text:p>'
        '<table:table table:name="Table1" table:style-name="Table1">'
        '<table:table-column table:style-name="Table1.A" table:number-columns-repeated="3"/>'
        f"{rows}</table:table></office:text>"
    )
    automatic = (
        '<style:style style:name="Table1" style:family="table"><style:table-properties style:width="15cm" '
        'table:align="left"/></style:style>'
        '<style:style style:name="Table1.A" style:family="table-column">'
        '<style:table-column-properties style:column-width="5cm"/></style:style>'
        '<style:style style:name="Table1.A1" style:family="table-cell">'
        '<style:table-cell-properties fo:padding="0.1cm" fo:border="0.5pt solid #000000"/></style:style>'
    )

    def para_style(name, display, extra="", parent="Standard", cls="text"):
        return (f'<style:style style:name="{name}" style:display-name="{display}" style:family="paragraph" '
                f'style:parent-style-name="{parent}" style:class="{cls}"{extra}/>')

    styles = odf_styles(
        '<style:style style:name="Standard" style:family="paragraph" style:class="text"/>'
        + para_style("Text_20_body", "Text body")
        + '<style:style style:name="Heading" style:family="paragraph" style:parent-style-name="Standard" '
          'style:next-style-name="Text_20_body" style:class="text"><style:text-properties fo:font-size="14pt" '
          'fo:font-weight="bold"/></style:style>'
        + '<style:style style:name="Heading_20_1" style:display-name="Heading 1" style:family="paragraph" '
          'style:parent-style-name="Heading" style:default-outline-level="1" style:class="text">'
          '<style:text-properties fo:font-size="130%"/></style:style>'
        + '<style:style style:name="Heading_20_2" style:display-name="Heading 2" style:family="paragraph" '
          'style:parent-style-name="Heading" style:default-outline-level="2" style:class="text">'
          '<style:text-properties fo:font-size="115%"/></style:style>'
        + para_style("Table_20_Contents", "Table Contents", cls="extra")
        + para_style("Table_20_Heading", "Table Heading", parent="Table_20_Contents", cls="extra")
    )
    content = odf_content(automatic, body)
    write("station-notes.odt",
          odf_package("application/vnd.oasis.opendocument.text", content, styles, "Station Notes"), {
              "kind": "odt",
              "sections": [
                  {"title": "Weather Station", "level": 1},
                  {"title": "Calibration", "level": 2},
                  {"title": "Readings", "level": 1},
              ],
              "phrases": [
                  {"text": station, "section": "Weather Station"},
                  {"text": calibration, "section": "Weather Station" + SEP + "Calibration"},
                  {"text": readings, "section": "Readings"},
              ],
              "tables": [{"section": "Readings", "rows": table}],
          })


# ---------------------------------------------------------------------------------------------
# PresentationML
# ---------------------------------------------------------------------------------------------

P_NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        f'xmlns:r="{REL}" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
GROUP = ('<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
         '<p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/>'
         '<a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>')
CLR_MAP = ('<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" '
           'accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" '
           'folHlink="folHlink"/>')


def p_shape(sid, name, ph, box=None, paragraphs=(), extra_nv=""):
    """A placeholder shape; `paragraphs` are plain strings or ready-made <a:p> XML (starting '<')."""
    xfrm = (f'<a:xfrm><a:off x="{box[0]}" y="{box[1]}"/><a:ext cx="{box[2]}" cy="{box[3]}"/></a:xfrm>'
            if box else "")
    paras = "".join(p if p.startswith("<") else f'<a:p><a:r><a:rPr lang="en-GB"/><a:t>{x(p)}</a:t></a:r></a:p>'
                    for p in paragraphs) or "<a:p/>"
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="{sid}" name="{name}"/><p:cNvSpPr>{extra_nv}</p:cNvSpPr>'
            f"<p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr>{xfrm}</p:spPr>"
            f"<p:txBody><a:bodyPr/><a:lstStyle/>{paras}</p:txBody></p:sp>")


TITLE_BOX = (457200, 274638, 8229600, 1143000)
BODY_BOX = (457200, 1600200, 8229600, 4525963)


def theme_xml(name):
    colours = [("dk1", '<a:sysClr val="windowText" lastClr="000000"/>'),
               ("lt1", '<a:sysClr val="window" lastClr="FFFFFF"/>')]
    colours += [(k, f'<a:srgbClr val="{v}"/>') for k, v in (
        ("dk2", "1F497D"), ("lt2", "EEECE1"), ("accent1", "4F81BD"), ("accent2", "C0504D"),
        ("accent3", "9BBB59"), ("accent4", "8064A2"), ("accent5", "4BACC6"), ("accent6", "F79646"),
        ("hlink", "0000FF"), ("folHlink", "800080"))]
    fill = '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>'
    line = f'<a:ln w="9525">{fill}</a:ln>'
    font = '<a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/>'
    return xml_doc(
        f'<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="{name}">'
        '<a:themeElements><a:clrScheme name="Office">'
        + "".join(f"<a:{k}>{v}</a:{k}>" for k, v in colours)
        + f'</a:clrScheme><a:fontScheme name="Office"><a:majorFont>{font}</a:majorFont>'
        f"<a:minorFont>{font}</a:minorFont></a:fontScheme>"
        f'<a:fmtScheme name="Office"><a:fillStyleLst>{fill * 3}</a:fillStyleLst>'
        f"<a:lnStyleLst>{line * 3}</a:lnStyleLst>"
        f'<a:effectStyleLst>{"<a:effectStyle><a:effectLst/></a:effectStyle>" * 3}</a:effectStyleLst>'
        f"<a:bgFillStyleLst>{fill * 3}</a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"
    )


def ferry_briefing_pptx():
    slides = [
        ("Ferry Briefing", "Crossings between Vennesund and Skerry Point run twice a day in summer.", None),
        ("Winter Timetable", "The winter ferry timetable starts on the first Monday of October.", None),
        ("Safety on Board", "Passengers must stay off the open car deck while the ferry is docking.",
         "Remind the crew that the lifeboat drill is held on the last Friday of each month."),
    ]
    pml = OOXML_CT + ".presentationml"
    title_ph, body_ph = '<p:ph type="title"/>', '<p:ph idx="1"/>'
    master = xml_doc(
        f'<p:sldMaster {P_NS}><p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg>'
        f"<p:spTree>{GROUP}"
        + p_shape(2, "Title Placeholder 1", title_ph, TITLE_BOX, ["Click to edit Master title style"])
        + p_shape(3, "Text Placeholder 2", '<p:ph type="body" idx="1"/>', BODY_BOX,
                  ["Click to edit Master text styles"])
        + f"</p:spTree></p:cSld>{CLR_MAP}"
        '<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>'
    )
    layout = xml_doc(
        f'<p:sldLayout {P_NS} type="obj" preserve="1"><p:cSld name="Title and Content"><p:spTree>{GROUP}'
        + p_shape(2, "Title 1", title_ph) + p_shape(3, "Content Placeholder 2", body_ph)
        + "</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"
    )
    notes_master = xml_doc(
        f'<p:notesMaster {P_NS}><p:cSld><p:spTree>{GROUP}'
        + p_shape(2, "Notes Placeholder 1", '<p:ph type="body" sz="quarter" idx="1"/>',
                  (685800, 4343400, 5486400, 4114800))
        + f"</p:spTree></p:cSld>{CLR_MAP}</p:notesMaster>"
    )
    members = []
    for n, (title, body, notes) in enumerate(slides, start=1):
        members.append((f"ppt/slides/slide{n}.xml", xml_doc(
            f"<p:sld {P_NS}><p:cSld><p:spTree>{GROUP}"
            + p_shape(2, "Title 1", title_ph, TITLE_BOX, [title])
            + p_shape(3, "Content Placeholder 2", body_ph, BODY_BOX, [body])
            + "</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"
        )))
        rels = [("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")]
        if notes:
            rels.append(("rId2", "notesSlide", f"../notesSlides/notesSlide{n}.xml"))
            # As PowerPoint writes them: a slide image, the notes body and a slide-number field.
            slide_number = (f'<a:p><a:fld id="{{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}}" type="slidenum">'
                            f'<a:rPr lang="en-GB"/><a:t>{n}</a:t></a:fld><a:endParaRPr lang="en-GB"/></a:p>')
            members.append((f"ppt/notesSlides/notesSlide{n}.xml", xml_doc(
                f"<p:notes {P_NS}><p:cSld><p:spTree>{GROUP}"
                '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Slide Image Placeholder 1"/><p:cNvSpPr>'
                '<a:spLocks noGrp="1" noRot="1" noChangeAspect="1"/></p:cNvSpPr><p:nvPr><p:ph type="sldImg"/>'
                "</p:nvPr></p:nvSpPr><p:spPr/></p:sp>"
                + p_shape(3, "Notes Placeholder 2", '<p:ph type="body" idx="1"/>', None, [notes],
                          '<a:spLocks noGrp="1"/>')
                + p_shape(4, "Slide Number Placeholder 3", '<p:ph type="sldNum" sz="quarter" idx="5"/>', None,
                          [slide_number], '<a:spLocks noGrp="1"/>')
                + "</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:notes>"
            )))
            members.append((f"ppt/notesSlides/_rels/notesSlide{n}.xml.rels", relationships([
                ("rId1", "notesMaster", "../notesMasters/notesMaster1.xml"),
                ("rId2", "slide", f"../slides/slide{n}.xml"),
            ])))
        members.append((f"ppt/slides/_rels/slide{n}.xml.rels", relationships(rels)))
    members.sort()
    count = len(slides)
    presentation = xml_doc(
        f'<p:presentation {P_NS} saveSubsetFonts="1">'
        '<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>'
        f'<p:notesMasterIdLst><p:notesMasterId r:id="rId{count + 3}"/></p:notesMasterIdLst><p:sldIdLst>'
        + "".join(f'<p:sldId id="{255 + n}" r:id="rId{n + 1}"/>' for n in range(1, count + 1))
        + '</p:sldIdLst><p:sldSz cx="9144000" cy="6858000" type="screen4x3"/><p:notesSz cx="6858000" cy="9144000"/>'
        "</p:presentation>"
    )
    presentation_rels = relationships(
        [("rId1", "slideMaster", "slideMasters/slideMaster1.xml")]
        + [(f"rId{n + 1}", "slide", f"slides/slide{n}.xml") for n in range(1, count + 1)]
        + [(f"rId{count + 2}", "theme", "theme/theme1.xml"),
           (f"rId{count + 3}", "notesMaster", "notesMasters/notesMaster1.xml")]
    )
    overrides = (
        [("/ppt/presentation.xml", pml + ".presentation.main+xml"),
         ("/ppt/slideMasters/slideMaster1.xml", pml + ".slideMaster+xml"),
         ("/ppt/slideLayouts/slideLayout1.xml", pml + ".slideLayout+xml"),
         ("/ppt/notesMasters/notesMaster1.xml", pml + ".notesMaster+xml"),
         ("/ppt/theme/theme1.xml", OOXML_CT + ".theme+xml"),
         ("/ppt/theme/theme2.xml", OOXML_CT + ".theme+xml")]
        + [(f"/ppt/slides/slide{n}.xml", pml + ".slide+xml") for n in range(1, count + 1)]
        + [(f"/ppt/notesSlides/notesSlide{n}.xml", pml + ".notesSlide+xml")
           for n, (_, _, notes) in enumerate(slides, start=1) if notes]
        + [CORE_CT]
    )
    members = [
        ("[Content_Types].xml", content_types(overrides)),
        ("_rels/.rels", package_rels("ppt/presentation.xml")),
        ("docProps/core.xml", core_props("Ferry Briefing")),
        ("ppt/presentation.xml", presentation),
        ("ppt/_rels/presentation.xml.rels", presentation_rels),
        ("ppt/slideMasters/slideMaster1.xml", master),
        ("ppt/slideMasters/_rels/slideMaster1.xml.rels", relationships([
            ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"), ("rId2", "theme", "../theme/theme1.xml")])),
        ("ppt/slideLayouts/slideLayout1.xml", layout),
        ("ppt/slideLayouts/_rels/slideLayout1.xml.rels", relationships([
            ("rId1", "slideMaster", "../slideMasters/slideMaster1.xml")])),
        ("ppt/notesMasters/notesMaster1.xml", notes_master),
        ("ppt/notesMasters/_rels/notesMaster1.xml.rels", relationships([("rId1", "theme", "../theme/theme2.xml")])),
        ("ppt/theme/theme1.xml", theme_xml("Office Theme")),
        ("ppt/theme/theme2.xml", theme_xml("Office Theme")),
        *members,
    ]
    write("ferry-briefing.pptx", zip_package(members), {
        "kind": "pptx",
        "slides": [title for title, _, _ in slides],
        "phrases": [{"text": body, "slide": n, "notes": False} for n, (_, body, _) in enumerate(slides, start=1)]
        + [{"text": notes, "slide": n, "notes": True} for n, (_, _, notes) in enumerate(slides, start=1) if notes],
        "notes_slide_number_field": "notesSlide3.xml also holds a sldNum placeholder whose text is '3'",
    })


# ---------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------

IMAGES = [  # file, kind, Pillow format, size, save options
    ("pier.png", "png", "PNG", (64, 48), {}),
    ("pier.jpg", "jpeg", "JPEG", (72, 54), {"quality": 85}),
    ("pier.gif", "gif", "GIF", (56, 42), {}),
    ("pier.tiff", "tiff", "TIFF", (48, 36), {"compression": "tiff_deflate"}),
    ("pier.webp", "webp", "WEBP", (80, 60), {"quality": 80, "method": 4}),
]


def images():
    for name, kind, fmt, (w, h), options in IMAGES:
        img = picture(w, h)
        if fmt == "GIF":
            img = img.quantize(colors=32, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        write(name, image_bytes(img, fmt, **options), {"kind": kind, "width": w, "height": h})


def chart_svg():
    title = "Monthly high water at Vennesund"
    desc = "The bar chart shows that the highest spring tide of the year fell in March."
    months = [("Jan", 2.1), ("Feb", 2.2), ("Mar", 2.4), ("Apr", 2.3), ("May", 2.0), ("Jun", 1.9)]
    bars = ""
    for i, (month, metres) in enumerate(months):
        height = round(metres * 50)
        left = 50 + i * 44
        bars += (f'  <rect x="{left}" y="{170 - height}" width="30" height="{height}" fill="#2a6f97"/>\n'
                 f'  <text x="{left + 15}" y="186" text-anchor="middle">{month}</text>\n')
    svg = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="200" viewBox="0 0 320 200" '
        'font-family="sans-serif" font-size="11">\n'
        f"  <title>{x(title)}</title>\n  <desc>{x(desc)}</desc>\n"
        '  <rect width="320" height="200" fill="#f4f1e8"/>\n'
        f'  <text x="160" y="18" text-anchor="middle" font-size="13">{x(title)} (m)</text>\n'
        '  <line x1="40" y1="170" x2="310" y2="170" stroke="#333"/>\n'
        '  <line x1="40" y1="30" x2="40" y2="170" stroke="#333"/>\n'
        f"{bars}</svg>\n"
    )
    write("chart.svg", svg.encode(), {
        "kind": "svg", "width": 320, "height": 200, "title": title,
        "phrases": [{"text": desc}],
    })


# ---------------------------------------------------------------------------------------------
# Audio and video (ffmpeg)
# ---------------------------------------------------------------------------------------------

FF_DETERMINISTIC = ["-threads", "1", "-map_metadata", "-1", "-fflags", "+bitexact",
                    "-flags:v", "+bitexact", "-flags:a", "+bitexact"]


def foghorn_wav():
    rate, frames = 8000, 12000  # exactly 1.5 s
    samples = bytearray()
    for i in range(frames):
        t = i / rate
        envelope = min(1.0, t / 0.15, (1.5 - t) / 0.4)  # swell in, hold, fade out
        tone = 0.6 * math.sin(2 * math.pi * 110 * t) + 0.3 * math.sin(2 * math.pi * 220 * t) \
            + 0.1 * math.sin(2 * math.pi * 330 * t)
        samples += struct.pack("<h", int(round(20000 * envelope * tone)))
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(samples))
    return buf.getvalue()


def media_facts(path, kind, video):
    probe = ffprobe(path)
    stream = probe["streams"][0]
    facts = {"kind": kind, "codec": stream["codec_name"],
             "duration_seconds": round(float(probe["format"]["duration"]), 3)}
    start = round(float(probe["format"].get("start_time", 0)), 3)
    if start:  # mp3: the encoder delay; mpg: the program stream muxer starts its clock late
        facts["start_seconds"] = start
    if video:
        facts.update(width=stream["width"], height=stream["height"],
                     frame_rate=stream["r_frame_rate"], audio=False)
    else:
        facts.update(sample_rate=int(stream["sample_rate"]), channels=stream["channels"])
    return facts


def encode(tmp, name, inputs, options, kind, video):
    path = os.path.join(tmp, name)
    run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *inputs, *FF_DETERMINISTIC,
         *options, path])
    with open(path, "rb") as f:
        data = f.read()
    write(name, data, media_facts(path, kind, video))


def audio():
    wav = foghorn_wav()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "foghorn.wav")
        with open(src, "wb") as f:
            f.write(wav)
        write("foghorn.wav", wav, media_facts(src, "wav", video=False))
        for name, kind, options in [
            ("foghorn.mp3", "mp3", ["-c:a", "libmp3lame", "-b:a", "16k", "-id3v2_version", "0"]),
            ("foghorn.ogg", "ogg", ["-c:a", "libvorbis", "-q:a", "0"]),
            ("foghorn.oga", "ogg", ["-c:a", "libopus", "-b:a", "16k", "-f", "ogg"]),
            ("foghorn.flac", "flac", ["-c:a", "flac", "-compression_level", "8"]),
        ]:
            encode(tmp, name, ["-i", src], ["-ac", "1", *options], kind, video=False)


def video():
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, rate, options in [
            ("harbour.mp4", "mp4", 5, ["-c:v", "libx264", "-preset", "medium", "-crf", "30",
                                        "-pix_fmt", "yuv420p", "-x264-params", "threads=1"]),
            ("harbour.webm", "webm", 5, ["-c:v", "libvpx", "-b:v", "100k", "-deadline", "good", "-cpu-used", "1"]),
            ("harbour.avi", "avi", 5, ["-c:v", "mjpeg", "-q:v", "8", "-pix_fmt", "yuvj420p"]),
            # MPEG-1 has no 5 fps: 25 fps in an MPEG-1 system (program) stream. Small packs give
            # every GOP a timestamp, so demuxers that estimate the duration from them see 1 s.
            ("harbour.mpg", "mpeg", 25, ["-c:v", "mpeg1video", "-q:v", "12", "-g", "5",
                                         "-packetsize", "256", "-f", "mpeg"]),
        ]:
            src = ["-f", "lavfi", "-i", f"testsrc=size=96x64:rate={rate}:duration=1"]
            encode(tmp, name, src, ["-an", *options], kind, video=True)


# ---------------------------------------------------------------------------------------------


def check_phrases_unique():
    seen = {}
    for name, facts in EXPECTED.items():
        for phrase in facts.get("phrases", []):
            text = phrase["text"]
            if text in seen:
                sys.exit(f"phrase used twice ({seen[text]} and {name}): {text}")
            seen[text] = name


def ocr_fixtures():
    scanned_letter_pdf()
    whiteboard_png()


def main():
    os.makedirs(OUT, exist_ok=True)
    if sys.argv[1:] == ["--ocr-only"]:
        # Rewrite only the OCR fixtures and their entries (no ffmpeg needed).
        path = os.path.join(ROOT, "tests", "expected", "formats.json")
        with open(path, encoding="utf-8") as f:
            EXPECTED.update(json.load(f))
        ocr_fixtures()
        write_expected()
        return
    survey_report_pdf()
    scanned_page_pdf()
    ocr_fixtures()
    field_handbook_docx()
    harbour_budget_xlsx()
    harbour_budget_xls()
    harbour_budget_ods()
    ferry_briefing_pptx()
    ferry_briefing_odp()
    station_notes_odt()
    images()
    chart_svg()
    audio()
    video()
    write_expected()


def write_expected():
    check_phrases_unique()
    data = json.dumps(dict(sorted(EXPECTED.items())), indent=2, ensure_ascii=False) + "\n"
    path = os.path.join(ROOT, "tests", "expected", "formats.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(data)
    os.utime(path, (EPOCH, EPOCH))
    print(f"wrote tests/expected/formats.json ({len(data.encode())} bytes)")


if __name__ == "__main__":
    main()
