"""Templates for filler texting: short bursty exchanges by topic, so search has noise to beat."""

from __future__ import annotations

import random
import re

# A script is a list of turns; speakers alternate a, b, a, … and " | " splits a turn into a burst.
Script = list[list[str]]

SLOTS: dict[str, list[str]] = {
    "day": ["tmrw", "tomorrow", "saturday", "sunday", "friday", "tonight", "monday", "thursday"],
    "time": ["6", "6:30", "7", "7:30", "8ish", "noon", "10", "5:45"],
    "food": [
        "tacos",
        "ramen",
        "pizza",
        "thai",
        "pho",
        "burgers",
        "dim sum",
        "indian",
        "sushi",
        "bánh mì",
        "dumplings",
        "korean bbq",
    ],
    "spot": [
        "that taco place on Valencia",
        "Blue Door Cafe",
        "Noodle Theory",
        "the pho spot",
        "Golden Lotus",
        "the new place by the park",
        "Marlowe",
        "Tony's",
    ],
    "show": [
        "Severance",
        "The Bear",
        "Succession",
        "Slow Horses",
        "Only Murders",
        "Shrinking",
        "Abbott Elementary",
        "the new Bake Off season",
    ],
    "activity": [
        "a hike",
        "the farmers market",
        "brunch",
        "a movie",
        "laundry lol",
        "a long run",
        "nothing honestly",
        "ikea 😩",
        "a bike ride",
    ],
    "team": ["Warriors", "Giants", "49ers", "Valkyries"],
    "grade": ["V3", "V4", "V5", "V6", "5.10c", "5.11a"],
    "crag": ["Indian Rock", "Mickey's Beach", "Pinnacles", "Remote Rock"],
    "book": ["Project Hail Mary", "The Midnight Library", "Klara and the Sun", "Demon Copperhead"],
    "emoji": ["😂", "🙌", "😅", "❤️", "👍", "🎉", "😭", "🔥", "🙃", "😬"],
    "feel": ["tired", "so busy", "pretty good actually", "meh", "fried", "good!"],
    "weather": ["so hot", "pouring", "freezing", "gorgeous out", "foggy again", "weirdly humid"],
    "chore": ["call the landlord", "do my taxes", "renew my license", "book the car service"],
}

