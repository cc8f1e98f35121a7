"""The bundled demo corpus: ~6 people, 2.5 years of texting, planted facts, gold questions."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ingest.synthetic import scenes as scene_mod
from ingest.synthetic.addressbook import write_addressbook
from ingest.synthetic.apple import Body
from ingest.synthetic.cast import CHATS, PEOPLE, SAM_PATEL, SAM_PATEL_CHAT, ChatSpec, PersonSpec
from ingest.synthetic.ledger import ME, Ledger, Rec, gold_lines, write_gold
from ingest.synthetic.plan import Op, Planner
from ingest.synthetic.writer import ChatDbWriter

# Where the demo's people live: its scenes and texting hours are written in US Pacific time
# (Thanksgiving planned at 17:40, not at 01:40 UTC), so the demo reads its story in this zone
# whatever the machine's own zone is.
DEMO_TIMEZONE = "America/Los_Angeles"

# A dozen-odd scenes that together touch every feature, for fast tests.
TINY_SCENES = (
    "sam_sister",
    "climb_rename",
    "dana_joins",
    "wifi",
    "sushi",
    "drive",
    "unsent",
    "jordan_owe",
    "mom_wifi",
    "thanksgiving_2023",
    "mom_flight_2022",
    "door_code",
    "kitten",
    "dolores",
    "alex_leaves",
    "late_tapback",
    "lisbon",
)


@dataclass(frozen=True, slots=True)
class DemoToggles:
    """Feature switches; every feature is on by default except the second "Sam"."""

    attributed_body: bool = True  # ~30% of rows carry only attributedBody (text NULL)
    both_columns: bool = True  # rows with text and attributedBody
    tapbacks: bool = True
    edits: bool = True
    unsends: bool = True
    replies: bool = True
    group_events: bool = True
    attachments: bool = True
    legacy_reaction: bool = True
    recently_deleted: bool = True
    hard_deleted: bool = True
    multilingual: bool = True
    ambiguous_sam: bool = False


@dataclass(frozen=True, slots=True)
class DemoCorpus:
    chat_db: Path
    contacts: Path  # the AddressBook folder (holds Sources/<uuid>/AddressBook-v22.abcddb)
    gold: Path  # JSONL, CLI.md gold format
    facts: dict[str, Any]
    # every row the generator wrote (who, when, text, guid): what other gold files are made from
    ledger: Ledger | None = field(default=None, compare=False, repr=False)


def build_demo_corpus(
    dest: Path, *, seed: int = 7, toggles: DemoToggles = DemoToggles(), scale: float = 1.0
) -> DemoCorpus:
    """Write chat.db, an AddressBook, gold.jsonl and facts.json into `dest`; deterministic."""
    return _build(Path(dest), seed, toggles, scale, None)


def build_tiny_corpus(
    dest: Path, *, seed: int = 7, toggles: DemoToggles = DemoToggles()
) -> DemoCorpus:
    """The same cast with no filler and a subset of scenes: ~70 rows touching every feature."""
    return _build(Path(dest), seed, toggles, 0.0, TINY_SCENES)


def _cast(toggles: DemoToggles) -> tuple[dict[str, PersonSpec], list[ChatSpec]]:
    people = {p.key: p for p in PEOPLE}
    chats = list(CHATS)
    if toggles.ambiguous_sam:
        people[SAM_PATEL.key] = SAM_PATEL
        chats.append(SAM_PATEL_CHAT)
    return people, chats


def _build(
    dest: Path, seed: int, toggles: DemoToggles, scale: float, only: tuple[str, ...] | None
) -> DemoCorpus:
    dest.mkdir(parents=True, exist_ok=True)
    on = asdict(toggles)
    people, chats = _cast(toggles)
    chat_keys = {c.key for c in chats}
    planner = Planner(seed, on)
    for scene in scene_mod.SCENES:
        if scene.chat in chat_keys and (only is None or scene.name in only):
            planner.add_scene(scene)
    for chat in chats:
        planner.add_membership(chat)
        if scale > 0:
            planner.add_filler(chat, people, scale)
    chat_db = dest / "chat.db"
    chat_db.unlink(missing_ok=True)
    with ChatDbWriter(chat_db, seed=seed) as writer:
        recs = _Applier(writer, people, chats, on, planner.rng("bodies")).run(planner.ordered())
    contacts = dest / "AddressBook"
    write_addressbook(contacts, [p.card for p in people.values() if p.card is not None])
    ledger = Ledger(
        recs=recs,
        names={k: p.name for k, p in people.items()},
        one_to_one={c.key: c.members[0][0] for c in chats if not c.is_group},
        chat_names={c.key: _label(c, people) for c in chats},
        handles={k: [h[0] for h in p.handles] for k, p in people.items()},
    )
    facts = ledger.facts(seed, on)
    gold = write_gold(dest / "gold.jsonl", gold_lines(ledger, scene_mod.QUESTIONS, facts))
    (dest / "facts.json").write_text(json.dumps(facts, ensure_ascii=False, indent=1), "utf-8")
    return DemoCorpus(chat_db=chat_db, contacts=contacts, gold=gold, facts=facts, ledger=ledger)


def _label(chat: ChatSpec, people: dict[str, PersonSpec]) -> str:
    if chat.key == "climbing":
        return "Climbing crew"
    names = [people[p].name for p, _ in chat.members]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " & " + names[-1]


class _Applier:
    """Replays the ordered Ops through ChatDbWriter and records every row in the ledger."""

    def __init__(
        self,
        w: ChatDbWriter,
        people: dict[str, PersonSpec],
        chats: list[ChatSpec],
        on: dict[str, bool],
        rng: Any,
    ) -> None:
        self.w, self.people, self.on, self.rng = w, people, on, rng
        self.specs = {c.key: c for c in chats}
        self.handles = {
            (p.key, i): w.add_handle(addr, svc, country)
            for p in people.values()
            for i, (addr, svc, country) in enumerate(p.handles)
        }
        self.chats = {
            c.key: w.add_chat(
                [self.handles[m] for m in c.members if m[0] not in c.joins],
                display_name=c.name,
                group=c.is_group,
                service=c.service,
            )
            for c in chats
        }
        self.recs: dict[str, Rec] = {}

    def _handle(self, chat: str, who: str) -> int | None:
        if who == ME:
            return None
        spec = self.specs[chat]
        index = next((i for p, i in spec.members if p == who), 0)
        return self.handles[(who, index)]

    def _body(self) -> Body:
        r = self.rng.random()
        attributed, both = self.on["attributed_body"], self.on["both_columns"]
        if r < 0.3:
            return "attributed" if attributed else "text"
        if r < 0.8:
            return "both" if both else ("attributed" if attributed else "text")
        return "text"

    def _fixed_body(self) -> Body:
        """Tapbacks and legacy reactions: both columns, as Messages writes them, unless off."""
        if self.on["both_columns"]:
            return "both"
        return "attributed" if self.on["attributed_body"] else "text"

    def run(self, ops: list[Op]) -> dict[str, Rec]:
        for op in ops:
            getattr(self, f"_op_{op.op}")(op)
        return self.recs

    def _record(self, op: Op, row: tuple[int, str], kind: str, **kw: Any) -> None:
        key = op.key or f"_{op.seq}"
        self.recs[key] = Rec(key, row[0], row[1], op.chat, op.who, op.ts, kind, **kw)

    def _op_msg(self, op: Op) -> None:
        body = self._body()
        target = self.recs[op.target].guid if op.target in self.recs else None
        row = self.w.add_message(
            self.chats[op.chat],
            op.text,
            from_me=op.who == ME,
            handle=self._handle(op.chat, op.who),
            ts=op.ts,
            body=body,
            reply_to_guid=target,
            attachments=op.attach,
            service=self.specs[op.chat].service,
        )
        self._record(
            op,
            row,
            "message",
            text=op.text,
            body=body,
            attachments=len(op.attach),
            reply=target is not None,
        )

    def _op_tap(self, op: Op) -> None:
        target = self.recs.get(op.target or "")
        if target is None or target.status != "ok":
            return
        adder = self.w.add_reaction if op.kind < 3000 else self.w.remove_reaction
        row = adder(
            target.guid,
            op.kind,
            from_me=op.who == ME,
            handle=self._handle(op.chat, op.who),
            ts=op.ts,
            chat=self.chats[op.chat],
            body=self._fixed_body(),
        )
        kind = "tapback" if op.kind < 3000 else "removal"
        self._record(op, row, kind, body=self._fixed_body())

    def _op_untap(self, op: Op) -> None:
        op.kind += 1000
        self._op_tap(op)

    def _op_edit(self, op: Op) -> None:
        rec = self.recs[op.target or ""]
        self.w.edit_message(rec.rowid, op.text, op.ts)
        rec.text, rec.edited, rec.body = op.text, True, "attributed"

    def _op_unsend(self, op: Op) -> None:
        rec = self.recs[op.target or ""]
        self.w.unsend_message(rec.rowid, op.ts)
        rec.status, rec.body = "unsent", "none"

    def _op_recent_delete(self, op: Op) -> None:
        rec = self.recs[op.target or ""]
        self.w.recently_delete(rec.rowid, self.chats[rec.chat], op.ts)
        rec.status = "recently_deleted"

    def _op_hard_delete(self, op: Op) -> None:
        rec = self.recs[op.target or ""]
        self.w.hard_delete(rec.rowid)
        rec.status = "hard_deleted"

    def _op_legacy(self, op: Op) -> None:
        quoted = self.recs[op.target or ""].text
        row = self.w.add_legacy_reaction(
            self.chats[op.chat],
            op.text,
            quoted,
            handle=self._handle(op.chat, op.who),
            ts=op.ts,
            from_me=op.who == ME,
            body=self._fixed_body(),
        )
        self._record(op, row, "legacy", text=f"{op.text} “{quoted}”", body=self._fixed_body())

    def _op_event(self, op: Op) -> None:
        chat = self.chats[op.chat]
        if op.kind == 2:
            self.w.set_chat_name(chat, op.text)
        if not self.on["group_events"]:
            return
        other = self._handle(op.chat, op.other) if op.other else 0
        row = self.w.add_system_event(
            chat,
            op.kind,
            op.action,
            op.text or None,
            from_me=op.who == ME,
            handle=self._handle(op.chat, op.who),
            ts=op.ts,
            other_handle=other or 0,
        )
        self._record(op, row, "event")

    def _op_member_add(self, op: Op) -> None:
        self.w.add_chat_member(self.chats[op.chat], self._handle(op.chat, op.who) or 0)

    def _op_member_remove(self, op: Op) -> None:
        self.w.remove_chat_member(self.chats[op.chat], self._handle(op.chat, op.who) or 0)
