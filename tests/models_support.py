"""Real pieces for the ``kbagent models`` tests: a tiny GGUF written with the ``gguf``
package's own writer, an HTTP server on 127.0.0.1 that serves files with Range
support (and can answer 404, cut a body short, or serve a web page), and tiny wheels
for the package-index route, served by ``pip download --no-index --find-links``."""

from __future__ import annotations

import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


def write_gguf(path: Path, *, size_label: str | None = "2.5M", context: int = 4096,
               rows: int = 16, cols: int = 1024, chat_template: bool = True) -> bytes:
    """A small real GGUF (one float32 tensor of ``rows`` x ``cols``); its bytes."""
    from gguf import GGUFWriter, LlamaFileType

    w = GGUFWriter(str(path), "llama")
    w.add_name("Tiny Test Model")
    if size_label:
        w.add_size_label(size_label)
    w.add_context_length(context)
    w.add_file_type(LlamaFileType.ALL_F32)
    w.add_license("apache-2.0")
    if chat_template:
        w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    w.add_tensor("token_embd.weight", np.arange(rows * cols, dtype=np.float32)
                 .reshape(rows, cols))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class FileServer:
    """What the server serves and what it was asked."""

    files: dict[str, bytes] = field(default_factory=dict)
    cut_once: dict[str, int] = field(default_factory=dict)  # path -> bytes sent before a cut
    short: set[str] = field(default_factory=set)  # paths always cut at half the length
    ranges: list[str | None] = field(default_factory=list)  # the Range header of each GET
    base: str = ""

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}"


def _handler(state: FileServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            path = self.path.lstrip("/")
            state.ranges.append(self.headers.get("Range"))
            if path == "page.html":
                body = b"<!DOCTYPE html><html><body>a web page</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            data = state.files.get(path)
            if data is None:
                self.send_error(404, "Not Found")
                return
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[6:-1])
                if start >= len(data):
                    self.send_error(416, "Range Not Satisfiable")
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if path in state.cut_once:  # promise the whole body, send a part, hang up
                self.wfile.write(body[: state.cut_once.pop(path)])
                self.close_connection = True
                return
            if path in state.short:
                self.wfile.write(body[: len(body) // 2])
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


@contextmanager
def file_server() -> Iterator[FileServer]:
    """An HTTP server on 127.0.0.1 (a free port) in a thread, for the test's duration."""
    state = FileServer()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def build_wheel(folder: Path, dist: str, version: str, member: str, data: bytes) -> Path:
    """A minimal wheel of distribution ``dist`` holding ``member`` (under its module
    folder) with ``data``: what the model-part wheels on the package index look like."""
    module = dist.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": b"",
        f"{module}/{member}": data,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
                            .encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in files.items():
            z.writestr(name, content)
        z.writestr(f"{info}/RECORD", record)
    return path
