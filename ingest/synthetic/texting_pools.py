"""The evidence the texting corpus plants, as templates: the lines told and the questions asked.

Each Item is one kind of thing people text about. `t` is the teller (a contact, or the owner
when the item allows it), `o` the other side. Lines are written in texting voice and use
{slots}; questions paraphrase them (a dog, not "a puppy"; ill, not "in bed with flu") the way
a person asks about their own chats. Question placeholders: {S} the teller as the question
names them, {O} the other one ({Os} as a subject), {Sp} the teller's possessive,
{is}/{does}/{has} agreeing with {S}, {date} an event's date with its preposition ("on the 10th
of February", "in March 2023"), {day} without it, {nq} a number as the question writes it.

Families (texting_episodes drafts them): news (when), hungry (when + duration), plan (a future
date: event_date), past (a past year told later: event_date), long (duration), arc (spread
over days), taste (open: opinions and preferences), call (names in the messages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Ln:
    day: int  # days after the episode's first day
    who: str  # "t" teller | "o" other
    text: str
    ev: bool = True  # evidence: holds (part of) the fact
    tap: bool = False  # the other side leaves a tapback on it


@dataclass(frozen=True, slots=True)
class Q:
    kind: str  # when | open | spread
    text: str
    answer: tuple[str, ...] = ()  # () → the day it was texted
    tags: tuple[str, ...] = ()  # event_date | duration | names


@dataclass(frozen=True, slots=True)
class Item:
    key: str
    lines: tuple[Ln, ...]
    asks: tuple[Q, ...]
    tellers: str = "them"  # them | me | either
    young: bool = False  # not something Mum texts
    nums: tuple[int, int] = (2, 5)  # {n}: inclusive range


VALUES: dict[str, list[str]] = {
    "pet": ["biscuit", "pickle", "nugget", "waffles", "pepper", "mochi", "bear", "olive"],
    "company": ["monzo", "ocado", "deliveroo", "arup", "octopus", "rightmove", "gymshark"],
    "book": ["the secret history", "normal people", "piranesi", "the salt path", "shuggie bain"],
    "baby": ["ada", "freya", "isla", "maeve", "nora"],
    "dest": ["lisbon", "copenhagen", "porto", "seville", "naples", "vienna", "bruges",
             "ljubljana", "marrakech", "athens"],
    "band": ["fontaines dc", "wet leg", "little simz", "the 1975", "blur", "pulp", "self esteem"],
    "party": ["leaving do", "housewarming", "30th birthday", "engagement party", "graduation"],
    "appt": ["dentist", "eye test", "physio", "smear test", "mri scan", "boiler service"],
    "race": ["bristol 10k", "great north run", "parkrun", "colour run", "tough mudder"],
    "cup": ["fa cup", "champions league", "europa league", "carabao cup"],
    "place": ["prague", "barcelona", "amsterdam", "krakow", "budapest", "dublin", "tallinn"],
    "car": ["purple micra", "red fiesta", "yellow beetle", "clapped out corsa", "green polo"],
    "band2": ["radiohead", "the killers", "florence", "stormzy", "muse", "coldplay", "elbow"],
    "city": ["lyon", "madrid", "glasgow", "toronto", "melbourne", "bologna"],
    "job": ["chip shop", "call centre", "ice cream van", "cinema", "garden centre"],
    "cat": ["marmalade", "smudge", "tigger", "luna", "socks"],
    "far": ["japan", "vietnam", "peru", "iceland", "croatia", "mexico", "sri lanka"],
    "skill": ["piano", "spanish", "pottery", "guitar", "sign language", "italian"],
    "flatpack": ["wardrobe", "bed frame", "bookshelf", "desk", "chest of drawers"],
    "fest": ["glastonbury", "green man", "latitude", "boardmasters", "download"],
    "part": ["alternator", "starter motor", "clutch", "gearbox", "fuel pump"],
    "area": ["hackney", "clapham", "peckham", "walthamstow", "brixton", "headingley",
             "didsbury", "leith"],
    "area0": ["stockwell", "bow", "tooting", "catford"],
    "finish": ["1:58", "2:04", "1:49", "2:11", "1:55"],
    "venue": ["a barn in somerset", "the botanical gardens", "a castle in wales",
              "the boathouse"],
    "colour": ["terracotta", "sage green", "navy", "mustard"],
    "food2": ["olives", "mushrooms", "coriander", "pickles", "anchovies", "beetroot"],
    "band3": ["haim", "fleetwood mac", "the smiths", "phoebe bridgers", "idles", "abba"],
    "film": ["paddington 2", "jaws", "heat", "the matrix", "ratatouille", "alien"],
    "city2": ["paris", "venice", "new york", "rome", "milan"],
    "team2": ["everton", "newcastle", "fulham", "wolves", "sunderland", "palace"],
    "far2": ["boston", "sydney", "singapore", "vancouver", "dubai", "auckland"],
    "price": ["40", "85", "120", "60", "35"],
    "coffee": ["oat flat white", "black americano", "iced latte", "decaf cappuccino", "cortado"],
    "holiday": ["a cabin in the mountains", "a city break", "camping in the lakes",
                "a lazy beach week", "a cottage in cornwall"],
    "verdict": ["elite", "a crime", "fine actually", "disgusting", "underrated"],
    "wow": ["no way!!", "omg", "WHAT", "noooo", "stop", "wait what", "no!!"],
    "cheer": ["😭", "😂", "❤️", "🙌", "!!!", "😱"],
    "spot2": ["under the plant pot", "in the meter cupboard", "with the neighbour at 12",
              "in the blue bin"],
}  # fmt: skip


# One item per "==" block:  == FAMILY KEY TELLERS [young] [n=LO-HI]
#   [+DAY] t|o: text [aside] [tap]     a line ("aside": not evidence; "tap": gets a tapback)
#   ? KIND[/TAG,TAG] | question [| answer; answer]    (no answer: the day it was texted)
# News items carry two questions; a drafted episode asks one of them.
SCRIPT = """
== news puppy either
t: WE GOT A PUPPY 🐶  [tap]
t: he's called {pet}
o: {wow} {cheer}  [aside]
? when | When did {S} get a dog?
? when | When did {S} tell {O} about the new dog?
== news driving either young
t: passed my driving test!!!! 🚗  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} pass the driving exam?
? when | When did {S} tell {O} about passing the driving exam?
== news offer either young
t: got the job at {company} 😭😭  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} get the offer from {company}?
? when | When did {S} tell {O} about the offer from {company}?
== news lockout either young
t: locked myself out again lol, sat on the step waiting for the landlord  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} get locked out of the flat?
? when | When did {S} tell {O} about getting locked out?
== news bath either
t: my phone fell in the bath 💀 writing this on the laptop  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} drop a phone in water?
? when | When did {S} tell {O} about the phone going in the water?
== news bookdone either
t: finally finished {book}, what an ending  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} get to the end of {book}?
? when | When did {S} tell {O} about finishing {book}?
== news covid either
t: tested positive 🤧 ugh  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} have covid?
? when | When did {S} tell {O} about catching covid?
== news towed either
t: car got towed outside work 😤 £200 to get it back  [tap]
o: {wow} {cheer}  [aside]
? when | When was {Sp} car impounded?
? when | When did {S} tell {O} about the car being impounded?
== news niece them
t: my sister had the baby!! a little girl, {baby} 👶  [tap]
o: {wow} {cheer}  [aside]
? when | When was {Sp} niece born?
? when | When did {S} tell {O} about the new niece?
== news moved either young
t: moved into the new place finally 📦📦📦  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} move house?
? when | When did {S} tell {O} about moving house?
== news toe either
t: broke my toe on the coffee table, I'm an idiot  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} injure a toe?
? when | When did {S} tell {O} about the injured toe?
== news quiz either young
t: WON THE PUB QUIZ 🏆  [tap]
t: first time in 3 years
o: {wow} {cheer}  [aside]
? when | When did {S} win the quiz?
? when | When did {S} tell {O} about winning the quiz?
== news raise either young
t: got a pay rise!! drinks on me  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} get a salary increase?
? when | When did {S} tell {O} about the salary increase?
== news bike either
t: someone nicked my bike from outside the station  [tap]
o: {wow} {cheer}  [aside]
? when | When was {Sp} bicycle stolen?
? when | When did {S} tell {O} about the stolen bicycle?
== news tattoo either young
t: got a tattoo 🙈 don't tell mum  [tap]
o: {wow} {cheer}  [aside]
? when | When did {S} get inked?
? when | When did {S} tell {O} about the new ink?
== news grandad them
t: grandad's home from hospital, all ok ❤️  [tap]
o: {wow} {cheer}  [aside]
? when | When did {Sp} grandfather come out of hospital?
? when | When did {S} tell {O} about grandad leaving hospital?
== hungry hungry either
t: haven't had a proper meal in {n} days, so hungry 😩
? when/duration | When was {S} hungry for {nq} days?
== hungry power either
t: power's been out for {n} days. candles everywhere 🕯️
? when/duration | When did {S} have no electricity for {nq} days?
== hungry airport either n=4-9
t: stuck at the airport {n} hours now, flight cancelled
? when/duration | When was {S} delayed at an airport for {nq} hours?
== hungry flu either
t: been in bed with flu for {n} days 🤒
? when/duration | When was {S} ill for {nq} days?
== hungry wifi either
t: no wifi for {n} days, I'm losing it
? when/duration | When did {S} go {nq} days without internet?
== hungry sleep either n=11-15
t: slept {n} hours straight lmao
? when/duration | When did {S} sleep for {nq} hours?
== hungry oncall either young n=2-4
t: on call {n} weeks in a row, kill me
? when/duration | When was {S} on call for {nq} weeks?
== hungry back either
t: my back has been killing me for {n} days
? when/duration | When did {S} have back pain for {nq} days?
== hungry heating either
t: heating's been broken {n} days, wearing a coat indoors
? when/duration | When was {S} without heating for {nq} days?
== plan fly either
t: booked flights!! {dest} {when} ✈️
o: jealous  [aside]
? open/event_date | Where {is} {S} going {date}? | {dest}
? when/event_date | When did {S} book the trip for {day}?
== plan gig either young
t: got tickets for {band} {when}!!
? open/event_date | Which concert {is} {S} going to {date}? | {band}
== plan party either
t: my {party} is {when}, you coming?
o: obviously  [aside]
? open/event_date | What {is} {S} celebrating {date}? | {party}
? when/event_date | When did {S} invite {O} to the {party} {date}?
== plan appt either
t: {appt} {when} 😬
? open/event_date | What appointment {does} {S} have {date}? | {appt}
== plan race either young
t: signed up for the {race}, it's {when}
? open/event_date | What race {is} {S} running {date}? | {race}
== past final either
t: still not over that {cup} final {yearly} 😭
? open/event_date | What match did {S} watch in {year}? | {cup}
? when/event_date | When did {S} bring up the {year} final?
== past trip either
t: found old pics from {place} {yearly} 😂 the hair
? open/event_date | Where did {S} travel in {year}? | {place}
== past marathon either
t: did the london marathon {yearly}, never again
? open/event_date | What race did {S} do in {year}? | marathon
== past car either
t: my first car {yearly} was a {car} lol
? open/event_date | What car did {S} drive in {year}? | {car}
== past gig either
t: saw {band2} live {yearly}, still the best gig ever
? open/event_date | Which band did {S} see in {year}? | {band2}
? when/event_date | When did {S} mention the {year} concert?
== past ski either
t: broke my wrist skiing {yearly} and never went again
? open/event_date | How did {S} get hurt in {year}? | skiing
== past abroad either
t: lived in {city} for a year {yearly}, miss it so much
? open/event_date | Where did {S} live in {year}? | {city}
== past job either
t: worked in a {job} {yearly}, worst summer of my life
? open/event_date | What summer job did {S} have in {year}? | {job}
== past cat either
t: we got {cat} from the rescue {yearly} 🐱
? open/event_date | Which cat did {S} adopt in {year}? | {cat}
== long far either n=2-4
t: {n} weeks in {far} was unreal, back now 😭
? open/duration | Where did {S} spend {nq} weeks? | {far}
== long skill either n=3-9
t: been learning {skill} for {n} months now
? open/duration | What {has} {S} been learning for {nq} months? | {skill}
== long flatpack either n=3-6
t: the {flatpack} took {n} hours to build, never again
? open/duration | What did {S} spend {nq} hours assembling? | {flatpack}
== long fest either young n=3-5
t: {n} days at {fest} and my ears are still ringing
? open/duration | Which festival did {S} spend {nq} days at? | {fest}
== arc car either
t: car won't start again 🙄
+2 t: garage reckons it's the battery
+5 t: nope. it's the {part}. £{price}0
+9 t: got the car back finally!!
? spread | What was wrong with {Sp} car? | {part}
== arc flat either young
t: viewing a flat in {area0} tmrw
+1 t: {area0} one was tiny, like a cupboard
+6 t: offer accepted on the {area} place!!
+20 t: keys collected 🔑
? spread | Which area did {S} end up renting in? | {area}
== arc jobhunt either young
t: applied for a job at {company}
+9 t: got an interview there!!
+16 t: second round went ok I think
+21 t: THEY OFFERED ME IT
? spread | How did {Sp} application to {company} go? | offered
== arc half either
t: signed up for a half marathon 😬
+12 t: ran 15k today, legs are dead
+25 t: new running shoes arrived
+40 t: finished in {finish}!! 🥳
? spread | How did {Sp} half marathon go? | {finish}
== arc kitchen either
t: kitchen reno starts monday 😬
+4 t: no sink for a week, washing up in the bath
+10 t: tiles are in, {colour}
+17 t: kitchen is DONE 🎉
? spread | How did {Sp} kitchen renovation go? | {colour}
== arc wedding them young
t: we picked a venue!! {venue}
+15 t: dress shopping was a nightmare
+30 t: invites are out
+45 t: 6 weeks to go 😱
? spread | What has {S} done so far to plan the wedding? | {venue}
== arc knee them
t: the hospital rang, the knee op is on the {nth}
+10 t: all went well, I'm home now
+16 t: physio is hard work but I'm doing my exercises
+30 t: walked to the shops and back today!
? spread | How did {Sp} recovery from the knee surgery go? | walked
== arc garden either
t: planted tomatoes and courgettes 🍅
+20 t: first flowers on the tomatoes!
+34 t: squirrels have eaten the lot 😤
? spread | What happened to {Sp} vegetable patch? | squirrels
== arc screen either
t: smashed my phone screen 🙃
+1 t: repair shop says a week
+8 t: got it back, they lost my case lol
? spread | What happened when {Sp} phone broke? | repair
== taste hate either
t: {food2} are disgusting, sorry not sorry
+12 t: no {food2} on mine pls 🤢
? open | What food can't {S} stand? | {food2}
== taste band either
t: {band3} on repeat all week
+9 t: {band3} new album 😍😍
? open | Which band {is} {S} obsessed with? | {band3}
== taste boss them young
t: new manager is actually great
+3 t: she lets us wfh fridays 🙌
? open | What does {S} think of the new boss? | great
== taste coffee either
t: {coffee}, extra shot, always
? open | What's {Sp} usual coffee order? | {coffee}
== taste film either
t: {film} is the best film ever made, not taking questions
? open | What is {Sp} favourite movie? | {film}
== taste holiday either
t: honestly nothing beats {holiday}, you can keep the rest
? open | What kind of holidays {does} {S} prefer? | {holiday}
== taste city either
t: honestly {city2} is overrated
+20 t: {city2} again? no thanks
? open | How {does} {S} feel about {city2}? | overrated
== taste pizza either
t: pineapple on pizza is {verdict} and I will die on this hill
? open | What's {Sp} take on hawaiian pizza? | {verdict}
== taste team either
t: {team2} til I die ⚽
+11 t: {team2} 3-0!!! get in
? open | Which football club {does} {S} support? | {team2}
== call leave either
o: {you}, when do you leave for {far2}??
t: the {nth} 😢
? open/names | When {is} {S} moving to {far2}? | {nth}
== call engaged them
t: {you}!!! guess who got engaged 💍
o: NO WAY  [aside]
? when/names | When did {S} tell {O} about the engagement?
== call owe either
t: oi {you} you still owe me £{price} for the tickets
? open/names | How much did {S} say {Os} owed for the tickets? | {price}
== call bday them
o: {you}!! happy birthday 🎂🎉
t: ty ❤️ feeling old
? when/names | When did {Os} wish {S} a happy birthday?
== call key either
t: {you} can you feed the cat while I'm away? spare key is {spot2}
? open/names | Where did {S} leave the spare key? | {spot2}
"""

_HEAD = re.compile(r"^== (\w+) (\w+) (them|me|either)((?: young)?)(?: n=(\d+)-(\d+))?$")
_LINE = re.compile(r"^(?:\+(\d+) )?([to]): (.*?)(?:  \[([a-z ]+)\])?$")


def parse(script: str) -> dict[str, tuple[Item, ...]]:
    """SCRIPT → family → its Items, in order."""
    out: dict[str, list[Item]] = {}
    for block in script.strip().split("\n== "):
        head, *rest = block.removeprefix("== ").splitlines()
        m = _HEAD.match(f"== {head}")
        if m is None:
            raise ValueError(f"bad item header: {head!r}")
        lines, asks = [], []
        for raw in rest:
            if raw.startswith("? "):
                kind, text, *answer = (p.strip() for p in raw[2:].split(" | "))
                kind, _, tags = kind.partition("/")
                answers = tuple(a.strip() for a in answer[0].split(";")) if answer else ()
                asks.append(Q(kind, text, answers, tuple(t for t in tags.split(",") if t)))
                continue
            ln = _LINE.match(raw)
            if ln is None:
                raise ValueError(f"bad item line: {raw!r}")
            opts = (ln[4] or "").split()
            lines.append(Ln(int(ln[1] or 0), ln[2], ln[3], "aside" not in opts, "tap" in opts))
        nums = (int(m[5]), int(m[6])) if m[5] else (2, 5)
        item = Item(m[2], tuple(lines), tuple(asks), m[3], bool(m[4]), nums)
        out.setdefault(m[1], []).append(item)
    return {family: tuple(items) for family, items in out.items()}


ITEMS = parse(SCRIPT)
