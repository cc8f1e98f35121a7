"""The demo corpus's planted conversations (facts retrieval must find) and their gold questions."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted action; `after` is seconds since the previous step of the same scene."""

    op: str  # msg | tap | untap | edit | unsend | event | legacy | recent_delete | hard_delete
    who: str = "me"  # "me" or a person key
    text: str = ""
    key: str | None = None
    after: float = 45.0
    target: str | None = None  # key of the message this step acts on (reply, tapback, edit…)
    kind: int = 0  # tapback kind, or item_type for events
    action: int = 0  # group_action_type for events
    other: str | None = None  # person added/removed by an event
    attach: tuple[tuple[str, str], ...] = ()
    needs: str | None = None  # DemoToggles field this step depends on


@dataclass(frozen=True, slots=True)
class Scene:
    name: str
    chat: str
    start: str  # ISO-8601 UTC
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    question: str
    keys: tuple[str, ...]
    category: str
    answer: tuple[str, ...] = ()


# Script grammar, one step per line (an indented line continues the one before it; a line
# starting "==" opens a scene: name | chat | start):
#   [+secs] who: text {key=K reply=K needs=TOGGLE attach=NAME:MIME}      a message (default +45 s)
#   [+secs] who !op [args][: text] {key=K}                               any other operation
# ops: tap/untap TARGET KIND · edit TARGET: new text · unsend TARGET · legacy TARGET VERB ·
#      event ITEM_TYPE ACTION [other=PERSON][: group title] · recent_delete/hard_delete TARGET
SCRIPT = """
== sam_sister | sam_email | 2022-05-06T01:02:00
sam: my sister Elena is in town next week, want to get dinner with us? {key=sister}
me: yes! how long is she here
+70 sam: till the 15th
== sam_switch | sam_email | 2022-08-25T18:40:00
sam: btw text my cell from now on, I'm barely checking this email {key=switch}
+120 me: ok 👍
== mom_flight_2022 | mom | 2022-07-14T16:05:00
mom: My flight lands at 2:15 on Saturday, Delta 388 {key=mom_flight22}
+300 me: I'll be there!
== climb_rename | climbing | 2022-09-10T20:12:00
+30 sam !event 2 0: Climbing crew {key=rename_event}
sam: renamed us, 'Bouldering' was too limiting 😤 {key=rename_msg}
alex: lol fair
+30 me !tap rename_msg 2003
== dentist_2022 | priya | 2022-09-13T08:10:00
priya: dentist at 8am tomorrow, pray for me
+400 me: good luck 🦷
== thanksgiving_2022 | sam_phone | 2022-11-10T02:15:00
sam: are you doing thanksgiving with your fam this year?
me: nah staying here, Alex is doing a friendsgiving thing at his place
sam: oh nice what are you bringing
me: I signed up for green bean casserole lol {key=tg22_me}
sam: classic {key=tg22_classic}
== book | priya | 2023-01-22T20:03:00
me: need a new book, I'm in a reading slump
+200 priya: read Tomorrow, and Tomorrow, and Tomorrow by Gabrielle Zevin. trust me {key=book}
+20 priya: it's about two friends making video games, I cried twice
me: ok adding it to the list
== book_follow | priya | 2023-02-25T21:30:00
me: I'm halfway through the Zevin book, you were right {key=book_follow}
+90 priya: told you!!
== dana_joins | climbing | 2023-02-11T18:00:00
+30 sam !event 1 0 other=dana {key=dana_join_event}
+60 dana: hi all! thanks for adding me 👋 {key=dana_hi}
alex: welcome!!
me: yay Dana 🎉
== peanuts | climbing | 2023-02-12T19:20:00
dana: fyi I'm allergic to peanuts so no pb trail mix on trips pls 😅 {key=peanuts}
sam: noted!
== wifi | climbing | 2023-03-02T01:10:00
dana: anyone know the wifi at Granite Arch? my phone has zero signal in there
+100 sam: network is GraniteArch-Guest, password is chalkup2023 {key=wifi}
dana: legend, thank you
+30 dana !tap wifi 2001
== jordan_new | jordan | 2023-04-10T18:00:00
jordan: hey it's Jordan! new number, save this one {key=jordan_new}
+600 me: got it 👍
== sushi | sam_phone | 2023-04-21T02:00:00
sam: 寿司を食べに行こう 🍣 {key=sushi_jp needs=multilingual}
me: lol since when do you speak japanese {needs=multilingual}
sam: since duolingo. but seriously sushi tomorrow? {key=sushi_ask}
me: yes!! where
sam: Sushi Ran in Sausalito, I'll book for 7 {key=sushi_place}
== sushi_after | sam_phone | 2023-04-23T05:30:00
me: that omakase at Sushi Ran was unreal {key=sushi_after}
sam: the uni 🤤
+30 sam !tap sushi_after 2000
== drive | climbing | 2023-05-18T03:00:00
sam: Castle Rock on Saturday? who's driving {key=drive_q}
alex: I'm out, car's in the shop
dana: I can drive, the Subaru fits 4 {key=drive_a reply=drive_q}
sam: 🙌 {reply=drive_a}
== dentist_moved | priya | 2023-06-12T11:20:00
priya: ugh the dentist moved my appointment
+15 priya: it was supposed to be Tuesday the 13th, now it's Thursday the 15th at 3:30
    {key=dentist_moved}
me: annoying! can you still make it?
priya: yeah just have to leave work early
== unsent | alex | 2023-07-09T03:00:00
alex: ok don't judge me but
+20 alex: I think I'm gonna quit and move to Portland {key=unsent needs=unsends}
+50 alex !unsend unsent
+30 me: ??
alex: nvm 😂 ignore me
== jordan_owe | jordan | 2023-08-19T06:30:00
jordan: Phoebe Bridgers was insane tonight
+25 jordan: I owe you $85 for the ticket, venmo ok? {key=jordan_owe}
me: yep venmo is perfect {key=venmo_ok}
+40 jordan !legacy venmo_ok Loved
== mom_wifi | mom | 2023-09-09T16:00:00
me: Mom the wifi password at your house is Rosebud1957 right? {key=mom_wifi needs=hard_deleted}
+90 me !hard_delete mom_wifi
== alex_nope | alex | 2023-10-03T20:05:00
alex: final round at Northwind Analytics today, wish me luck
me: you got this!!
== alex_nope2 | alex | 2023-10-12T22:40:00
alex: didn't get the Northwind job 😞
me: their loss honestly
== thanksgiving_2023 | sam_phone | 2023-11-04T01:40:00
me: ok so thanksgiving at my place this year? thursday the 23rd {key=tg23_date}
+80 sam: YES. I'm in
+12 sam: I'll bring the pumpkin pie and mashed potatoes {key=tg23_sam_brings}
+10 me !tap tg23_sam_brings 2001
+8 me !untap tg23_sam_brings 2001
+5 me !tap tg23_sam_brings 2000
me: perfect, I'll do the turkey and stuffing {key=tg23_me_brings}
sam: should I bring wine too
me: always
sam: what time
me: come by around 3, we'll eat at 5 {key=tg23_time}
== thanksgiving_2023_eve | sam_phone | 2023-11-22T23:30:00
sam: still good for tmrw? pie is in the oven 🥧 {key=tg23_reminder}
me: see you at 3!
== mom_flight | mom | 2023-12-18T15:30:00
mom: Booked! United flight UA 1432, lands SFO 6:40pm on the 22nd {key=mom_flight}
+240 me: great I'll pick you up
mom: Don't be late this time 😘
me: that was ONE time
== alex_job | alex | 2024-02-08T22:30:00
alex: I GOT THE JOB {key=job_news}
+10 alex: Lumen Robotics!! starting March 4 {key=job_company}
+30 me: ALEX!!! congrats 🎉🎉
+5 me !tap job_company 2004
alex: senior controls engineer, still can't believe it {key=job_title}
== lisbon | lisbon | 2024-02-20T21:00:00
priya: ok I found an Airbnb in Alfama, 3 bedrooms, rooftop terrace {key=airbnb}
jordan: omg the terrace
alex: how much per night
priya: €240 split four ways {key=airbnb_price}
me: book it
+900 priya: booked! May 17 to 24 {key=trip_dates}
== door_code | priya | 2024-03-03T10:00:00
priya: my new door code is 4471, for when you're watering the plants
    {key=door_code needs=recently_deleted}
+518400 me !recent_delete door_code
== alex_view | alex | 2024-04-14T01:00:00
alex: view from the new place 😍 {key=alex_view attach=IMG_5120.HEIC:image/heic}
me: STOP that's amazing
== kitten | mom | 2024-05-05T17:00:00
mom: {key=kitten_photo attach=IMG_2231.HEIC:image/heic}
+20 mom: Meet the newest member of the family! Her name is Biscuit 🐱 {key=kitten_name}
me: BISCUIT. I'm obsessed
== dolores | sam_phone | 2024-06-14T00:30:00
sam: meet at 7 at Dolores Park? {key=dolores}
+40 sam !edit dolores: meet at 7:30 at Dolores Park? bringing the frisbee
+60 me: see you there
== alex_leaves | climbing | 2024-06-20T04:00:00
alex: gonna leave the chat, new job is eating me alive. still down for the occasional session
    though {key=alex_leave_msg}
+20 alex !event 3 0 {key=alex_leave_event}
== late_tapback | mom | 2024-10-02T15:00:00
+0 me !tap mom_flight22 2000
== sam_patel_car | sam_patel | 2024-03-12T19:00:00
sam_patel: car's ready for pickup, it was the alternator {key=sam_patel_car}
+300 me: thank you!! coming by at 5
"""

