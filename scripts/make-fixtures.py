#!/usr/bin/env python3
"""Generate the bundled fixtures deterministically (fixed timestamps, sorted members).

The text documents in fixtures/docs/ are written by hand; this script builds the archives in
fixtures/archives/ from text it holds itself, so every byte in fixtures/ is ours.
Run it again after changing it; the output is byte-for-byte stable.
"""
import gzip
import io
import os
import tarfile
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
EPOCH = 1672531200  # 2023-01-01T00:00:00Z

LIGHTHOUSE = """# Skerry Point lighthouse

## Keepers

The lighthouse on Skerry Point was kept by Ingrid Solberg from 1931 to 1958.
She logged every passing ship in a green ledger and trimmed the lamp wick at dusk.

## The lamp

A fourth-order Fresnel lens turned on a bath of mercury, one flash every twelve seconds.
"""

TIDES = """Tide table notes, harbour of Vennesund

High water springs reach 2.4 metres above chart datum.
Neap tides rarely exceed 1.1 metres; the ferry keeps to the deep channel at low water.
"""

README = """This bundle holds the archived field notes of the coastal survey.
Open docs/inner.tar.gz for the notes themselves.
"""

LOG_PARTS = [
    "2024-03-01 pump station 4 restarted after a power dip\n",
    "2024-03-02 pressure sensor B recalibrated by the night shift\n",
]


def tar_gz(members):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, text in sorted(members.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = EPOCH
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=EPOCH)


def zip_bytes(members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in sorted(members.items()):
            info = zipfile.ZipInfo(name, date_time=(2023, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    return out.getvalue()


def write(rel, data):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.utime(path, (EPOCH, EPOCH))
    print(f"wrote fixtures/{rel} ({len(data)} bytes)")


def main():
    inner = tar_gz({"notes/lighthouse.md": LIGHTHOUSE, "notes/tides.txt": TIDES})
    write("archives/bundle.zip", zip_bytes({"docs/inner.tar.gz": inner, "README.txt": README.encode()}))
    # Two gzip members in one file: readers that stop after the first lose the second line.
    write("archives/pump-log.txt.gz", b"".join(gzip.compress(p.encode(), mtime=EPOCH) for p in LOG_PARTS))


if __name__ == "__main__":
    main()
