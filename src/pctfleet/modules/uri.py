"""`uri`: an HTTP request sent from the container with its python3 (urllib).

A request is no state to converge: like Ansible, it runs on every run and reports
itself unchanged, except that `creates`/`removes` are read in the shared probe (so a
task guarded by them costs nothing once done) and a `dest` that gets new bytes is a change.
"""

from __future__ import annotations

import base64
import contextlib
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from pctfleet.errors import PlaybookError, brief
from pctfleet.facts.kv import decode_fields
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World
from pctfleet.modules.get_url import positive
from pctfleet.sh import snippet

FORMATS = {"raw", "json", "form-urlencoded"}
CONTENT_TYPES = {"json": "application/json", "form-urlencoded": "application/x-www-form-urlencoded"}


def _codes(value: Any, where: str) -> tuple[int, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    try:
        return tuple(int(item) for item in items)
    except (TypeError, ValueError):
        raise PlaybookError(
            f"uri: 'status_code' must be numbers, got {brief(value)}", where=where
        ) from None


def _headers(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise PlaybookError(f"uri: 'headers' must be a mapping, got {brief(value)}", where=where)
    return {str(k): str(v) for k, v in value.items()}


def _any(value: Any, where: str) -> Any:
    return value


@dataclass(frozen=True)
class UriArgs(Args):
    url: str = arg(required=True, convert=text)
    method: str = arg("GET", convert=lambda v, w: text(v, w).upper())
    body: Any = arg(None, convert=_any)
    body_format: str = arg("raw", choices=FORMATS)
    headers: dict = arg(None, convert=_headers)
    status_code: tuple[int, ...] = arg((200,), convert=_codes)
    return_content: bool = arg(False, convert=flag)
    dest: str | None = arg(None, convert=text)
    creates: str | None = arg(None, convert=text)
    removes: str | None = arg(None, convert=text)
    timeout: float = arg(30.0, convert=positive)
    follow_redirects: str = arg("safe", convert=text)
    validate_certs: bool = arg(True, convert=flag)  # accepted; urllib always validates

    def check(self, ctx: Context, where: str) -> None:
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise self.fail(f"'url' must be http or https, got {brief(self.url)}", where)
        for key in ("dest", "creates", "removes"):
            value = getattr(self, key)
            if value is not None and not value.startswith("/"):
                raise self.fail(f"{key!r} must be an absolute path, got {value!r}", where)

    def payload(self) -> tuple[bytes, dict[str, str]]:
        """The body's bytes and the headers, Content-Type set as Ansible sets it."""
        headers = dict(self.headers or {})
        if self.body is None:
            return b"", headers
        if self.body_format == "json":
            data = self.body if isinstance(self.body, str) else json.dumps(self.body)
        elif self.body_format == "form-urlencoded" and isinstance(self.body, dict):
            data = urlencode(self.body, doseq=True)
        else:
            data = str(self.body)
        if self.body_format in CONTENT_TYPES and not any(
            k.lower() == "content-type" for k in headers
        ):
            headers["Content-Type"] = CONTENT_TYPES[self.body_format]
        return data.encode(), headers


@dataclass(frozen=True)
class Guards:
    created: bool = False
    removed: bool = False


class GuardFact(FactReader[Guards]):
    State = Guards

    def command(self, args: UriArgs, want_diff: bool) -> str:
        return snippet("uri_fact", CREATES=args.creates or "", REMOVES=args.removes or "")

    def parse(self, reading: Fact) -> Guards:
        f = reading.fields()
        return Guards(f.get("created") == "1", f.get("removed") == "1")

    def converged(self, args: UriArgs, world: World) -> dict[str, str]:
        return {"created": "1"} if args.creates else {"removed": "1"}


class Uri(Module, name="uri", args=UriArgs, fact=GuardFact()):
    """Send an HTTP request from the container (Ansible's `uri`)."""

    def probe(self, args: UriArgs, want_diff: bool) -> str | None:
        # Without a guard there is nothing to read: the request runs on every run.
        return super().probe(args, want_diff) if args.creates or args.removes else None

    def plan(self, args: UriArgs, state: Guards, check: bool) -> Plan:
        if state.created:
            return Plan(False, msg=f"skipped, {args.creates} exists")
        if state.removed:
            return Plan(False, msg=f"skipped, {args.removes} does not exist")
        body, headers = args.payload()
        inputs = {"URL": args.url, "METHOD": args.method, "HEADERS": json.dumps(headers)}
        inputs |= {"TIMEOUT": f"{args.timeout:g}", "DEST": args.dest or ""}
        inputs["FOLLOW"] = int(args.follow_redirects not in ("none", "no", "false"))
        script = snippet("uri", **inputs)
        return Plan(True, script=script, stdin=body, skip_in_check=True, result={"url": args.url})

    def finish(self, args: UriArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        if rc != 0:
            lines = err.strip().splitlines()
            return {"failed": True, "msg": lines[-1] if lines else f"exit {rc}", "status": -1}
        return response(args, decode_fields(out))


def response(args: UriArgs, fields: dict[str, str]) -> dict:
    """The registered result, as Ansible's `uri` registers it."""
    status = int(fields.get("status", "-1"))
    data = base64.b64decode(fields.get("content", ""))
    headers = json.loads(fields.get("headers", "{}"))
    # Response headers first, lowercased as Ansible registers them; its own keys win.
    result: dict[str, Any] = {k.lower().replace("-", "_"): v for k, v in headers.items()}
    result |= {"status": status, "url": fields.get("url", args.url)}
    result["changed"] = fields.get("changed") == "1"
    result["elapsed"] = int(fields.get("elapsed", "0"))
    result["redirected"] = fields.get("redirected") == "1"
    result["content_type"] = fields.get("content_type", "")
    text_body = data.decode("utf-8", "replace")
    if args.return_content or status not in args.status_code:
        result["content"] = text_body
    if "json" in result["content_type"]:
        with contextlib.suppress(ValueError):
            result["json"] = json.loads(text_body)
    if "path" in fields:
        result["path"] = fields["path"]
    if status in args.status_code:
        return result | {"msg": f"OK ({len(data)} bytes)"}
    why = fields.get("error") or f"HTTP Error {status}"
    expected = list(args.status_code)
    return result | {"failed": True, "msg": f"Status code was {status} and not {expected}: {why}"}
