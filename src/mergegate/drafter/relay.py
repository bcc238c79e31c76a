"""The host-side relay: the container's only way to the model.

A tiny HTTP server on a Unix socket (bind-mounted into the container) that
accepts ``POST /v1/chat/completions`` and forwards the messages to the one
configured endpoint through ``Channel``, which adds the key on the host side.
Request size, response size and the number of requests are capped.  The first
channel fault is recorded here, on the host: the container cannot hide it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from mergegate.drafter.channel import Channel, InfraError

PATH = "/v1/chat/completions"


@dataclass
class RelayState:
    """What happened on the channel during one run (host-side truth)."""

    max_requests: int
    max_request_bytes: int = 64 * 1024
    requests: int = 0
    refused: list[str] = field(default_factory=list)
    infra: str | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)


class _Server(socketserver.UnixStreamServer):
    channel: Channel
    state: RelayState


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the host prints a summary
        return

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, status: int, why: str) -> None:
        with self.server.state.lock:
            self.server.state.refused.append(why)
        self._reply(status, json.dumps({"error": why}).encode())

    def do_GET(self) -> None:
        self._refuse(405, "only POST " + PATH)

    def do_POST(self) -> None:
        state = self.server.state
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length <= 0 or length > state.max_request_bytes:
            return self._refuse(413, f"request body must be 1..{state.max_request_bytes} bytes")
        raw = self.rfile.read(length)  # read before any answer, so the client never writes into a closed socket
        if self.path != PATH:
            return self._refuse(404, f"only {PATH} is relayed")
        with state.lock:
            if state.infra is not None:
                return self._refuse(503, "the channel already failed: the trial is over")
            if state.requests >= state.max_requests:
                return self._refuse(429, f"at most {state.max_requests} requests per run")
            state.requests += 1
        try:
            request = json.loads(raw)
            messages = request["messages"]
            if not isinstance(messages, list):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return self._refuse(400, "the body must be JSON with a messages list")
        try:
            body = self.server.channel.complete({"messages": messages})
        except InfraError as exc:
            with state.lock:
                state.infra = state.infra or exc.message
            return self._reply(502, json.dumps({"error": exc.message}).encode())
        self._reply(200, body)


@contextlib.contextmanager
def running(channel: Channel, max_requests: int) -> Iterator[tuple[str, RelayState]]:
    """Serve the relay on a fresh socket for the block; yields (socket path, state)."""
    directory = tempfile.mkdtemp(prefix="gate-relay-")
    sock = os.path.join(directory, "model.sock")
    server = _Server(sock, _Handler)
    server.channel = channel
    server.state = RelayState(max_requests=max_requests)
    # The container's user must connect; the 0700 directory keeps host users out.
    os.chmod(sock, 0o666)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield sock, server.state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        shutil.rmtree(Path(directory), ignore_errors=True)
