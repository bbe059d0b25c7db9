#!/usr/bin/env python3
"""Write a large PDF handbook with a deep outline, for the agent tools' tests and measurements.

    scripts/make-big-pdf.py OUT.pdf [--pages 1000] [--expect OUT.json]

What the file holds (default 1000 pages; every choice is a pure function of the page count):

  - every page with text says `This is page N of the handbook. Marker word: W.` (N the physical
    page, W the N-th entry of a generated word list, unique per page) followed by a few lines
    of prose that differ from page to page; a page where an outline entry starts also carries
    that entry's title in larger type;
  - an outline (/Outlines with /First /Last /Next /Prev /Parent /Count /Dest) of 532 entries,
    four levels deep: `Front matter` (3 children), 10 parts -> 50 chapters -> 450 sections, and
    the sections of chapter 1.1 each with two subsections; parts are open, chapters and
    sections closed (negative /Count);
  - page labels: roman `i`-`xii` for pages 1-12, then decimal from 1;
  - pages without text (IMAGE_ONLY_PAGES draw only a picture, BLANK_PAGES draw nothing) and
    a few pages with a tiny RGB image XObject of their own size (IMAGE_PAGES);
  - a two-level page tree (at most 100 pages per /Pages node, /MediaBox inherited).

`--expect` also writes what the file holds (outline with page ranges, labels, markers, image
and text-less pages) as JSON, for tests to compare against. Standard library only; the output is
byte-identical for the same arguments (fixed dates, /ID from the content).
"""
import argparse
import hashlib
import json
import sys
import zlib

FRONT_PAGES = 12
PARTS = 10
CHAPTERS_PER_PART = 5
MAX_SECTIONS_PER_CHAPTER = 9
# Pages without a text layer: drawn with only an image, or empty.
IMAGE_ONLY_PAGES = (250,)
BLANK_PAGES = (7, 251, 612, 999)
# Pages with an image (besides their text, unless image-only): page -> (width, height).
IMAGE_PAGES = {3: (8, 6), 4: (9, 7), 5: (10, 8), 9: (12, 5), 250: (40, 30), 480: (16, 16)}

SYLLABLES = ["ka", "lo", "mi", "ren", "tu", "sol", "vik", "dar", "ne", "po", "ast", "fel",
             "gri", "hon", "jul", "bek"]
NAMES = ["Ingrid", "Tormod", "Solveig", "Magnus", "Astrid", "Leif", "Kari", "Bjorn", "Sigrid",
         "Halvard", "Ragnhild", "Eirik", "Gunnhild", "Arne", "Liv", "Odd", "Turid"]
PLACES = ["Skerry Point", "Vennesund harbour", "the north pier", "Gull Island", "the ferry quay",
          "Ravnsvik bay", "the signal house", "Storholmen", "the fish market", "Kvalvik beach",
          "the pilot station"]
OBJECTS = ["copper weathervane", "foghorn valve", "tide gauge float", "mooring winch",
           "lantern lens", "rain collector", "radio mast", "boat ramp rails", "anemometer cups",
           "slipway chain", "bell rope", "chart table", "solar panel", "bilge pump",
           "flag halyard", "diesel tank", "storm shutters", "barometer", "marker buoy"]
ACTIONS = ["repainted", "inspected", "repaired", "moved", "cleaned", "tested", "replaced",
           "greased", "measured"]
WEATHER = ["a north-westerly gale", "thick fog", "a calm grey sea", "sleet from the east",
           "bright sun and a long swell", "drizzle", "a sudden squall"]
PART_THEMES = ["The Lighthouse", "The Harbour", "Tides and Currents", "Weather Watch",
               "Boats and Moorings", "Signals", "Stores and Supplies", "Safety at Sea",
               "Wildlife of the Skerries", "Records and Ledgers"]
CHAPTER_THEMES = ["Daily routine", "Equipment", "Inspections", "Repairs", "Logbooks"]


def marker_word(n):
    """The n-th entry (1-based) of a deterministic word list: three syllables, unique for
    n < 4096."""
    k = n - 1
    return "".join(SYLLABLES[(k >> shift) & 15] for shift in (8, 4, 0))


