"""Messaging: contacts, email (send, read, reply, schedule), SMS and team chat."""

from __future__ import annotations

from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    need_id,
    p_array,
    p_bool,
    p_enum,
    p_int,
    p_str,
    phrases,
    say_date,
    say_list,
    say_quoted,
    say_time,
)
from tinytool.data.demo.catalog.common import (
    find_contact,
    need_date,
    need_time,
    sample_contact_name,
    sample_future_date,
    sample_time,
)
from tinytool.data.demo.catalog.world import (
    CHANNELS,
    CHAT_TEXTS,
    EMAIL_BODIES,
    EMAIL_SUBJECTS,
    SMS_TEXTS,
    World,
)


def _send(w: World, kind: str, **fields) -> str:
    mid = w.next_id("MSG-", 6, (kind, sorted(fields.items())))
    w.state["outbox"].append({"message_id": mid, "kind": kind, **fields})
    return mid


def _need_email(w: World, email_id: str) -> dict:
    return need_id(w.email_index, email_id, "email")


def _check_addresses(addresses: list, field: str) -> None:
    if not addresses or not all(isinstance(a, str) and "@" in a for a in addresses):
        raise ToolError(f"'{field}' must be a non-empty list of email addresses")


def lookup_contact(w: World, name: str) -> dict:
    hits = find_contact(w, name)
    if not hits:
        raise ToolError(f"no contact matching '{name}'")
    return {"matches": [{k: c[k] for k in ("name", "email", "phone")} for c in hits]}


def send_email(w: World, to: list, subject: str, body: str, cc: list | None = None) -> dict:
    _check_addresses(to, "to")
    if cc:
        _check_addresses(cc, "cc")
    mid = _send(w, "email", to=list(to), subject=subject, body=body, cc=list(cc or []))
    return {"status": "sent", "message_id": mid, "to": list(to), "subject": subject}


def send_sms(w: World, phone_number: str, message: str) -> dict:
    digits = [ch for ch in phone_number if ch.isdigit()]
    if len(digits) < 7:
        raise ToolError(f"'{phone_number}' is not a phone number")
    mid = _send(w, "sms", to=phone_number, body=message)
    return {"status": "sent", "message_id": mid, "to": phone_number}


def send_chat_message(w: World, channel: str, text: str, mention: list | None = None) -> dict:
    ch = channel.lstrip("#")
    if ch not in CHANNELS:
        raise ToolError(f"no channel '#{ch}'; channels: {', '.join(CHANNELS)}")
    mid = _send(w, "chat", channel=ch, body=text, mention=list(mention or []))
    return {"status": "posted", "message_id": mid, "channel": f"#{ch}"}


def read_inbox(w: World, folder: str = "inbox", unread_only: bool = False, limit: int = 5) -> dict:
    if limit < 1:
        raise ToolError("'limit' must be at least 1")
    mails = [e for e in w.inbox if e["folder"] == folder and (e["unread"] or not unread_only)]
    return {"folder": folder, "emails": [{k: e[k] for k in ("email_id", "from", "from_name", "subject", "date", "unread")}
                                         for e in mails[:limit]]}


def reply_to_email(w: World, email_id: str, body: str, reply_all: bool = False) -> dict:
    e = _need_email(w, email_id)
    mid = _send(w, "email", to=[e["from"]], subject=f"Re: {e['subject']}", body=body, reply_all=reply_all)
    return {"status": "sent", "message_id": mid, "in_reply_to": email_id, "to": e["from"]}


def schedule_email(w: World, to: list, subject: str, body: str, send_at: str) -> dict:
    _check_addresses(to, "to")
    try:
        day, time = send_at.split(" ")
    except ValueError:
        raise ToolError("'send_at' must look like 'YYYY-MM-DD HH:MM'") from None
    need_date(day, "send_at")
    need_time(time, "send_at")
    sid = w.next_id("SCH-", 6, (to, subject, send_at))
    w.state["outbox"].append({"message_id": sid, "kind": "scheduled_email", "to": list(to), "subject": subject,
                              "body": body, "send_at": send_at})
    return {"status": "scheduled", "schedule_id": sid, "send_at": send_at, "to": list(to)}


def _emails(r: Random, w: World) -> list:
    return [c["email"] for c in r.sample(w.contacts, r.choice((1, 1, 2)))]


def _say_channel(v: str, r: Random) -> str:
    return f"#{v}" if r.random() < 0.6 else v


def _say_send_at(v: str, r: Random) -> str:
    day, time = v.split(" ")
    return f"{say_date(day, r)} at {say_time(time, r)}"


EMAIL_ID = p_str("email_id", "Email id from read_inbox, e.g. 'EM-304'.", lambda r, w: r.choice(w.inbox)["email_id"],
                 label="email id")
SUBJECT = p_str("subject", "Subject line.", lambda r, w: r.choice(EMAIL_SUBJECTS), say=say_quoted, label="subject line")
BODY = p_str("body", "Message text.", lambda r, w: r.choice(EMAIL_BODIES), say=say_quoted, label="message text")
TO = p_array("to", "Recipient email addresses.", {"type": "string"}, _emails, label="recipient's email address")

