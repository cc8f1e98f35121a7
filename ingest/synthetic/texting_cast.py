"""Who is in the texting corpus: the owner, their contacts (cards, handles, typing voice), chats.

Unlike the demo cast this one is built to be awkward for search the way real phones are: the
owner's first name ("Jamie") is also a contact's ("Jamie Park"), contacts write the owner's name
in greetings, Mum has a card with a nickname only, one number has no card at all, and two
group chats share the people and words of the 1:1 chats.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.synthetic.addressbook import Card

TIMEZONE = "Europe/London"  # the owner's phone; every date in the ledger is a local date
OWNER_FIRST = "Jamie"
OWNER_LAST = "Ellis"
OWNER_EMAIL = "jamie.ellis@example.com"
ME = "me"
OWNER_CALLS = ("jamie", "jamie", "jam")  # what contacts call the owner in a text


@dataclass(frozen=True, slots=True)
class Contact:
    key: str
    card: Card | None
    handle: str  # as chat.db stores it (E.164 or an email)
    voice: str  # texting_voice.VOICES key
    chattiness: float = 1.0  # weight when a group chat picks a speaker
    calls: tuple[str, ...] = ()  # what the owner calls them in a text ("sam", "sammy")

    @property
    def name(self) -> str:
        """The name Casper displays: card name, else nickname, else the handle."""
        if self.card is None:
            return self.handle
        full = " ".join(p for p in (self.card.first, self.card.last) if p)
        return full or self.card.nickname or self.handle


@dataclass(frozen=True, slots=True)
class Chat:
    key: str
    members: tuple[str, ...]  # contact keys (the owner is always in)
    start: str  # ISO local dates: the chat's first and last possible day
    end: str
    volume: int  # filler messages at scale 1.0
    flavour: str  # texting_voice.FLAVOURS key
    name: str | None = None  # a group's display name

    @property
    def is_group(self) -> bool:
        return len(self.members) > 1


CONTACTS: tuple[Contact, ...] = (
    Contact(
        "sam",
        Card("Sam", "Whitaker", nickname="Sammy", phones=("07700 900123",)),
        "+447700900123",
        "sam",
        2.5,
        ("sam", "sam", "sammy"),
    ),
    Contact(
        "priya",
        Card("Priya", "Raman", phones=("+44 7700 900456",)),
        "+447700900456",
        "priya",
        calls=("priya", "pri"),
    ),
    Contact(
        "leo",
        Card("Leo", "Marchetti", phones=("07700 900789",)),
        "+447700900789",
        "leo",
        1.5,
        ("leo",),
    ),
    Contact(
        "nadia",
        Card("Nadia", "Haddad", emails=("Nadia.Haddad@example.org",)),
        "nadia.haddad@example.org",
        "nadia",
        calls=("nadia", "nads"),
    ),
    # shares the owner's first name: "Jamie" in a question is the owner, "Jamie Park" is him
    Contact(
        "jamie_p",
        Card("Jamie", "Park", phones=("07700 900321",)),
        "+447700900321",
        "jamie_p",
        1.5,
        ("jamie", "parky"),
    ),
    Contact(
        "mum",
        Card(None, nickname="Mum", phones=("01632 960555",)),
        "+441632960555",
        "mum",
        calls=("mum",),
    ),
    Contact("dev", None, "+447700900654", "dev", 0.7, ("dev",)),  # no card: the bare number
)

CHATS: tuple[Chat, ...] = (
    Chat("sam", ("sam",), "2021-04-01", "2024-11-30", 2200, "friend"),
    Chat("priya", ("priya",), "2021-06-01", "2024-11-30", 1400, "friend"),
    Chat("leo", ("leo",), "2022-01-10", "2024-11-30", 1000, "friend"),
    Chat("nadia", ("nadia",), "2021-09-01", "2024-11-30", 1100, "work"),
    Chat("jamie_p", ("jamie_p",), "2022-05-01", "2024-11-30", 800, "climbing"),
    Chat("mum", ("mum",), "2021-04-01", "2024-11-30", 1100, "family"),
    Chat("dev", ("dev",), "2023-02-01", "2024-11-30", 250, "friend"),
    Chat(
        "league",
        ("sam", "leo", "jamie_p", "dev"),
        "2021-09-01",
        "2024-11-30",
        700,
        "league",
        "Sunday league ⚽",
    ),
    Chat("flat", ("priya", "nadia"), "2021-06-01", "2023-08-31", 500, "flat", "flat 4b 🏠"),
)

# How many evidence episodes of each family a contact gets (texting_episodes.FAMILIES keys).
EPISODES_PER_CONTACT: dict[str, dict[str, int]] = {
    "sam": {"news": 6, "hungry": 3, "plan": 4, "past": 4, "long": 2, "arc": 3, "taste": 4,
            "call": 3},
    "priya": {"news": 6, "hungry": 2, "plan": 4, "past": 3, "long": 2, "arc": 3, "taste": 3,
              "call": 3},
    "leo": {"news": 5, "hungry": 2, "plan": 3, "past": 3, "long": 1, "arc": 3, "taste": 3,
            "call": 2},
    "nadia": {"news": 5, "hungry": 2, "plan": 3, "past": 3, "long": 2, "arc": 2, "taste": 3,
              "call": 2},
    "mum": {"news": 4, "hungry": 1, "plan": 3, "past": 2, "long": 1, "arc": 2, "taste": 2,
            "call": 2},
    "jamie_p": {"news": 4, "plan": 2, "arc": 2, "taste": 3, "call": 2},
}  # fmt: skip


def contact(key: str) -> Contact:
    return next(c for c in CONTACTS if c.key == key)
