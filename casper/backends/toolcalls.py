"""The `<tool_call>` text format both ways: describe tools for templates without tool
support (`tools_as_text`, the one implementation), and strip reasoning blocks and parse tool
calls out of raw Qwen-style model text.

Each segment's body is read by mlx_lm's parser for its shape (`mlx_lm.tool_parsers`:
json_tools, qwen3_coder). Kept here is what the library lacks: think stripping, slicing between
the markers, fenced and bare JSON, unclosed XML tags, typing of undeclared XML parameters,
checking the parsed calls, and never raising on model output: bad segments are data.

Imports: stdlib and casper.protocols; mlx_lm.tool_parsers only inside `library_parsers`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from casper.protocols import JSONValue, Reply, ToolCall, ToolSpec

THINK_START = "<think>"
THINK_END = "</think>"
CALL_START = "<tool_call>"
CALL_END = "</tool_call>"

# mlx_lm.tool_parsers module names of the two shapes Qwen models write inside <tool_call>
JSON_TOOLS = "json_tools"  # {"name": …, "arguments": …}: Qwen2.5, Qwen3 and `tools_as_text`
QWEN3_CODER = "qwen3_coder"  # <function=…><parameter=…>: Qwen3-Coder, Qwen3.5
FORMATS = (JSON_TOOLS, QWEN3_CODER)

# `parse_tool_call(text, tools)` of an mlx_lm.tool_parsers module: a {"name", "arguments"}
# dict (or a list of them) from one segment; raises on text it cannot read
SegmentParser = Callable[[str, object], object]

TOOLS_TEXT_HEADER = f"""\
# Tools
To call a tool, reply with only this, one block per call:
{CALL_START}
{{"name": "<tool name>", "arguments": {{<arguments as JSON>}}}}
{CALL_END}
Available tools:"""

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
# the library reads one function with closed tags; a reply cut off or sloppy may have several
# functions in one segment or a missing closing tag, so they are cut out here first
_FUNCTION = re.compile(r"<function=([^>\s]*)>?(.*?)(?:</function>|(?=<function=)|$)", re.DOTALL)
_PARAMETER = re.compile(
    r"<parameter=([^>\s]*)>?(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.DOTALL
)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


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


def library_parsers() -> dict[str, SegmentParser]:
    """mlx_lm's parse function per segment shape."""
    # not at the top: importing any mlx_lm submodule runs mlx_lm/__init__, which loads mlx and
    # transformers (~4 s cold; the parser modules alone are stdlib json and regex)
    from mlx_lm.tool_parsers import json_tools, qwen3_coder

    return {JSON_TOOLS: json_tools.parse_tool_call, QWEN3_CODER: qwen3_coder.parse_tool_call}


def parser_format(parser: object) -> str | None:
    """Which of FORMATS a tokenizer's `tool_parser` (an mlx_lm parse function) reads, if any."""
    module = str(getattr(parser, "__module__", ""))
    package, _, name = module.rpartition(".")
    return name if package == "mlx_lm.tool_parsers" and name in FORMATS else None


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
    text: str,
    specs: Sequence[ToolSpec] = (),
    parsers: Mapping[str, SegmentParser] | None = None,
) -> tuple[str, list[ToolCall], list[str]]:
    """Split raw model text into (visible text, parsed tool calls, malformed raw segments).

    `specs` type XML parameter values (the library converts by the declared type); `parsers`
    maps each of FORMATS to its parse function, `library_parsers()` when not given.
    """
    text = strip_thinking(text)
    reader = _Reader(specs, parsers)
    visible: list[str] = []
    calls: list[ToolCall] = []
    malformed: list[str] = []
    rest = text
    while CALL_START in rest:
        before, after = rest.split(CALL_START, 1)
        visible.append(before)
        segment, closed, rest = after.partition(CALL_END)
        try:
            calls.extend(reader.segment(segment))
        except _Malformed:
            malformed.append(CALL_START + segment + (CALL_END if closed else ""))
    visible.append(rest)
    shown = "".join(visible).replace(CALL_END, "").strip()
    if not calls and not malformed:
        bare = reader.bare_json(shown)
        if bare:
            return "", bare, []
    return shown, calls, malformed


