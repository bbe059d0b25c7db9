#!/usr/bin/env python3
"""Generate fixtures/hostile/ (archives and documents built to attack the unpacker and the
extractors) and tests/expected/hostile.json (what the ledger must say about each of them).

Every byte is produced here from text this script holds; nothing is downloaded. Output is
deterministic: fixed timestamps (2023-01-01), fixed member order, no randomness (the ZipCrypto
header is derived from a fixed string). Running it twice gives byte-identical files. It needs
only the Python 3 standard library; building the two large streamed payloads (768 MiB and
300 MiB, never held in memory) takes a few seconds.

Every fixture also carries at least one benign text member holding one unique English sentence
(a coastal weather station / harbour); tests/expected/hostile.json lists them under
`benign_phrases` so that a test can search for them after ingesting the fixture. Sentences that
sit in members which must NOT be read are listed under `absent_phrases`.

Ledger conventions used in the manifest:
  * `locator` is relative to the fixture's own path: "" is the fixture's own line, "!/a.txt" a
    member; nested members chain "!/inner.zip!/x.txt". Member names are raw; bytes that are not
    UTF-8 are percent-escaped (%E9), "%" is written %25 and "#" %23.
  * every leaf gets one line, every archive (top-level or nested) one line of its own: indexed
    when it was opened, skipped/failed when it could not be opened as a whole.
  * `ledger` lists lines in processing order (an archive's line first, then its members in
    central-directory / stream order); tests should compare them as a multiset.
  * status "failed_or_indexed" means either outcome is acceptable (PDF attacks below).

The attacks
-----------
docx-declared-1tib.zip
    Holds huge-part.docx, a minimal DOCX ([Content_Types].xml, _rels/.rels, word/document.xml)
    whose word/document.xml is tiny deflate data but whose local and central headers declare an
    uncompressed size of 1 TiB through ZIP64 extra fields (32-bit fields set to 0xFFFFFFFF,
    extra 0x0001 = {uncompressed: 2**40, compressed: real}). A reader that trusts the declared
    size allocates 1 TiB; the package pre-check must refuse the part ("declares"). Sibling
    station-log.txt.
xlsx-far-cells.zip
    Holds xlsx-far-cells.xlsx: a valid minimal workbook (shared strings) with a cell at A1 and
    one at XFD1048576 and <dimension ref="A1:XFD1048576"/>. A reader that materialises the
    dimension as a dense grid allocates 16384 x 1048576 cells. Streaming readers index it.
pdf-attacks.zip
    xref-huge-width.pdf: PDF 1.5 whose only cross-reference section is an xref stream with
    /W [1 2147483647 1] (field widths that old lopdf multiplies into an allocation).
    self-drawing-form.pdf: the page draws form XObject /Fm0 whose own content does /Fm0 Do and
    whose /Resources point back at itself (infinite recursion).
    fanout-forms.pdf: 30 levels of form XObjects, each drawing the next level 4 times
    (4**30 draws: exponential work without recursion). All are otherwise well-formed:
    qpdf --check passes the last two and reports only the /W of the first (which carries a
    recovery `trailer` dictionary so that scanning readers can rebuild its table). Sibling
    pdf-notes.txt.
zip-overlap.zip
    David Fifield's "better zip bomb" construction with quoted local headers: a benign stored
    entry, then ten entries overlap-00.bin .. overlap-09.bin. overlap-00.bin's data is a deflate
    kernel that inflates to 1 MiB of zero bytes; overlap-k.bin's data is a non-final stored block
    that quotes the local header of overlap-(k-1).bin followed by overlap-(k-1).bin's own data,
    so each entry's data range contains the next inner entry completely. The central directory
    lists the benign entry, then overlap-00 (innermost, highest offset) ... overlap-09
    (outermost): the first overlapping entry in central-directory order owns only the kernel,
    and every later one overlaps it.
nested-42.zip
    42.zip-style recursive bomb: top level = benign.txt, depth-probe.zip, lib-0.zip .. lib-f.zip;
    each lib holds book-0..f.zip, each book chapter-0..f.zip, each chapter page-0..f.zip, each
    page one member 0.bin = 768 MiB of zeros (streamed through zlib, never held in memory).
    Identical copies are compressed again one level up, so the whole file stays tiny.
    depth-probe.zip is a chain probe-2.zip > probe-3.zip > probe-4.zip > probe-5.zip: probe-4
    (depth 4) is opened and its deep-note.txt (depth 5) is indexed, probe-5.zip (a container at
    depth 5) is skipped with limit: depth. The exact ledger is derived by simulating the limits
    on the real sizes (see the manifest notes).
quine.zip
    A true zip quine after Russ Cox ("Zip Files All The Way Down"): member quine.zip inflates to
    the very bytes of the whole archive. The deflate data is Cox's self-reproducing program of
    stored blocks (literal Ln) and fixed-Huffman blocks holding one back-reference (repeat Rn),
    every opcode exactly 5 bytes; the CRC-32 that appears inside its own input is solved as a
    linear system over GF(2). A benign stored member lookout.txt sits before it (inside the
    quine's prefix). Opening quine.zip!/quine.zip would loop forever: it must be skipped as a
    recursive archive.
multi-member.txt.gz
    Three gzip members concatenated, one sentence each: a reader that stops after the first
    member loses two sentences.
tar-longname.tgz
    tar stream: tide-gauge.txt, then a GNU long-name record (././@LongLink, typeflag 'L') that
    declares a 300 MiB name of repeated 'a' (streamed into gzip), then a regular member that
    would carry that name. The name is a header, not a member: it must hit limit: tar-header.
    (Deflate cannot do better than ~1:1032, so this .tgz is ~300 KB.)
tar-sparse-1tib.tgz
    An old-GNU sparse member (typeflag 'S') with one 512-byte data block and a real size
    (offset 483, base-256 encoded) of 1 TiB, terminated by a zero-length map entry at 1 TiB;
    then buoy-report.txt. Reading the sparse member would produce 1 TiB of zeros.
zip-duplicate-names.zip
    Two central-directory entries both named notes.txt with different sentences, and
    crew-list.md. The second notes.txt must be reported, not merged or overwrite the first.
zip-path-tricks.zip
    Entries named ../../escape.txt, /abs/rooted.txt, dir/../../up.txt (zip-slip names) and
    plain.txt. Names never become paths, so all are indexed under their raw names.
tar-links-and-devices.tar
    benign.txt, a symlink link-to-passwd -> /etc/passwd, a hard link hard -> benign.txt, a
    character device (1,3), a block device (7,0) and a FIFO.
zip-links-and-encrypted.zip
    A Unix symlink entry (external attributes 0o120777, created by Unix) pointing at
    /etc/passwd, a ZipCrypto (traditional PKWARE) encrypted entry implemented here (12-byte
    header, key schedule; password "harbour") and a benign entry.
tar-link-flood.tgz
    benign.txt, then 20 000 symlink headers (l00000 .. l19999 -> /etc/passwd), then late.txt:
    a ~100 KB file whose headers alone would make 20 002 ledger lines. Every member (links
    included) counts against the 10 000-member limit; the member that would pass it ends the
    walk, and the archive's own line says how many members were read.
names-not-utf8.tar / names-not-utf8.zip
    tar members whose names are raw Latin-1 bytes (caf\\xe9.txt, na\\xefve/\\xfcber.md); a zip
    entry with the UTF-8 flag (bit 11) set but name bytes bad\\xff\\xfe.txt that are not UTF-8,
    and one whose name holds "%" and "#".
"""
import hashlib
import io
import json
import os
import struct
import sys
import tarfile
import zipfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "hostile")
MANIFEST = os.path.join(ROOT, "tests", "expected", "hostile.json")
EPOCH = 1672531200  # 2023-01-01T00:00:00Z
DOS_TIME = 0
DOS_DATE = ((2023 - 1980) << 9) | (1 << 5) | 1
MiB = 1 << 20
TiB = 1 << 40

# The pipeline's default limits (src/config.rs), used to derive expected outcomes.
MAX_TOTAL = 500 * MiB
MAX_FILES = 10_000
MAX_DEPTH = 5
MAX_RATIO = 250
RATIO_GRACE = 4 * MiB
MAX_FILE = 256 * MiB

FIXTURES = {}
PHRASES = {}  # sentence -> fixture, to keep every sentence unique
LEAF_HASHES = {}  # sha256 of every leaf expected to be indexed -> where (no accidental duplicates)


# ---------------------------------------------------------------------------------------------
# Manifest helpers
# ---------------------------------------------------------------------------------------------


def line(locator, status, reason=None):
    return {"locator": locator, "status": status, "reason_contains": reason}


def phrase(fixture, text, locator):
    if text in PHRASES:
        sys.exit(f"sentence used twice ({PHRASES[text]} and {fixture}): {text}")
    PHRASES[text] = fixture
    return {"text": text, "locator": locator}


def indexed_leaf(fixture, locator, data):
    """Record the bytes of a leaf expected to be indexed: no two may be identical, or the
    second would be reported as a duplicate."""
    h = hashlib.sha256(data).hexdigest()
    if h in LEAF_HASHES:
        sys.exit(f"identical leaves {LEAF_HASHES[h]} and {fixture}{locator}")
    LEAF_HASHES[h] = fixture + locator
    return line(locator, "indexed")


def write(name, data, attack, ledger, phrases, notes, lines=None, absent=()):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, (EPOCH, EPOCH))
    entry = {
        "attack": attack,
        "lines": len(ledger) if lines is None else lines,
        "ledger": ledger,
        "benign_phrases": phrases,
    }
    if absent:
        entry["absent_phrases"] = list(absent)
    entry["notes"] = notes
    FIXTURES[name] = entry
    print(f"wrote fixtures/hostile/{name} ({len(data)} bytes)")


def absent_phrase(fixture, text, locator):
    """A sentence stored in a member that must not be read: a search must not find it."""
    return phrase(fixture, text, locator)


