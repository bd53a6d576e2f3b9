"""The CLI's contract with scripts (docs/CLI.md), end to end against live relays: every command's
--json against its documented schema, the exit statuses, atomic init, passphrase messages,
whoami without the passphrase, the outbox delivered first, and the refused empty message."""
import json
import os
import re
import subprocess

import pytest
from jsonschema import Draft202012Validator

from e2e_support import BIN, QUEUED, ROOT, Relay, alice_and_bob, coords, data, passphrase_env

PARTIAL, UNAVAILABLE, USAGE = 2, 69, 1


def documented_schemas():
    """`<!-- schema: NAME -->` followed by a ```json block, for every NAME in docs/CLI.md."""
    text = open(os.path.join(ROOT, "docs", "CLI.md"), encoding="utf-8").read()
    found = re.findall(r"<!-- schema: ([^>]+?) -->\s*```json\n(.*?)```", text, re.S)
    schemas = {name: json.loads(body) for name, body in found}
    assert len(schemas) == len(found), "a schema name appears twice"
    return schemas


SCHEMAS = documented_schemas()
DEFS = SCHEMAS.pop("$defs")


def validator(name):
    schema = dict(SCHEMAS[name], **{"$defs": DEFS})
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def commands_with_json():
    """Every (sub)command whose definition has a --json flag, from the executable itself."""
    tree = json.loads(subprocess.run([os.path.join(BIN, "coords"), "--experimental-dump-help"],
                                     capture_output=True, text=True, check=True).stdout)["command"]
    found = set()

    def walk(command, path):
        names = {n["name"] for a in command.get("arguments", []) for n in a.get("names", [])}
        if "json" in names:
            found.add(" ".join(path))
        for sub in command.get("subcommands", []):
            walk(sub, path + [sub["commandName"]])

    walk(tree, [])
    return found