TOOLS = [
    ToolSpec(
        "lookup_contact", "messaging", "Find a contact's email address and phone number by name.",
        (p_str("name", "Full or partial name.", sample_contact_name, label="contact's name"),), lookup_contact,
        templates=("What's {name}'s phone number?", "What's {name}'s email address?", "Look up {name} in my contacts.",
                   "Find the contact details for {name}.", "How can I reach {name}?"),
        gist="look up a contact", siblings=("send_sms", "send_email"),
    ),
    ToolSpec(
        "send_email", "messaging", "Send an email now.",
        (TO, SUBJECT, BODY, p_array("cc", "Addresses to copy.", {"type": "string"}, _emails, required=False)),
        send_email,
        templates=("Email {to} with the subject {subject} saying {body}[ and cc {cc}].",
                   "Send an email to {to}[, cc {cc}]: subject {subject}, body {body}",
                   "Write to {to} — subject: {subject}; message: {body}",
                   "Send an email[ to {to}] with subject {subject} and the text {body}."),
        dev_templates=("Drop {to} a quick email ({subject}): {body}",),
        substitutes=('schedule_email',), gist="send an email", siblings=("send_sms", "schedule_email", "reply_to_email", "send_chat_message"),
    ),
    ToolSpec(
        "send_sms", "messaging", "Send a text message (SMS) to a phone number.",
        (p_str("phone_number", "Phone number, e.g. '+1-555-0142'.", lambda r, w: r.choice(w.contacts)["phone"],
               label="phone number"),
         p_str("message", "Text to send.", lambda r, w: r.choice(SMS_TEXTS), say=say_quoted, label="message")),
        send_sms,
        templates=("Text {phone_number}: {message}", "Send an SMS to {phone_number} saying {message}.",
                   "Shoot a text to {phone_number} — {message}", "Send a text message[ to {phone_number}] saying {message}."),
        gist="send a text message", siblings=("send_email", "send_chat_message"),
    ),
    ToolSpec(
        "send_chat_message", "messaging", "Post a message to a team chat channel.",
        (p_str("channel", f"Channel name without '#', one of: {', '.join(CHANNELS)}.", lambda r, w: r.choice(CHANNELS),
               say=_say_channel, label="channel"),
         p_str("text", "Message text.", lambda r, w: r.choice(CHAT_TEXTS), say=say_quoted, label="message"),
         p_array("mention", "Usernames to @-mention.", {"type": "string"},
                 lambda r, w: [c["name"].split()[0].lower() for c in r.sample(w.contacts, r.randint(1, 2))],
                 required=False, say=lambda v, r: say_list([f"@{x}" for x in v], r))),
        send_chat_message,
        templates=("Post {text} in the {channel} channel[ and mention {mention}].", "Tell the {channel} channel {text}.",
                   "Message {channel}: {text}[ — tag {mention}]", "Post {text} to chat[ in {channel}]."),
        gist="post in a team chat channel", siblings=("send_email", "send_sms"),
    ),
    ToolSpec(
        "read_inbox", "messaging", "List recent emails in a mail folder.",
        (p_enum("folder", "Mail folder.", ("inbox", "archive", "spam"), default="inbox",
                say=phrases({"inbox": "inbox", "archive": ("archive", "archived"), "spam": "spam"})),
         p_bool("unread_only", "Only unread emails.", {True: (", unread only", " that I haven't read yet"),
                                                       False: (", read or unread", ", including ones I've read")}),
         p_int("limit", "Maximum number of emails.", lambda r, w: r.randint(2, 10), default=5)),
        read_inbox,
        templates=("Check my email[{unread_only}].", "Show me my latest emails[ in {folder}][{unread_only}].",
                   "What's in my[ {folder}] mailbox?", "List the[ last {limit}] emails[ in my {folder} folder][{unread_only}]."),
        gist="read the email inbox", siblings=("reply_to_email", "send_email"),
    ),
    ToolSpec(
        "reply_to_email", "messaging", "Reply to an email by its id.",
        (EMAIL_ID, BODY, p_bool("reply_all", "Reply to all recipients.",
                                {True: (" and reply to everyone", ", reply-all"), False: (", just to the sender", " (sender only)")})),
        reply_to_email,
        templates=("Reply to email {email_id} with {body}[{reply_all}].", "Answer {email_id}: {body}",
                   "Write back to {email_id} saying {body}[{reply_all}].", "Reply to that email[ ({email_id})] saying {body}."),
        gist="reply to an email", siblings=("send_email", "read_inbox"),
    ),
    ToolSpec(
        "schedule_email", "messaging", "Schedule an email to be sent later.",
        (TO, SUBJECT, BODY,
         p_str("send_at", "When to send, 'YYYY-MM-DD HH:MM'.",
               lambda r, w: f"{sample_future_date(r, w)} {sample_time(r, w)}", say=_say_send_at, label="send time")),
        schedule_email,
        templates=("Schedule an email to {to} for {send_at} with subject {subject} and body {body}.",
                   "Send {to} an email on {send_at}: subject {subject}, message {body}",
                   "Queue an email to {to}[ for {send_at}] — subject {subject}, text {body}."),
        gist="schedule an email for later", siblings=("send_email", "create_reminder"), held_out=True,
    ),
]
