"""Filler texting: short bursty exchanges that share the evidence's words but none of its facts.

The words a question is about — match, final, trip, flying, hungry, days, weeks, job, car, flat,
puppy, gig, "on the 10th", "next friday", years like 2017 — come up here too, in other
contexts, so a search has to match the fact and not just a word. The values the evidence uses
(its places, bands, pets, companies) are never used here: a filler line must not answer a
question by accident. `{you}` is the person being addressed (a name in a greeting).
"""

from __future__ import annotations

import random
import re

Script = list[list[str]]  # turns alternate a, b, a, …; " | " splits a turn into a burst

SLOTS: dict[str, list[str]] = {
    "day": ["tmrw", "tonight", "sat", "sunday", "friday", "this weekend", "monday", "thurs"],
    "weekday": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                "fri", "sat", "tues"],
    "nth": ["1st", "2nd", "3rd", "4th", "5th", "6th", "8th", "9th", "11th", "12th", "14th",
            "15th", "17th", "19th", "20th", "21st", "22nd", "23rd", "25th", "27th", "28th"],
    "month": ["jan", "feb", "march", "april", "may", "june", "july", "aug", "sept", "oct", "nov",
              "dec"],
    "time": ["6", "7", "7:30", "8ish", "half 6", "noon", "6:45", "after work"],
    "food": ["pizza", "a curry", "ramen", "tacos", "a roast", "chippy", "nandos", "pho",
             "a burger", "dumplings", "a kebab", "pasta"],
    "spot": ["the crown", "the usual", "spoons", "that new place", "the italian on the high st",
             "the anchor", "the market", "the thai place"],
    "show": ["succession", "the traitors", "bake off", "love island", "slow horses", "the bear",
             "gogglebox", "line of duty"],
    "team": ["arsenal", "spurs", "city", "united", "liverpool", "chelsea", "villa", "the lads"],
    "yr": ["2014", "2015", "2016", "2017", "2018", "2019", "2020"],
    "n": ["2", "3", "4", "5", "6", "10", "two", "three", "a few"],
    "unit": ["days", "weeks", "hours", "mins"],
    "feel": ["knackered", "shattered", "grand", "meh", "buzzing", "sooo tired", "ok actually",
             "fried"],
    "weather": ["pissing it down", "boiling", "freezing", "grim", "lovely out", "so windy"],
    "chore": ["do my tax return", "ring the landlord", "renew my passport", "book the mot",
              "sort the boiler", "cancel the gym"],
    "place": ["manchester", "brighton", "leeds", "cornwall", "edinburgh", "bristol", "york"],
    "thing": ["laptop", "phone", "coat", "trainers", "telly", "kettle", "bike"],
    "emoji": ["😂", "😭", "🙌", "👍", "❤️", "😅", "🔥", "🙃", "😬", "💀", "🥲", "👀"],
}  # fmt: skip

