"""The openai channel and the relay against a real HTTP server on 127.0.0.1 (canned replies).

A hosted model cannot run here, so its protocol does: a chat-completions server
whose replies the test scripts.  No Docker needed for these.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mergegate.drafter import relay
from mergegate.drafter.channel import Channel, ChannelConfig, InfraError, config_from, validate_reply
from mergegate.errors import UsageError
from mergegate.records.policy import Drafter

KEY = "sk-test-7f3a9c-NEVER-IN-THE-CONTAINER"


def completion(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).encode()


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    delay_s: float = 0.0
    location: str | None = None


@dataclass
class FakeModel:
    """A chat-completions server: ``reply(request_json) -> Reply`` decides each answer."""

    reply: Callable[[dict[str, object]], Reply]
    requests: list[dict[str, object]] = field(default_factory=list)
    connections: int = 0
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = {"raw": body.decode(errors="replace")}
            model.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": parsed})
            answer = model.reply(parsed)
            if answer.delay_s:
                time.sleep(answer.delay_s)
            try:
                self.send_response(answer.status)
                if answer.location:
                    self.send_header("Location", answer.location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self) -> None:  # anything else that reaches us (an escape attempt) is counted
            model.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": None})
            self.send_response(404)
            self.end_headers()

    return Handler


@pytest.fixture
def fake_model() -> Iterator[Callable[[Callable[[dict[str, object]], Reply]], FakeModel]]:
    servers: list[ThreadingHTTPServer] = []

    def start(reply: Callable[[dict[str, object]], Reply]) -> FakeModel:
        model = FakeModel(reply)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
        server.daemon_threads = True
        model.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return model

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def config(model: FakeModel, timeout_s: float = 2.0, retries: int = 2) -> ChannelConfig:
    return ChannelConfig(model.base_url, "test-model", KEY, timeout_s=timeout_s, retries=retries, backoff_s=0.05)


MESSAGES = {"messages": [{"role": "user", "content": "write a property"}]}


def test_a_good_reply_passes_through_with_the_key_and_the_configured_model(fake_model) -> None:
    model = fake_model(lambda req: Reply(body=completion("```python\ndef test_x(): pass\n```")))
    channel = Channel(config(model))
    data = channel.complete({**MESSAGES, "model": "something-else"})
    assert json.loads(data)["choices"][0]["message"]["content"].startswith("```python")
    assert model.requests[0]["path"] == "/v1/chat/completions"
    assert model.requests[0]["auth"] == f"Bearer {KEY}"
    assert model.requests[0]["body"]["model"] == "test-model"  # type: ignore[index]


INFRA_CASES = {
    "http_500": (Reply(status=500, body=b'{"error": "boom"}'), "HTTP 500", 3),
    "empty_body": (Reply(body=b""), "empty body", 1),
    "malformed_json": (Reply(body=b"<html>not json</html>"), "malformed", 1),
    "no_choices": (Reply(body=b'{"choices": []}'), "malformed", 1),
    "empty_content": (Reply(body=completion("   ")), "empty completion", 1),
    "slow": (Reply(body=completion("late"), delay_s=1.5), "timed out", 3),
    "http_401": (Reply(status=401, body=b"{}"), "HTTP 401", 1),
}


@pytest.mark.parametrize("case", sorted(INFRA_CASES))
def test_channel_faults_are_infra(fake_model, case: str) -> None:
    answer, words, attempts = INFRA_CASES[case]
    model = fake_model(lambda req: answer)
    channel = Channel(config(model, timeout_s=0.5))
    with pytest.raises(InfraError) as info:
        channel.complete(MESSAGES)
    assert info.value.message.startswith("infra: ") and words in info.value.message
    assert len(model.requests) == attempts  # bounded retries on 5xx and timeouts only


def test_a_transient_500_is_retried_with_backoff(fake_model) -> None:
    answers = iter([Reply(status=503), Reply(body=completion("ok"))])
    model = fake_model(lambda req: next(answers))
    started = time.monotonic()
    Channel(config(model)).complete(MESSAGES)
    assert len(model.requests) == 2 and time.monotonic() - started >= 0.05


def test_connection_refused_is_infra() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    channel = Channel(ChannelConfig(f"http://127.0.0.1:{port}/v1", "m", KEY, timeout_s=0.5, retries=1, backoff_s=0.01))
    with pytest.raises(InfraError, match="connection error"):
        channel.complete(MESSAGES)


def test_the_key_is_not_sent_where_a_redirect_points(fake_model) -> None:
    elsewhere = fake_model(lambda req: Reply(body=completion("stolen")))
    model = fake_model(lambda req: Reply(status=307, location=f"{elsewhere.base_url}/chat/completions"))
    with pytest.raises(InfraError, match="HTTP 307"):
        Channel(config(model)).complete(MESSAGES)
    assert elsewhere.requests == []


def test_config_needs_url_and_model_and_reads_the_key_from_the_named_variable() -> None:
    drafter = Drafter(api_key_env="MY_KEY")
    with pytest.raises(UsageError, match="base URL and a model"):
        config_from(drafter, {})
    with pytest.raises(UsageError, match="not http"):
        config_from(drafter, {"GATE_DRAFTER_BASE_URL": "file:///etc", "GATE_DRAFTER_MODEL": "m"})
    got = config_from(drafter, {"GATE_DRAFTER_BASE_URL": "http://h/v1", "GATE_DRAFTER_MODEL": "m", "MY_KEY": "k"})
    assert (got.url, got.model, got.api_key) == ("http://h/v1/chat/completions", "m", "k")


def test_validate_reply_accepts_only_a_chat_completion() -> None:
    assert validate_reply(completion("x")) == completion("x")
    for bad in (b"", b"  ", b"null", b"[]", b'{"choices": [{"message": {"content": 3}}]}'):
        with pytest.raises(InfraError):
            validate_reply(bad)


# ---------------------------------------------------------------- the relay (host side)

def post(sock: str, path: str, body: bytes) -> tuple[int, bytes]:
    class Unix(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(sock)

    conn = Unix("relay", timeout=10)
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    return reply.status, reply.read()


def oversized(sock: str, length: int) -> bytes:
    """Announce a body over the cap; the relay answers before reading it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(sock)
        conn.sendall(f"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: {length}\r\n\r\n".encode())
        return conn.recv(4096)