# id | category | question | relevant scene keys | strings the answer must contain (";"-separated)
QUESTION_TABLE = """
tg23-bring | lookup | What is Sam bringing to Thanksgiving in 2023? | tg23_sam_brings | pumpkin pie
tg23-date | temporal | What date was Thanksgiving at my place in 2023?
    | tg23_date tg23_reminder | 23
dentist | temporal | When was Priya's dentist appointment moved to? | dentist_moved | Thursday;3:30
alex-job | lookup | Where did Alex get his new job? | job_company job_news | Lumen Robotics
alex-start | temporal | When does Alex start his new job? | job_company | March 4
who-lumen | person | Which of my friends works at Lumen Robotics? | job_company | Alex
gym-wifi | group | What's the wifi password at the climbing gym? | wifi | chalkup2023
mom-flight | lookup | What was Mom's flight number for Christmas 2023? | mom_flight | UA 1432
sushi-place | lookup | Which restaurant did Sam and I go to for sushi?
    | sushi_place sushi_after | Sushi Ran
sushi-who | person | Who suggested going out for sushi (寿司)? | sushi_jp sushi_ask | Sam
book | lookup | What book did Priya recommend to me? | book book_follow
    | Tomorrow, and Tomorrow, and Tomorrow
lisbon-stay | group | Where are we staying in Lisbon? | airbnb | Alfama
lisbon-dates | temporal | What are the dates of the Lisbon trip? | trip_dates | May 17
jordan-owe | lookup | How much did Jordan owe me for the concert ticket? | jordan_owe | 85
kitten | lookup | What is Mom's new kitten called? | kitten_name kitten_photo | Biscuit
sam-sister | person | What's the name of Sam's sister? | sister | Elena
dolores | lookup | What time did Sam say to meet at Dolores Park? | dolores | 7:30
drive | group | Who offered to drive to Castle Rock? | drive_a drive_q | Dana
peanuts | person | Who in the climbing group is allergic to peanuts? | peanuts | Dana
rename | temporal | When did the climbing group chat get renamed to Climbing crew?
    | rename_msg rename_event | September;2022
alex-view | temporal | When did Alex send me the photo of the view from his new place?
    | alex_view | April;2024
sam-patel-car | person | What did Sam Patel say was wrong with the car? | sam_patel_car | alternator
no-door-code | unanswerable | What is Priya's door code? | |
no-mom-wifi | unanswerable | What's the wifi password at Mom's house? | |
no-dog | unanswerable | What did Alex name his dog? | |
no-unsent | unanswerable | What did Alex say in the message he unsent in July 2023? | |
"""