def property_names(schema):
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties":
                yield from value
            yield from property_names(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from property_names(item)


def test_every_json_command_has_one_documented_schema_with_units_in_its_key_names():
    assert commands_with_json() == set(SCHEMAS)
    for name in property_names([SCHEMAS, DEFS]):
        words = set(name.split("_"))
        if words & {"time", "timestamp", "updated", "at", "age", "duration", "ttl", "since", "expires"}:
            assert name.endswith("_ms"), f"{name}: a time without its unit"
        if words & {"altitude", "accuracy", "distance", "radius"}:
            assert name.endswith("_m"), f"{name}: a length without its unit"
    # The schemas are strict: an undocumented key fails.
    assert list(validator("whoami").iter_errors({"id": "A" * 43, "name": "", "server": "", "link": "coord://x", "extra": 1}))


@pytest.fixture
def relays(tmp_path):
    started = []

    def start(name):
        relay = Relay(tmp_path / name, args=["--rate", "0", "--key-rate", "0", "--message-rate", "0"])
        relay.start()
        started.append(relay)
        return relay

    yield start
    for relay in started:
        relay.stop()


def links_id(link):
    """The id inside a `coord://HOST/add/ID#NAME` link."""
    return link.split("/add/", 1)[1].split("#", 1)[0]


def test_each_command_prints_json_that_matches_its_schema_and_the_exit_statuses_hold(relays, tmp_path):
    env = passphrase_env()
    one, two = relays("one"), relays("two")
    alice, bob, carol = tmp_path / "alice", tmp_path / "bob", tmp_path / "carol"
    checked = {}

    def check(name, *args, home, expect=0):
        result = coords(env, home, *args, "--json", expect=expect)
        value = json.loads(result.stdout)  # exactly one JSON object on standard output
        assert isinstance(value, dict) and result.stdout.count("\n") == 1, result.stdout
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator(name).iter_errors(value)]
        assert not errors, f"coords {' '.join(args)} --json does not match its schema: {errors}\n{result.stdout}"
        checked[name] = checked.get(name, 0) + 1
        return value, result

    check("init", "init", "--server", one.url, "--name", "Alice", home=alice)
    check("init", "init", "--server", one.url, "--name", "Bob", home=bob)
    check("init", "init", "--server", two.url, "--name", "Carol", home=carol)
    links = {home: check("whoami", "whoami", home=home)[0]["link"] for home in (alice, bob, carol)}
    added = check("add", "add", links[alice], home=bob)[0]
    assert added["verified"] is False and added["share"] == "next-fix" and added["shared_fix_ms"] is None
    check("add", "add", links[bob], home=alice)
    check("add", "add", links[carol], "--server", two.url, home=bob)  # plain http: the link alone would say https
    check("add", "add", links[bob], "--server", one.url, home=carol)
    assert check("verify", "verify", "Alice", home=bob)[0]["verified"] is True

    share, _ = check("share", "share", "--lat", "47.3769", "--lon", "8.5417", "--accuracy", "12", home=alice)
    assert share["queued"] is False and share["recipient_count"] == 2
    check("share", "share", "--lat", "52.52", "--lon", "13.405", home=carol)
    fetched, _ = check("fetch", "fetch", home=bob)
    by_name = {f["name"]: f for f in fetched["friends"]}
    # Verified (the identity, compared) and signed (the position) are different things.
    assert by_name["Alice"]["verified"] is True and by_name["Alice"]["signature"] == "signed"
    assert by_name["Carol"]["verified"] is False and by_name["Carol"]["signature"] == "signed"
    assert by_name["Alice"]["location"]["accuracy_m"] == 12 and by_name["Alice"]["location"]["timestamp_ms"] > 1e12
    assert fetched["failures"] == [] and by_name["Alice"]["relay_updated_ms"] > 1e12
    friends, _ = check("friends", "friends", home=bob)
    assert {f["name"]: f["signature"] for f in friends["friends"]} == {"Alice": "signed", "Carol": "signed"}
    assert {f["name"]: f["reciprocal"] for f in friends["friends"]} == {"Alice": True, "Carol": True}
    table = coords(env, bob, "fetch").stdout.splitlines()
    assert table[0].split() == ["NAME", "LOCATION", "PLACE", "AGE", "SIGNATURE", "VERIFIED", "NEW"]

    sent, _ = check("send", "send", "Bob", "hello Bob", home=alice)
    assert sent["queued"] is False
    inbox, _ = check("inbox", "inbox", home=bob)
    assert [m["text"] for m in inbox["received"]] == ["hello Bob"] and inbox["received"][0]["sent_at_ms"] > 1e12
    assert inbox["received"][0]["file"] is None
    note = tmp_path / "note.txt"
    note.write_bytes(b"meet at the harbour\n")
    sent_file, _ = check("send", "send", "Bob", "--file", str(note), home=alice)
    assert sent_file["file"]["name"] == "note.txt" and sent_file["file"]["type"] == "text/plain" and sent_file["file"]["size"] == 20
    inbox, _ = check("inbox", "inbox", home=bob)
    assert [m["file"]["name"] for m in inbox["received"]] == ["note.txt"] and inbox["received"][0]["text"] == ""
    saved, _ = check("save", "save", sent_file["id"], str(tmp_path / "saved.txt"), home=bob)
    assert saved["path"] == str(tmp_path / "saved.txt") and (tmp_path / "saved.txt").read_bytes() == note.read_bytes()

    # Groups (PROTOCOL.md §11): Bob's group with Alice, then Carol too.
    created, _ = check("group create", "group", "create", "Trip", "Alice", home=bob)
    assert created["group"]["is_admin"] and len(created["group"]["members"]) == 2 and created["queued"] == 0
    assert check("group add", "group", "add", "Trip", "Carol", home=bob)[0]["group"]["epoch"] == 1
    coords(env, alice, "inbox")
    groups, _ = check("groups", "groups", home=alice)
    assert [(g["name"], g["is_admin"], len(g["members"])) for g in groups["groups"]] == [("Trip", False, 3)]
    check("group admin", "group", "admin", "Trip", "Alice", "on", home=bob)
    check("group rename", "group", "rename", "Trip", "Trip 2", home=bob)
    to_group, _ = check("send", "send", "--group", "Trip 2", "hi all", home=bob)
    assert to_group["copies"] == 2 and to_group["queued"] == 0
    chat, _ = check("chat", "chat", "--group", "Trip 2", home=alice)
    assert [m["text"] for m in chat["messages"]] == ["hi all"] and chat["group"]["is_admin"] is True
    assert check("share", "share", "--group", "Trip 2", home=bob)[0] == {"group": created["group"]["id"], "sharing": True}
    check("group remove", "group", "remove", "Trip 2", "Carol", home=bob)
    coords(env, alice, "inbox")
    assert check("group leave", "group", "leave", "Trip 2", home=alice)[0]["group"]["status"] == "left"
    assert check("group delete", "group", "delete", "Trip 2", home=alice)[0]["deleted"] is True
    chat, _ = check("chat", "chat", "Bob", home=alice)
    assert [(m["kind"], m["status"]) for m in chat["messages"]] == [("text", "delivered"), ("file", "delivered")]
    # Notifications (docs/MESSAGING.md): mute, quiet hours, receipts.
    muted, _ = check("mute", "mute", "Alice", "--for", "8h", home=bob)
    assert muted["muted"] is True and muted["muted_until_ms"] > 1e12
    assert check("mute", "mute", "Alice", home=bob)[0]["muted_until_ms"] is None
    assert check("unmute", "unmute", "Alice", home=bob)[0]["muted"] is False
    quiet, _ = check("quiet", "quiet", "22:00-07:00", "--utc-offset", "60", home=bob)
    assert quiet == {"quiet_hours": "22:00-07:00", "utc_offset_minutes": 60, "delivery_receipts": True}
    assert check("quiet", "quiet", "off", home=bob)[0]["quiet_hours"] is None
    assert check("receipts", "receipts", "off", home=bob)[0]["delivery_receipts"] is False
    assert check("receipts", "receipts", "on", home=bob)[0]["delivery_receipts"] is True
    assert check("strict", "strict", home=bob)[0] == {"strict": False}
    assert check("strict", "strict", "on", home=bob)[0] == {"strict": True}
    assert check("strict", "strict", "off", home=bob)[0] == {"strict": False}
    check("backup export", "backup", "export", str(tmp_path / "alice.backup"), home=alice)
    imported, _ = check("backup import", "backup", "import", str(tmp_path / "alice.backup"), home=tmp_path / "alice2")
    assert imported["friends"] == 1
    assert check("outbox list", "outbox", home=alice)[0] == {"entries": []}
    assert check("outbox flush", "outbox", "flush", home=alice)[0] == {"delivered": [], "dropped": [], "still_queued": 0}
    # Sharing for a while, pausing, resuming (PROTOCOL.md §9.3): each reseals when a share ends.
    limited, _ = check("share-with", "share-with", "Bob", "--for", "2h", home=alice)
    assert limited["share_state"] == "until" and limited["share_until_ms"] > 1e12 and limited["resealed"] is False
    paused, _ = check("pause", "pause", "Bob", home=alice)
    assert paused["share_state"] == "paused" and paused["resealed"] is True and paused["queued"] is False
    listed = check("friends", "friends", home=alice)[0]["friends"]
    assert [(f["name"], f["sharing"], f["share_state"]) for f in listed if f["name"] == "Bob"] == [("Bob", False, "paused")]
    resumed, _ = check("share-with", "share-with", "Bob", home=alice)
    assert resumed["share_state"] == "on" and resumed["share_until_ms"] is None
    # A public IP literal needs no DNS; it is removed again before any envelope could wake it.
    pushed, _ = check("push register", "push", "register", "https://1.1.1.1/up/alice", "--ttl", "600", home=alice)
    assert pushed["endpoint"] == "https://1.1.1.1/up/alice" and pushed["expires_at_ms"] > 1e12
    assert check("push unregister", "push", "unregister", home=alice)[0] == {"deleted": True}

    # Relay two goes down: Bob's fetch reaches only some relays (2), the failure on stderr.
    two.stop()
    partial, result = check("fetch", "fetch", home=bob, expect=PARTIAL)
    assert [f["server"] for f in partial["failures"]] == [two.url] and "could not fetch from " + two.url in result.stderr
    assert "Alice" in coords(env, bob, "fetch", expect=PARTIAL).stdout  # the table still shows what came
    # Relay one too: none reached (69).
    one.stop()
    none, _ = check("fetch", "fetch", home=bob, expect=UNAVAILABLE)
    assert len(none["failures"]) == 2
    assert "connection refused" in coords(env, bob, "inbox", expect=UNAVAILABLE).stderr
    assert check("chat", "chat", "Alice", home=bob, expect=UNAVAILABLE)[0]["messages"]  # stored messages, status 69
    # Queued for later (75).
    assert check("share", "share", "--lat", "1", "--lon", "2", home=alice, expect=QUEUED)[0]["queued"] is True
    assert check("send", "send", "Bob", "later", home=alice, expect=QUEUED)[0]["queued"] is True
    assert check("delete", "delete", home=carol, expect=QUEUED)[0] == {"server": two.url, "deleted": False, "queued": True}
    entries = check("outbox list", "outbox", home=alice)[0]["entries"]
    assert sorted(e["kind"] for e in entries) == ["message", "upload"] and all(e["last_error"] for e in entries)
    assert check("outbox flush", "outbox", "flush", home=alice, expect=QUEUED)[0]["still_queued"] == 2

    # Back up: every command that talks to a relay delivers the outbox first.
    one.start()
    two.start()
    delivered = coords(env, alice, "chat", "Bob").stdout
    assert delivered.index("Outbox: delivered") < delivered.index("later")
    assert "Outbox: delivered delete" in coords(env, carol, "delete").stdout.splitlines()[0]
    deleted, _ = check("delete", "delete", home=alice)
    assert deleted == {"server": one.url, "deleted": True, "queued": False}
    check("remove", "remove", "Carol", home=bob)
    check("verify", "verify", "Alice", "--reset", home=bob)
    # Identity lifecycle (PROTOCOL.md §9): Carol rotates; the restored copy of Alice revokes.
    rotated, _ = check("rotate", "rotate", home=carol)
    assert rotated["revoked"] is False and rotated["id"] != rotated["previous_id"] and rotated["statements_queued"] == 0
    revoked, _ = check("revoke", "revoke", home=tmp_path / "alice2")
    assert revoked["revoked"] is True and revoked["previous_id"] == links_id(links[alice])
    # The store sealed under a new key (docs/STORE.md); Bob's friends are all still there.
    friends_before = coords(env, bob, "friends", "--json").stdout
    rekeyed, _ = check("rekey", "rekey", home=bob)
    assert rekeyed["rekeyed"] is True and rekeyed["elapsed_ms"] >= 0
    assert coords(env, bob, "friends", "--json").stdout == friends_before
    assert set(checked) == set(SCHEMAS), set(SCHEMAS) - set(checked)


