"""How the user says dates, times, amounts and counts, and the forms a message may use for them.

Scenarios speak in the first set (``spoken_*``); scoring accepts any of the second (``*_forms``)
inside a message, matched as whole words so "June 1" never matches "June 12".
"""

import re
from datetime import date, timedelta

NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def spoken_date(iso: str) -> str:
    day = date.fromisoformat(iso)
    return f"{day:%B} {day.day}"


def spoken_time(hhmm: str) -> str:
    hour, minute = map(int, hhmm.split(":"))
    suffix, twelve = ("am" if hour < 12 else "pm"), hour % 12 or 12
    return f"{twelve}{suffix}" if minute == 0 else f"{twelve}:{minute:02d}{suffix}"


def spoken_amount(amount: float) -> str:
    return f"${amount:.2f}" if amount % 1 else f"${amount:.0f}"


def next_day(iso: str, days: int = 1) -> str:
    return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()


def shift(hhmm: str, minutes: int) -> str:
    hour, minute = map(int, hhmm.split(":"))
    total = hour * 60 + minute + minutes
    return f"{total // 60:02d}:{total % 60:02d}"


def date_forms(iso: str) -> tuple[str, ...]:
    day = date.fromisoformat(iso)
    return (iso, f"{day:%B} {day.day}", f"{day.day} {day:%B}", f"{day:%b} {day.day}", f"{day.day} {day:%b}")


def time_forms(hhmm: str) -> tuple[str, ...]:
    hour, minute = map(int, hhmm.split(":"))
    twelve, suffix = hour % 12 or 12, ("am" if hour < 12 else "pm")
    clock = f"{twelve}:{minute:02d}"
    short = [f"{twelve}{suffix}", f"{twelve} {suffix}", f"{twelve} {suffix[0]}.m."] if minute == 0 else []
    return (hhmm, f"{hour}:{minute:02d}", f"{clock}{suffix}", f"{clock} {suffix}", f"{clock} {suffix[0]}.m.", *short)


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words, ignoring case."""
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE) is not None