TOPICS: dict[str, list[Script]] = {
    "greet": [
        [["hey {you}", "{you}!!", "oi {you}", "morning {you}", "hiya {you}", "{you} u about?"],
         ["hey!", "yo", "whats up", "hiii", "yes?? 😂", "{you}!"],
         ["nothing just bored", "quick q", "how are you", "u free later?"],
         ["same lol", "go on", "good thanks, you?", "maybe, why"]],
    ],
    "plans": [
        [["are you free on the {nth}?", "what are you up to next {weekday}",
          "drinks {day}?", "want to grab {food} {day}"],
         ["cant do the {nth} sorry | the {nth} works?", "next {weekday} is good",
          "yes!! what time", "maybe, let me check", "I'm away till the {nth}"],
         ["{time}?", "{time} at {spot}?", "ok the {nth} then", "{weekday} the {nth}? I'll book"],
         ["perfect", "👍", "see you then", "done"]],
        [["is the {nth} still on?", "are we still on for {day}"],
         ["yep!", "oh god I forgot, yes", "can we move it to the {nth}"],
         ["sure", "ok no worries"]],
    ],
    "food": [
        [["so hungry right now", "starving", "what are you eating", "I'm hungry again lol"],
         ["same", "get {food}", "had {food} for lunch", "you're always hungry"],
         ["good shout", "ordering {food} now", "I've eaten nothing all day"]],
        [["{food} or {food}", "what should I have for dinner"],
         ["{food} obviously", "both"], ["🙌", "genius"]],
    ],
    "shows": [
        [["are you watching {show}", "started {show} last night"],
         ["yes no spoilers!!", "not yet is it good?", "on episode 3"],
         ["it's so good", "bit slow at first", "the ending 😱"], ["ok ok", "{emoji}"]],
    ],
    "football": [
        [["are you watching the match?", "{team} game tonight?", "did you see the match"],
         ["obviously", "what a game", "don't talk to me about it", "fell asleep at half time"],
         ["that last minute goal", "{team} are so bad this season", "ref was a joke"],
         ["{emoji}", "next week tho", "painful"]],
        [["tickets for the match on the {nth}?", "anyone got a spare ticket for {day}"],
         ["how much", "I'm in", "can't, away that weekend"], ["👍"]],
    ],
    "checkin": [
        [["how's your week going", "how are you doing", "you alive?", "how was your day"],
         ["{feel}", "{feel} | work is a lot", "barely lol", "ok! {feel}"],
         ["same honestly", "hang in there", "sending love {emoji}"], ["thank you", "❤️"]],
    ],
    "logistics": [
        [["running 10 mins late sorry", "omw!", "leaving now", "here"],
         ["no worries", "ok see you soon", "👍", "coming down"]],
        [["where are you", "are you close?"], ["5 mins away", "parking now", "on the bus"],
         ["ok!"]],
        [["did I leave my {thing} at yours", "have you got my {thing}"],
         ["yes lol", "no?", "let me look"], ["phew", "ugh"]],
    ],
    "time": [
        [["back in {n} days!!", "{n} more days of this", "took {n} hours to get home",
          "been waiting {n} weeks for the sofa", "{n} days till payday 😩", "only {n} days off"],
         ["nearly there", "nightmare", "oof", "lol classic"], ["{emoji}"]],
        [["my {thing} is from {yr} lol", "haven't seen her since {yr}", "this song is so {yr}",
          "prices like it's {yr}", "same {thing} since {yr} and it still works"],
         ["lol", "{yr} was a vibe", "wild", "time flies"], ["ikr"]],
    ],
    "travel": [
        [["any plans for the summer?", "thinking of going to {place} for a weekend",
          "trains to {place} are so expensive"],
         ["{place} is lovely", "maybe a long weekend somewhere", "no money lol"],
         ["book it", "should we all go", "let's see"]],
    ],
    "work": [
        [["meeting overran again", "work is chaos this week", "my manager just booked a 4:30"],
         ["noooo", "classic", "ugh sorry"], ["it's fine. it's fine", "send help"],
         ["pub after?", "lol"]],
    ],
    "errands": [
        [["I need to {chore} and I keep putting it off", "reminder: {chore}"],
         ["do it today!", "lol just do it", "tomorrow, definitely tomorrow"], ["ok ok"]],
    ],
    "banter": [
        [["lol", "😂😂😂", "I can't believe that just happened", "look at this"],
         ["right??", "{emoji}", "stop", "hahaha"]],
        [["random but I just saw a dog in a raincoat", "the neighbour's dog barked all night",
          "ok this is so dumb but"], ["LOL", "need a pic", "no way"], ["{emoji}"]],
    ],
    # Near misses: what the evidence is about, said of nobody's news (a dog seen, a test
    # failed by a brother, keys lost again), so a search must find the fact, not the topic.
    "nearmiss": [
        [["my neighbour's dog is so cute", "thinking of getting a dog one day",
          "dog sitting for my sister this weekend 🐶", "the dog next door barked all night"],
         ["aw", "need pics", "do it!!", "lol"], ["{emoji}"]],
        [["driving lessons are so expensive", "my brother failed his driving test again lol",
          "applied for like 10 jobs this week", "interview prep is killing me",
          "thinking of quitting tbh", "got a rejection email, whatever"],
         ["ugh", "you'll get there", "their loss", "same"], ["ty", "{emoji}"]],
        [["my phone battery dies constantly", "need a new phone", "cracked my screen protector",
          "feel like I'm coming down with something", "everyone at work is ill",
          "couldn't sleep last night", "my back hurts from the new chair",
          "my knee clicks on the stairs"],
         ["noooo", "get some rest", "same honestly", "get it looked at"], ["will do"]],
        [["car needs an mot", "someone scratched my car", "rent is going up again",
          "looking at flats is so depressing", "our kitchen is tiny",
          "the garden is a jungle", "lost my keys again", "can't find my keys anywhere"],
         ["classic", "lol", "nightmare", "oh no"], ["{emoji}"]],
        [["should book a holiday soon", "flights are so expensive right now", "I need a beach",
          "any good gigs coming up?", "tickets sold out in 2 mins",
          "festival tickets are a rip off",
          "what a final that was", "should learn a language", "the duolingo owl is threatening me",
          "got invited to 4 weddings this year", "wedding season is expensive"],
         ["same", "ikr", "lol", "let's look"], ["👍"]],
        [["what's your coffee order", "I could eat pizza every day", "not a fan of seafood",
          "whose birthday is next", "need to buy a birthday card", "you owe me a pint",
          "payday can't come soon enough", "wifi is so slow today",
          "power cut for like 10 mins lol"],
         ["lol", "same", "true", "{emoji}"]],
    ],
    "family": [
        [["Call me when you can, nothing urgent", "Are you free for a call tonight?"],
         ["will do!", "yes after {time}", "sorry just saw this, calling now"],
         ["Ok love", "Great. Speak later"]],
        [["Did you eat today?", "Are you getting enough sleep?", "Have you been eating properly?"],
         ["yes mum 😂", "define enough", "I had {food}!"], ["Good", "Hmm."]],
        [["Your auntie says hello", "Dad fixed the fence finally", "The cat is sulking again"],
         ["aw tell her hi", "go dad", "send a pic"], ["Will do"]],
        [["Sunday lunch on the {nth}?", "Are you coming home next {weekday}?"],
         ["yes!!", "can't that one, the {nth}?"], ["Lovely", "Ok, let me know"]],
    ],
    "climbing": [
        [["wall {day}?", "climbing after work?", "bouldering {day}?"],
         ["in", "can't, maybe {day}", "yes {time}?"], ["{time} works", "see you there", "🧗"]],
        [["finally sent the pink one", "stuck on the overhang again", "my fingers are wrecked"],
         ["lets gooo", "rest day!!", "tape it"], ["{emoji}"]],
    ],
    "league": [
        [["who's playing sunday", "need 2 more for sunday", "kick off {time} sunday"],
         ["in", "out, sorry lads", "might be late"], ["👍", "sound"],
         ["bring the bibs someone"]],
        [["what a result", "ref was blind today", "we were awful lol"],
         ["", "legs have gone", "pub?"], ["{emoji}"]],
    ],
    "flat": [
        [["whose turn is it for the bins", "rent's going up again", "the boiler is broken again"],
         ["not mine!!", "ugh", "I'll ring the landlord"], ["ty", "🙃"]],
        [["we're out of milk", "anyone want anything from the shop"],
         ["oat pls", "bread!", "no ty"], ["👍"]],
    ],
}  # fmt: skip

