"""reward=math's units: the words and symbols after a number that name what it counts ("49 cm^2", "5 cups",
"49\\text{ cm}^2"), dropped from the value (rlx.rewards.math_answer) and compared by their one name, so that 7 hours
is not 7 minutes, while words that change what the number says ("7 or more", "7 ish") are never a unit."""

from __future__ import annotations

import re

UNIT_WORDS = (
    "square units|square unit|sq units|units|unit|cubic units|centimeters|centimetres|centimeter|centimetre|"
    "millimeters|millimeter|kilometers|kilometer|meters|metres|meter|metre|inches|inch|feet|foot|ft|yards|yard|"
    "miles|mile|mph|km/h|m/s|cm|mm|km|kg|mg|grams|gram|pounds|pound|lbs|lb|ounces|ounce|oz|liters|litres|liter|"
    "litre|ml|seconds|second|secs|sec|minutes|minute|mins|min|hours|hour|hrs|hr|days|day|weeks|week|months|month|"
    "years|year|degrees|degree|dollars|dollar|cents|cent|percent"
)
RATE = rf"\s*(?:/|\bper\b|\ban?\b)\s*(?:{UNIT_WORDS})"  # "per day", "an hour", "/ week": a rate's second unit
UNIT_TAIL = re.compile(
    rf"(?<=[\d}}).)])\s*((?:(?:(?:square|sq\.?|cubic)\s+)?(?:{UNIT_WORDS})(?:\^\{{?[23]\}}?|[²³])?(?:{RATE})?"
    rf"|(?:{RATE}))(?:\s+each)?)\.?\s*$",
    re.IGNORECASE,
)
SHORT_UNIT = re.compile(r"(?<=\d)\s+((?:m|g|s|h|l|L)(?:\^\{?[23]\}?|[²³])?)\s*$")  # "5 m", never "5m" (5 times m)
TEXT_UNIT = re.compile(r"(?<=[\d}])\s*\\(?:text|mbox|mathrm)\{(\s*[A-Za-z][A-Za-z. /]*)\}((?:\^\{?[23]\}?)?)\s*$")
# a word or two after a number at the end ("18 apples", "5 cups"): a unit too, unless it changes the number
WORD_UNIT = re.compile(r"(?<=[\d}])\s+([a-z]{3,}(?: [a-z]{3,})?)\s*$")  # two words only when a known unit
NOT_UNITS = frozenset(  # words after a number that change what it says: never dropped as a unit
    "or and not plus minus times over approximately approx about roughly nearly exactly hundred thousand million "
    "billion trillion dozen half quarter third thirds halves quarters squared cubed wrong incorrect false true no "
    "none never nope maybe perhaps possibly probably likely unsure guess zero one two three four five six seven "
    "eight nine ten eleven twelve twenty thirty forty fifty sixty seventy eighty ninety ish odd tops max maximum "
    "minimum least most more less fewer greater smaller larger higher lower above below under around circa "
    "almost some something upward upwards onward onwards either".split()
)


def is_unit(words: str) -> bool:
    """Whether the words after a number can be its unit: a known unit, or one word that is not in NOT_UNITS."""
    words = words.strip().lower()
    known = UNIT_TAIL.search("0 " + words)  # after a digit, as its look-behind wants (a fullmatch never had one)
    return (known is not None and known.start() == 1) or (" " not in words and words not in NOT_UNITS)


UNIT_NAMES = {  # spellings of one unit -> its name; "unit(s)" names no unit ("12 square units" is 12)
    "centimeter": "cm", "centimetre": "cm", "millimeter": "mm", "kilometer": "km", "meter": "m", "metre": "m",
    "inch": "in", "foot": "ft", "feet": "ft", "yard": "yd", "mile": "mi", "gram": "g", "pound": "lb", "lbs": "lb",
    "ounce": "oz", "liter": "l", "litre": "l", "second": "s", "sec": "s", "secs": "s", "minute": "min",
    "mins": "min", "hour": "h", "hr": "h", "hrs": "h", "day": "d", "week": "wk", "month": "mo", "year": "yr",
    "degree": "deg", "dollar": "$", "cent": "cent", "percent": "%",
}  # fmt: skip


def unit_name(unit: str) -> str | None:
    """A unit's one name ("cm^2" for "square centimeters", "$/d" for "dollars per day"), None for a generic
    "units"."""
    word = re.sub(r"\s+each$", "", unit.lower().strip().rstrip("."))
    rate = re.fullmatch(r"(.*?)\s*(?:/|\bper\b|\ban?\b)\s*([a-z/]+)", word)
    if rate is not None:  # a rate: its two units' names ("per day" alone: "1/d")
        first = unit_name(rate.group(1)) if rate.group(1) else "1"
        return f"{first or '1'}/{unit_name(rate.group(2))}"
    power = "^2" if re.search(r"\^\{?2|²|^squ|^sq\b", word) else "^3" if re.search(r"\^\{?3|³|^cubic", word) else ""
    word = re.sub(r"\^\{?[23]\}?|[²³]|^(?:square|sq\.?|cubic)\s+", "", word).strip()
    if word in ("unit", "units", ""):
        return None
    name = UNIT_NAMES.get(word) or UNIT_NAMES.get(word[:-1] if word.endswith("s") else word) or word
    return name + power


def stated_unit(text: str) -> str | None:
    """The unit a decorated answer (rlx.rewards.math_answer's reading, LaTeX styling gone) states at its end, by
    its one name; "$" for a dollar sign; None for none or a generic "units"."""
    text = re.sub(r"\^\s*\{?\\circ\}?|°|\\degree\b", " degrees", text)
    if "\\$" in text or text.lstrip("-").startswith("$"):
        return "$"
    for pattern in (TEXT_UNIT, UNIT_TAIL, SHORT_UNIT, WORD_UNIT):
        found = pattern.search(text)
        if found is not None and is_unit(found.group(1)):
            return unit_name("".join(g for g in found.groups() if g))
    return None
