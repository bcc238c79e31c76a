"""The sealed call protocol's channel: length-prefixed JSON messages over a stream socket.

Standard library only (the subject loads it by path).  A message is a JSON
array: a request ``[op, ...]`` or a reply ``["ok", value, ...]`` /
``["err", error]``.  Either side may send requests while it waits for a reply
(a production function calling back into an oracle callable), so ``request``
serves the peer's requests until its own reply arrives.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable
from typing import Any

# Relative: the subject loads this folder as a private package (see subject/server.py).
from .codec import CodecError

MAX_MESSAGE = 64 << 20


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # built once: a message per call


def dumps(message: Any) -> bytes:
    """One message as compact JSON bytes (NaN and infinities allowed, as Python writes them)."""
    try:
        return _JSON.encode(message).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError) as exc:
        raise CodecError(f"cannot write the message: {exc}") from None


def loads(data: bytes) -> Any:
    """One message parsed from JSON bytes; anything malformed is a ``CodecError``."""
    if len(data) > MAX_MESSAGE:
        raise CodecError(f"message of {len(data)} bytes is over the {MAX_MESSAGE}-byte limit")
    try:
        return json.loads(data.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise CodecError(f"malformed message: {type(exc).__name__}: {str(exc)[:200]}") from None


REPLIES = ("ok", "err")
MAX_NESTING = 64  # requests served inside one wait: a call/callback ping-pong stops here


class ChannelClosed(Exception):
    """The peer closed the channel (it exited, crashed or was killed)."""


Handler = Callable[[list[Any]], list[Any]]


class Endpoint:
    """One end of a channel: ``request`` for our calls, ``handler`` for the peer's."""

    def __init__(self, sock: socket.socket, handler: Handler) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb", buffering=1 << 16)
        self.handler = handler
        self.nesting = 0

    def send(self, message: list[Any]) -> None:
        data = dumps(message)
        self.sock.sendall(len(data).to_bytes(4, "big") + data)

    def recv(self) -> list[Any]:
        head = self.reader.read(4)
        if len(head) < 4:
            raise ChannelClosed("the peer closed the channel")
        size = int.from_bytes(head, "big")
        if size > MAX_MESSAGE:
            raise CodecError(f"message of {size} bytes is over the {MAX_MESSAGE}-byte limit")
        data = self.reader.read(size)
        if len(data) < size:
            raise ChannelClosed("the peer closed the channel mid-message")
        message = loads(data)
        if type(message) is not list or not message or type(message[0]) is not str:
            raise CodecError("malformed message: not a tagged array")
        return message

    def request(self, message: list[Any]) -> list[Any]:
        """Send ``message``; serve the peer's requests until our reply arrives; return it."""
        self.send(message)
        while True:
            incoming = self.recv()
            if incoming[0] in REPLIES:
                return incoming
            if self.nesting >= MAX_NESTING:
                raise CodecError(f"more than {MAX_NESTING} nested calls between the two sides")
            self.nesting += 1
            try:
                self.send(self.handler(incoming))
            finally:
                self.nesting -= 1

    def serve(self) -> None:
        """Answer the peer's requests until it closes the channel."""
        while True:
            try:
                incoming = self.recv()
            except ChannelClosed:
                return
            self.send(self.handler(incoming))

    def close(self) -> None:
        for closer in (self.reader.close, self.sock.close):
            with contextlib.suppress(OSError):
                closer()