def roman(n):
    out = ""
    for value, digits in ((10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        while n >= value:
            out += digits
            n -= value
    return out


def page_label(page):
    return roman(page) if page <= FRONT_PAGES else str(page - FRONT_PAGES)


def has_text(page):
    return page not in IMAGE_ONLY_PAGES and page not in BLANK_PAGES


def layout(pages):
    """The outline as a tree of {"title", "page", "children"} (first page only), and the
    flattened entries in document order with level and page range [first, last]."""
    body = pages - FRONT_PAGES
    chapters = PARTS * CHAPTERS_PER_PART
    if body < 2 * chapters:
        raise ValueError(f"--pages must be at least {FRONT_PAGES + 2 * chapters}")
    per_chapter = min(MAX_SECTIONS_PER_CHAPTER, body // (2 * chapters))
    total_sections = chapters * per_chapter

    def section_start(s):
        return FRONT_PAGES + 1 + s * body // total_sections

    front = {"title": "Front matter", "page": 1, "children": [
        {"title": "Title page", "page": 1, "children": []},
        {"title": "Contents", "page": 2, "children": []},
        {"title": "Preface", "page": 5, "children": []},
    ]}
    roots = [front]
    s = 0
    for p in range(PARTS):
        part = {"title": f"Part {p + 1}: {PART_THEMES[p]}", "page": section_start(s), "children": []}
        roots.append(part)
        for c in range(CHAPTERS_PER_PART):
            chap_no = f"{p + 1}.{c + 1}"
            chapter = {"title": f"Chapter {chap_no} {CHAPTER_THEMES[c]}: {PART_THEMES[p].lower()}",
                       "page": section_start(s), "children": []}
            part["children"].append(chapter)
            for k in range(per_chapter):
                obj = OBJECTS[(s * 7 + k) % len(OBJECTS)]
                start = section_start(s)
                section = {"title": f"{chap_no}.{k + 1} The {obj}", "page": start, "children": []}
                chapter["children"].append(section)
                if p == 0 and c == 0 and section_start(s + 1) - start >= 2:
                    section["children"] = [
                        {"title": f"{chap_no}.{k + 1}.1 Checks on the {obj}", "page": start,
                         "children": []},
                        {"title": f"{chap_no}.{k + 1}.2 Notes on the {obj}", "page": start + 1,
                         "children": []},
                    ]
                s += 1

    flat = []

    def walk(nodes, level, end):
        for i, node in enumerate(nodes):
            last = nodes[i + 1]["page"] - 1 if i + 1 < len(nodes) else end
            last = max(last, node["page"])
            flat.append({"title": node["title"], "level": level, "pages": [node["page"], last]})
            walk(node["children"], level + 1, last)

    walk(roots, 1, pages)
    # Front matter ends where the body starts, whatever follows it.
    return roots, flat


def page_lines(page):
    """Prose of one page: a sentence naming the page, then lines that vary with it."""
    name = NAMES[page % len(NAMES)]
    place = PLACES[(page // 3) % len(PLACES)]
    lines = [f"This is page {page} of the handbook. Marker word: {marker_word(page)}."]
    for i in range(3 + page % 3):
        obj = OBJECTS[(page * 5 + i * 3) % len(OBJECTS)]
        action = ACTIONS[(page + i) % len(ACTIONS)]
        weather = WEATHER[(page * 3 + i) % len(WEATHER)]
        reading = (page * 37 + i * 11) % 400 / 100
        lines.append(f"{name} {action} the {obj} at {place} in {weather}; "
                     f"the tide stood at {reading:.2f} metres.")
    return lines


# ---------------------------------------------------------------------------------------------
# Raw PDF writing (as scripts/make-format-fixtures.py does)
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


def image_pixels(page, w, h):
    """A small RGB picture that differs per page: diagonal stripes in page-dependent colours."""
    out = bytearray()
    for y in range(h):
        for x in range(w):
            if (x + y + page) % 4 < 2:
                out += bytes(((page * 53) % 256, (page * 97) % 256, 180))
            else:
                out += bytes((245, 240, (page * 31) % 256))
    return bytes(out)


def build(pages):
    roots, flat = layout(pages)
    heading_at = {}  # page -> [(font size, title)]
    sizes = {1: 22, 2: 18, 3: 14, 4: 12}

    def collect(nodes, level):
        for node in nodes:
            heading_at.setdefault(node["page"], []).append((sizes[level], node["title"]))
            collect(node["children"], level + 1)

    collect(roots, 1)

    pdf = Pdf()
    catalog, root_pages, outlines = pdf.reserve(), pdf.reserve(), pdf.reserve()
    font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    groups = [list(range(start, min(start + 100, pages + 1))) for start in range(1, pages + 1, 100)]
    page_obj = {}
    group_objs = []
    for group in groups:
        node = pdf.reserve()
        group_objs.append(node)
        for page in group:
            ops = b""
            resources = f"/Font << /F1 {font} 0 R >>"
            if has_text(page):
                y = 790
                for size, title in heading_at.get(page, []):
                    ops += f"BT /F1 {size} Tf 1 0 0 1 60 {y} Tm ".encode() + pdf_string(title) + b" Tj ET\n"
                    y -= size + 12
                for line in page_lines(page):
                    ops += f"BT /F1 10 Tf 1 0 0 1 60 {y} Tm ".encode() + pdf_string(line) + b" Tj ET\n"
                    y -= 16
            if page in IMAGE_PAGES:
                w, h = IMAGE_PAGES[page]
                image = pdf.add_stream(
                    f"/Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceRGB "
                    "/BitsPerComponent 8 /Filter /FlateDecode",
                    zlib.compress(image_pixels(page, w, h), 9),
                )
                ops += f"q {w * 10} 0 0 {h * 10} 60 200 cm /Im1 Do Q\n".encode()
                resources += f" /XObject << /Im1 {image} 0 R >>"
            contents = pdf.add_stream("", ops)
            page_obj[page] = pdf.add(f"<< /Type /Page /Parent {node} 0 R "
                                     f"/Resources << {resources} >> /Contents {contents} 0 R >>")
        kids = " ".join(f"{page_obj[p]} 0 R" for p in group)
        pdf.set(node, f"<< /Type /Pages /Parent {root_pages} 0 R /Kids [{kids}] /Count {len(group)} >>")
    kids = " ".join(f"{n} 0 R" for n in group_objs)
    pdf.set(root_pages, f"<< /Type /Pages /Kids [{kids}] /Count {pages} /MediaBox [0 0 595 842] >>")

    # Outline: parts (level 1) open, everything below closed.
    def descendants(node):
        return sum(1 + descendants(c) for c in node["children"])

    def write_items(nodes, parent, level):
        nums = [pdf.reserve() for _ in nodes]
        visible = 0
        for i, (num, node) in enumerate(zip(nums, nodes)):
            entries = [b"/Title " + pdf_string(node["title"]), f"/Parent {parent} 0 R".encode()]
            if i > 0:
                entries.append(f"/Prev {nums[i - 1]} 0 R".encode())
            if i + 1 < len(nums):
                entries.append(f"/Next {nums[i + 1]} 0 R".encode())
            visible += 1
            if node["children"]:
                first, last, child_visible = write_items(node["children"], num, level + 1)
                is_open = level == 1
                count = child_visible if is_open else -len(node["children"])
                if is_open:
                    visible += child_visible
                entries.append(f"/First {first} 0 R /Last {last} 0 R /Count {count}".encode())
            dest = "/XYZ 0 842 null" if level >= 3 else "/Fit"
            entries.append(f"/Dest [{page_obj[node['page']]} 0 R {dest}]".encode())
            pdf.set(num, b"<< " + b" ".join(entries) + b" >>")
        return nums[0], nums[-1], visible

    first, last, visible = write_items(roots, outlines, 1)
    pdf.set(outlines, f"<< /Type /Outlines /First {first} 0 R /Last {last} 0 R /Count {visible} >>")
    pdf.set(catalog, f"<< /Type /Catalog /Pages {root_pages} 0 R /Outlines {outlines} 0 R "
                     f"/PageMode /UseOutlines /PageLabels << /Nums [0 << /S /r >> "
                     f"{FRONT_PAGES} << /S /D /St 1 >>] >> >>")
    info = pdf.add(b"<< /Title (The Skerry Point Station Handbook) /Author (Vennesund Harbour Survey)"
                   b" /Producer (make-big-pdf.py) /CreationDate (D:20230101000000Z)"
                   b" /ModDate (D:20230101000000Z) >>")
    data = pdf.to_bytes(catalog, info)
    assert descendants({"children": roots}) == len(flat)
    expect = {
        "pages": pages,
        "title": "The Skerry Point Station Handbook",
        "outline": flat,
        "labels": [page_label(p) for p in range(1, pages + 1)],
        "page_labels": [{"pages": f"1-{FRONT_PAGES}", "labels": f"i-{roman(FRONT_PAGES)}"},
                        {"pages": f"{FRONT_PAGES + 1}-{pages}", "labels": f"1-{pages - FRONT_PAGES}"}],
        "pages_without_text": [p for p in range(1, pages + 1) if not has_text(p)],
        "image_pages": {str(p): list(wh) for p, wh in sorted(IMAGE_PAGES.items()) if p <= pages},
        "markers": {str(p): marker_word(p) for p in range(1, pages + 1) if has_text(p)},
        "first_line": "This is page {page} of the handbook. Marker word: {word}.",
    }
    return data, expect


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the PDF to write")
    ap.add_argument("--pages", type=int, default=1000, help="physical pages (at least 112)")
    ap.add_argument("--expect", help="also write what the PDF holds as JSON here")
    args = ap.parse_args(argv)
    if not 2 * PARTS * CHAPTERS_PER_PART + FRONT_PAGES <= args.pages < 4096:
        sys.exit(f"--pages must be between {2 * PARTS * CHAPTERS_PER_PART + FRONT_PAGES} and 4095")
    data, expect = build(args.pages)
    with open(args.out, "wb") as f:
        f.write(data)
    if args.expect:
        with open(args.expect, "w") as f:
            json.dump(expect, f, indent=1)
            f.write("\n")
    print(f"wrote {args.out}: {args.pages} pages, {len(expect['outline'])} outline entries, "
          f"{len(data)} bytes")


if __name__ == "__main__":
    main()
