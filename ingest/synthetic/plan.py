"""Turn the cast, scenes and small-talk templates into one seeded, time-ordered list of ops."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from ingest.synthetic import smalltalk
from ingest.synthetic.cast import ChatSpec, PersonSpec
from ingest.synthetic.scenes import Scene, Step

# Local (US Pacific) hour → weight; UTC = local + 7 is close enough for texting rhythms.
_LOCAL_HOURS = {
    7: 1,
    8: 2,
    9: 3,
    10: 3,
    11: 3,
    12: 5,
    13: 4,
    14: 3,
    15: 3,
    16: 4,
    17: 6,
    18: 7,
    19: 8,
    20: 8,
    21: 8,
    22: 6,
    23: 3,
    0: 1,
}
_TAPBACK_KINDS = {2000: 4.0, 2001: 3.0, 2003: 3.0, 2004: 1.0, 2005: 0.5, 2002: 0.3}
_PHOTO_KINDS = (
    ("IMG_{n}.HEIC", "image/heic", 70),
    ("IMG_{n}.JPG", "image/jpeg", 15),
    ("IMG_{n}.MOV", "video/quicktime", 10),
    ("Screenshot {d}.png", "image/png", 5),
)


@dataclass(slots=True)
class Op:
    """One thing to write, in time order: a message, tapback, edit, event, deletion…"""

    ts: float
    seq: int
    op: str
    chat: str
    who: str
    text: str = ""
    key: str | None = None
    target: str | None = None
    kind: int = 0
    action: int = 0
    other: str | None = None
    attach: tuple[tuple[str, str], ...] = ()
    filler: bool = field(default=False)


def parse_utc(iso: str) -> float:
    """Unix seconds of an ISO date/time read as UTC."""
    return datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp()


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def near_new_year(ts: float) -> bool:
    """Within 12 h of a UTC year boundary: kept empty so per-year counts hold in any time zone."""
    d = datetime.fromtimestamp(ts, UTC)
    return (
        (d.month, d.day) in {(12, 31), (1, 1)}
        or ((d.month, d.day) == (12, 30) and d.hour >= 12)
        or ((d.month, d.day) == (1, 2) and d.hour < 12)
    )


class Planner:
    """Collects Ops from scenes and filler; `seq` keeps ties in insertion order."""

    def __init__(self, seed: int, toggles: dict[str, bool]) -> None:
        self.seed, self.toggles = seed, toggles
        self.ops: list[Op] = []
        self._seq = 0
        self._busy: dict[str, set[str]] = {}  # chat → dates (YYYY-MM-DD) reserved for scenes

    def rng(self, name: str) -> random.Random:
        return random.Random(f"casper-demo:{self.seed}:{name}")

    def add(self, ts: float, op: str, chat: str, who: str, **kw: object) -> Op:
        self._seq += 1
        item = Op(ts, self._seq, op, chat, who, **kw)  # type: ignore[arg-type]
        self.ops.append(item)
        return item

    def add_scene(self, scene: Scene) -> None:
        """Apply toggles to a scene's steps, then schedule them from its start time."""
        steps = _apply_toggles(scene.steps, self.toggles)
        t = parse_utc(scene.start)
        for day in (-1, 0, 1):
            stamp = datetime.fromtimestamp(t + day * 86400, UTC).date().isoformat()
            self._busy.setdefault(scene.chat, set()).add(stamp)
        for step in steps:
            t += step.after
            self.add(
                t,
                step.op,
                scene.chat,
                step.who,
                text=step.text,
                key=step.key,
                target=step.target,
                kind=step.kind,
                action=step.action,
                other=step.other,
                attach=step.attach,
            )

    def add_filler(self, chat: ChatSpec, people: dict[str, PersonSpec], scale: float) -> None:
        """Small-talk sessions on random free days until the chat's scaled volume is reached."""
        rng = self.rng(f"filler:{chat.key}")
        target = round(chat.volume * scale)
        start, end = parse_utc(chat.start), parse_utc(chat.end) + 86400 - 4 * 3600
        written = attempts = 0
        while written < target and attempts < 50 * max(target, 1):
            attempts += 1
            lines = self._session_times(rng, chat, start, end)
            if lines is None:
                continue
            written += self._emit_session(rng, chat, people, lines)

    def _session_times(
        self, rng: random.Random, chat: ChatSpec, start: float, end: float
    ) -> list[tuple[float, str, str]] | None:
        day = start + rng.randrange(int((end - start) // 86400) + 1) * 86400
        hour = rng.choices(list(_LOCAL_HOURS), list(_LOCAL_HOURS.values()))[0]
        t = day + ((hour + 7) % 24) * 3600 + rng.randrange(3600)
        if datetime.fromtimestamp(t, UTC).date().isoformat() in self._busy.get(chat.key, ()):
            return None
        out, last = [], None
        for speaker, text in smalltalk.session(rng, chat.flavour):
            if last is not None:
                t += rng.randint(4, 40) if speaker == last else rng.randint(20, 360)
                if rng.random() < 0.05:
                    t += rng.randint(1800, 10800)
            out.append((t, speaker, text))
            last = speaker
        if not out or out[-1][0] > end + 4 * 3600 or any(near_new_year(x[0]) for x in out):
            return None
        return out

    def _emit_session(
        self,
        rng: random.Random,
        chat: ChatSpec,
        people: dict[str, PersonSpec],
        lines: list[tuple[float, str, str]],
    ) -> int:
        iso = iso_utc(lines[0][0])
        members = [p for p, _ in chat.members if chat.active(p, iso)]
        if not members or not all(chat.active(p, iso_utc(x[0])) for p in members for x in lines):
            return 0
        pool = ["me", *members]
        weights = [1.5 if p == "me" else people[p].chattiness for p in pool]
        if chat.is_group:
            a = rng.choices(pool, weights)[0]
        else:
            a = "me" if rng.random() < 0.5 else members[0]
        b = _pick_other(rng, pool, weights, a)
        recent: list[Op] = []
        for ts, speaker, text in lines:
            if chat.is_group and speaker == "b" and rng.random() < 0.35:
                b = _pick_other(rng, pool, weights, a)
            who = a if speaker == "a" else b
            if who != "me":
                text = smalltalk.styled(text, people[who].style, rng)
            item = self.add(
                ts, "msg", chat.key, who, text=text, key=f"f{self._seq + 1}", filler=True
            )
            self._decorate(rng, chat, members, item, recent)
            recent.append(item)
        return len(lines)

    def _decorate(
        self, rng: random.Random, chat: ChatSpec, members: list[str], item: Op, recent: list[Op]
    ) -> None:
        """Sprinkle photos, tapbacks and inline replies onto a filler message."""
        on = self.toggles
        # Every draw happens whatever the toggles, so switching a feature off keeps the rest.
        r_photo, r_caption, r_reply, r_tap = (rng.random() for _ in range(4))
        pattern, mime = _photo(rng)
        stamp = iso_utc(item.ts).replace("T", " at ").replace(":", ".")
        name = pattern.format(n=rng.randint(1000, 9999), d=stamp)
        options = [r for r in recent[-4:] if r.who != item.who and r.text]
        pick = rng.choice(options).key if options else None
        others = [p for p in ["me", *members] if p != item.who]
        reactor = rng.choice(others)
        kind = rng.choices(list(_TAPBACK_KINDS), list(_TAPBACK_KINDS.values()))[0]
        delay = rng.randint(10, 600)
        if on["attachments"] and r_photo < 0.03:
            item.attach = ((name, mime),)
            item.text = "" if r_caption < 0.6 else item.text
        if on["replies"] and chat.is_group and len(recent) >= 2 and r_reply < 0.05:
            item.target = pick
        if on["tapbacks"] and chat.service != "SMS" and r_tap < 0.035:
            self.add(
                item.ts + delay, "tap", chat.key, reactor, target=item.key, kind=kind, filler=True
            )

    def add_membership(self, chat: ChatSpec) -> None:
        """Membership and name changes happen even when their system rows are toggled off."""
        for person, when in chat.joins.items():
            self.add(parse_utc(when) - 1, "member_add", chat.key, person)
        for person, when in chat.leaves.items():
            self.add(parse_utc(when) + 60, "member_remove", chat.key, person)

    def ordered(self) -> list[Op]:
        return sorted(self.ops, key=lambda o: (o.ts, o.seq))


def _pick_other(rng: random.Random, pool: list[str], weights: list[float], not_: str) -> str:
    options = [(p, w) for p, w in zip(pool, weights, strict=True) if p != not_]
    return rng.choices([p for p, _ in options], [w for _, w in options])[0]


def _photo(rng: random.Random) -> tuple[str, str]:
    pattern, mime, _ = rng.choices(_PHOTO_KINDS, [w for *_, w in _PHOTO_KINDS])[0]
    return pattern, mime


def _apply_toggles(steps: tuple[Step, ...], on: dict[str, bool]) -> list[Step]:
    """Drop steps whose feature is off; keep the facts readable without that feature."""
    dropped = {s.key for s in steps if s.needs and not on[s.needs] and s.key}
    final_text = {s.target: s.text for s in steps if s.op == "edit" and not on["edits"]}
    out: list[Step] = []
    carry = 0.0
    for s in steps:
        gone = (s.needs and not on[s.needs]) or s.target in dropped
        if gone or (s.op == "msg" and not s.text and not (s.attach and on["attachments"])):
            carry += s.after
            continue
        if s.op == "msg":
            text = final_text.get(s.key, s.text)
            attach = s.attach if on["attachments"] else ()
            target = s.target if on["replies"] else None
            s = replace(s, text=text, attach=attach, target=target)
        out.append(replace(s, after=s.after + carry))
        carry = 0.0
    return out