def test_usage_errors_exit_1_and_help_and_version_exit_0(tmp_path):
    env = passphrase_env()
    tool = os.path.join(BIN, "coords")
    for args in (["--bogus"], ["share", "--lat", "x", "--lon", "1"], ["fetch", "extra"], ["nosuchcommand"], ["watch", "--interval", "0"]):
        result = subprocess.run([tool, *args, "--home", str(tmp_path / "h")], capture_output=True, text=True, env=env)
        assert result.returncode == USAGE and result.stdout == "" and result.stderr.strip(), (args, result)
    for args in (["--help"], ["fetch", "--help"], ["--version"]):
        result = subprocess.run([tool, *args], capture_output=True, text=True, env=env)
        assert result.returncode == 0 and result.stdout.strip(), (args, result)
    assert "Exit status: 0 done; 1 usage" in " ".join(subprocess.run([tool, "--help"], capture_output=True, text=True).stdout.split())
    # A misspelt command is named as such (it used to be "Unknown option '--home'"), with the nearest one.
    typo = subprocess.run([tool, "shrae", "--home", str(tmp_path / "h")], capture_output=True, text=True, env=env)
    assert typo.returncode == USAGE and "unknown command 'shrae'" in typo.stderr and "did you mean 'share'" in typo.stderr, typo