_LINE = re.compile(
    r"^(?:\+(?P<after>\d+)\s+)?(?P<who>\w+)\s*(?:!(?P<op>\w+)\s*(?P<args>[^:{]*))?"
    r"(?::\s?(?P<text>[^{]*?))?\s*(?:\{(?P<opts>[^}]*)\})?$"
)
_OP_TOGGLES = {"tap": "tapbacks", "untap": "tapbacks", "edit": "edits", "unsend": "unsends",
               "legacy": "legacy_reaction", "recent_delete": "recently_deleted",
               "hard_delete": "hard_deleted"}  # fmt: skip


def parse_step(line: str) -> Step:
    """One script line → Step (see the grammar above)."""
    m = _LINE.match(line.strip())
    if m is None:
        raise ValueError(f"bad script line: {line!r}")
    opts = dict(o.split("=", 1) for o in (m["opts"] or "").split())
    args = (m["args"] or "").split()
    kw = {k: v for k, v in (a.split("=", 1) for a in args if "=" in a)}
    pos = [a for a in args if "=" not in a]
    op = m["op"] or "msg"
    text = pos[1] if op == "legacy" else (m["text"] or "").strip()
    target = opts.get("reply") or (pos[0] if pos and op != "event" else None)
    attach = tuple(tuple(a.split(":", 1)) for a in opts.get("attach", "").split(",") if a)
    return Step(
        op=op, who=m["who"], text=text, key=opts.get("key"), after=float(m["after"] or 45),
        target=target,
        kind=int(pos[1]) if op in ("tap", "untap") else int(pos[0]) if op == "event" else 0,
        action=int(pos[1]) if op == "event" and len(pos) > 1 else 0, other=kw.get("other"),
        attach=attach,  # type: ignore[arg-type]
        needs=opts.get("needs") or _OP_TOGGLES.get(op),
    )  # fmt: skip