FLAVOURS: dict[str, list[str]] = {
    "friend": ["greet", "plans", "plans", "food", "shows", "football", "checkin", "logistics",
               "time", "travel", "work", "errands", "banter", "banter", "nearmiss", "nearmiss",
               "nearmiss"],
    "work": ["greet", "plans", "food", "shows", "checkin", "logistics", "time", "travel", "work",
             "work", "errands", "banter", "nearmiss", "nearmiss", "nearmiss"],
    "climbing": ["greet", "climbing", "climbing", "plans", "food", "checkin", "logistics",
                 "time", "banter", "nearmiss", "nearmiss"],
    "family": ["family", "family", "family", "checkin", "food", "time", "travel", "logistics",
               "nearmiss", "nearmiss"],
    "league": ["league", "league", "football", "plans", "banter", "logistics"],
    "flat": ["flat", "flat", "food", "plans", "logistics", "banter"],
}  # fmt: skip

ACKS = ["lol", "haha", "k", "👍", "ya", "same", "omg", "😂", "true", "nice one", "ty", "yep",
        "hmm", "ikr", "lmao", "fair"]  # fmt: skip
CLOSERS = ["night!", "ttyl", "speak later", "gn", "❤️", "x", "laters"]
_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, rng: random.Random) -> str:
    """Each {slot} but {you} replaced by a random value from its pool."""
    return _SLOT.sub(lambda m: m.group(0) if m[1] == "you" else rng.choice(SLOTS[m[1]]), template)


def session(rng: random.Random, flavour: str) -> list[tuple[str, str]]:
    """One burst of texting as (speaker, text): "a" opened it, "b" answers."""
    topics = FLAVOURS[flavour]
    out: list[tuple[str, str]] = []
    for _ in range(1 if rng.random() < 0.75 else 2):
        script = rng.choice(TOPICS[rng.choice(topics)])
        for i, turn in enumerate(script):
            if i > 1 and rng.random() < 0.2:
                break
            speaker = "ab"[i % 2]
            parts = fill(rng.choice(turn), rng).split(" | ")
            out.extend((speaker, part) for part in parts if part)
            if rng.random() < 0.15:
                out.append(("ba"[i % 2], rng.choice(ACKS)))
    if rng.random() < 0.2:
        out.append((rng.choice("ab"), rng.choice(CLOSERS)))
    return out
