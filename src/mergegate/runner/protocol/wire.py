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
import json.encoder
import json.scanner
import socket
from collections.abc import Callable
from typing import Any

# Relative: the subject loads this folder as a private package (see subject/server.py).
from .codec import CodecError

MAX_MESSAGE = 64 << 20


# Built once (a message per call), and called directly: ``JSONEncoder.encode`` and ``json.loads`` rebuild or
# re-check on every call what is the same each time, about a quarter of a small message's cost.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # CPython's accelerator (not in the stubs)
_ENCODE = (_C_ENCODER(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
           if _C_ENCODER is not None else None)  # without it, the encoder's own path, as before
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # the stubs name the wrong type


def dumps(message: Any) -> bytes:
    """One message as compact JSON bytes (NaN and infinities allowed, as Python writes them)."""
    try:
        text = "".join(_ENCODE(message, 0)) if _ENCODE is not None else _ENCODER.encode(message)
        return text.encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError) as exc:
        raise CodecError(f"cannot write the message: {exc}") from None


def loads(data: bytes) -> Any:
    """One message parsed from JSON bytes, exactly one value and nothing around it (``dumps`` writes no
    whitespace); anything malformed is a ``CodecError``."""
    if len(data) > MAX_MESSAGE:
        raise CodecError(f"message of {len(data)} bytes is over the {MAX_MESSAGE}-byte limit")
    try:
        text = data.decode("utf-8", "surrogatepass")
        value, end = _SCAN(text, 0)
    except StopIteration as stop:  # the scanner's word for "no JSON value starts here"
        raise CodecError(f"malformed message: expecting a value at character {stop.value}") from None
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise CodecError(f"malformed message: {type(exc).__name__}: {str(exc)[:200]}") from None
    if end != len(text):
        raise CodecError(f"malformed message: extra data after its value at character {end}")
    return value


REPLIES = ("ok", "err")
MAX_NESTING = 64  # requests served inside one wait: a call/callback ping-pong stops here


class ChannelClosed(Exception):
    """The peer closed the channel (it exited, crashed or was killed)."""


Handler = Callable[[list[Any]], list[Any]]


class Endpoint:
    """One end of a channel: ``request`` for our calls, ``handler`` for the peer's."""

    def __init__(self, sock: socket.socket, handler: Handler) -> None:
        self.sock = sock
        self.pending = b""  # bytes received past the last message (a peer may send two before we read)
        self.handler = handler
        self.nesting = 0

    def send(self, message: list[Any]) -> None:
        data = dumps(message)
        self.sock.sendall(len(data).to_bytes(4, "big") + data)

    def recv(self) -> list[Any]:
        head = self._take(4)
        size = int.from_bytes(head, "big")
        if size > MAX_MESSAGE:
            raise CodecError(f"message of {size} bytes is over the {MAX_MESSAGE}-byte limit")
        message = loads(self._take(size))
        if type(message) is not list or not message or type(message[0]) is not str:
            raise CodecError("malformed message: not a tagged array")
        return message

    def _take(self, size: int) -> bytes:
        """The next ``size`` bytes of the stream: what is pending first, then the socket's (read straight from
        it: a buffered file object over the socket cost more than the read itself)."""
        data = self.pending
        if len(data) < size:
            chunks, have = [data], len(data)
            while have < size:
                chunk = self.sock.recv(min(max(1 << 16, size - have), 1 << 22))
                if not chunk:
                    raise ChannelClosed("the peer closed the channel" if have == 0 and size == 4
                                        else "the peer closed the channel mid-message")
                chunks.append(chunk)
                have += len(chunk)
            data = b"".join(chunks)
        self.pending = data[size:]
        return data[:size]

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
        with contextlib.suppress(OSError):
            self.sock.close()