def test_init_is_atomic_and_never_replaces_an_identity(relays, tmp_path):
    env = passphrase_env()
    relay = relays("relay")
    home = tmp_path / "homes" / "alice"
    # Fails after the keychain and store were made (the server URL is checked by the identity):
    # nothing is left, not even the parent's staging directory.
    assert "not an absolute http" in coords(env, home, "init", "--server", "ftp://x", "--name", "A", expect=USAGE).stderr
    assert not home.exists() and list((tmp_path / "homes").iterdir()) == []
    # No passphrase: refused before anything is created.
    no_pass = dict(env, COORDS_PASSPHRASE="")
    assert "no passphrase given" in coords(no_pass, home, "init", "--server", relay.url, "--name", "A", expect=USAGE).stderr
    assert not home.exists()
    short = dict(env, COORDS_PASSPHRASE="short")
    assert "at least 8 characters" in coords(short, home, "init", "--server", relay.url, "--name", "A", expect=USAGE).stderr
    # A directory with other files is not taken over; an empty one is.
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    assert "not an empty directory" in coords(env, home, "init", "--server", relay.url, "--name", "A", expect=USAGE).stderr
    (home / "notes.txt").unlink()
    coords(env, home, "init", "--server", relay.url, "--name", "A")
    assert sorted(p.name for p in home.iterdir()) == ["keychain.bin", "public.json", "store"]
    assert oct(home.stat().st_mode & 0o777) == "0o700" and oct((home / "public.json").stat().st_mode & 0o777) == "0o600"
    keychain = (home / "keychain.bin").read_bytes()
    assert "already has a Coords identity" in coords(env, home, "init", "--server", relay.url, "--name", "B", expect=USAGE).stderr
    assert (home / "keychain.bin").read_bytes() == keychain
    assert list((tmp_path / "homes").iterdir()) == [home]