def _logical_lines(text: str) -> list[str]:
    """Lines with indented continuation lines joined onto the line before them."""
    out: list[str] = []
    for raw in text.strip().splitlines():
        if raw[:1].isspace() and out:
            out[-1] = f"{out[-1]} {raw.strip()}"
        elif raw.strip():
            out.append(raw)
    return out


def parse_script(script: str) -> tuple[Scene, ...]:
    """The SCRIPT text → Scenes, in order."""
    scenes: list[tuple[str, str, str, list[Step]]] = []
    for raw in _logical_lines(script):
        if raw.startswith("=="):
            name, chat, start = (p.strip() for p in raw[2:].split("|"))
            scenes.append((name, chat, start, []))
        elif raw.strip():
            scenes[-1][3].append(parse_step(raw))
    return tuple(Scene(n, c, s, tuple(steps)) for n, c, s, steps in scenes)


def parse_questions(table: str) -> tuple[Question, ...]:
    """The QUESTION_TABLE text → Questions."""
    out = []
    for raw in _logical_lines(table):
        qid, category, question, keys, answers = (p.strip() for p in raw.split("|"))
        answer = tuple(a.strip() for a in answers.split(";") if a.strip())
        out.append(Question(qid, question, tuple(keys.split()), category, answer))
    return tuple(out)


SCENES = parse_script(SCRIPT)
QUESTIONS = parse_questions(QUESTION_TABLE)