TOPICS: dict[str, list[Script]] = {
    "weekend": [
        [
            ["any plans this weekend?", "what are you up to this weekend"],
            ["not much, maybe {activity}", "{activity} probably | you?"],
            ["same tbh", "want to get {food} {day}?", "I might do {activity} too"],
            ["down", "yes!! what time", "maybe, let me check"],
            ["{time}?", "{time} at {spot}?"],
            ["👍", "perfect", "see you then"],
        ],
        [
            ["how was your weekend", "good weekend?"],
            ["so good, did {activity}", "chill. too chill. {emoji}"],
            ["jealous", "love that", "nice nice"],
        ],
    ],
    "food": [
        [
            ["I'm starving", "what should I get for dinner"],
            ["{food}", "{food} obviously", "get {food} from {spot}"],
            ["ooh good call", "had that yesterday lol", "ok ordering now"],
        ],
        [
            ["have you been to {spot}?", "we should try {spot}"],
            ["no! is it good", "once, the {food} was great"],
            ["so good", "it's fine, a little overpriced", "let's go {day}"],
            ["I'm in", "yes {emoji}"],
        ],
    ],
    "shows": [
        [
            ["are you watching {show}", "ok have you started {show}"],
            ["YES | no spoilers I'm on ep 4", "not yet is it good?"],
            ["it's SO good", "the last episode 😳", "honestly kinda slow at first"],
            ["ok ok I'll keep going", "adding it", "{emoji}"],
        ],
        [
            ["just finished {show}", "need a new show"],
            ["try {show}", "have you seen {show}?"],
            ["on it", "heard good things", "ooh yes"],
        ],
    ],
    "checkin": [
        [
            ["how's your week going", "how are you doing", "hiii how's it going"],
            ["{feel}", "{feel} | work is a lot", "ok! {feel}"],
            ["same honestly", "hang in there", "sending good vibes {emoji}"],
            ["thank youuu", "❤️", "ty!"],
        ],
        [["long day?", "you alive?"], ["barely lol", "yes haha just busy"], ["{emoji}", "same"]],
    ],
    "logistics": [
        [
            ["running 10 min late sorry", "omw!", "leaving now"],
            ["no worries", "ok see you soon", "👍"],
        ],
        [["here", "I'm outside"], ["coming down", "one sec!"]],
        [["where are you", "are you close?"], ["5 min away", "parking now"], ["ok!"]],
    ],
    "weather": [
        [
            ["it's {weather} today", "is it {weather} where you are"],
            ["ugh yes", "honestly love it", "{weather} here too"],
            ["{emoji}", "stay cozy lol"],
        ],
    ],
    "work": [
        [
            ["my manager just scheduled a 4:30 on a friday", "work is chaos this week"],
            ["noooo", "classic", "ugh I'm sorry"],
            ["it's fine. it's fine. {emoji}", "send help"],
            ["lol", "wine later?"],
        ],
        [
            ["did you ever hear back about the promotion", "how's the new project"],
            ["not yet 😬", "it's going ok, lots of meetings"],
            ["fingers crossed", "nice"],
        ],
    ],
    "errands": [
        [
            ["I need to {chore} and I keep putting it off", "reminder to self: {chore}"],
            ["do it today!", "same energy as me and the dentist", "lol just do it"],
            ["tomorrow. definitely tomorrow", "ok ok"],
        ],
    ],
    "sports": [
        [
            ["did you see the {team} game", "{team} 😤"],
            ["that last quarter!!", "don't talk to me about it", "I fell asleep lol"],
            ["painful", "unreal", "next year"],
        ],
    ],
    "books": [
        [
            ["reading anything good?", "I just finished {book}"],
            ["I'm halfway through {book}", "nothing, I'm in a slump"],
            ["nice", "ooh how is it", "same honestly"],
        ],
    ],
    "banter": [
        [["lol", "😂😂😂", "I can't believe that just happened"], ["right??", "{emoji}"]],
        [
            ["random but I just saw a dog in a raincoat", "ok this is so dumb but"],
            ["LOL", "stop", "need a pic"],
            ["{emoji}"],
        ],
        [["did you see this", "look what I found"], ["omg", "hahaha"], ["right"]],
    ],
    # Flavoured topics for particular chats.
    "family": [
        [
            ["Call me when you can, nothing urgent", "Are you free for a call tonight?"],
            ["will do!", "yes after {time}", "sorry just saw this, calling now"],
            ["Ok sweetie", "Great. Love you"],
        ],
        [
            ["Did you eat today?", "Are you getting enough sleep?"],
            ["yes mom 😂", "define enough", "I had {food}!"],
            ["Good. 😘", "Hmm."],
        ],
        [
            ["Your aunt says hi", "Grandma loved the card you sent"],
            ["aww tell her hi back", "yay ❤️"],
            ["Will do"],
        ],
        [
            ["The tomatoes are finally coming in", "Dad fixed the fence, only took 3 weekends"],
            ["love that", "lol go dad", "send a pic!"],
            ["😄"],
        ],
        [
            ["Are you coming home for Thanksgiving this year?", "Any thoughts on the holidays?"],
            ["not sure yet, flights are crazy", "maybe! let me look at dates"],
            ["Let me know soon", "Ok. Dad says hi"],
        ],
        [
            ["Sunday dinner? I'm making lasagna", "Coming for dinner this Sunday?"],
            ["yes!!", "can't this week, next sunday?"],
            ["Ok! Bring dessert", "Sounds good"],
        ],
    ],
    "climbing": [
        [
            ["gym {day}?", "anyone climbing {day}?", "session {day} after work?"],
            ["I'm in", "can't, maybe {day}", "yes! {time}?"],
            ["{time} works", "see you there", "🧗"],
        ],
        [
            ["finally sent that {grade}!!", "I'm stuck on the {grade} in the cave"],
            ["LETS GO", "nice!! the blue one?", "that one is sandbagged"],
            ["{emoji}", "lol yes"],
        ],
        [
            ["my fingers are wrecked", "think I tweaked a pulley 😬"],
            ["rest day!", "tape it and take a week off", "noooo"],
            ["ugh fine"],
        ],
        [
            ["outdoor day at {crag} soon?", "weather looks good for {crag} this weekend"],
            ["yes pls", "I'll bring the crash pad", "too wet probably"],
            ["👍", "let's see"],
        ],
        [
            ["new shoes came in", "do I need new chalk or is this bag fine"],
            ["how do they fit", "that bag is 90% dust"],
            ["painful but good", "lol fair"],
        ],
    ],
    "trip": [
        [
            ["has everyone booked flights?", "flights are getting pricey"],
            ["yep!", "doing it tonight", "still looking"],
            ["don't wait too long", "👍"],
        ],
        [
            ["what's everyone's must-do", "I need pastel de nata every day"],
            ["the tram!", "a day trip to Sintra", "just vibes and seafood"],
            ["yesss", "adding to the doc"],
        ],
        [
            ["do we need adapters", "what are people packing"],
            ["type F plugs", "carry-on only"],
            ["good call"],
        ],
    ],
}

