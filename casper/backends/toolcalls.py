"""PURE: the `<tool_call>` text format both ways: describe tools for templates without tool
support (`tools_as_text`, the one implementation), and strip reasoning blocks and parse tool
calls out of raw Qwen-style model text.

Imports: stdlib and casper.protocols only. Never raises on model output: bad segments are data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from casper.protocols import Reply, ToolCall, ToolSpec

THINK_START = "<think>"
THINK_END = "</think>"
CALL_START = "<tool_call>"
CALL_END = "</tool_call>"

TOOLS_TEXT_HEADER = f"""\
# Tools
To call a tool, reply with only this, one block per call:
{CALL_START}
{{"name": "<tool name>", "arguments": {{<arguments as JSON>}}}}
{CALL_END}
Available tools:"""

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\s]*)>?(.*?)(?:</function>|(?=<function=)|$)", re.DOTALL)
_PARAMETER = re.compile(
    r"<parameter=([^>\s]*)>?(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.DOTALL
)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_STRING_TYPES = {"string", "str", "text", "enum"}


class _Malformed(ValueError):
    """A tool-call segment that cannot be turned into ToolCalls."""


def tools_as_text(specs: Sequence[ToolSpec]) -> str:
    """Describe tools and the `<tool_call>{json}</tool_call>` format, for the system prompt.

    One compact line per tool (and one for its arguments): small models have little context.
    """
    lines = [TOOLS_TEXT_HEADER]
    for spec in specs:
        lines.append(f"- {spec.name}: {spec.description.strip()}")
        args = _describe_arguments(spec.parameters)
        if args:
            lines.append(f"  arguments: {args}")
    return "\n".join(lines)


def _describe_arguments(schema: Mapping[str, Any]) -> str:
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        return ""
    required = set(schema.get("required", ()))
    parts = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, Mapping) else {}
        kind = str(prop.get("type", "any"))
        if "enum" in prop:
            kind = "|".join(json.dumps(v) for v in prop["enum"])
        flag = ", required" if name in required else ""
        desc = f" {prop['description']}" if prop.get("description") else ""
        parts.append(f"{name} ({kind}{flag}){desc}")
    return "; ".join(parts)


def strip_thinking(text: str) -> str:
    """Remove `<think>…</think>` blocks, a dangling `</think>` prefix and an unterminated block."""
    text = _THINK_BLOCK.sub("", text)
    # Qwen3 templates open <think> in the prompt, so the reply may start mid-thought.
    if THINK_END in text:
        text = text.rsplit(THINK_END, 1)[1]
    # A reply cut off while still thinking has no visible text after the opening tag.
    if THINK_START in text:
        text = text.split(THINK_START, 1)[0]
    return text.strip()


def parse_reply_text(
    text: str, specs: Sequence[ToolSpec] = ()
) -> tuple[str, list[ToolCall], list[str]]:
    """Split raw model text into (visible text, parsed tool calls, malformed raw segments).

    `specs`, when given, keeps XML parameter values declared as strings from being coerced.
    """
    text = strip_thinking(text)
    schemas = {spec.name: _properties(spec) for spec in specs}
    visible: list[str] = []
    calls: list[ToolCall] = []
    malformed: list[str] = []
    rest = text
    while CALL_START in rest:
        before, after = rest.split(CALL_START, 1)
        visible.append(before)
        segment, closed, rest = after.partition(CALL_END)
        try:
            calls.extend(_parse_segment(segment, schemas))
        except _Malformed:
            malformed.append(CALL_START + segment + (CALL_END if closed else ""))
    visible.append(rest)
    shown = "".join(visible).replace(CALL_END, "").strip()
    if not calls and not malformed:
        bare = _bare_json_calls(shown)
        if bare:
            return "", bare, []
    return shown, calls, malformed


def reply_from_text(
    text: str,
    specs: Sequence[ToolSpec] = (),
    *,
    finish_reason: str = "stop",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    prompt_s: float = 0.0,
    generation_s: float = 0.0,
) -> Reply:
    """Build a `Reply` from raw generated text (the engines and the test fakes share it)."""
    shown, calls, malformed = parse_reply_text(text, specs)
    return Reply(
        text=shown,
        tool_calls=tuple(calls),
        finish_reason=finish_reason,
        malformed=tuple(malformed),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        prompt_s=prompt_s,
        generation_s=generation_s,
    )


def _properties(spec: ToolSpec) -> Mapping[str, Any]:
    props = spec.parameters.get("properties", {})
    return props if isinstance(props, Mapping) else {}


def _parse_segment(segment: str, schemas: Mapping[str, Mapping[str, Any]]) -> list[ToolCall]:
    body = segment.strip()
    if not body:
        raise _Malformed("empty tool call")
    if "<function=" in body:
        return _parse_xml(body, schemas)
    # An unterminated segment is accepted only when it is a complete JSON call on its own.
    return [_call_from_obj(_loads(body))]


def _parse_xml(body: str, schemas: Mapping[str, Mapping[str, Any]]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for name, inner in _FUNCTION.findall(body):
        if not name:
            raise _Malformed("function without a name")
        schema = schemas.get(name, {})
        args: dict[str, Any] = {}
        for key, raw in _PARAMETER.findall(inner):
            if not key:
                raise _Malformed("parameter without a name")
            args[key] = _coerce(_trim_newline(raw), schema.get(key))
        calls.append(ToolCall(name=name, arguments=args))
    if not calls:
        raise _Malformed("no function in tool call")
    return calls


def _trim_newline(value: str) -> str:
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _coerce(value: str, schema: Any) -> Any:
    declared = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(declared, str) and declared.lower() in _STRING_TYPES:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _loads(body: str) -> Any:
    fenced = _FENCE.match(body)
    try:
        return json.loads(fenced.group(1) if fenced else body)
    except ValueError as exc:
        raise _Malformed(f"invalid JSON: {exc}") from exc


def _call_from_obj(obj: Any) -> ToolCall:
    if not isinstance(obj, dict):
        raise _Malformed("tool call is not a JSON object")
    if isinstance(obj.get("function"), dict):  # OpenAI-style nesting
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _Malformed("tool call has no name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        args = _loads(args) if args.strip() else {}
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _Malformed("tool call arguments are not an object")
    return ToolCall(name=name.strip(), arguments=args)


def _bare_json_calls(text: str) -> list[ToolCall]:
    """Calls from a reply that is only a JSON object (or list of them) with name + arguments."""
    if not text or text[0] not in "{[`":
        return []
    try:
        obj = _loads(text)
    except _Malformed:
        return []
    objs = obj if isinstance(obj, list) else [obj]
    if not objs or not all(isinstance(o, dict) and "name" in o and "arguments" in o for o in objs):
        return []
    try:
        return [_call_from_obj(o) for o in objs]
    except _Malformed:
        return []