def esc(name):
    """A member name as it appears in a locator: non-UTF-8 bytes, '%' and '#' percent-escaped."""
    if isinstance(name, str):
        name = name.encode()
    out = []
    i = 0
    while i < len(name):
        # Decode the longest valid UTF-8 sequence at i, else escape one byte.
        for n in (1, 2, 3, 4):
            try:
                ch = name[i : i + n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            break
        else:
            out.append("%{:02X}".format(name[i]))
            i += 1
            continue
        out.append({"%": "%25", "#": "%23"}.get(ch, ch))
        i += n
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Deflate / gzip
# ---------------------------------------------------------------------------------------------


def deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    return c.compress(data) + c.flush()


def deflate_chunks(chunks):
    """Raw deflate of a stream of chunks: (compressed, crc32, size), without holding the input."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    out, crc, size = [], 0, 0
    for chunk in chunks:
        out.append(c.compress(chunk))
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
    out.append(c.flush())
    return b"".join(out), crc, size


def gzip_member(chunks):
    """One gzip member (no FNAME, fixed mtime, XFL=2 for level 9, OS=3 Unix)."""
    if isinstance(chunks, bytes):
        chunks = [chunks]
    body, crc, size = deflate_chunks(chunks)
    head = b"\x1f\x8b\x08\x00" + struct.pack("<I", EPOCH) + b"\x02\x03"
    return head + body + struct.pack("<II", crc, size & 0xFFFFFFFF)


def repeat(byte, total, chunk=MiB):
    block = byte * chunk
    while total > 0:
        n = min(chunk, total)
        yield block if n == chunk else block[:n]
        total -= n


# ---------------------------------------------------------------------------------------------
# ZIP writer (byte-level, so that headers can lie)
# ---------------------------------------------------------------------------------------------

UNIX = 3
MODE_FILE = 0o100644
MODE_LINK = 0o120777


class Entry:
    def __init__(self, name, data=b"", method=8, raw=None, crc=None, usize=None, flags=0,
                 mode=MODE_FILE, local_extra=b"", central_extra=b"", version_needed=20,
                 lfh_csize=None, lfh_usize=None, cd_csize=None, cd_usize=None):
        self.name = name.encode() if isinstance(name, str) else name
        self.method = method
        if raw is None:
            raw = deflate(data) if method == 8 else data
        self.raw = raw  # the bytes stored after the local header
        self.crc = zlib.crc32(data) if crc is None else crc
        self.usize = len(data) if usize is None else usize
        self.csize = len(raw)
        self.flags = flags
        self.mode = mode
        self.local_extra = local_extra
        self.central_extra = central_extra
        self.version_needed = version_needed
        # Values written in the 32-bit size fields (default: the real ones).
        self.lfh_sizes = (self.csize if lfh_csize is None else lfh_csize,
                          self.usize if lfh_usize is None else lfh_usize)
        self.cd_sizes = (self.csize if cd_csize is None else cd_csize,
                         self.usize if cd_usize is None else cd_usize)
        self.offset = None

    def lfh(self):
        csize, usize = self.lfh_sizes
        return struct.pack("<IHHHHHIIIHH", 0x04034B50, self.version_needed, self.flags,
                           self.method, DOS_TIME, DOS_DATE, self.crc, csize, usize,
                           len(self.name), len(self.local_extra)) + self.name + self.local_extra

    def cdh(self):
        csize, usize = self.cd_sizes
        return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (UNIX << 8) | 63,
                           self.version_needed, self.flags, self.method, DOS_TIME, DOS_DATE,
                           self.crc, csize, usize, len(self.name), len(self.central_extra), 0, 0,
                           0, self.mode << 16, self.offset) + self.name + self.central_extra


def eocd(count, cd_size, cd_offset, comment=b""):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, cd_size, cd_offset,
                       len(comment)) + comment


def zip_bytes(entries):
    """Entries laid out one after another, then the central directory in the same order."""
    out = bytearray()
    for e in entries:
        e.offset = len(out)
        out += e.lfh() + e.raw
    cd = b"".join(e.cdh() for e in entries)
    return bytes(out) + cd + eocd(len(entries), len(cd), len(out))


def text_zip(members):
    """A plain zip of (name, text-or-bytes) pairs, deflated."""
    return zip_bytes([Entry(n, d.encode() if isinstance(d, str) else d) for n, d in members])


# ---------------------------------------------------------------------------------------------
# TAR writer (byte-level)
# ---------------------------------------------------------------------------------------------


def octal(value, width):
    return ("%0*o" % (width - 1, value)).encode() + b"\0"


def base256(value, width):
    return bytes([0x80]) + value.to_bytes(width - 1, "big")


def tar_header(name, size=0, typeflag=b"0", linkname=b"", mode=0o644, devmajor=0,
               devminor=0, size_field=None, extra=()):
    """An old-GNU header ("ustar  \\0" magic). `extra` = (offset, bytes) patches (sparse map)."""
    name = name.encode() if isinstance(name, str) else name
    linkname = linkname.encode() if isinstance(linkname, str) else linkname
    assert len(name) <= 100 and len(linkname) <= 100
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = octal(mode, 8)
    h[108:116] = octal(0, 8)
    h[116:124] = octal(0, 8)
    h[124:136] = size_field if size_field is not None else octal(size, 12)
    h[136:148] = octal(EPOCH, 12)
    h[156:157] = typeflag
    h[157:157 + len(linkname)] = linkname
    h[257:265] = b"ustar  \0"
    h[265:269] = b"root"
    h[297:301] = b"root"
    if typeflag in (b"3", b"4"):
        h[329:337] = octal(devmajor, 8)
        h[337:345] = octal(devminor, 8)
    for off, data in extra:
        h[off:off + len(data)] = data
    h[148:156] = b"        "
    h[148:156] = ("%06o" % sum(h)).encode() + b"\0 "
    return bytes(h)


def pad512(data):
    return data + b"\0" * (-len(data) % 512)


def tar_file(name, data, **kw):
    return tar_header(name, len(data), **kw) + pad512(data)


TAR_END = b"\0" * 1024


# ---------------------------------------------------------------------------------------------
# OOXML parts
# ---------------------------------------------------------------------------------------------

XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
NS_PKG = "http://schemas.openxmlformats.org/package/2006"
NS_OFF = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
CT_MAIN = "application/vnd.openxmlformats-officedocument"


def content_types(overrides):
    o = "".join(f'<Override PartName="{p}" ContentType="{CT_MAIN}.{t}"/>' for p, t in overrides)
    return (XML_HEAD + f'<Types xmlns="{NS_PKG}/content-types">'
            f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            f'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f"{o}</Types>").encode()


def rels(items):
    r = "".join(f'<Relationship Id="{i}" Type="{NS_OFF}/{t}" Target="{target}"/>'
                for i, t, target in items)
    return (XML_HEAD + f'<Relationships xmlns="{NS_PKG}/relationships">{r}'
            "</Relationships>").encode()


# ---------------------------------------------------------------------------------------------
# 1. docx-declared-1tib.zip
# ---------------------------------------------------------------------------------------------


def docx_declared_1tib():
    fx = "docx-declared-1tib.zip"
    doc_text = "This report claims to be larger than every logbook in the harbour office."
    document = (XML_HEAD + '<w:document xmlns:w="http://schemas.openxmlformats.org/'
                'wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>' + doc_text +
                "</w:t></w:r></w:p></w:body></w:document>").encode()
    raw = deflate(document)
    zip64 = struct.pack("<HHQQ", 0x0001, 16, TiB, len(raw))
    docx = zip_bytes([
        Entry("[Content_Types].xml", content_types(
            [("/word/document.xml", "wordprocessingml.document.main+xml")])),
        Entry("_rels/.rels", rels([("rId1", "officeDocument", "word/document.xml")])),
        Entry("word/document.xml", document, raw=raw, usize=TiB, version_needed=45,
              local_extra=zip64, central_extra=zip64,
              lfh_csize=0xFFFFFFFF, lfh_usize=0xFFFFFFFF,
              cd_csize=0xFFFFFFFF, cd_usize=0xFFFFFFFF),
    ])
    with zipfile.ZipFile(io.BytesIO(docx)) as z:
        assert z.getinfo("word/document.xml").file_size == TiB
    sentence = "The anemometer on the north mast was replaced after the October gale."
    data = text_zip([("huge-part.docx", docx), ("station-log.txt", sentence + "\n")])
    write(fx, data,
          "OOXML part whose ZIP64 headers declare 1 TiB uncompressed over a few hundred bytes",
          [line("", "indexed"),
           line("!/huge-part.docx", "failed", "declares"),
           indexed_leaf(fx, "!/station-log.txt", (sentence + "\n").encode())],
          [phrase(fx, sentence, "!/station-log.txt")],
          "huge-part.docx is a minimal DOCX; its word/document.xml has 0xFFFFFFFF in the 32-bit "
          "size fields of both headers and a ZIP64 extra field (0x0001) giving uncompressed "
          f"{TiB} bytes and the real compressed size ({len(raw)}); the CRC is the real one. The "
          "package pre-check must refuse it by its declared size (> 64 MiB per part) before "
          "any parser allocates; station-log.txt is indexed.",
          absent=[absent_phrase(fx, doc_text, "!/huge-part.docx")])


# ---------------------------------------------------------------------------------------------
# 2. xlsx-far-cells.zip
# ---------------------------------------------------------------------------------------------


def xlsx_far_cells():
    fx = "xlsx-far-cells.zip"
    a1 = "The tide gauge workbook lists every reading taken at the west pier since spring."
    far = "Far corner of the tide gauge sheet."
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    sheet = (XML_HEAD + f'<worksheet xmlns="{ns}"><dimension ref="A1:XFD1048576"/><sheetData>'
             '<row r="1"><c r="A1" t="s"><v>0</v></c></row>'
             '<row r="1048576"><c r="XFD1048576" t="s"><v>1</v></c></row>'
             "</sheetData></worksheet>").encode()
    shared = (XML_HEAD + f'<sst xmlns="{ns}" count="2" uniqueCount="2"><si><t>{a1}</t></si>'
              f"<si><t>{far}</t></si></sst>").encode()
    workbook = (XML_HEAD + f'<workbook xmlns="{ns}" xmlns:r="{NS_OFF}"><sheets>'
                '<sheet name="Readings" sheetId="1" r:id="rId1"/></sheets></workbook>').encode()
    xlsx = zip_bytes([
        Entry("[Content_Types].xml", content_types([
            ("/xl/workbook.xml", "spreadsheetml.sheet.main+xml"),
            ("/xl/worksheets/sheet1.xml", "spreadsheetml.worksheet+xml"),
            ("/xl/sharedStrings.xml", "spreadsheetml.sharedStrings+xml")])),
        Entry("_rels/.rels", rels([("rId1", "officeDocument", "xl/workbook.xml")])),
        Entry("xl/workbook.xml", workbook),
        Entry("xl/_rels/workbook.xml.rels", rels([
            ("rId1", "worksheet", "worksheets/sheet1.xml"),
            ("rId2", "sharedStrings", "sharedStrings.xml")])),
        Entry("xl/worksheets/sheet1.xml", sheet),
        Entry("xl/sharedStrings.xml", shared),
    ])
    sentence = "Barometer readings are copied into the logbook at six every morning."
    data = text_zip([("xlsx-far-cells.xlsx", xlsx), ("barometer.txt", sentence + "\n")])
    write(fx, data,
          "XLSX with cells at A1 and XFD1048576 and a full-sheet <dimension>",
          [line("", "indexed"),
           indexed_leaf(fx, "!/xlsx-far-cells.xlsx", xlsx),
           indexed_leaf(fx, "!/barometer.txt", (sentence + "\n").encode())],
          [phrase(fx, a1, "!/xlsx-far-cells.xlsx"), phrase(fx, sentence, "!/barometer.txt")],
          "xlsx-far-cells.xlsx: workbook, one sheet 'Readings', shared strings; A1 holds the "
          f"searched sentence, XFD1048576 holds '{far}' (not asserted: where a streaming "
          "reader puts a cell 16383 columns away is its own business). A reader that sizes a "
          "grid from <dimension> or from the last cell allocates 2**34 cells; the pipeline "
          "streams cells and must index the workbook.")


# ---------------------------------------------------------------------------------------------
# 3. pdf-attacks.zip
# ---------------------------------------------------------------------------------------------


def pdf_str(text):
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def stream_obj(dict_body, data):
    return f"<< {dict_body} /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def text_content(sentence):
    return f"BT /F1 12 Tf 72 720 Td {pdf_str(sentence)} Tj ET\n".encode()


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def pdf_classic(objects, version="1.4"):
    """objects: list of bytes bodies for objects 1..n (1 = catalog). Classic xref table."""
    out = bytearray(f"%PDF-{version}\n%\xe2\xe3\xcf\xd3\n".encode("latin-1"))
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
            .encode())
    return bytes(out)


def pdf_xref_huge_width(sentence):
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        stream_obj("", text_content(sentence)),
        FONT,
    ]
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref_at = len(out)
    # The entries themselves are written with widths [1 4 1]; /W claims the middle field is
    # 2147483647 bytes wide.
    rows = [struct.pack(">BIB", 0, 0, 255)]
    rows += [struct.pack(">BIB", 1, off, 0) for off in offsets]
    rows.append(struct.pack(">BIB", 1, xref_at, 0))
    data = b"".join(rows)
    n = len(objects) + 2
    out += f"{n - 1} 0 obj\n".encode()
    out += stream_obj(f"/Type /XRef /Size {n} /Index [0 {n}] /W [1 2147483647 1] /Root 1 0 R",
                      data)
    # No classic xref exists; this trailer dictionary (ignored by readers that follow
    # startxref) lets recovering readers such as qpdf rebuild the table by scanning objects.
    out += f"\nendobj\ntrailer\n<< /Size {n} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


def pdf_self_drawing(sentence):
    form = stream_obj(
        "/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
        "/Resources << /XObject << /Fm0 6 0 R >> >>",
        b"0 0 m 100 100 l S\nq 0.9 0 0 0.9 10 10 cm /Fm0 Do Q")
    return pdf_classic([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> /XObject << /Fm0 6 0 R >> >> /Contents 4 0 R >>",
        stream_obj("", text_content(sentence) + b"q /Fm0 Do Q\n"),
        FONT,
        form,
    ])


def pdf_fanout(sentence, levels=30, fanout=4):
    first = 6
    forms = []
    for level in range(levels):
        if level == levels - 1:
            content, res = b"0 0 m 10 10 l S", ""
        else:
            draws = [f"q 0.5 0 0 0.5 {306 * (j % 2)} {396 * (j // 2)} cm /L Do Q"
                     for j in range(fanout)]
            content = "\n".join(draws).encode()
            res = f"/Resources << /XObject << /L {first + level + 1} 0 R >> >> "
        forms.append(stream_obj(f"/Type /XObject /Subtype /Form /BBox [0 0 612 792] {res}",
                                content))
    return pdf_classic([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
        f"<< /F1 5 0 R >> /XObject << /L {first} 0 R >> >> /Contents 4 0 R >>".encode(),
        stream_obj("", text_content(sentence) + b"q /L Do Q\n"),
        FONT,
    ] + forms)


def pdf_attacks():
    fx = "pdf-attacks.zip"
    texts = {
        "xref-huge-width.pdf":
            "The quarterly wave report was filed late because the printer jammed.",
        "self-drawing-form.pdf":
            "The harbour plan on this page keeps drawing a smaller copy of itself.",
        "fanout-forms.pdf": "Every mooring buoy on this chart is drawn four times at each level.",
    }
    pdfs = {
        "xref-huge-width.pdf": pdf_xref_huge_width(texts["xref-huge-width.pdf"]),
        "self-drawing-form.pdf": pdf_self_drawing(texts["self-drawing-form.pdf"]),
        "fanout-forms.pdf": pdf_fanout(texts["fanout-forms.pdf"]),
    }
    sentence = "The relief keeper checks the rain gauge before breakfast on Sundays."
    members = list(pdfs.items()) + [("pdf-notes.txt", (sentence + "\n").encode())]
    data = text_zip(members)
    ledger = [line("", "indexed")]
    for name in pdfs:
        ledger.append(line("!/" + name, "failed_or_indexed"))
    ledger.append(indexed_leaf(fx, "!/pdf-notes.txt", (sentence + "\n").encode()))
    write(fx, data,
          "PDFs with an absurd xref-stream /W, a self-drawing form XObject and 4**30 form fan-out",
          ledger, [phrase(fx, sentence, "!/pdf-notes.txt")],
          "xref-huge-width.pdf (PDF 1.5): the only xref is a stream object with /W [1 2147483647 "
          "1] (rows really written [1 4 1]); a parser multiplying /Size by the row width "
          "allocates without bound; qpdf --check reports only the /W and rebuilds the table "
          "from a recovery trailer dictionary. "
          "self-drawing-form.pdf: page draws /Fm0, /Fm0 (object 6) draws /Fm0 from its own "
          "/Resources (infinite recursion). fanout-forms.pdf: forms 6..35, each draws the next "
          "4 times (4**30 leaf draws). Each page also shows one sentence (listed under "
          "page_texts below, not asserted since the PDFs may fail). Each PDF may be failed (the "
          "extractor refuses, or its isolated worker dies/times out) or indexed if a parser "
          "copes; the run must finish and pdf-notes.txt must be indexed. page_texts: " +
          json.dumps(texts))
    for name, text in texts.items():
        if text in PHRASES:
            sys.exit("duplicate sentence " + text)
        PHRASES[text] = fx + "!/" + name
    return pdfs


# ---------------------------------------------------------------------------------------------
# 4. zip-overlap.zip (Fifield, quoted overlap)
# ---------------------------------------------------------------------------------------------


def zip_overlap():
    fx = "zip-overlap.zip"
    count = 10
    kernel_out = bytes(MiB)
    kernel = deflate(kernel_out)
    sentence = "The harbour master keeps the spare foghorn valve in the blue locker."
    benign = Entry("harbour-notice.txt", (sentence + "\n").encode(), method=0)
    # data_0 = kernel; data_k = stored block quoting LFH_(k-1), then data_(k-1).
    entries, data, out = [], kernel, kernel_out
    for k in range(count):
        e = Entry(f"overlap-{k:02d}.bin", raw=data, crc=zlib.crc32(out), usize=len(out))
        entries.append(e)
        lfh = e.lfh()
        data = struct.pack("<BHH", 0, len(lfh), len(lfh) ^ 0xFFFF) + lfh + data
        out = lfh + out
    # Layout: benign, LFH_9, [quote hdr, LFH_8], ..., [quote hdr, LFH_0], kernel.
    body = bytearray()
    benign.offset = 0
    body += benign.lfh() + benign.raw
    outermost = entries[-1]
    outermost.offset = len(body)
    body += outermost.lfh() + outermost.raw  # raw of the outermost contains all the others
    for k in range(count - 1):
        # LFH_k sits after the 5-byte stored-block header that quotes it inside data_(k+1).
        e = entries[k]
        pos = outermost.offset + len(outermost.lfh())
        for j in range(count - 1, k, -1):
            pos += 5 + len(entries[j - 1].lfh())
        e.offset = pos - len(e.lfh())
        assert body[e.offset:e.offset + len(e.lfh())] == e.lfh()
        assert body[e.offset + len(e.lfh()):e.offset + len(e.lfh()) + e.csize] == e.raw
    order = [benign] + entries  # central directory: benign, overlap-00 (innermost) .. 09
    cd = b"".join(e.cdh() for e in order)
    data = bytes(body) + cd + eocd(len(order), len(cd), len(body))
    # Every overlap entry inflates to its declared size and CRC (Python's zipfile refuses to
    # open overlapped entries, so inflate them here).
    for e in entries:
        start = e.offset + len(e.lfh())
        got = zlib.decompressobj(-15).decompress(data[start:start + e.csize])
        assert len(got) == e.usize and zlib.crc32(got) == e.crc, e.name
    ledger = [line("", "indexed")]
    ledger.append(indexed_leaf(fx, "!/harbour-notice.txt", (sentence + "\n").encode()))
    ledger.append(indexed_leaf(fx, "!/overlap-00.bin", kernel_out))
    for k in range(1, count):
        ledger.append(line(f"!/overlap-{k:02d}.bin", "skipped", "overlapping"))
    ranges = "; ".join(f"{e.name.decode()} [{e.offset}, {e.offset + len(e.lfh()) + e.csize})"
                       for e in order)
    write(fx, data,
          "Fifield overlapping zip: each entry's data quotes and contains the next entry",
          ledger, [phrase(fx, sentence, "!/harbour-notice.txt")],
          "Central-directory order: harbour-notice.txt (stored, own bytes), overlap-00.bin "
          "(the kernel: raw deflate of 1 MiB of zero bytes; it owns the last bytes of the "
          "file), overlap-01.bin .. overlap-09.bin, each starting one quoted local header "
          "earlier in the file and running to the same end, so each fully contains all earlier "
          "ones. overlap-k.bin inflates to the local headers of overlap-(k-1)..00 followed by "
          "the 1 MiB of zeros (CRCs and sizes are correct). Expected: the first in "
          "central-directory order (overlap-00.bin, 1 MiB of 0x00) is processed normally and "
          "indexed as a binary/other object; overlap-01..09 are skipped as overlapping. Without "
          "overlap detection the archive would inflate to ~10 MiB from "
          f"{len(data)} bytes. Byte ranges [header, end of data): {ranges}.")


# ---------------------------------------------------------------------------------------------
# 5. nested-42.zip
# ---------------------------------------------------------------------------------------------


class Node:
    """Model of what the unpacker sees: a zip (size + members) or a leaf (size)."""

    def __init__(self, size, members=None):
        self.size = size
        self.members = members  # None for a leaf, else [(name, Node)]


def model_zip(entries_nodes):
    """Build a zip from (name, bytes, Node) triples; returns (bytes, Node)."""
    data = zip_bytes([Entry(n, b) for n, b, _ in entries_nodes])
    return data, Node(len(data), [(n, node) for n, _, node in entries_nodes])


def simulate(root, count_container_bytes=True):
    """Walk the model depth-first in member order applying the default limits. Returns the
    ledger (relative locators). Limits: each member read costs one file and its inflated bytes
    (also the bytes of a limit-tripping member inflated before the trip); a member trips the
    first of total-bytes / compression-ratio / file-size its bytes would cross; the member past
    the file limit ends its container's walk and its ancestors' (their lines say file-count)."""
    ledger = []
    state = {"bytes": 0, "files": 0, "margin": None}

    def margin(m):
        state["margin"] = m if state["margin"] is None else min(state["margin"], m)

    def expand(node, loc, depth):
        if node.members is None:
            ledger.append(line(loc, "indexed"))
            return
        if depth >= MAX_DEPTH:
            ledger.append(line(loc, "skipped", "limit: depth"))
            return
        own = len(ledger)
        ledger.append(line(loc, "indexed"))
        out = 0
        cap = max(MAX_RATIO * node.size, RATIO_GRACE)
        for listed, (name, child) in enumerate(node.members):
            cloc = f"{loc}!/{esc(name)}"
            state["files"] += 1
            if state["files"] > MAX_FILES:
                # The member past the limit ends the walk: no line for it or what follows;
                # the container's own line says so (and its ancestors', at their next member).
                ledger[own] = line(loc, "skipped", f"limit: file-count ({listed} members read")
                return
            counts = count_container_bytes or child.members is None
            rooms = sorted([
                ((MAX_TOTAL - state["bytes"]) if counts else float("inf"), "total-bytes"),
                (cap - out, "compression-ratio"),
                (MAX_FILE, "file-size"),
            ])
            if child.size <= rooms[0][0]:
                margin(rooms[0][0] - child.size)
                out += child.size
                state["bytes"] += child.size if counts else 0
                expand(child, cloc, depth + 1)
                continue
            room, limit = rooms[0]
            margin(rooms[1][0] - max(room, 0))
            used = max(room, 0)
            out += used
            state["bytes"] += used if counts else 0
            ledger.append(line(cloc, "skipped", "limit: " + limit))

    expand(root, "", 0)
    return ledger, state


def nested_42():
    fx = "nested-42.zip"
    hexd = "0123456789abcdef"
    leaf_size = 768 * MiB
    raw, crc, size = deflate_chunks(repeat(b"\0", leaf_size))
    page = zip_bytes([Entry("0.bin", raw=raw, crc=crc, usize=size)])
    page_node = Node(len(page), [("0.bin", Node(leaf_size))])
    level, node = page, page_node
    sizes = {"page": len(page)}
    for name, child in (("chapter", "page"), ("book", "chapter"), ("lib", "book")):
        compressed = deflate(level)  # compressed once, reused for the 16 identical entries
        crc_l = zlib.crc32(level)
        entries = [Entry(f"{child}-{h}.zip", raw=compressed, crc=crc_l, usize=len(level))
                   for h in hexd]
        data = zip_bytes(entries)
        node = Node(len(data), [(f"{child}-{h}.zip", node) for h in hexd])
        level = data
        sizes[name] = len(data)
    lib, lib_node = level, node

    deep = "The deepest drawer of the chart table holds the storm surge map of 1962."
    never = "Nobody should ever read this note at the bottom of the probe chain."
    p5, n5 = model_zip([("never-seen.txt", never.encode() + b"\n",
                         Node(len(never) + 1))])
    p4, n4 = model_zip([("deep-note.txt", deep.encode() + b"\n", Node(len(deep) + 1)),
                        ("probe-5.zip", p5, n5)])
    p3, n3 = model_zip([("probe-4.zip", p4, n4)])
    p2, n2 = model_zip([("probe-3.zip", p3, n3)])
    probe, nprobe = model_zip([("probe-2.zip", p2, n2)])

    sentence = "Sea fog rolled past the signal station twice during the night watch."
    benign = (sentence + "\n").encode()
    lib_raw, lib_crc = deflate(lib), zlib.crc32(lib)
    entries = [Entry("benign.txt", benign), Entry("depth-probe.zip", probe)]
    entries += [Entry(f"lib-{h}.zip", raw=lib_raw, crc=lib_crc, usize=len(lib)) for h in hexd]
    data = zip_bytes(entries)
    top = Node(len(data), [("benign.txt", Node(len(benign))), ("depth-probe.zip", nprobe)] +
               [(f"lib-{h}.zip", lib_node) for h in hexd])

    ledger, state = simulate(top)
    alt, _ = simulate(top, count_container_bytes=False)
    assert state["margin"] > MiB, state  # no decision within 1 MiB of another threshold
    for entry in ledger:
        if entry["locator"] in ("!/benign.txt",):
            entry.update(indexed_leaf(fx, entry["locator"], benign))
        if entry["locator"].endswith("deep-note.txt"):
            entry.update(indexed_leaf(fx, entry["locator"], deep.encode() + b"\n"))
    opened = [e["locator"] for e in ledger if e["status"] == "indexed" and
              e["locator"].endswith(".zip")]
    by_reason = {}
    for e in ledger:
        key = e["status"] + (": " + e["reason_contains"] if e["reason_contains"] else "")
        by_reason[key] = by_reason.get(key, 0) + 1
    cap_page = MAX_RATIO * len(page)
    used_after_two = (2 * cap_page + 3 * len(page) + sizes["lib"] + sizes["book"] +
                      sizes["chapter"] + len(benign) + len(probe))
    deep_loc = "!/depth-probe.zip!/probe-2.zip!/probe-3.zip!/probe-4.zip!/deep-note.txt"
    notes = (
        f"Structure: top (depth 0, {len(data)} bytes) = benign.txt, depth-probe.zip, "
        f"lib-0..f.zip; lib ({sizes['lib']} bytes, depth 1) = 16 x book-N.zip; book "
        f"({sizes['book']} bytes, depth 2) = 16 x chapter-N.zip; chapter ({sizes['chapter']} "
        f"bytes, depth 3) = 16 x page-N.zip; page ({sizes['page']} bytes, depth 4) = 0.bin, "
        f"{leaf_size} zero bytes (depth 5). Fully expanded: 16**4 = 65536 leaves, 48 TiB. "
        "depth-probe.zip > probe-2.zip > probe-3.zip > probe-4.zip (depth 4, opened) = "
        "deep-note.txt (a leaf at depth 5: indexed) + probe-5.zip (a container at depth 5: "
        "skipped, limit: depth; its never-seen.txt gets no line). "
        "Derivation (simulated by the generator on the real sizes, depth-first in "
        "central-directory order, a container's line before its members): every member read "
        "costs one file and its inflated bytes against the tree budget, including the bytes of "
        "nested archives and the bytes inflated before a limit tripped; a container's output "
        "is capped at max(250 x its size, 4 MiB). benign.txt and the probe chain cost ~1 KB. "
        "lib-0 > book-0 > chapter-0 are opened (their outputs stay far below their caps). "
        f"page-0.zip is opened; its 0.bin hits the ratio cap 250 x {len(page)} = {cap_page} "
        "bytes (< 256 MiB file-size, < remaining budget): skipped compression-ratio. Same for "
        f"page-1. Budget used then ~{used_after_two} "
        f"bytes of {MAX_TOTAL}; page-2.zip is read and opened, its 0.bin crosses the total "
        "before its ratio cap: skipped total-bytes. From then on every member read trips "
        "total-bytes at its first byte: page-3..f in chapter-0, chapter-1..f in book-0, "
        "book-1..f in lib-0 and lib-1..f at the top are skipped total-bytes (never opened, so "
        "their members get no line). File count stays far below 10000. Smallest distance "
        f"between a decision and another threshold: {state['margin']} bytes, so read-chunk "
        "size and the order in which limits are checked do not matter. Identical nested "
        "archives are opened each time (no container de-duplication); if the pipeline did "
        "not count nested archives' own bytes the ledger would "
        + ("be the same." if alt == ledger else "differ (page-3.. would be opened).") +
        f" Counts: {json.dumps(by_reason, sort_keys=True)}; opened nested archives: "
        f"{len(opened)}.")
    write(fx, data,
          "42.zip-style nested bomb: 16 copies per level, 4 levels below the top, 768 MiB "
          "zero leaves, plus a depth-limit probe chain",
          ledger,
          [phrase(fx, sentence, "!/benign.txt"), phrase(fx, deep, deep_loc)],
          notes,
          absent=[absent_phrase(fx, never, "!/depth-probe.zip!/probe-2.zip!/probe-3.zip!/"
                                           "probe-4.zip!/probe-5.zip!/never-seen.txt")])
    return {"page": len(page), "leaf": leaf_size, "lib": len(lib), "top": len(data)}


# ---------------------------------------------------------------------------------------------
# 6. quine.zip (Russ Cox's construction)
# ---------------------------------------------------------------------------------------------

LEN_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99,
            115, 131, 163, 195, 227, 258]
LEN_EXTRA = [0] * 8 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4 + [0]
DIST_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
             1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
DIST_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11,
              12, 12, 13, 13]


class Bits:
    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, nbits):  # LSB first (header fields, extra bits)
        self.acc |= value << self.n
        self.n += nbits
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def code(self, value, nbits):  # Huffman codes go MSB first
        self.put(int(format(value, f"0{nbits}b")[::-1], 2), nbits)

    def litlen(self, sym):
        if sym < 144:
            self.code(0x30 + sym, 8)
        elif sym < 256:
            self.code(0x190 + sym - 144, 9)
        elif sym < 280:
            self.code(sym - 256, 7)
        else:
            self.code(0xC0 + sym - 280, 8)

    def match(self, length, dist):
        i = max(i for i, b in enumerate(LEN_BASE) if b <= length)
        self.litlen(257 + i)
        self.put(length - LEN_BASE[i], LEN_EXTRA[i])
        d = max(i for i, b in enumerate(DIST_BASE) if b <= dist)
        self.code(d, 5)
        self.put(dist - DIST_BASE[d], DIST_EXTRA[d])

    def bits(self):
        return len(self.out) * 8 + self.n

    def flush(self):
        if self.n:
            self.out.append(self.acc & 0xFF)
            self.acc, self.n = 0, 0
        return bytes(self.out)


def match_bits(length, dist):
    b = Bits()
    b.match(length, dist)
    return b.bits()


def op_literal(n, final=False):
    """Ln: a stored block announcing n literal bytes (the bytes follow it in the stream)."""
    return struct.pack("<BHH", 1 if final else 0, n, n ^ 0xFFFF)


def op_repeat(n, final=False, exact=5):
    """Rn: copy the last n bytes (fixed-Huffman matches at distance n). Non-final ones must be
    exactly `exact` bytes ending on a byte boundary; padding uses empty fixed blocks."""
    best = None
    for empties in range(0, 4):
        for parts in ([n], [n // 2, n - n // 2], [n // 3, n // 3, n - 2 * (n // 3)]):
            if any(p < 3 or p > 258 for p in parts):
                continue
            total = 3 + sum(match_bits(p, n) for p in parts) + 7 + 10 * empties
            if final or total == 8 * exact:
                best = (parts, empties)
                break
        if best:
            break
    if best is None:
        raise ValueError(f"no {exact}-byte encoding for R{n}")
    parts, empties = best
    b = Bits()
    b.put(1 if (final and not empties) else 0, 1)
    b.put(1, 2)  # BTYPE=01 fixed Huffman
    for p in parts:
        b.match(p, n)
    b.litlen(256)
    for i in range(empties):
        b.put(1 if (final and i == empties - 1) else 0, 1)
        b.put(1, 2)
        b.litlen(256)
    data = b.flush()
    assert final or len(data) == exact
    return data


def quine_program(P, S):
    """Cox's self-reproducing deflate stream: inflates to P + itself + S."""
    L = op_literal
    lp1 = L(len(P) + 5)
    rp1 = op_repeat(len(P) + 5)
    r4 = op_repeat(20)
    l1, l4, l0 = L(5), L(20), L(0)
    rs_len = 5
    while True:
        rs1 = op_repeat(rs_len + len(S), final=True)
        if len(rs1) == rs_len:
            break
        rs_len = len(rs1)
    ls1 = L(len(rs1) + len(S))
    return b"".join([
        lp1, P, lp1,
        rp1,
        l1, rp1,
        l1, l1,
        l4, rp1, l1, l1, l4,
        r4,
        l4, r4, l4, r4, l4,
        r4,
        l4, r4, l0, l0, ls1,
        r4,
        l0,
        l0,
        ls1, rs1, S,
        rs1,
    ])


def solve_crc(build):
    """Find c with crc32(build(c)) == c. crc32 is affine in the message bits for a fixed
    length, so crc32(build(c)) = A c + b over GF(2): solve (A + I) c = b."""
    b0 = zlib.crc32(build(0))
    cols = [zlib.crc32(build(1 << i)) ^ b0 for i in range(32)]
    # Rows of (A + I): bit r of column i, plus identity.
    rows = []
    for r in range(32):
        mask = 0
        for i in range(32):
            if ((cols[i] >> r) & 1) ^ (1 if i == r else 0):
                mask |= 1 << i
        rows.append([mask, (b0 >> r) & 1])
    pivots = []
    for col in range(32):
        pr = next((i for i in range(len(pivots), 32) if rows[i][0] >> col & 1), None)
        if pr is None:
            continue
        k = len(pivots)
        rows[k], rows[pr] = rows[pr], rows[k]
        for i in range(32):
            if i != k and rows[i][0] >> col & 1:
                rows[i][0] ^= rows[k][0]
                rows[i][1] ^= rows[k][1]
        pivots.append(col)
    if any(r[0] == 0 and r[1] for r in rows):
        return None
    c = 0
    for k, col in enumerate(pivots):
        if rows[k][1]:
            c |= 1 << col
    assert zlib.crc32(build(c)) == c
    return c


def quine():
    fx = "quine.zip"
    sentence = "Gulls nest on the roof of the old lifeboat house every April."
    benign_data = (sentence + "\n").encode()
    bname, qname = b"lookout.txt", b"quine.zip"
    # Rp+1 has to fit in exactly 5 bytes: possible for a copy of 65, 66 or 258 bytes, so the
    # prefix P (everything before the quine's deflate data) is padded to 253 bytes.
    fixed = 30 + len(bname) + len(benign_data) + 30 + len(qname)
    pad = 253 - fixed
    assert pad >= 4
    pad_extra = struct.pack("<HH", 0x6C66, pad - 4) + b"\0" * (pad - 4)
    benign = Entry(bname, benign_data, method=0, local_extra=pad_extra)
    benign.offset = 0

    def parts(crc, input_len=0, total_len=0, cd_offset=0):
        q = Entry(qname, raw=b"\0" * input_len, crc=crc, usize=total_len, method=8)
        q.offset = len(benign.lfh()) + len(benign.raw)
        P = benign.lfh() + benign.raw + q.lfh()
        cd = benign.cdh() + q.cdh()
        S = cd + eocd(2, len(cd), cd_offset)
        return P, S

    P, S = parts(0)
    assert len(P) == 253
    p_len = len(P)
    n_input = len(quine_program(P, S))
    total = len(P) + n_input + len(S)

    def build(crc):
        p, s = parts(crc, n_input, total, p_len + n_input)
        prog = quine_program(p, s)
        assert len(prog) == n_input
        return p + prog + s

    crc = solve_crc(build)
    if crc is None:
        sys.exit("quine: CRC system has no solution")
    data = build(crc)
    assert zlib.decompressobj(-15).decompress(data[len(P):len(P) + n_input]) == data
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.read("quine.zip") == data
        assert z.read("lookout.txt") == benign_data
    write(fx, data,
          "Zip quine: member quine.zip inflates to the archive itself",
          [line("", "indexed"),
           indexed_leaf(fx, "!/lookout.txt", benign_data),
           line("!/quine.zip", "skipped", "recursive archive")],
          [phrase(fx, sentence, "!/lookout.txt")],
          "Built after Russ Cox, 'Zip Files All The Way Down': the deflate data of quine.zip "
          "is his self-reproducing program of 5-byte opcodes (Ln = stored block of n bytes, "
          "Rn = fixed-Huffman block copying the last n bytes: R20 as two 10-byte matches, "
          "R258 as one match plus an empty fixed block); prefix P = local header of "
          "lookout.txt, its stored text and the local header of quine.zip (padded to 253 "
          "bytes with an unknown extra field 0x6C66 so that R258 fits), suffix S = central "
          f"directory + end record. CRC-32 0x{crc:08x} is solved over GF(2) (it appears in P "
          "and S, each twice in the file). Python's zipfile confirms quine.zip!/quine.zip == "
          f"the {len(data)} bytes of quine.zip. A naive unpacker recurses until its depth "
          "limit; the pipeline must recognise the member as its own ancestor.")
    return data


# ---------------------------------------------------------------------------------------------
# 7. multi-member.txt.gz
# ---------------------------------------------------------------------------------------------


def multi_member_gz():
    fx = "multi-member.txt.gz"
    lines_ = [
        "The first gust of the squall reached the breakwater at ten past four.",
        "By half past four the wind at the weather station had veered north-west.",
        "The pilot boat stayed on its mooring until the visibility improved.",
    ]
    data = b"".join(gzip_member((t + "\n").encode()) for t in lines_)
    whole = "".join(t + "\n" for t in lines_).encode()
    write(fx, data,
          "Three concatenated gzip members, one sentence each",
          [line("", "indexed"), indexed_leaf(fx, "!/multi-member.txt", whole)],
          [phrase(fx, t, "!/multi-member.txt") for t in lines_],
          "Three gzip members (no FNAME, mtime 2023-01-01) concatenated; RFC 1952 says they "
          "form one file. The member is named from the file name without .gz. A reader that "
          "stops after the first member loses the second and third sentences.")


# ---------------------------------------------------------------------------------------------
# 8. tar-longname.tgz
# ---------------------------------------------------------------------------------------------


def tar_longname():
    fx = "tar-longname.tgz"
    sentence = "The tide gauge at the fish quay is scraped clean of weed every fortnight."
    hidden = "This note hides behind a name three hundred mebibytes long."
    name_len = 300 * MiB

    def stream():
        yield tar_file("tide-gauge.txt", (sentence + "\n").encode())
        yield tar_header("././@LongLink", name_len, typeflag=b"L", mode=0o644)
        yield from repeat(b"a", name_len - 1)
        yield b"\0"  # the name's terminator, last byte of the declared size (a multiple of 512)
        yield tar_file("a" * 100, (hidden + "\n").encode())
        yield TAR_END

    data = gzip_member(stream())
    write(fx, data,
          "GNU long-name record ('L', ././@LongLink) declaring a 300 MiB name",
          [line("", "skipped", "limit: tar-header"),
           indexed_leaf(fx, "!/tide-gauge.txt", (sentence + "\n").encode())],
          [phrase(fx, sentence, "!/tide-gauge.txt")],
          f"gzip of a tar stream: tide-gauge.txt, then a ././@LongLink header (typeflag L, size "
          f"field {name_len} = 300 MiB) followed by 300 MiB of 'a' ending in NUL, then a regular "
          "header (name field = the first 100 'a') holding one sentence, then the end blocks. "
          "A tar reader that buffers long names whole allocates 300 MiB for one header. "
          "Expected: tide-gauge.txt indexed; the .tgz's own line skipped (limit: tar-header); "
          "the member after the long name gets no line. Deflate tops out near 1:1032, hence "
          f"the {len(data)}-byte file.",
          absent=[absent_phrase(fx, hidden, None)])


# ---------------------------------------------------------------------------------------------
# 9. tar-sparse-1tib.tgz
# ---------------------------------------------------------------------------------------------


def tar_sparse():
    fx = "tar-sparse-1tib.tgz"
    sentence = "The weather buoy off the outer skerries reported a three metre swell."
    block = b"sparse disk image of the station data logger\n".ljust(512, b"\0")
    sparse_map = [
        (386, octal(0, 12)), (398, octal(512, 12)),             # data: 512 bytes at 0
        (410, base256(TiB, 12)), (422, octal(0, 12)),          # end marker at 1 TiB
        (482, b"\0"),                                           # isextended = 0
        (483, base256(TiB, 12)),                                # realsize = 1 TiB
    ]
    tar = (tar_header("sparse-1tib.img", 512, typeflag=b"S", extra=sparse_map) + block +
           tar_file("buoy-report.txt", (sentence + "\n").encode()) + TAR_END)
    data = gzip_member(tar)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        info = t.getmember("sparse-1tib.img")
        assert info.issparse() and info.size == TiB, (info.type, info.size)
    write(fx, data,
          "GNU sparse member (typeflag S) whose real size is 1 TiB with one 512-byte block",
          [line("", "indexed"),
           line("!/sparse-1tib.img", "skipped", "limit: file-size"),
           indexed_leaf(fx, "!/buoy-report.txt", (sentence + "\n").encode())],
          [phrase(fx, sentence, "!/buoy-report.txt")],
          "Old-GNU sparse header: size field 512 (bytes stored), sparse map (offset 0, 512 "
          "bytes) + (offset 2**40, 0 bytes: GNU's end marker), isextended 0, realsize at "
          "offset 483 = 2**40 in base-256 (0x80 prefix: too big for 11 octal digits). Reading "
          "it materialises 1 TiB of zeros from 512 stored bytes; it must stop at the 256 MiB "
          "file-size limit (or be refused by its declared size) and buoy-report.txt after it "
          "must still be read.")


# ---------------------------------------------------------------------------------------------
# 10-11. zip-duplicate-names.zip, zip-path-tricks.zip
# ---------------------------------------------------------------------------------------------


def zip_duplicate_names():
    fx = "zip-duplicate-names.zip"
    first = "The first notes file says the storm shutters were painted green in May."
    second = "The second notes file says the storm shutters were painted grey in June."
    crew = "The lifeboat crew drills on the slipway every Thursday evening."
    crew_md = f"# Crew\n\n{crew}\n"
    data = text_zip([("notes.txt", first + "\n"), ("notes.txt", second + "\n"),
                     ("crew-list.md", crew_md)])
    write(fx, data,
          "Two entries named notes.txt with different content",
          [line("", "indexed"),
           indexed_leaf(fx, "!/notes.txt", (first + "\n").encode()),
           line("!/notes.txt", "skipped", "duplicate name"),
           indexed_leaf(fx, "!/crew-list.md", crew_md.encode())],
          [phrase(fx, first, "!/notes.txt"), phrase(fx, crew, "!/crew-list.md")],
          "Central directory: notes.txt ('...painted green in May.'), notes.txt ('...painted "
          "grey in June.'), crew-list.md. The first notes.txt is indexed; the second gets its "
          "own line with the same locator, skipped as a duplicate name, so it can neither "
          "shadow the first nor vanish silently.",
          absent=[absent_phrase(fx, second, "!/notes.txt")])


def zip_path_tricks():
    fx = "zip-path-tricks.zip"
    members = [
        ("../../escape.txt", "A loose mooring line drifted past the harbour wall at dawn."),
        ("/abs/rooted.txt",
         "The sunshine recorder on the station roof scorches a new card each day."),
        ("dir/../../up.txt", "Snow settled on the lighthouse gallery for the first time in years."),
        ("plain.txt", "The coastguard radio is tested at noon on the first day of each month."),
    ]
    data = text_zip([(n, t + "\n") for n, t in members])
    ledger = [line("", "indexed")]
    ledger += [indexed_leaf(fx, "!/" + esc(n), (t + "\n").encode()) for n, t in members]
    write(fx, data,
          "Zip-slip names: ../ traversal, absolute path, dir/../../",
          ledger,
          [phrase(fx, t, "!/" + esc(n)) for n, t in members],
          "Names are kept raw in locators and never become filesystem paths: "
          "'zip-path-tricks.zip!/../../escape.txt', 'zip-path-tricks.zip!//abs/rooted.txt' "
          "(the leading '/' stays, hence '!//'), 'zip-path-tricks.zip!/dir/../../up.txt'. All "
          "four are indexed; nothing may be written outside the data dir.")


# ---------------------------------------------------------------------------------------------
# 12. tar-links-and-devices.tar
# ---------------------------------------------------------------------------------------------


def tar_links_devices():
    fx = "tar-links-and-devices.tar"
    sentence = "The station cat sleeps beside the Stevenson screen on warm afternoons."
    tar = (tar_file("benign.txt", (sentence + "\n").encode()) +
           tar_header("link-to-passwd", typeflag=b"2", linkname="/etc/passwd", mode=0o777) +
           tar_header("hard", typeflag=b"1", linkname="benign.txt") +
           tar_header("char-device", typeflag=b"3", mode=0o666, devmajor=1, devminor=3) +
           tar_header("block-device", typeflag=b"4", mode=0o660, devmajor=7, devminor=0) +
           tar_header("fifo", typeflag=b"6", mode=0o644) +
           TAR_END)
    write(fx, tar,
          "Symlink to /etc/passwd, hard link, character and block devices, FIFO",
          [line("", "indexed"),
           indexed_leaf(fx, "!/benign.txt", (sentence + "\n").encode()),
           line("!/link-to-passwd", "skipped", "link: not followed"),
           line("!/hard", "skipped", "link: not followed"),
           line("!/char-device", "skipped", "special file (device or FIFO)"),
           line("!/block-device", "skipped", "special file (device or FIFO)"),
           line("!/fifo", "skipped", "special file (device or FIFO)")],
          [phrase(fx, sentence, "!/benign.txt")],
          "Plain tar (old-GNU headers): benign.txt; link-to-passwd (typeflag 2 -> /etc/passwd); "
          "hard (typeflag 1 -> benign.txt); char-device (typeflag 3, 1:3 like /dev/null); "
          "block-device (typeflag 4, 7:0 like /dev/loop0); fifo (typeflag 6). Links are "
          "reported, never followed or resolved; devices and FIFOs are never opened.")


def tar_link_flood():
    fx = "tar-link-flood.tgz"
    sentence = "The harbour wall lantern is lit half an hour before sunset all year."
    late = "This note sits behind twenty thousand links and is never listed."
    links = 20_000

    def stream():
        yield tar_file("benign.txt", (sentence + "\n").encode())
        for i in range(links):
            yield tar_header(f"l{i:05d}", typeflag=b"2", linkname="/etc/passwd", mode=0o777)
        yield tar_file("late.txt", (late + "\n").encode())
        yield TAR_END

    data = gzip_member(stream())
    read = MAX_FILES - 1  # links listed: benign.txt is the first member
    write(fx, data,
          f"{links} symlink headers in a small .tgz (one ledger line each without a member limit)",
          [line("", "skipped", f"limit: file-count ({MAX_FILES} members read"),
           indexed_leaf(fx, "!/benign.txt", (sentence + "\n").encode()),
           line("!/l00000", "skipped", "link: not followed"),
           line(f"!/l{read - 1:05d}", "skipped", "link: not followed")],
          [phrase(fx, sentence, "!/benign.txt")],
          f"gzip of a tar stream: benign.txt, {links} symlinks l00000..l{links - 1:05d} (typeflag "
          "2 -> /etc/passwd, old-GNU headers), late.txt, end blocks. Links, devices, duplicate "
          "names, encrypted and overlapping entries count against the member limit like files "
          f"({MAX_FILES}); the member that would pass it ends the walk. Expected ledger "
          f"({MAX_FILES + 1} lines, only four of them listed here): benign.txt indexed, "
          f"l00000..l{read - 1:05d} skipped (link: not followed), the .tgz's own line skipped "
          f"with 'limit: file-count ({MAX_FILES} members read, the rest not listed)'; "
          f"l{read:05d} and later, late.txt included, get no line.",
          lines=MAX_FILES + 1,
          absent=[absent_phrase(fx, late, None)])


# ---------------------------------------------------------------------------------------------
# 13. zip-links-and-encrypted.zip
# ---------------------------------------------------------------------------------------------

CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0xEDB88320 if _c & 1 else _c >> 1
    CRC_TABLE.append(_c)


class ZipCrypto:
    """Traditional PKWARE encryption (APPNOTE 6.1)."""

    def __init__(self, password):
        self.k = [0x12345678, 0x23456789, 0x34567890]
        for ch in password:
            self.update(ch)

    def update(self, ch):
        k0, k1, k2 = self.k
        k0 = CRC_TABLE[(k0 ^ ch) & 0xFF] ^ (k0 >> 8)
        k1 = ((k1 + (k0 & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        k2 = CRC_TABLE[(k2 ^ (k1 >> 24)) & 0xFF] ^ (k2 >> 8)
        self.k = [k0, k1, k2]

    def encrypt(self, data):
        out = bytearray()
        for p in data:
            t = (self.k[2] | 2) & 0xFFFF
            out.append(p ^ (((t * (t ^ 1)) >> 8) & 0xFF))
            self.update(p)
        return bytes(out)


def zip_links_encrypted():
    fx = "zip-links-and-encrypted.zip"
    sentence = "Visitors may climb the signal tower only with the keeper's permission."
    secret = "The combination of the instrument cupboard changes every winter."
    password = b"harbour"
    plain = (secret + "\n").encode()
    crc = zlib.crc32(plain)
    header = hashlib.sha256(b"hostile fixtures zipcrypto header").digest()[:11] + bytes([crc >> 24])
    sealed = ZipCrypto(password).encrypt(header + deflate(plain))
    target = b"/etc/passwd"
    entries = [
        Entry("link-to-passwd", target, method=0, mode=MODE_LINK),
        Entry("sealed.txt", plain, raw=sealed, flags=0x1),
        Entry("open-notice.txt", (sentence + "\n").encode()),
    ]
    data = zip_bytes(entries)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.read("sealed.txt", pwd=password) == plain
        assert z.getinfo("link-to-passwd").external_attr >> 16 == MODE_LINK
    write(fx, data,
          "Unix symlink entry to /etc/passwd and a ZipCrypto-encrypted entry",
          [line("", "indexed"),
           line("!/link-to-passwd", "skipped", "link: not followed"),
           line("!/sealed.txt", "skipped", "encrypted"),
           indexed_leaf(fx, "!/open-notice.txt", (sentence + "\n").encode())],
          [phrase(fx, sentence, "!/open-notice.txt")],
          "link-to-passwd: stored, content '/etc/passwd', made by Unix (3), external attributes "
          "0o120777 << 16 (S_IFLNK). sealed.txt: general-purpose flag bit 0, traditional "
          "PKWARE encryption with password 'harbour' (12-byte header whose last byte is the "
          "CRC's high byte, then the deflated text); Python's zipfile decrypts it. Neither is "
          "read: links are not followed, encrypted members are reported, and no password is "
          "tried.",
          absent=[absent_phrase(fx, secret, "!/sealed.txt")])


# ---------------------------------------------------------------------------------------------
# 14. names-not-utf8.tar / names-not-utf8.zip
# ---------------------------------------------------------------------------------------------


def names_not_utf8():
    fx = "names-not-utf8.tar"
    cafe = "The harbour cafe serves fish soup to the ferry crews at noon."
    uber = "A naive visitor once mistook the tide bell for a church bell."
    plain = "Kelp washed onto the slipway after the spring tide."
    uber_md = f"# Uber\n\n{uber}\n"
    members = [(b"caf\xe9.txt", (cafe + "\n").encode()), (b"na\xefve/\xfcber.md", uber_md.encode()),
               (b"plain.txt", (plain + "\n").encode())]
    tar = b"".join(tar_file(n, d) for n, d in members) + TAR_END
    write(fx, tar,
          "tar member names in raw Latin-1 bytes (not UTF-8)",
          [line("", "indexed")] + [indexed_leaf(fx, "!/" + esc(n), d) for n, d in members],
          [phrase(fx, cafe, "!/caf%E9.txt"), phrase(fx, uber, "!/na%EFve/%FCber.md"),
           phrase(fx, plain, "!/plain.txt")],
          "Names are the raw bytes caf\\xe9.txt and na\\xefve/\\xfcber.md (ISO-8859-1, no pax "
          "path record). Each byte that is not part of valid UTF-8 is percent-escaped in the "
          "locator: 'names-not-utf8.tar!/caf%E9.txt', 'names-not-utf8.tar!/na%EFve/%FCber.md'. "
          "A lossy decode (U+FFFD) would make different names collide.")

    fx = "names-not-utf8.zip"
    wind = "The wind vane on the customs house points north-east more often than not."
    hum = "Humidity at the station rarely drops below eighty percent in August."
    tim = "The ferry timetable pinned in the waiting room is two years out of date."
    members = [(b"bad\xff\xfe.txt", wind, 0x800), ("pct%and#hash.txt".encode(), hum, 0x800),
               (b"plain.txt", tim, 0)]
    data = zip_bytes([Entry(n, (t + "\n").encode(), flags=f) for n, t, f in members])
    write(fx, data,
          "zip entry flagged UTF-8 (bit 11) whose name bytes are not UTF-8; '%' and '#' in a name",
          [line("", "indexed")] +
          [indexed_leaf(fx, "!/" + esc(n), (t + "\n").encode()) for n, t, _ in members],
          [phrase(fx, t, "!/" + esc(n)) for n, t, _ in members],
          "bad\\xff\\xfe.txt has general-purpose bit 11 (UTF-8) set although 0xFF 0xFE can never "
          "occur in UTF-8 (Python's zipfile raises UnicodeDecodeError on it). Wanted locator: "
          "'names-not-utf8.zip!/bad%FF%FE.txt' (raw bytes escaped, not U+FFFD and not CP437). "
          "'pct%and#hash.txt' must print as 'pct%25and%23hash.txt' so that the locator still "
          "parses round-trip. plain.txt is an ordinary sibling.")


# ---------------------------------------------------------------------------------------------
# 17. zip-deep-long-names.zip, 18. zip-duplicate-flood.zip
# ---------------------------------------------------------------------------------------------


def zip_deep_long_names():
    fx = "zip-deep-long-names.zip"
    sentence = "The weather kite is flown from the north pier when the wind is steady."
    hidden = "This log hides thirty thousand folders down and is never read."
    hidden2 = "This second log hides behind sixty thousand characters of name."
    deep = "The pilot boat is painted red and white every third summer."
    long1 = "d/" * 32765 + "x.txt"  # 65 535 bytes, 32 765 folders: the largest a zip allows
    long2 = "e/" * 30001 + "y.txt"  # 60 007 bytes
    deep_name = "a/" * 100 + "deep.txt"  # short, but 100 folders deep
    data = text_zip([
        (long1, hidden + "\n"),
        (long2, hidden2 + "\n"),
        (deep_name, deep + "\n"),
        ("plain.txt", sentence + "\n"),
    ])
    write(fx, data,
          "Member names of 65 535 and 60 007 bytes (32 765 folders deep) and a 100-folder path: "
          "every ancestor folder of a path is stored with each chunk, so such names once cost "
          "7 GB of memory",
          [line("", "indexed"),
           {**line("!/" + long1[:200], "skipped", "limit: name-length"), "locator_prefix": True},
           {**line("!/" + long2[:200], "skipped", "limit: name-length"), "locator_prefix": True},
           line("!/" + deep_name, "skipped", "limit: path-depth"),
           indexed_leaf(fx, "!/plain.txt", (sentence + "\n").encode())],
          [phrase(fx, sentence, "!/plain.txt")],
          "A name longer than max_member_name_bytes (1024) is skipped under a shortened locator "
          "segment (its first 200 bytes, '…' and 16 hex digits of its blake3); a path with more "
          "than max_member_folders (64) folders is skipped under its own name. Neither is read; "
          "plain.txt is. Peak RSS must stay far under 1 GiB.",
          absent=[absent_phrase(fx, hidden, "!/" + long1[:200]),
                  absent_phrase(fx, hidden2, "!/" + long2[:200]),
                  absent_phrase(fx, deep, "!/" + deep_name)])


def zip_duplicate_flood():
    fx = "zip-duplicate-flood.zip"
    sentence = "The foghorn keeper counts the ferries out and counts them in again."
    copies = 3000
    body = (sentence + "\n").encode()
    names = ["copies/%04d-%s.txt" % (i, "n" * 200) for i in range(copies)]
    data = text_zip([(n, body) for n in names])
    LEAF_HASHES[hashlib.sha256(body).hexdigest()] = fx + "!/" + names[0]
    write(fx, data,
          "3 000 members with identical bytes and 210-byte names: every copy is a holder of one "
          "content, and each holder once rewrote every holder's name into each point",
          [line("", "indexed")],
          [phrase(fx, sentence, "!/copies/")],
          "One content held by 3 000 files: embedded once; the points name the first 64 "
          "holders (the catalog keeps all), so each copy costs one small write and the run is "
          "linear in the copies. Which copy is the indexed one depends on which is extracted "
          "first, so only the counts are expected: the archive and one copy indexed, 2 999 "
          "duplicates.",
          lines=copies + 1)
    FIXTURES[fx]["statuses"] = {"indexed": 2, "duplicate": copies - 1}


# ---------------------------------------------------------------------------------------------
# E-mail: MIME bombs, nesting, huge headers, bad encodings, a broken Outlook compound file
# ---------------------------------------------------------------------------------------------


def mail_head(subject, extra=""):
    return (f"From: Harbour Office <office@brackwater.example>\r\nTo: crew@brackwater.example\r\n"
            f"Subject: {subject}\r\nDate: Mon, 2 Mar 2026 09:00:00 +0000\r\n"
            f"Message-ID: <{zlib.crc32(subject.encode())}@brackwater.example>\r\n{extra}"
            f"MIME-Version: 1.0\r\n")


def mail_mime_bomb():
    fx = "mail-mime-bomb.eml"
    parts = 30_000
    body = [mail_head("Thirty thousand parts"),
            "Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n"]
    for i in range(parts):
        body.append(f"--b\r\nContent-Type: text/plain\r\n\r\n{i}\r\n")
    body.append("--b--\r\n")
    data = "".join(body).encode()
    write(fx, data,
          "A message of 30 000 one-line MIME parts (a parser allocates per part)",
          [line("", "skipped", "MIME boundary lines")],
          [],
          "Every part needs a boundary line: 30 001 lines starting with '--' are more than "
          "twice the member limit (10 000) allows, so the message is refused by that count "
          "before it is parsed at all (limit: file-count); its card says so.")


def mail_nested_messages():
    fx = "mail-nested-messages.eml"
    levels = 40
    sentences = [f"Forwarded note number {i} asks for the crane at berth {i + 3} to be checked."
                 for i in range(levels)]
    inner = ""
    for i in reversed(range(levels)):
        head = mail_head(f"Level {i}")
        if inner:
            inner = (head + "Content-Type: multipart/mixed; boundary=\"L%d\"\r\n\r\n" % i +
                     f"--L{i}\r\nContent-Type: text/plain\r\n\r\n{sentences[i]}\r\n"
                     f"--L{i}\r\nContent-Type: message/rfc822\r\n\r\n{inner}\r\n--L{i}--\r\n")
        else:
            inner = head + f"Content-Type: text/plain\r\n\r\n{sentences[i]}\r\n"
    data = inner.encode()
    # Depth limit 5: the top message (depth 0) and the nested ones at depths 1..4 are opened;
    # the one at depth 5 is skipped.
    ledger = [line("", "indexed"), line("!/message.txt", "indexed")]
    loc = ""
    for d in range(1, 5):
        loc += f"!/Level {d}.eml"
        ledger += [line(loc, "indexed"), line(loc + "!/message.txt", "indexed")]
    ledger.append(line(loc + "!/Level 5.eml", "skipped", "depth"))
    phrases = [phrase(fx, sentences[0], "!/message.txt")]
    absent = [absent_phrase(fx, sentences[20], "")]
    write(fx, data,
          "A message forwarding a message forwarding … 40 levels deep (message/rfc822 parts)",
          ledger, phrases,
          "Each level is a multipart/mixed message with a text part and the next level as a "
          "message/rfc822 part. Attached messages are members walked in turn, so the depth "
          "limit (5) applies: levels 0-4 are read, level 5 is skipped and nothing below it "
          "is read.", absent=absent)


def mail_deep_multipart():
    fx = "mail-deep-multipart.eml"
    depth = 8_000
    sentence = "The deepest part says the pilot ladder on the east quay needs new rungs."
    out = [mail_head("Deep multipart")]
    for d in range(depth):
        out.append(f"Content-Type: multipart/mixed; boundary=\"d{d}\"\r\n\r\n--d{d}\r\n")
    out.append(f"Content-Type: text/plain\r\n\r\n{sentence}\r\n")
    for d in reversed(range(depth)):
        out.append(f"--d{d}--\r\n")
    data = "".join(out).encode()
    write(fx, data,
          "8 000 multipart levels nested in one message (a recursive parser overflows its stack)",
          [line("", "indexed"), line("!/message.txt", "indexed")],
          [],
          "multipart/mixed inside multipart/mixed 8 000 times, 16 000 boundary lines (under "
          "the 20 016 allowed); mail-parser keeps its own stack on the heap. Whether the "
          "innermost text reaches the body is the parser's business; the process must end "
          "normally with the message and its text line.")


def mail_huge_headers():
    fx = "mail-huge-headers.eml"
    sentence = "The harbour master moved the weekly safety briefing to Thursday morning."
    received = "".join(f"Received: from relay{i}.example by relay{i + 1}.example; Mon, 2 Mar 2026\r\n"
                       for i in range(5_000))
    subject = "Briefing " + "moved " * 100_000
    data = (received + mail_head(subject.strip(), "X-Long: " + "y" * (1 << 20) + "\r\n") +
            f"Content-Type: text/plain\r\n\r\n{sentence}\r\n").encode()
    write(fx, data,
          "5 000 Received headers, a 600 KB subject and a 1 MiB header line",
          [line("", "indexed"), line("!/message.txt", "indexed")],
          [phrase(fx, sentence, "!/message.txt")],
          "Header values reach the mail's text and its ledger line bounded (300 characters "
          "each); the body is read as usual.")


def mail_bad_encodings():
    fx = "mail-bad-encodings.eml"
    sentence = "Despite the broken encodings the tide table for March was attached."
    data = (mail_head("=?utf-8?B?!!!not-base64?= =?x-unknown?Q?=ZZ?= \xff\xfe tide",
                      "Content-Type: multipart/mixed; boundary=\"e\"\r\n").encode("latin-1") +
            b"\r\n--e\r\nContent-Type: text/plain; charset=no-such-charset\r\n"
            b"Content-Transfer-Encoding: quoted-printable\r\n\r\n" +
            sentence.encode() + b" =ZZ =\r\n=C3=\xff\r\n"
            b"--e\r\nContent-Type: application/pdf; name=\"bad.pdf\"\r\n"
            b"Content-Transfer-Encoding: base64\r\n\r\n!!!! this is not base64 at all ****\r\n"
            b"--e\r\nContent-Type: text/plain; name=\"unknown.txt\"\r\n"
            b"Content-Transfer-Encoding: x-unheard-of\r\n\r\nplain words in an unknown encoding\r\n"
            b"--e--\r\n")
    write(fx, data,
          "Broken encoded-words, an unknown charset, bad quoted-printable, base64 that is not",
          [line("", "indexed"), line("!/message.txt", "indexed"),
           line("!/bad.pdf", "failed_or_indexed"), line("!/unknown.txt", "indexed")],
          [phrase(fx, sentence, "!/message.txt")],
          "What cannot be decoded is kept as it is or dropped by the decoder; each part is "
          "one line, and the message's text is searchable.")


def msg_broken_directory():
    fx = "msg-broken-directory.msg"
    # A compound file header whose directory chain loops on itself (FAT entry 1 -> 1).
    header = bytearray(512)
    header[0:8] = bytes.fromhex("D0CF11E0A1B11AE1")
    struct.pack_into("<HHHHH", header, 24, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<I", header, 44, 1)            # FAT sectors
    struct.pack_into("<I", header, 48, 1)            # first directory sector
    struct.pack_into("<I", header, 56, 4096)         # mini stream cutoff
    struct.pack_into("<I", header, 60, 0xFFFFFFFE)   # first mini FAT sector: none
    struct.pack_into("<I", header, 68, 0xFFFFFFFE)   # first DIFAT sector: none
    struct.pack_into("<I", header, 76, 0)            # DIFAT[0]: the FAT is sector 0
    for i in range(1, 109):
        struct.pack_into("<I", header, 76 + 4 * i, 0xFFFFFFFF)
    fat = bytearray(b"\xff" * 512)
    struct.pack_into("<II", fat, 0, 0xFFFFFFFD, 1)   # sector 0: FAT; sector 1 -> 1 (a loop)
    directory = bytearray(512)
    name = "Root Entry".encode("utf-16-le")
    directory[0:len(name)] = name
    struct.pack_into("<HBB", directory, 64, len(name) + 2, 5, 1)
    data = bytes(header + fat + directory)
    write(fx, data,
          "An Outlook .msg whose compound-file directory chain loops on itself",
          [line("", "failed", "corrupt msg")],
          [],
          "The FAT says the directory's sector is followed by itself; the reader must notice "
          "the loop and fail the file, not spin or allocate without end.")


# ---------------------------------------------------------------------------------------------


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    docx_declared_1tib()
    xlsx_far_cells()
    pdf_attacks()
    zip_overlap()
    nested_42()
    quine()
    multi_member_gz()
    tar_longname()
    tar_sparse()
    zip_duplicate_names()
    zip_path_tricks()
    tar_links_devices()
    tar_link_flood()
    zip_links_encrypted()
    names_not_utf8()
    zip_deep_long_names()
    zip_duplicate_flood()
    mail_mime_bomb()
    mail_nested_messages()
    mail_deep_multipart()
    mail_huge_headers()
    mail_bad_encodings()
    msg_broken_directory()
    manifest = {"limits": "defaults", "fixtures": dict(sorted(FIXTURES.items()))}
    data = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    os.makedirs(os.path.dirname(MANIFEST), exist_ok=True)
    with open(MANIFEST, "w", encoding="utf-8") as f:
        f.write(data)
    os.utime(MANIFEST, (EPOCH, EPOCH))
    print(f"wrote tests/expected/hostile.json ({len(data.encode())} bytes)")


if __name__ == "__main__":
    main()