def test_passphrase_messages_and_whoami_without_unlocking(relays, tmp_path):
    env = passphrase_env()
    relay = relays("relay")
    home = tmp_path / "alice"
    coords(env, home, "init", "--server", relay.url, "--name", "Alice")
    me = data(env, home, "whoami")
    empty = dict(env, COORDS_PASSPHRASE="")
    assert "no passphrase given" in coords(empty, home, "friends", expect=USAGE).stderr
    unset = {k: v for k, v in env.items() if k != "COORDS_PASSPHRASE"}
    no_terminal = subprocess.run([os.path.join(BIN, "coords"), "friends", "--home", str(home)], env=unset, capture_output=True,
                                 text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    assert no_terminal.returncode == USAGE and "no passphrase given: set COORDS_PASSPHRASE" in no_terminal.stderr
    assert "wrong passphrase" in coords(dict(env, COORDS_PASSPHRASE="not the one"), home, "friends", expect=USAGE).stderr
    # whoami needs no passphrase at all (public.json), and says the same as with it.
    assert data(unset, home, "whoami") == me
    assert me["link"] in coords(unset, home, "whoami", "--no-qr").stdout
    # An older directory without public.json unlocks once and writes it; a tampered file is ignored.
    (home / "public.json").unlink()
    assert "no passphrase given" in coords(empty, home, "whoami", expect=USAGE).stderr
    assert data(env, home, "whoami") == me and (home / "public.json").exists()
    (home / "public.json").write_text(json.dumps(dict(me, id="B" * 43)))
    assert data(env, home, "whoami") == me


def test_an_empty_message_is_refused_in_one_line(relays, tmp_path):
    env = passphrase_env()
    relay = relays("relay")
    alice, bob = alice_and_bob(env, tmp_path, relay.url, friends=False)
    coords(env, alice, "add", data(env, bob, "whoami")["link"])
    for text in ("", "   ", "\n\t"):
        result = coords(env, alice, "send", "Bob", text, expect=USAGE)
        assert result.stderr.startswith("coords: the message is empty") and result.stderr.count("\n") == 1
    # Refused before the data directory is opened: no passphrase is needed to be told.
    no_passphrase = {k: v for k, v in env.items() if k != "COORDS_PASSPHRASE"}
    result = coords(no_passphrase, alice, "send", "Bob", " ", expect=USAGE, stdin=subprocess.DEVNULL)
    assert result.stderr.startswith("coords: the message is empty")
    assert data(env, alice, "chat", "Bob")["messages"] == [] and data(env, alice, "outbox")["entries"] == []
