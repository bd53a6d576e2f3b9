#!/usr/bin/env python3
"""Writes a man page (man(7) roff) from a command's own definitions.

Usage: scripts/gen-man.py EXECUTABLE OUTPUT.1

Asks the built executable for its command tree (`--experimental-dump-help`, the JSON that
swift-argument-parser derives from the same definitions that parse the arguments) and renders
NAME, SYNOPSIS, DESCRIPTION, every subcommand with its options, and SEE ALSO. `make man` runs it
for coords and coords-relay; `make install` installs the pages.
"""
import json
import os
import subprocess
import sys


def roff(text):
    """Escapes text for roff: backslashes, and dots or quotes at the start of a line."""
    lines = []
    for line in text.replace("\\", "\\e").splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append("".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in line.replace("-", "\\-")))
    return "\n".join(lines)


def synopsis_of(argument):
    name = argument.get("preferredName") or {}
    flag = ("--" if name.get("kind") == "long" else "-") + name["name"] if name else None
    value = argument.get("valueName", "value")
    if argument["kind"] == "positional":
        text = f"<{value}>" + ("..." if argument.get("isRepeating") else "")
    elif argument["kind"] == "flag":
        text = flag
    else:
        text = f"{flag} <{value}>"
    return f"[{text}]" if argument.get("isOptional") else text


def visible(items, root=True):
    """What --help shows; below the root, without the --version and --help every command has."""
    def common(item):
        return not root and any(n.get("name") in ("version", "help") for n in item.get("names", [])) and item.get("kind") == "flag"
    return [item for item in items or [] if item.get("shouldDisplay", True) and not common(item)]


def render_arguments(arguments, root=True):
    out = []
    for argument in visible(arguments, root):
        names = ", ".join(("--" if n["kind"] == "long" else "-") + n["name"] for n in argument.get("names", []))
        label = names or f"<{argument.get('valueName', 'value')}>"
        if argument["kind"] == "option":
            label += f" <{argument.get('valueName', 'value')}>"
        out.append(".TP")
        out.append(f"\\fB{roff(label)}\\fR")
        text = argument.get("abstract", "")
        if argument.get("defaultValue"):
            text += f" (default: {argument['defaultValue']})"
        out.append(roff(text) if text else "")
    return out


def render_command(command, path, out):
    title = " ".join(path)
    args = " ".join(synopsis_of(a) for a in visible(command.get("arguments"), root=False))
    out.append(f".SS {roff(title)}")
    out.append(f"\\fB{roff(title)}\\fR {roff(args)}".rstrip())
    out.append(".PP")
    out.append(roff(command.get("abstract", "")))
    if command.get("discussion"):
        out.append(".PP")
        out.append(roff(command["discussion"]))
    options = render_arguments(command.get("arguments"), root=False)
    if options:
        out.append(".RS")
        out += options
        out.append(".RE")
    for sub in visible(command.get("subcommands")):
        if sub["commandName"] != "help":
            render_command(sub, path + [sub["commandName"]], out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    executable, output = sys.argv[1], sys.argv[2]
    dumped = subprocess.run([executable, "--experimental-dump-help"], capture_output=True, text=True, check=True).stdout
    root = json.loads(dumped)["command"]
    version = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    name = root["commandName"]
    subcommands = [s for s in visible(root.get("subcommands")) if s["commandName"] != "help"]
    upper = name.upper().replace("-", "\\-")
    out = [f'.TH {upper} 1 "" "{name} {version}" "User Commands"', ".ad l", ".nh",
           ".SH NAME", f"{roff(name)} \\- {roff(root.get('abstract', ''))}",
           ".SH SYNOPSIS", f"\\fB{roff(name)}\\fR <subcommand> [options]" if subcommands else f"\\fB{roff(name)}\\fR [options]",
           ".SH DESCRIPTION", roff(root.get("discussion", root.get("abstract", "")))]
    options = render_arguments(root.get("arguments"))
    out += [".SH OPTIONS"] + options if options else []
    if subcommands:
        out.append(".SH COMMANDS")
        for sub in subcommands:
            render_command(sub, [name, sub["commandName"]], out)
    see = "coords-relay (1)" if name == "coords" else "coords (1)"
    out += [".SH SEE ALSO", f"{roff(see)}; docs/CLI.md and docs/RELAY.md in the CoordsCore sources.", ""]
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    print(f"gen-man: {output} ({len(subcommands)} commands)")


if __name__ == "__main__":
    main()
