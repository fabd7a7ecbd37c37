"""`copy` and `template`: a file's content, written atomically and verified."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.base import Fact, LegacyModule, Plan, Push, mode_string, q
from pctfleet.modules.file import attribute_fixes, path_state, stat_probe

DIFF_LIMIT = 64 * 1024


def _content_probe(dest: str, want_diff: bool) -> str:
    lines = [
        stat_probe(dest),
        f"if [ -f {q(dest)} ] && [ ! -L {q(dest)} ]; then",
        f'  s=$(sha256sum < {q(dest)}); pf_kv sha256 "${{s%% *}}"',
    ]
    if want_diff:
        lines.append(
            f'  [ "$(wc -c < {q(dest)})" -le {DIFF_LIMIT} ] && '
            f'pf_kv content "$(base64 -w0 < {q(dest)})"'
        )
    lines.append("fi")
    return "\n".join(lines)


class Copy(LegacyModule):
    """Write `content` (or a local `src` file) to `dest` in the container."""

    name = "copy"
    args = {"content", "src", "dest", "mode", "owner", "group", "force", "backup"}

    def validate(self, args: dict[str, Any], where: str) -> None:
        if not args.get("dest"):
            raise PlaybookError(f"module '{self.name}' needs 'dest'", where=where)
        if not str(args["dest"]).startswith("/"):
            raise PlaybookError(
                f"{self.name}: 'dest' must be an absolute path, got {args['dest']!r}", where=where
            )
        args["_mode"] = mode_string(args.get("mode"), where)
        if "_content" not in args:
            args["_content"] = self.content(args, where)
        if str(args["dest"]).endswith("/") and args.get("src"):
            args["dest"] = str(args["dest"]) + Path(str(args["src"])).name

    def content(self, args: dict[str, Any], where: str) -> bytes:
        if args.get("content") is not None:
            return str(args["content"]).encode()
        if not args.get("src"):
            raise PlaybookError("copy needs 'content' or 'src'", where=where)
        path = Path(str(args["src"])).expanduser()
        if not path.is_absolute():
            path = Path(args.get("_base", ".")) / "files" / path
            if not path.exists():
                path = Path(args.get("_base", ".")) / str(args["src"])
        try:
            return path.read_bytes()
        except OSError as exc:
            raise PlaybookError(
                f"copy: cannot read src {path}: {exc.strerror}", where=where
            ) from None

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return _content_probe(str(args["dest"]), want_diff)

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        dest, content = str(args["dest"]), args["_content"]
        if facts.get("type") == "directory":
            return Plan(False, failed=True, msg=f"{dest} is a directory")
        wanted = hashlib.sha256(content).hexdigest()
        if facts.get("sha256") != wanted:
            mode = args["_mode"] or (facts.get("mode", "").zfill(4) if "mode" in facts else "0644")
            push = Push(dest, content, mode, self._owner(args))
            return Plan(True, pushes=[push], diff=self._diff(dest, facts, content))
        fixes, attr_diff = attribute_fixes(
            dest, path_state(facts), args["_mode"], args.get("owner"), args.get("group")
        )
        if not fixes:
            return Plan(False)
        diff = {"path": dest, "before": str(attr_diff["before"]), "after": str(attr_diff["after"])}
        return Plan(True, script="set -e\n" + "\n".join(fixes) + "\n", diff=diff)

    @staticmethod
    def _owner(args: dict[str, Any]) -> str:
        owner, group = args.get("owner") or "", args.get("group") or ""
        return f"{owner}:{group}" if group else str(owner)

    @staticmethod
    def _diff(dest: str, facts: dict[str, str], content: bytes) -> dict:
        if "content" in facts:
            before = base64.b64decode(facts["content"]).decode("utf-8", errors="replace")
        elif facts.get("type", "absent") == "absent":
            before = ""
        else:
            before = f"(existing content, sha256 {facts.get('sha256', '?')[:12]}...)\n"
        after = (
            content.decode("utf-8", errors="replace")
            if len(content) <= DIFF_LIMIT
            else (f"({len(content)} bytes)\n")
        )
        return {"path": dest, "before": before, "after": after}


class Template(Copy):
    """Render a jinja2 template from the playbook's templates/ folder into `dest`."""

    name = "template"
    args = {"src", "dest", "mode", "owner", "group", "force", "backup"}

    def content(self, args: dict[str, Any], where: str) -> bytes:
        if not args.get("src"):
            raise PlaybookError("module 'template' needs 'src'", where=where)
        from pctfleet.playbook.templating import render_template_file

        path = self._find(str(args["src"]), Path(args.get("_base", ".")), where)
        return render_template_file(path, args["_vars"], where=where).encode()

    @staticmethod
    def _find(src: str, base: Path, where: str) -> Path:
        candidates = (
            [Path(src).expanduser()]
            if src.startswith(("/", "~"))
            else [base / "templates" / src, base / src, base.parent / "templates" / src]
        )
        for path in candidates:
            if path.is_file():
                return path
        raise PlaybookError(
            f"template: {src} not found (looked in {', '.join(str(c.parent) for c in candidates)})",
            where=where,
        )
