"""Calendar: list, inspect, create, delete and move events; free slots; reminders."""

from __future__ import annotations

from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    need_id,
    p_array,
    p_enum,
    p_int,
    p_object,
    p_str,
    phrases,
    say_date,
    say_quoted,
    say_time,
)
from tinytool.data.demo.catalog.common import hhmm, need_date, need_time, sample_future_date, sample_time
from tinytool.data.demo.catalog.world import LOCATIONS, World

NEW_TITLES = ("Coffee with Jonas", "Quarterly planning", "Gym session", "Call the plumber", "Team lunch",
              "Interview: backend engineer", "Guitar practice", "Vet appointment", "Product demo",
              "Study group", "Board meeting", "Farewell party")
REMINDERS = ("call the bank", "water the plants", "pick up the dry cleaning", "submit the expense report",
             "renew my passport", "book a dentist appointment", "buy a birthday gift for Maya",
             "take out the recycling", "pay the rent", "charge the car")
_DURATIONS = (15, 30, 45, 60, 90, 120)


def _event_id(r: Random, w: World) -> str:
    return r.choice(sorted(w.state["events"]))


def _need_event(w: World, event_id: str) -> dict:
    return need_id(w.state["events"], event_id, "event")


def _say_recurrence(v: dict, r: Random) -> str:
    unit = {"daily": "day", "weekly": "week", "monthly": "month"}[v["frequency"]]
    n = v["count"]
    return r.choice((f"repeating {v['frequency']} for {n} {unit}s", f"recurring {v['frequency']}, {n} times",
                     f"every {unit} for {n} {unit}s"))


def list_events(w: World, date: str, calendar: str = "all") -> dict:
    need_date(date)
    evs = [e for e in w.state["events"].values() if e["date"] == date and calendar in ("all", e["calendar"])]
    evs.sort(key=lambda e: e["start_time"])
    return {"date": date, "events": [{k: e[k] for k in ("event_id", "title", "start_time", "duration_minutes",
                                                          "calendar")} for e in evs]}


def get_event_details(w: World, event_id: str) -> dict:
    return dict(_need_event(w, event_id))


def create_event(w: World, title: str, date: str, start_time: str, duration_minutes: int = 60,
                 attendees: list | None = None, location: str | None = None, recurrence: dict | None = None) -> dict:
    need_date(date)
    need_time(start_time, "start_time")
    if duration_minutes <= 0:
        raise ToolError("'duration_minutes' must be positive")
    event_id = w.next_id("EVT-", 5, (title, date, start_time))
    ev = {"event_id": event_id, "title": title, "date": date, "start_time": start_time,
          "duration_minutes": duration_minutes, "calendar": "personal", "location": location or "",
          "attendees": list(attendees or [])}
    if recurrence:
        ev["recurrence"] = dict(recurrence)
    w.state["events"][event_id] = ev
    return {"status": "created", "event_id": event_id, "title": title, "date": date, "start_time": start_time}


def delete_event(w: World, event_id: str) -> dict:
    ev = _need_event(w, event_id)
    del w.state["events"][event_id]
    return {"status": "deleted", "event_id": event_id, "title": ev["title"]}


def reschedule_event(w: World, event_id: str, new_date: str, new_start_time: str | None = None) -> dict:
    ev = _need_event(w, event_id)
    need_date(new_date, "new_date")
    if new_start_time is not None:
        need_time(new_start_time, "new_start_time")
        ev["start_time"] = new_start_time
    ev["date"] = new_date
    return {"status": "rescheduled", "event_id": event_id, "title": ev["title"], "date": new_date,
            "start_time": ev["start_time"]}


def find_free_slots(w: World, date: str, duration_minutes: int, earliest: str = "09:00",
                    latest: str = "18:00") -> dict:
    need_date(date)
    lo, hi = need_time(earliest, "earliest"), need_time(latest, "latest")
    if duration_minutes <= 0 or lo >= hi:
        raise ToolError("need a positive duration and earliest < latest")
    busy = sorted((need_time(e["start_time"]), need_time(e["start_time"]) + e["duration_minutes"])
                  for e in w.state["events"].values() if e["date"] == date)
    slots, t = [], lo
    for s, e in busy + [(hi, hi)]:
        s, e = max(s, lo), min(e, hi)
        if s - t >= duration_minutes:
            slots.append({"start": hhmm(t), "end": hhmm(s)})
        t = max(t, e)
    return {"date": date, "duration_minutes": duration_minutes, "free_slots": slots}


def create_reminder(w: World, text: str, date: str, time: str) -> dict:
    need_date(date)
    need_time(time)
    rid = w.next_id("REM-", 5, (text, date, time))
    w.state["reminders"][rid] = {"text": text, "date": date, "time": time}
    return {"status": "created", "reminder_id": rid, "text": text, "due": f"{date} {time}"}


EVENT_ID = p_str("event_id", "Calendar event id, e.g. 'EVT-1004'.", _event_id, label="event id")
DATE = p_str("date", "Date, YYYY-MM-DD.", sample_future_date, say=say_date, label="date")