def reply_from_text(
    text: str,
    specs: Sequence[ToolSpec] = (),
    *,
    parsers: Mapping[str, SegmentParser] | None = None,
    finish_reason: str = "stop",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    prompt_s: float = 0.0,
    generation_s: float = 0.0,
) -> Reply:
    """Build a `Reply` from raw generated text (the engines and the test fakes share it)."""
    shown, calls, malformed = parse_reply_text(text, specs, parsers)
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


class _Reader:
    """Reads segments with the library parsers, fetched on first use: plain replies need none."""

    def __init__(
        self, specs: Sequence[ToolSpec], parsers: Mapping[str, SegmentParser] | None
    ) -> None:
        self._parsers = parsers
        # the shape mlx_lm's parsers read the schemas in (OpenAI tools), None when there are none
        self._tools = [spec.to_openai() for spec in specs] or None
        self._declared = {spec.name: set(_properties(spec)) for spec in specs}

    def segment(self, segment: str) -> list[ToolCall]:
        """The calls in the text between one `<tool_call>` and its `</tool_call>`."""
        body = segment.strip()
        if not body:
            raise _Malformed("empty tool call")
        if "<function=" in body:
            return [self._xml_call(chunk) for chunk in _closed_functions(body)]
        # An unterminated segment is accepted only when it is a complete JSON call on its own.
        return [_call_from_obj(o) for o in self._json_objects(_unfence(body))]

    def bare_json(self, text: str) -> list[ToolCall]:
        """Calls from a reply that is only a JSON object (or list of them) with name + arguments."""
        if not text or text[0] not in "{[`":
            return []
        try:
            objs = self._json_objects(_unfence(text))
            # JSON without the markers is an answer unless every object has a call's shape
            if all(isinstance(o, dict) and {"name", "arguments"} <= o.keys() for o in objs):
                return [_call_from_obj(o) for o in objs]
        except _Malformed:
            pass
        return []

    def _json_objects(self, body: str) -> list[object]:
        obj = self._parse(JSON_TOOLS, body)
        objs = obj if isinstance(obj, list) else [obj]  # a list is several calls, as in mlx_lm
        if not objs:
            raise _Malformed("no tool call in the JSON")
        return objs

    def _xml_call(self, function: str) -> ToolCall:
        call = _call_from_obj(self._parse(QWEN3_CODER, function))
        # the library keeps a parameter the schema does not declare as text; read it as JSON
        # when it is JSON, so a number or a list the model wrote reaches the tool as one
        declared = self._declared.get(call.name, set())
        args = {k: v if k in declared else _json_or_text(v) for k, v in call.arguments.items()}
        return ToolCall(name=call.name, arguments=args)

    def _parse(self, fmt: str, text: str) -> object:
        if self._parsers is None:
            self._parsers = library_parsers()
        try:
            return self._parsers[fmt](text, self._tools)
        except Exception as exc:  # a library parser on model text: any failure is a bad segment
            raise _Malformed(f"{fmt}: {type(exc).__name__}: {exc}") from exc


def _properties(spec: ToolSpec) -> Mapping[str, JSONValue]:
    props = spec.parameters.get("properties", {})
    return props if isinstance(props, Mapping) else {}


def _closed_functions(body: str) -> list[str]:
    """Each `<function=…>` of a segment as one function with every tag closed."""
    functions = []
    for name, inner in _FUNCTION.findall(body):
        params = "".join(f"<parameter={k}>{v}</parameter>" for k, v in _PARAMETER.findall(inner))
        functions.append(f"<function={name}>{params}</function>")
    if not functions:
        raise _Malformed("no function in tool call")
    return functions


def _unfence(body: str) -> str:
    fenced = _FENCE.match(body)
    return fenced.group(1) if fenced else body


def _json_or_text(value: JSONValue) -> JSONValue:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _call_from_obj(obj: object) -> ToolCall:
    if not isinstance(obj, dict):
        raise _Malformed("tool call is not a JSON object")
    function = obj.get("function")
    if isinstance(function, dict):  # OpenAI-style nesting
        obj = function
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _Malformed("tool call has no name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise _Malformed(f"invalid JSON arguments: {exc}") from exc
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _Malformed("tool call arguments are not an object")
    return ToolCall(name=name.strip(), arguments=args)
