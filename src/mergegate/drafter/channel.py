"""The host side of the draft channel: one OpenAI-compatible chat-completions endpoint.

Seed 002: a timeout, a connection error, a non-success status, an empty or
malformed body is INFRA.  The trial stops, nothing is queued, and it never
becomes a freeze.  The API key is sent only to the configured base URL:
redirects are not followed and proxy settings from the environment are not
trusted (a proxy would see the key of a plain-http endpoint).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mergegate.errors import InternalError, UsageError
from mergegate.records.policy import Drafter

ENV_BASE_URL = "GATE_DRAFTER_BASE_URL"
ENV_MODEL = "GATE_DRAFTER_MODEL"


class InfraError(InternalError):
    """A draft-channel fault (seed 002 ``INFRA``): stop the trial, queue nothing."""

    def __init__(self, message: str) -> None:
        super().__init__(f"infra: {message}", "check the drafter endpoint; nothing was queued")


@dataclass(frozen=True)
class ChannelConfig:
    base_url: str
    model: str
    api_key: str | None
    timeout_s: float = 60.0
    retries: int = 2  # attempts after the first
    backoff_s: float = 0.5
    max_response_bytes: int = 1024 * 1024

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def config_from(drafter: Drafter, environ: Mapping[str, str]) -> ChannelConfig:
    """Base URL, model and key from the environment, else gate.yaml's drafter section."""
    base_url = environ.get(ENV_BASE_URL) or drafter.base_url
    model = environ.get(ENV_MODEL) or drafter.model
    if not base_url or not model:
        raise UsageError("the openai drafter needs a base URL and a model",
                         f"set {ENV_BASE_URL} and {ENV_MODEL}, or drafter.base_url and drafter.model in gate.yaml")
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"base URL {base_url!r} is not http(s)", "write e.g. http://127.0.0.1:11434/v1")
    return ChannelConfig(base_url, model, environ.get(drafter.api_key_env) or None, timeout_s=drafter.timeout_s)


def validate_reply(data: bytes) -> bytes:
    """The body if it is a chat completion with non-empty content; else InfraError."""
    if not data.strip():
        raise InfraError("the endpoint returned an empty body")
    try:
        reply = json.loads(data)
        content = reply["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise InfraError("the endpoint returned a malformed chat completion") from None
    if not isinstance(content, str) or not content.strip():
        raise InfraError("the endpoint returned an empty completion")
    return data


class Channel:
    """POST chat-completion bodies to the one configured endpoint, with bounded retries."""

    def __init__(self, config: ChannelConfig) -> None:
        import httpx

        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._client = httpx.Client(
            timeout=httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s)),
            follow_redirects=False, trust_env=False, headers=headers,
        )

    def close(self) -> None:
        self._client.close()

    def complete(self, body: dict[str, Any]) -> bytes:
        """One completion; the model is always the configured one."""
        payload = json.dumps({**body, "model": self.config.model, "stream": False}).encode()
        last = "no attempt"
        for attempt in range(self.config.retries + 1):
            if attempt:
                time.sleep(self.config.backoff_s * 2 ** (attempt - 1))
            try:
                return validate_reply(self._post(payload))
            except _Retryable as exc:
                last = str(exc)
        raise InfraError(f"{last} (after {self.config.retries + 1} attempts)")

    def _post(self, payload: bytes) -> bytes:
        import httpx

        try:
            with self._client.stream("POST", self.config.url, content=payload) as reply:
                if not 200 <= reply.status_code < 300:
                    message = f"the endpoint answered HTTP {reply.status_code}"
                    if reply.status_code in (408, 429) or reply.status_code >= 500:
                        raise _Retryable(message)
                    raise InfraError(message)
                data = b""
                for chunk in reply.iter_bytes():
                    data += chunk
                    if len(data) > self.config.max_response_bytes:
                        raise InfraError(f"the reply exceeds {self.config.max_response_bytes} bytes")
                return data
        except httpx.TimeoutException:
            raise _Retryable(f"timed out after {self.config.timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection error ({type(exc).__name__})") from None


class _Retryable(Exception):
    pass
