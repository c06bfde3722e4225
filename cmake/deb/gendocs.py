#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Generates, from what the built binaries print, the files of the Debian packages that
# must not drift from them (@ref LLP 0001#deb-docs):
#
#   gendocs.py man-fwdsink FWDSINK OUT.1      fwdsink(1): every flag, config key and
#                                             FWDSINK_* variable, exit codes, signals
#   gendocs.py man-central CENTRAL OUT.1      fwdsink-central(1) from its --help
#   gendocs.py conffile FWDSINK OUT.toml      /etc/fwdsink/fwdsink.toml: every key, with
#                                             its help line, commented out at its default
#
# The sources are `fwdsink --help`, `fwdsink forward --help` (generated from the settings
# table), `fwdsink forward --print-config` (every key with its default, in table order)
# and the other commands' --help. A key that --print-config lists but --help does not
# is an error, so the build fails instead of shipping a page that lacks it.
import os
import re
import subprocess
import sys

PACKAGE_SPOOL = "/var/lib/fwdsink/spool"


def run(*argv):
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}  # no FWDSINK_* from the caller
    out = subprocess.run(argv, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"gendocs: {' '.join(argv)} exited {out.returncode}: {out.stderr}")
    return out.stdout


def roff(text):
    """Escapes running text for roff."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + l if l[:1] in (".", "'") else l) for l in text.split("\n"))


def paragraphs(lines):
    """Splits lines into blank-line separated blocks."""
    blocks, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


OPTION = re.compile(r"^  (-\S.*?)\s{2,}(\S.*)$")  # "  --flag VALUE    help"
OPTION_ONE_SPACE = re.compile(r"^  (-\S+(?: (?:'[^']*'|\S+))?) (\S.*)$")


def parse_options(block):
    """Returns [(tag, help)] of an option block; deeper-indented lines continue one."""
    opts = []
    for line in block:
        m = OPTION.match(line) or OPTION_ONE_SPACE.match(line)
        if m and line.startswith("  -"):
            opts.append([m.group(1), m.group(2)])
        elif opts and line.startswith("    "):
            opts[-1][1] += "\n" + line.strip()
        else:
            sys.exit(f"gendocs: cannot read the option line {line!r}")
    return opts


def parse_print_config(text):
    """Returns [(key, default or None)] in table order."""
    keys = []
    for line in text.splitlines():
        m = re.match(r"^([a-z0-9_]+) = (.*?)\s+# (.*)$", line)
        if m:  # a value given below (spool, url) is not a default
            keys.append((m.group(1), m.group(2) if m.group(3) == "default" else None))
            continue
        m = re.match(r"^# ([a-z0-9_]+) \(unset\)$", line)
        if m:
            keys.append((m.group(1), None))
    if not keys:
        sys.exit("gendocs: --print-config listed no keys")
    return keys


def flag_for_key(key):
    return "--" + key.replace("_", "-")


def env_for_key(key):
    return "FWDSINK_" + key.upper()


class Forward:
    """What `fwdsink forward --help` and `--print-config` say."""

    def __init__(self, binary):
        helptext = run(binary, "forward", "--help").split("\n")
        blocks = paragraphs(helptext[1:])
        self.synopsis = helptext[0].removeprefix("usage: ")
        self.description = " ".join(l.strip() for l in blocks[0])
        self.signals = [s.strip() + "." for s in re.split(r"\.\s", self.description + " ")
                        if "SIG" in s]
        self.options = parse_options(blocks[1])
        self.settings_text = " ".join(l.strip() for l in blocks[2])
        self.exit_codes = self._exit_codes(blocks[3:])
        by_flag = {tag.split(" ")[0]: (tag, h) for tag, h in self.options}
        self.keys = []
        for key, default in parse_print_config(
                run(binary, "forward", "--print-config", "--spool", "/x", "--url", "http://h/")):
            if flag_for_key(key) not in by_flag:
                sys.exit(f"gendocs: key {key} has no {flag_for_key(key)} in forward --help")
            tag, h = by_flag[flag_for_key(key)]
            value = tag.split(" ", 1)[1] if " " in tag else ""
            self.keys.append({"key": key, "default": default, "help": h, "value": value})

    @staticmethod
    def _exit_codes(blocks):
        """Reads "--once exit codes:" (a list) and "exit codes: 64 what, 74 what."."""
        codes, when, prose = [], None, None
        for line in (l for block in blocks for l in block):
            if line.startswith("exit codes:"):
                when, prose = None, line.removeprefix("exit codes:").strip()
            elif prose is not None:
                prose += " " + line.strip()
            elif line.strip().endswith(" exit codes:"):
                when = line.strip().removesuffix(" exit codes:")
            elif when and (m := re.match(r"^  (\d+)\s+(.*)$", line)):
                codes.append([m.group(1), f"({when}) " + m.group(2)])
            elif when and codes:
                codes[-1][1] += " " + line.strip()
        for part in re.split(r",\s+(?=\d+ )", (prose or "").rstrip(".")):
            if part:
                code, what = part.split(" ", 1)
                codes.append([code, what])
        if not codes or prose is None:
            sys.exit("gendocs: forward --help lists no exit codes")
        return codes


def version_of(binary):
    return run(binary, "--version").split("\n")[0].split(" ")[-1]


def lower_first(text):
    return text[:1].lower() + text[1:]


def tp(tag, body):
    return f".TP\n{tag}\n{body}\n"


def man_fwdsink(binary, out):
    fwd = Forward(binary)
    main = run(binary, "--help").split("\n")
    main_blocks = paragraphs(main[1:])
    version = version_of(binary)
    page = [f'.TH FWDSINK 1 "" "fwdsink {version}" "User Commands"',
            ".\\\" Generated by cmake/deb/gendocs.py from the --help texts; do not edit.",
            ".SH NAME", "fwdsink \\- " + roff(lower_first(" ".join(main_blocks[0]).strip().rstrip("."))),
            ".SH SYNOPSIS", ".B fwdsink", roff(main[0].removeprefix("usage: fwdsink ")), ".br",
            ".B fwdsink forward", roff(fwd.synopsis.removeprefix("fwdsink forward ")),
            ".SH DESCRIPTION", roff(" ".join(main_blocks[0]).strip()), ".PP", "Commands:"]
    for line in main_blocks[1][1:]:
        cmd, what = line.strip().split(None, 1)
        page.append(tp(f".B {cmd}", roff(what)).rstrip())
    page += [".PP", roff(" ".join(l.strip() for l in main_blocks[2]))]
    page += [".SH OPTIONS", "Options of", ".BR \"fwdsink forward\" .", roff(fwd.description)]
    for tag, h in fwd.options:
        flag, _, value = tag.partition(" ")
        body = roff(h)
        key = flag[2:].replace("-", "_")
        if any(k["key"] == key for k in fwd.keys):
            body += f"\n.br\nConfig key \\fB{roff(key)}\\fR, variable \\fB{roff(env_for_key(key))}\\fR."
        page.append(tp(f"\\fB{roff(flag)}\\fR" + (f" \\fI{roff(value)}\\fR" if value else ""),
                       body).rstrip())
    page += [".SH CONFIGURATION FILE", roff(fwd.settings_text), ".PP",
             "The package's file is", ".IR /etc/fwdsink/fwdsink.toml ;",
             "every key is in it, commented out at its default. The keys, in order:"]
    for k in fwd.keys:
        tag = f"\\fB{roff(k['key'])}\\fR"
        if k["default"] is not None:
            tag += " = " + roff(k["default"])
        page.append(tp(tag, roff(k["help"])).rstrip())
    page += [".SH ENVIRONMENT", tp(".B FWDSINK_CONFIG", "the config file, when \\-\\-config is "
                                   "not given").rstrip()]
    for k in fwd.keys:
        page.append(tp(f".B {roff(env_for_key(k['key']))}",
                       f"sets \\fB{roff(k['key'])}\\fR ({roff(flag_for_key(k['key']))})").rstrip())
    page += [".PP", "Any other FWDSINK_* variable is warned about and ignored.",
             ".SH EXIT STATUS"]
    for code, what in fwd.exit_codes:
        page.append(tp(f".B {code}", roff(what)).rstrip())
    for cmd in ("dead", "status"):
        sentence = re.search(r"Exit [^.]*\.", run(binary, cmd, "--help").replace("\n", " "))
        for m in re.finditer(r"(\d+) (when [^,.]*)", sentence.group(0) if sentence else ""):
            page.append(tp(f".B {m.group(1)}", roff(f"(fwdsink {cmd}) {m.group(2)}")).rstrip())
    page.append(".SH SIGNALS")
    for sentence in fwd.signals:
        names = ", ".join(re.findall(r"SIG[A-Z]+", sentence))
        page.append(tp(f".B {names}", roff(sentence)).rstrip())
    page.append(tp(".B SIGKILL", roff("needs no handling: cursors are saved after every "
                                      "acknowledged chunk and a re-sent chunk keeps its key."))
                .rstrip())
    page.append(".SH OTHER COMMANDS")
    for cmd in ("dead", "generate", "status"):
        page += [f".SS fwdsink {cmd}", ".nf", roff(run(binary, cmd, "--help").rstrip("\n")),
                 ".fi"]
    page += [".SH FILES",
             tp(".I /etc/fwdsink/fwdsink.toml", "settings read by fwdsink.service").rstrip(),
             tp(".I /etc/default/fwdsink", "FWDSINK_* variables and FWDSINK_ARGS for the "
                "service").rstrip(),
             tp(f".I {PACKAGE_SPOOL}", "the service's spool, owned by the fwdsink "
                "user").rstrip(),
             tp(".I /lib/systemd/system/fwdsink.service", "the systemd unit").rstrip(),
             ".SH SEE ALSO", ".BR fwdsink\\-central (1)"]
    write(out, "\n".join(page) + "\n")


def man_central(binary, out):
    text = run(binary, "--help").split("\n")
    blocks = paragraphs(text[1:])
    version = version_of(binary)
    page = [f'.TH FWDSINK-CENTRAL 1 "" "fwdsink-central {version}" "User Commands"',
            ".\\\" Generated by cmake/deb/gendocs.py from --help; do not edit.",
            ".SH NAME", "fwdsink\\-central \\- "
            + roff(lower_first(blocks[0][0].split(".")[0])),
            ".SH SYNOPSIS", ".B fwdsink\\-central",
            roff(text[0].removeprefix("usage: fwdsink-central ")),
            ".SH DESCRIPTION", roff(" ".join(l.strip() for l in blocks[0])), ".SH OPTIONS"]
    for block in blocks[1:]:
        for tag, h in parse_options(block):
            flags = " ".join(f"\\fB{roff(w)}\\fR" if w.startswith("-") else f"\\fI{roff(w)}\\fR"
                             for w in tag.split(" "))
            lines = h.split("\n")
            body = roff(lines[0]) + "".join("\n.br\n" + roff(l) for l in lines[1:])
            page.append(tp(flags, body).rstrip())
    page += [".SH SEE ALSO", ".BR fwdsink (1)"]
    write(out, "\n".join(page) + "\n")


def conffile(binary, out):
    fwd = Forward(binary)
    version = version_of(binary)
    lines = [
        f"# /etc/fwdsink/fwdsink.toml: the settings of `fwdsink forward` (fwdsink {version}).",
        "# fwdsink.service reads it with --config. Generated from the settings table: every",
        "# key is here with its help line, commented out at its default; remove the '#' to",
        "# set one. Values are the text a flag would carry (quoted). Precedence: flags",
        "# (FWDSINK_ARGS in /etc/default/fwdsink), then FWDSINK_<KEY> variables (also",
        "# there), then this file, then the defaults. Keep secrets in files (token_file,",
        "# header_file, basic_auth_file) readable by the fwdsink group, not here. See",
        "# fwdsink(1) and `fwdsink forward --config /etc/fwdsink/fwdsink.toml --print-config`.",
    ]
    for k in fwd.keys:
        lines += ["", f"# {k['key']}: " + k["help"].replace("\n", "\n# "),
                  f"#   (flag {flag_for_key(k['key'])}, variable {env_for_key(k['key'])})"]
        if k["key"] == "spool":
            lines.append(f'spool = "{PACKAGE_SPOOL}"')
        elif k["default"] is not None:
            lines.append(f"#{k['key']} = {k['default']}")
        else:
            placeholder = k["value"].strip("'") or "VALUE"
            lines.append(f'#{k["key"]} = "{placeholder}"')
    write(out, "\n".join(lines) + "\n")


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: gendocs.py man-fwdsink|man-central|conffile BINARY OUT")
    {"man-fwdsink": man_fwdsink, "man-central": man_central,
     "conffile": conffile}[sys.argv[1]](sys.argv[2], sys.argv[3])