FLAVOURS: dict[str, list[str]] = {
    "friend": [
        "weekend",
        "food",
        "shows",
        "checkin",
        "logistics",
        "weather",
        "work",
        "errands",
        "sports",
        "books",
        "banter",
    ],
    "family": ["family", "family", "family", "checkin", "weather", "food", "logistics"],
    "climbing": ["climbing", "climbing", "climbing", "weekend", "banter", "logistics"],
    "trip": ["trip", "trip", "banter", "food", "logistics"],
}

ACKS = [
    "lol",
    "haha",
    "ok",
    "👍",
    "yeah",
    "true",
    "ya",
    "same",
    "nice",
    "omg",
    "ok cool",
    "ty!",
    "😂",
    "yep",
    "right",
    "hmm",
]
CLOSERS = ["night!", "ttyl", "talk later", "gn", "❤️", "k bye", "later!"]
_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, rng: random.Random) -> str:
    """Replace each {slot} with a random value from its pool."""
    return _SLOT.sub(lambda m: rng.choice(SLOTS[m.group(1)]), template)


def styled(text: str, style: str, rng: random.Random) -> str:
    """Per-person typing habits: all lowercase, Proper Sentences, or trailing emoji."""
    if style == "lower":
        return text.lower().rstrip(".")
    if style == "proper" and text[:1].isalpha():
        text = text[0].upper() + text[1:]
        return text if text[-1:] in ".!?😘❤️" or not text[-1:].isalpha() else text + "."
    if style == "emoji" and rng.random() < 0.2 and text[-1:].isalpha():
        return f"{text} {rng.choice(SLOTS['emoji'])}"
    return text


def session(rng: random.Random, flavour: str) -> list[tuple[str, str]]:
    """One burst of conversation as (speaker, text) pairs; speaker "a" opened it, "b" answers."""
    topics = FLAVOURS[flavour]
    out: list[tuple[str, str]] = []
    for _ in range(1 if rng.random() < 0.7 else 2):
        script = rng.choice(TOPICS[rng.choice(topics)])
        for i, turn in enumerate(script):
            if i > 1 and rng.random() < 0.15:
                break
            speaker = "ab"[i % 2]
            out.extend((speaker, part) for part in fill(rng.choice(turn), rng).split(" | "))
            if rng.random() < 0.12:
                out.append(("ba"[i % 2], rng.choice(ACKS)))
    if rng.random() < 0.25:
        out.append((rng.choice("ab"), rng.choice(CLOSERS)))
    return out