TOOLS = [
    ToolSpec(
        "list_events", "calendar", "List the calendar events on a date.",
        (DATE, p_enum("calendar", "Which calendar to read.", ("work", "personal", "all"), default="all",
                      say=phrases({"work": "work", "personal": "personal", "all": ("full", "combined")}))),
        list_events,
        templates=(
            "What's on my[ {calendar}] calendar for {date}?",
            "Show me my[ {calendar}] events on {date}.",
            "Do I have anything scheduled on {date}?",
            "List my[ {calendar}] appointments[ for {date}].",
            "What does {date} look like on my[ {calendar}] calendar?",
        ),
        dev_templates=("Am I busy on {date}? Check my[ {calendar}] calendar.",),
        gist="list calendar events", siblings=("find_free_slots", "get_event_details"),
    ),
    ToolSpec(
        "get_event_details", "calendar", "Get all details (time, location, attendees) of one calendar event.",
        (EVENT_ID,), get_event_details,
        templates=(
            "Show me the details of event {event_id}.",
            "Who's attending {event_id}, and where is it?",
            "Pull up calendar entry {event_id}.",
            "Get the info on that event[, {event_id}].",
        ),
        gist="look up one calendar event", siblings=("list_events",),
    ),
    ToolSpec(
        "create_event", "calendar", "Create a calendar event.",
        (p_str("title", "Event title.", lambda r, w: r.choice(NEW_TITLES), label="event title",
               say=lambda v, r: say_quoted(v, r) if r.random() < 0.5 else v),
         DATE,
         p_str("start_time", "Start time, HH:MM (24-hour).", sample_time, say=say_time, label="start time"),
         p_int("duration_minutes", "Length in minutes.", lambda r, w: r.choice(_DURATIONS), default=60,
               label="duration"),
         p_array("attendees", "Email addresses of people to invite.", {"type": "string"},
                 lambda r, w: [c["email"] for c in r.sample(w.contacts, r.randint(1, 3))], required=False),
         p_str("location", "Where the event takes place.", lambda r, w: r.choice(LOCATIONS), required=False),
         p_object("recurrence", "Repeat rule.", {
             "frequency": {"type": "string", "enum": ["daily", "weekly", "monthly"]},
             "count": {"type": "integer", "description": "Number of occurrences."}},
             lambda r, w: {"frequency": r.choice(("daily", "weekly", "monthly")), "count": r.randint(2, 10)},
             _say_recurrence, required=False)),
        create_event,
        templates=(
            "Schedule {title} on {date} at {start_time}[ for {duration_minutes} minutes][ with {attendees}][ at {location}][, {recurrence}].",
            "Put a meeting called {title} in my calendar for {date}, starting {start_time}[, lasting {duration_minutes} minutes][, and invite {attendees}].",
            "Add {title} to my calendar[ on {date}][ at {start_time}][ in {location}].",
            "New event: {title}, {date} {start_time}[, {duration_minutes} min][, location {location}][, {recurrence}]",
            "Can you block {start_time} on {date} for {title}[, {duration_minutes} minutes][, {recurrence}]?",
        ),
        dev_templates=("I'd like {title} on the calendar — {date}, {start_time}[, invite {attendees}].",),
        gist="create a calendar event", siblings=("create_reminder", "reschedule_event", "find_free_slots"),
    ),
    ToolSpec(
        "delete_event", "calendar", "Delete a calendar event.",
        (EVENT_ID,), delete_event,
        templates=(
            "Delete event {event_id} from my calendar.",
            "Cancel the calendar entry {event_id}.",
            "Please remove the event[ {event_id}] from my calendar.",
            "Get rid of {event_id} on my calendar.",
        ),
        substitutes=('create_event',), gist="delete a calendar event", siblings=("reschedule_event", "cancel_booking"),
    ),
    ToolSpec(
        "reschedule_event", "calendar", "Move an existing calendar event to a new date and, optionally, time.",
        (EVENT_ID, p_str("new_date", "New date, YYYY-MM-DD.", sample_future_date, say=say_date, label="new date"),
         p_str("new_start_time", "New start time, HH:MM.", sample_time, say=say_time, required=False)),
        reschedule_event,
        templates=(
            "Move event {event_id} to {new_date}[ at {new_start_time}].",
            "Reschedule {event_id} for {new_date}[, starting {new_start_time}].",
            "Can you push {event_id} to[ {new_date}][ at {new_start_time}]?",
        ),
        gist="move a calendar event to another time", siblings=("delete_event", "create_event"), held_out=True,
    ),
    ToolSpec(
        "find_free_slots", "calendar", "Find free time slots of at least a given length on a date.",
        (DATE, p_int("duration_minutes", "Minimum slot length in minutes.", lambda r, w: r.choice(_DURATIONS),
                     label="meeting length"),
         p_str("earliest", "Start of the search window, HH:MM.", lambda r, w: r.choice(("08:00", "08:30", "09:00", "10:00")),
               say=say_time, default="09:00"),
         p_str("latest", "End of the search window, HH:MM.", lambda r, w: r.choice(("16:00", "17:00", "17:30", "19:00")),
               say=say_time, default="18:00")),
        find_free_slots,
        templates=(
            "When am I free on {date} for a {duration_minutes}-minute meeting[ between {earliest} and {latest}]?",
            "Find me a free {duration_minutes}-minute slot on {date}[ after {earliest}][ before {latest}].",
            "Do I have {duration_minutes} minutes free[ on {date}]?",
            "Find an open slot of {duration_minutes} minutes on {date}[, not earlier than {earliest}].",
        ),
        gist="find free time in the calendar", siblings=("list_events", "create_event"), substitutes=("list_events",),
    ),
    ToolSpec(
        "create_reminder", "calendar", "Set a reminder that notifies at a given date and time.",
        (p_str("text", "What to be reminded of.", lambda r, w: r.choice(REMINDERS), label="reminder text"),
         DATE, p_str("time", "Time, HH:MM (24-hour).", sample_time, say=say_time, label="time")),
        create_reminder,
        templates=(
            "Remind me to {text} on {date} at {time}.",
            "Set a reminder[ for {date}][ at {time}] to {text}.",
            "Create a reminder to {text} for {time} on {date}.",
            "Ping me at {time} on {date} to {text}.",
        ),
        gist="set a reminder", siblings=("create_event", "schedule_email"),
    ),
]