def test_relay_forwards_adds_the_key_and_caps_count_size_and_path(fake_model) -> None:
    model = fake_model(lambda req: Reply(body=completion("ok")))
    body = json.dumps(MESSAGES).encode()
    with relay.running(Channel(config(model)), max_requests=2) as (sock, state):
        assert post(sock, "/v1/chat/completions", body)[0] == 200
        assert post(sock, "/v1/models", body)[0] == 404
        assert oversized(sock, state.max_request_bytes + 1).startswith(b"HTTP/1.0 413")
        assert post(sock, "/v1/chat/completions", b"{}")[0] == 400
        assert post(sock, "/v1/chat/completions", body)[0] == 429  # two counted already
    assert [r["auth"] for r in model.requests] == [f"Bearer {KEY}"]
    assert state.requests == 2 and len(state.refused) == 4 and state.infra is None


def test_relay_records_infra_on_the_host_and_refuses_after_it(fake_model) -> None:
    model = fake_model(lambda req: Reply(status=500))
    body = json.dumps(MESSAGES).encode()
    with relay.running(Channel(config(model, retries=0)), max_requests=5) as (sock, state):
        status, data = post(sock, "/v1/chat/completions", body)
        assert status == 502 and b"infra" in data
        assert post(sock, "/v1/chat/completions", body)[0] == 503
    assert state.infra is not None and "HTTP 500" in state.infra
    assert len(model.requests) == 1


def test_relay_caps_the_response_size(fake_model) -> None:
    model = fake_model(lambda req: Reply(body=completion("x" * 5000)))
    cfg = ChannelConfig(model.base_url, "m", KEY, timeout_s=2, retries=0, max_response_bytes=1000)
    with relay.running(Channel(cfg), max_requests=1) as (sock, state):
        assert post(sock, "/v1/chat/completions", json.dumps(MESSAGES).encode())[0] == 502
    assert state.infra is not None and "exceeds 1000 bytes" in state.infra
