"""A hostile HTTP server on loopback for the remote-source tests (tests/integration/sources.rs).

    python3 hostile_http.py MODE PORT_FILE HITS_FILE [ARG]

It binds 127.0.0.1 on a free port, writes the port to PORT_FILE, and answers every request
(GET, HEAD, PROPFIND, ...) by MODE:

- `redirect`: a WebDAV listing of one file (`PROPFIND`), and 302 to ARG (a URL: "the server's
  own network") for everything else (the file's `GET`).
- `reflect`: ARG (an HTTP status, 500 by default) whose body echoes every request header (the
  Authorization header too), as a proxy's debug page would.
- `huge`: 500 with a body of ARG MiB, sent in 64 KiB writes.
- `internal`: 200 with `INTERNAL-SERVICE-SECRET` (the internal service a redirect points at).
- `flaky`: a WebDAV tree `/docs/{a,b,c}/note-N.txt` whose first listing (`PROPFIND`) of
  `/docs/b/` answers 503, as a server restarting or a closed connection would: the retry must
  list it, not lose the folder.
- `shorthref`: a WebDAV listing of `/docs/` naming a file `/a` (shorter than the folder
  listed: OpenDAL slices it by the root's length and panics).
- `imap`: not HTTP: an IMAP greeting, then a `NO` to the `LOGIN` that echoes the line.

Each request is appended to HITS_FILE as `METHOD PATH`; `huge` appends `sent N` (the bytes it
could write before the client went away).
"""

import os
import socketserver
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT_FILE, HITS_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
ARG = sys.argv[4] if len(sys.argv) > 4 else ""


def note(line):
    with open(HITS_FILE, "a") as f:
        f.write(line + "\n")


# What `redirect` lists (a WebDAV folder holding one file): its file's GET is redirected.
PROP = (
    "<D:response><D:href>{href}</D:href><D:propstat><D:prop>{props}"
    "<D:getlastmodified>Sun, 06 Dec 2026 01:00:00 GMT</D:getlastmodified></D:prop>"
    "<D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
)
LISTING = (
    '<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">'
    + PROP.format(href="/docs/", props="<D:resourcetype><D:collection/></D:resourcetype>")
    + PROP.format(
        href="/docs/notes.txt",
        props='<D:resourcetype/><D:getcontentlength>55</D:getcontentlength><D:getetag>"e1"</D:getetag>',
    )
    + "</D:multistatus>"
)


# What `flaky` serves: three folders of two notes each.
FLAKY = {
    f"/docs/{d}/note-{n}.txt": f"Folder {d}, note {n}: the tide gauge at berth {d}{n} reads high.\n"
    for d in "abc"
    for n in (1, 2)
}
FLAKY_FAILED = set()


def flaky_listing(path):
    """The PROPFIND answer for `path`, or None when it is not a folder of the tree."""
    if path == "/docs/":
        members = [(f"/docs/{d}/", None) for d in "abc"]
    elif path in ("/docs/a/", "/docs/b/", "/docs/c/"):
        members = [(k, v) for k, v in FLAKY.items() if k.startswith(path)]
    else:
        return None
    out = PROP.format(href=path, props="<D:resourcetype><D:collection/></D:resourcetype>")
    for href, text in members:
        if text is None:
            props = "<D:resourcetype><D:collection/></D:resourcetype>"
        else:
            props = (f"<D:resourcetype/><D:getcontentlength>{len(text.encode())}"
                     f'</D:getcontentlength><D:getetag>"{abs(hash(text))}"</D:getetag>')
        out += PROP.format(href=href, props=props)
    return '<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">' + out + "</D:multistatus>"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self):
        note(f"{self.command} {self.path}")
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if MODE == "flaky":
            self.flaky()
        elif MODE == "shorthref" and self.command == "PROPFIND":
            body = (
                '<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:">'
                + PROP.format(href="/docs/", props="<D:resourcetype><D:collection/></D:resourcetype>")
                + PROP.format(href="/a", props="<D:resourcetype/><D:getcontentlength>5</D:getcontentlength>")
                + "</D:multistatus>"
            ).encode()
            self.send_response(207)
            self.send_header("Content-Type", "application/xml; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif MODE == "redirect" and self.command == "PROPFIND":
            body = LISTING.encode()
            self.send_response(207)
            self.send_header("Content-Type", "application/xml; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif MODE == "redirect":
            self.send_response(302)
            self.send_header("Location", ARG)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif MODE == "reflect":
            body = ("request headers:\r\n" + str(self.headers)).encode()
            self.send_response(int(ARG or 500))
            self.send_header("Content-Type", "text/plain")
            self.send_header("X-Echo-Authorization", self.headers.get("Authorization", ""))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        elif MODE == "huge":
            size = int(ARG) * 1024 * 1024
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if self.command == "HEAD":
                return
            chunk = (b"error detail " * 5042)[:65536]
            sent = 0
            try:
                while sent < size:
                    self.wfile.write(chunk[: min(65536, size - sent)])
                    sent += min(65536, size - sent)
            except OSError:
                pass
            note(f"sent {sent}")
        else:
            body = b"INTERNAL-SERVICE-SECRET: the internal service's answer\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    def flaky(self):
        status, body = 404, b""
        if self.command == "PROPFIND":
            listing = flaky_listing(self.path if self.path.endswith("/") else self.path + "/")
            if self.path == "/docs/b/" and self.path not in FLAKY_FAILED:
                FLAKY_FAILED.add(self.path)
                status, body = 503, b"restarting"
            elif listing is not None:
                status, body = 207, listing.encode()
        elif self.path in FLAKY:
            status, body = 200, FLAKY[self.path].encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml; charset=utf-8" if status == 207 else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_PROPFIND = do_OPTIONS = do_PUT = do_POST = answer


class Imap(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(b"* OK IMAP4rev1 ready\r\n")
        while True:
            line = self.rfile.readline(65536)
            if not line:
                return
            note(line.decode(errors="replace").strip().split(" ")[1] if b" " in line else "?")
            tag = line.split(b" ")[0]
            self.wfile.write(tag + b" NO [ALERT] refused, you sent: " + line.rstrip() + b"\r\n")


if MODE == "imap":
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Imap)
else:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
