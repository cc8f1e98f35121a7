"""Who is in the demo corpus: people (cards, handles, typing style) and their chats."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest.synthetic.addressbook import Card


@dataclass(frozen=True, slots=True)
class PersonSpec:
    key: str
    card: Card | None  # None: no AddressBook card, Casper shows the bare handle
    handles: tuple[tuple[str, str, str], ...]  # (address as chat.db stores it, service, country)
    style: str = "plain"  # smalltalk.styled: plain | lower | proper | emoji
    chattiness: float = 1.0  # relative weight when picking a speaker in groups

    @property
    def name(self) -> str:
        """The name Casper should display: card name, else nickname, else the handle itself."""
        if self.card is None:
            return self.handles[0][0]
        full = " ".join(p for p in (self.card.first, self.card.last) if p)
        return full or self.card.nickname or self.card.organization or self.handles[0][0]


@dataclass(frozen=True, slots=True)
class ChatSpec:
    key: str
    members: tuple[tuple[str, int], ...]  # (person key, index into its handles)
    start: str  # filler window, ISO UTC dates
    end: str
    volume: int  # filler messages to generate (scaled)
    flavour: str = "friend"
    name: str | None = None  # initial display name (groups)
    service: str = "iMessage"
    joins: dict[str, str] = field(default_factory=dict)  # person → ISO time added later
    leaves: dict[str, str] = field(default_factory=dict)  # person → ISO time they left

    @property
    def is_group(self) -> bool:
        return len(self.members) > 1

    def active(self, person: str, iso: str) -> bool:
        """Whether `person` is in the chat at `iso` (ISO strings compare chronologically)."""
        joined = self.joins.get(person)
        left = self.leaves.get(person)
        return (joined is None or iso >= joined) and (left is None or iso < left)


PEOPLE: tuple[PersonSpec, ...] = (
    PersonSpec(
        "sam",
        Card(
            "Sam",
            "Rivera",
            nickname="Sammy",  # a question may say "Sammy": the card's nickname must match
            phones=("(415) 555-0132",),
            emails=("Sam.Rivera@Example.com",),
        ),
        (("+14155550132", "iMessage", "us"), ("sam.rivera@example.com", "iMessage", "us")),
        style="lower",
        chattiness=3.0,
    ),
    PersonSpec(
        "priya",
        Card("Priya", "Natarajan", nickname="Pri", phones=("+44 20 7946 0958",)),
        (("+442079460958", "iMessage", "gb"),),
        style="plain",
        chattiness=1.5,
    ),
    PersonSpec(
        "alex",
        Card("Alex", "Chen", phones=("415.555.0199",)),
        (("+14155550199", "iMessage", "us"),),
        style="lower",
        chattiness=2.0,
    ),
    PersonSpec(
        "mom",
        Card(None, nickname="Mom", phones=("617-555-0143", "(617) 555-0100")),
        (("+16175550143", "iMessage", "us"),),
        style="proper",
    ),
    # Jordan has no card; the same number is an SMS handle and an iMessage handle.
    PersonSpec(
        "jordan",
        None,
        (("+13125550177", "SMS", "us"), ("+13125550177", "iMessage", "us")),
        style="emoji",
        chattiness=1.2,
    ),
    PersonSpec(
        "dana",
        Card("Dana", "Okafor", organization="Okafor Design", emails=("dana.okafor@example.org",)),
        (("dana.okafor@example.org", "iMessage", "us"),),
        style="emoji",
        chattiness=2.0,
    ),
)

SAM_PATEL = PersonSpec(
    "sam_patel",
    Card("Sam", "Patel", phones=("+1 (510) 555-0186",)),
    (("+15105550186", "iMessage", "us"),),
    style="plain",
)

CHATS: tuple[ChatSpec, ...] = (
    ChatSpec("sam_email", (("sam", 1),), "2022-03-01", "2022-08-24", 170),
    ChatSpec("sam_phone", (("sam", 0),), "2022-06-15", "2024-10-31", 900),
    ChatSpec("priya", (("priya", 0),), "2022-03-01", "2024-10-31", 560),
    ChatSpec("alex", (("alex", 0),), "2022-03-01", "2024-10-31", 470),
    ChatSpec("mom", (("mom", 0),), "2022-03-01", "2024-10-31", 600, flavour="family"),
    ChatSpec("jordan", (("jordan", 0),), "2023-04-11", "2024-10-31", 200, service="SMS"),
    ChatSpec(
        "climbing",
        (("sam", 0), ("alex", 0), ("dana", 0)),
        "2022-04-01",
        "2024-10-31",
        650,
        flavour="climbing",
        name="Bouldering 🧗",
        joins={"dana": "2023-02-11T18:00:00"},
        leaves={"alex": "2024-06-20T04:00:00"},
    ),
    ChatSpec(
        "lisbon",
        (("priya", 0), ("alex", 0), ("jordan", 1)),
        "2024-01-15",
        "2024-06-10",
        260,
        flavour="trip",
    ),
)

SAM_PATEL_CHAT = ChatSpec("sam_patel", (("sam_patel", 0),), "2023-01-10", "2024-10-31", 40)
