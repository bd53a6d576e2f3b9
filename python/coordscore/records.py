"""The typed records the library's JSON is turned into (docs/ABI.md, "JSON schemas").

Their fields are described once, for every binding, in bindings/records.json; scripts/surface.py
checks this file against it (and generates the Java records from it)."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field, fields
from typing import Any, Optional

from ._ffi import CoordsLocation
from .errors import ERR_UNEXPECTED_JSON, WireError


@dataclass(frozen=True)
class Location:
    """A position fix: degrees, metres, and the fix time in ms since the epoch.

    `timestamp_ms` is required (there is no silent default: a fix dated 1970 would be refused as
    stale everywhere); for "now" pass `int(time.time() * 1000)`. Raises TypeError when it is
    missing or a field has the wrong type (range checks are the library's: ERR_INVALID_LOCATION)."""
    latitude: float
    longitude: float
    altitude: float = 0.0
    accuracy: float = 0.0
    timestamp_ms: Optional[int] = None

    def __post_init__(self) -> None:
        if self.timestamp_ms is None:
            raise TypeError("Location needs timestamp_ms (ms since the epoch, e.g. int(time.time() * 1000))")
        if isinstance(self.timestamp_ms, bool) or not isinstance(self.timestamp_ms, int) or self.timestamp_ms < 0:
            raise TypeError(f"timestamp_ms must be a non-negative int (ms since the epoch), got {self.timestamp_ms!r}")
        for name in ("latitude", "longitude", "altitude", "accuracy"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")

    def __getitem__(self, key: str) -> Any:
        """Dict-style read access (`location["latitude"]`), as for the other records."""
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def to_c(self) -> CoordsLocation:
        """The C struct for this location."""
        return CoordsLocation(self.latitude, self.longitude, self.altitude, self.accuracy, self.timestamp_ms)

    @classmethod
    def from_c(cls, c: CoordsLocation) -> "Location":
        """A Location from the C struct."""
        return cls(c.latitude, c.longitude, c.altitude, c.accuracy, c.timestamp_ms)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Location":
        """A Location from the library's JSON record."""
        return cls(obj["latitude"], obj["longitude"], obj["altitude_m"], obj["accuracy_m"], obj["timestamp_ms"])



# ---- Typed records (docs/ABI.md, "JSON schemas") -------------------------------------------

class _Record:
    """Base of the typed records. Fields are attributes; `record["field"]` also works (read-only),
    for code written against the dicts of earlier versions. `to_json()` gives the library's JSON."""

    def __getitem__(self, key: str) -> Any:
        if key not in getattr(self, "__dataclass_fields__", {}):
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """The field `key`, or `default` when the record has no such field."""
        try:
            return self[key]
        except KeyError:
            return default

    def to_json(self) -> dict[str, Any]:
        """The record as the library's JSON object (nested records converted too)."""
        def convert(value: Any) -> Any:
            if isinstance(value, _Record):
                return value.to_json()
            if isinstance(value, Location):
                return {"latitude": value.latitude, "longitude": value.longitude, "altitude_m": value.altitude,
                        "accuracy_m": value.accuracy, "timestamp_ms": value.timestamp_ms}
            if isinstance(value, list):
                return [convert(item) for item in value]
            return value
        return {f.name: convert(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


def _location(value: Optional[dict[str, Any]]) -> Optional["Location"]:
    return None if value is None else Location.from_json(value)


@dataclass(frozen=True)
class ErrorInfo(_Record):
    """A failure reported inside a result (not raised): the stable code and the library's text."""
    code: int
    message: str

    @classmethod
    def from_json(cls, obj: Optional[dict[str, Any]]) -> Optional["ErrorInfo"]:
        """An ErrorInfo from JSON (None stays None)."""
        return None if obj is None else cls(int(obj["code"]), obj["message"])


@dataclass(frozen=True)
class Request(_Record):
    """A prepared HTTP request: send it with any HTTP client and give the response back."""
    url: str
    method: str
    headers: dict[str, Any]
    body_base64: str
    server: Optional[str] = None
    """Fetch requests only: the relay they go to."""
    ids: Optional[list[Any]] = None
    """Fetch requests only: the public key ids asked for (at most 50)."""
    max_response_bytes: Optional[int] = None
    """The most bytes to read of the answer (PROTOCOL.md §4.1): refuse a longer one."""

    @property
    def body(self) -> bytes:
        """The body bytes."""
        return base64.b64decode(self.body_base64)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Request":
        """A Request from the library's JSON."""
        return cls(obj["url"], obj["method"], dict(obj["headers"]), obj["body_base64"], obj.get("server"), obj.get("ids"),
                   obj.get("max_response_bytes"))

    def to_json(self) -> dict[str, Any]:
        """The library's JSON (the fetch-only keys when present)."""
        out: dict[str, Any] = {"url": self.url, "method": self.method, "headers": self.headers, "body_base64": self.body_base64}
        if self.server is not None:
            out["server"] = self.server
        if self.ids is not None:
            out["ids"] = self.ids
        if self.max_response_bytes is not None:
            out["max_response_bytes"] = self.max_response_bytes
        return out


@dataclass(frozen=True)
class FetchResult(_Record):
    """One entry of a processed fetch response."""
    pubkey: str
    location: Optional["Location"]
    updated: Optional[int]
    upload_timestamp: Optional[int]
    authenticity: str
    """"verified", "unverified", "tampered" or "absent"."""
    error: Optional[ErrorInfo]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FetchResult":
        """A FetchResult from the library's JSON."""
        return cls(obj["pubkey"], _location(obj["location"]), obj["updated"], obj["upload_timestamp"], obj["authenticity"],
                   ErrorInfo.from_json(obj["error"]))


@dataclass(frozen=True)
class Friend(_Record):
    """A friend: who, where they publish, what we share and fetch, and how much we trust the key."""
    id: str
    name: str
    server: str
    share_with: bool
    fetch_from: bool
    added_at: int
    trust: str
    """"unverified", "verified" (compared in person) or "blocked"."""
    marker_color: str
    sharing: str = "on"
    """"on", "until" (see share_until), "expired" or "paused" (PROTOCOL.md §9.3), when read."""
    share_until: Optional[int] = None
    """When sharing ends (ms since the epoch), or None for no end."""
    conflict_keys: list[Any] = field(default_factory=list)
    """While trust is "conflict" (two different rotations of their old key, §9.2): the candidate keys."""
    protection: str = "legacy"
    """"forward-secret" once they announced prekeys (PROTOCOL.md §10.4), else "legacy"."""
    reciprocal: bool = False
    """Whether they added us back: a position or message they sealed for us has opened. False:
    show them your link or QR code (App.friend_link)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Friend":
        """A Friend from the library's JSON."""
        return cls(obj["id"], obj["name"], obj["server"], obj["share_with"], obj["fetch_from"], obj["added_at"], obj["trust"],
                   obj["marker_color"], obj.get("sharing", "on"), obj.get("share_until"), list(obj.get("conflict_keys", [])),
                   obj.get("protection", "legacy"), bool(obj.get("reciprocal", False)))


@dataclass(frozen=True)
class FriendLocation(_Record):
    """A friend's last known position (None before the first fetch), with its place name."""
    id: str
    name: str
    location: Optional["Location"]
    updated: Optional[int]
    fetched_at: Optional[int]
    authenticity: Optional[str]
    marker_color: str
    place: Optional["Place"]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FriendLocation":
        """A FriendLocation from the library's JSON."""
        place = obj.get("place")
        return cls(obj["id"], obj["name"], _location(obj["location"]), obj["updated"], obj["fetched_at"], obj["authenticity"],
                   obj["marker_color"], None if place is None else Place.from_json(place))


@dataclass(frozen=True)
class Upload(_Record):
    """A prepared upload: send `request`, then mark_upload_succeeded(fix_timestamp)."""
    request: Request
    fix_timestamp: int
    upload_timestamp: int
    recipient_count: int
    blob_size: int

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Upload":
        """An Upload from the library's JSON."""
        return cls(Request.from_json(obj["request"]), obj["fix_timestamp"], obj["upload_timestamp"], obj["recipient_count"],
                   obj["blob_size"])


@dataclass(frozen=True)
class Rejection(_Record):
    """An entry or message that was refused, and why."""
    id: str
    error: ErrorInfo

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Rejection":
        """A Rejection from the library's JSON."""
        error = ErrorInfo.from_json(obj["error"])
        if error is None:
            raise WireError(ERR_UNEXPECTED_JSON, "a rejection without its error")
        return cls(obj["id"], error)


@dataclass(frozen=True)
class FetchOutcome(_Record):
    """What a processed fetch response changed."""
    updated: list[Any]
    """FriendLocation for every friend whose position changed."""
    unchanged: list[Any]
    rejected: list[Any]
    """Rejection for every entry refused (tampered, rolled back, not for us)."""
    ignored: list[Any]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FetchOutcome":
        """A FetchOutcome from the library's JSON."""
        return cls([FriendLocation.from_json(x) for x in obj["updated"]], list(obj["unchanged"]),
                   [Rejection.from_json(x) for x in obj["rejected"]], list(obj["ignored"]))


@dataclass(frozen=True)
class OutboxEntry(_Record):
    """A request waiting in the outbox for a relay that could not be reached."""
    id: int
    kind: str
    request: Request
    attempts: int
    next_attempt_at: int
    created_at: int
    last_error: Optional[str]
    reference: Optional[str]
    location: Optional["Location"]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "OutboxEntry":
        """An OutboxEntry from the library's JSON."""
        return cls(obj["id"], obj["kind"], Request.from_json(obj["request"]), obj["attempts"], obj["next_attempt_at"],
                   obj["created_at"], obj["last_error"], obj["reference"], _location(obj["location"]))


@dataclass(frozen=True)
class OutboxReport(_Record):
    """What the core decided about a relay's answer to an outbox request (App.outbox_report)."""
    id: int
    kind: Optional[str]
    """The entry's kind ("upload", "reseal", "delete", "message", "receipt", "rotation",
    "request"); None for "unknown"."""
    decision: str
    """"delivered", "retry", "sign_again", "dropped" or "unknown" (no such entry)."""
    at: Optional[int]
    """For "retry" and "sign_again": the next attempt's time (ms since the epoch)."""
    reason: Optional[str]
    """Why it was not delivered (relay's refusal or the network failure)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "OutboxReport":
        """An OutboxReport from the library's JSON."""
        return cls(obj["id"], obj.get("kind"), obj["decision"], obj.get("at"), obj.get("reason"))


@dataclass(frozen=True)
class HostRequest(_Record):
    """One request to perform now (App.due): carry `request`, hand the answer to App.report(id, …)."""
    id: int
    """The ticket for App.report."""
    purpose: str
    """"outbox", "fetch", "mailbox", "ack", "prekeys" or "bundle" (for logs)."""
    request: Request
    outbox_id: Optional[int] = None
    """For "outbox": the entry's id."""
    outbox_kind: Optional[str] = None
    """For "outbox": the entry's kind ("upload", "reseal", "message", …)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "HostRequest":
        """A HostRequest from the library's JSON."""
        return cls(obj["id"], obj["purpose"], Request.from_json(obj["request"]), obj.get("outbox_id"), obj.get("outbox_kind"))


@dataclass(frozen=True)
class HostAnswer(_Record):
    """What the core made of one answer (App.report); everything it implies is recorded and queued."""
    result: str
    """"outbox", "locations", "messages", "prekeys", "bundle", "acknowledged", "failed" or
    "unknown" (no request has this ticket)."""
    detail: dict[str, Any]
    """The result's record, as coords_app_report documents it: for "outbox" {"outbox": …},
    "locations" {"locations": …}, "messages" {"messages": …}, "prekeys" {"stock": …}, "bundle"
    {"friend_id", "bundle"}, "failed" {"retry_at", "reason"}; empty otherwise."""

    @property
    def outbox(self) -> Optional[OutboxReport]:
        """For "outbox": the entry's fate."""
        record = self.detail.get("outbox")
        return None if record is None else OutboxReport.from_json(record)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "HostAnswer":
        """A HostAnswer from the library's JSON."""
        return cls(obj["result"], {k: v for k, v in obj.items() if k != "result"})


@dataclass(frozen=True)
class Attachment(_Record):
    """The file of a file message (PROTOCOL.md §12.3), as the library shows it: never its key."""
    object: str
    """The object's id on the sender's relay (b64u, 22 characters)."""
    size: int
    """The file's length in bytes."""
    type: str
    """The media type the sender gave (a hint)."""
    name: str
    """The file name the sender gave (a hint, no path; may be empty)."""
    expires_at_ms: int
    """When the relay drops the file (Unix ms)."""
    local_name: str = ""
    """The name to save it under in a folder the user picked: `name` with every control,
    bidirectional or invisible character (and a leading dot) replaced by `_`; "coords-file" when
    nothing visible is left (PROTOCOL.md §12.5)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Attachment":
        """An Attachment from the library's JSON."""
        return cls(obj["object"], obj["size"], obj["type"], obj["name"], obj["expires_at_ms"], obj.get("local_name", ""))


@dataclass(frozen=True)
class Message(_Record):
    """A sealed 1:1 message, sent or received (docs/MESSAGING.md)."""
    id: str
    friend_id: str
    outgoing: bool
    kind: str
    text: str
    sent_at: int
    stored_at: int
    status: str
    """"queued", "sent", "delivered" or "received"."""
    disappears_at: Optional[int]
    group: Optional[str] = None
    """For a group message (PROTOCOL.md §11): the group's id; friend_id is then its sender."""
    notify: Optional[bool] = None
    """For a received message: whether it should notify (a text or file, its conversation not
    muted, outside quiet hours), decided by the library when it arrived. None for our own."""
    file: Optional[Attachment] = None
    """For a file message (kind "file"): the attachment; save it with App.begin_download (or
    coordscore.transport.save_file). None for other messages and for a malformed file message."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Message":
        """A Message from the library's JSON."""
        file = obj.get("file")
        return cls(obj["id"], obj["friend_id"], obj["outgoing"], obj["kind"], obj["text"], obj["sent_at_ms"], obj["stored_at_ms"],
                   obj["status"], obj["disappears_at_ms"], obj.get("group"), obj.get("notify"),
                   Attachment.from_json(file) if file else None)


@dataclass(frozen=True)
class GroupMember(_Record):
    """One member of a Group."""
    id: str
    name: Optional[str]
    """The friend's name; None for the user and for members who are not friends."""
    is_admin: bool
    is_self: bool
    is_friend: bool

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "GroupMember":
        """A GroupMember from the library's JSON."""
        return cls(obj["id"], obj["name"], obj["is_admin"], obj["is_self"], obj["is_friend"])


@dataclass(frozen=True)
class Group(_Record):
    """A group (PROTOCOL.md §11): its effective name and members and the user's standing."""
    id: str
    name: str
    status: str
    """"member", "left" or "removed"."""
    is_admin: bool
    in_conflict: bool
    """Two admins changed it at once: the safe side of both applies until the next change."""
    epoch: int
    sharing: bool
    members: list[GroupMember]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Group":
        """A Group from the library's JSON."""
        return cls(obj["id"], obj["name"], obj["status"], obj["is_admin"], obj["in_conflict"], obj["epoch"], obj["sharing"],
                   [GroupMember.from_json(x) for x in obj["members"]])


@dataclass(frozen=True)
class GroupChange(_Record):
    """A group change: the group after it, the envelopes queued (deliver them with outbox_due /
    outbox_report) and the members who could not be told (not friends)."""
    group: Group
    queued: list[Any]
    unreachable: list[str]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "GroupChange":
        """A GroupChange from the library's JSON."""
        return cls(Group.from_json(obj["group"]), [OutboxEntry.from_json(x) for x in obj["queued"]], list(obj["unreachable"]))


@dataclass(frozen=True)
class GroupSent(_Record):
    """A group message queued: one outbox entry per member reached."""
    message: Message
    queued: list[Any]
    unreachable: list[str]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "GroupSent":
        """A GroupSent from the library's JSON."""
        return cls(Message.from_json(obj["message"]), [OutboxEntry.from_json(x) for x in obj["queued"]], list(obj["unreachable"]))


@dataclass(frozen=True)
class Sent(_Record):
    """A message queued for sending: POST `request`, then mark_message_sent(message.id)."""
    message: Message
    request: Request
    outbox_id: int

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Sent":
        """A Sent from the library's JSON."""
        return cls(Message.from_json(obj["message"]), Request.from_json(obj["request"]), obj["outbox_id"])


@dataclass(frozen=True)
class LiveConnection(_Record):
    """A relay to hold a live WebSocket to (PROTOCOL.md §8)."""
    server: str
    url: str
    """ws:// or wss://…/v1/relay/live"""
    ids: list[Any]
    """Friend ids watched on this relay."""
    mailbox: bool
    """Whether this is the user's own relay (it also carries the mailbox)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "LiveConnection":
        """A LiveConnection from the library's JSON."""
        return cls(obj["server"], obj["url"], list(obj["ids"]), bool(obj["mailbox"]))


@dataclass(frozen=True)
class LiveOpened(_Record):
    """What to do when a live connection opened: send `frames` (text), then perform `catch_up`
    (fetches) and `mailbox_fetch`, so nothing published while disconnected is missed."""
    frames: list[Any]
    catch_up: list[Any]
    mailbox_fetch: Optional[Request]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "LiveOpened":
        """A LiveOpened from the library's JSON."""
        mailbox = obj["mailbox_fetch"]
        return cls(list(obj["frames"]), [Request.from_json(x) for x in obj["catch_up"]],
                   None if mailbox is None else Request.from_json(mailbox))


@dataclass(frozen=True)
class LiveEvent(_Record):
    """What one live frame meant. `type` is "subscribed" (`ids`, `mailbox`), "locations"
    (`outcome`: processed like a fetch), "deleted" (`id`), "rejected" (`id`, `error`),
    "changed" (`id`, `fetch`: a position too large for a notice; perform the fetch and process it),
    "message_waiting" (`id`, `fetch`: perform it, process_messages the answer, then call
    live_mailbox_fetched) or "ignored" (also a message notice while that fetch is out)."""
    type: str
    id: Optional[str] = None
    ids: Optional[int] = None
    mailbox: Optional[bool] = None
    outcome: Optional["FetchOutcome"] = None
    error: Optional[ErrorInfo] = None
    fetch: Optional[Request] = None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "LiveEvent":
        """A LiveEvent from the library's JSON."""
        outcome, fetch = obj.get("outcome"), obj.get("fetch")
        return cls(obj["type"], obj.get("id"), obj.get("ids"), obj.get("mailbox"),
                   None if outcome is None else FetchOutcome.from_json(outcome), ErrorInfo.from_json(obj.get("error")),
                   None if fetch is None else Request.from_json(fetch))

    def to_json(self) -> dict[str, Any]:
        """The library's JSON (only the keys this type carries)."""
        full = super().to_json()
        return {key: value for key, value in full.items() if value is not None}


@dataclass(frozen=True)
class MessagesOutcome(_Record):
    """What a mailbox response brought: send `acks` to our relay and `receipts` to each friend's."""
    received: list[Any]
    delivered: list[Any]
    duplicates: list[Any]
    rejected: list[Any]
    acks: list[Any]
    receipts: list[Any]
    rotated: list[Any] = field(default_factory=list)
    """Friends (old ids) whose rotation statement was applied or put them in conflict (PROTOCOL.md §9)."""
    conflicts: list[Any] = field(default_factory=list)
    """Friends (current ids) a rotation put in conflict: compare safety numbers, then resolve_conflict."""
    resets: list[Any] = field(default_factory=list)
    """Friends whose forward-secret session was reset (PROTOCOL.md §10.8): messages may have been lost."""
    broken: list[Any] = field(default_factory=list)
    """Friends whose session message no kept session opened; a reset was queued to them in a new session."""
    waiting: list[Any] = field(default_factory=list)
    """Group messages (ids) waiting for their sender key, held on the device (PROTOCOL.md §11.6)."""
    group_queued: list[Any] = field(default_factory=list)
    """Sender keys and reseals the group rules queued: deliver them like receipts."""
    more: bool = False
    """The answer was full (100 envelopes): more may wait on the relay; send the acks, then fetch again."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "MessagesOutcome":
        """A MessagesOutcome from the library's JSON."""
        return cls([Message.from_json(x) for x in obj["received"]], list(obj["delivered"]), list(obj["duplicates"]),
                   [Rejection.from_json(x) for x in obj["rejected"]], [Request.from_json(x) for x in obj["acks"]],
                   [OutboxEntry.from_json(x) for x in obj["receipts"]], list(obj.get("rotated", [])),
                   list(obj.get("conflicts", [])), list(obj.get("resets", [])), list(obj.get("broken", [])),
                   list(obj.get("waiting", [])), [OutboxEntry.from_json(x) for x in obj.get("group_queued", [])],
                   bool(obj.get("more", False)))


@dataclass(frozen=True)
class Conversation(_Record):
    """One conversation: the friend, the last message and the disappearing setting."""
    friend_id: str
    name: str
    last_message: Optional[Message]
    message_count: int
    disappear_after_seconds: Optional[int]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Conversation":
        """A Conversation from the library's JSON."""
        last = obj["last_message"]
        return cls(obj["friend_id"], obj["name"], None if last is None else Message.from_json(last), obj["message_count"],
                   obj["disappear_after_seconds"])


@dataclass(frozen=True)
class WalletInfo(_Record):
    """The identity of an app."""
    has_identity: bool
    id: Optional[str]
    name: str
    server: str
    link: Optional[str]
    strict_mode: bool

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "WalletInfo":
        """A WalletInfo from the library's JSON."""
        return cls(obj["has_identity"], obj["id"], obj["name"], obj["server"], obj["link"], obj["strict_mode"])


@dataclass(frozen=True)
class Place(_Record):
    """A named place from the offline GeoNames data (docs/GEOCODING.md)."""
    name: str
    country_code: Optional[str]
    country: Optional[str]
    state: Optional[str]
    population: int
    latitude: float
    longitude: float
    distance_km: float
    display: str
    """"Lisbon, Portugal" / "Austin, Texas": what to show."""
    phrase: str
    """"in Lisbon, Portugal" or "near …", chosen from the fix's accuracy."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Place":
        """Builds a Place from the library's JSON record."""
        return cls(obj["name"], obj["country_code"], obj["country"], obj.get("state"), int(obj["population"]),
                   float(obj["latitude"]), float(obj["longitude"]), float(obj["distance_km"]), obj["display"], obj["phrase"])


@dataclass(frozen=True)
class FriendLink(_Record):
    """A parsed `coord://` friend link: the friend's public key id, relay and name."""
    pubkey: str
    server: str
    name: str

