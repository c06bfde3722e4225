#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that no C or C++ function is 60 lines or more: the house limit, for the library
and the shipped programs alike (LLP 0014#layers; run by .ci/run).

A function's length runs from the first line of its signature to its closing brace,
both counted; lambdas and local classes count towards the function they sit in.

Approximate and hand-written: a scanner that blanks comments, strings and preprocessor
lines, then matches braces, calling a brace at namespace or class level a function body
when the text before it ends in a parameter list (with const, noexcept, override...,
or a constructor's initializer list). Debian packages no tool that fits: lizard is only
on PyPI, and clang-tidy's readability-function-size needs a configured build and parses
every file with its includes (minutes, against well under a second here). Macros that
expand to functions, and templates hiding ')' or '{' in odd places, can fool it.

  scripts/function-length.py DIR...          check *.h, *.c, *.cc, *.cpp, *.hpp under each DIR
                                             (exit 1 and one line per long function)
  scripts/function-length.py --top N DIR...  also print the N longest functions
"""
import pathlib
import re
import sys

LIMIT = 60
SUFFIXES = {".h", ".c", ".cc", ".cpp", ".hpp"}
ROOT = pathlib.Path(__file__).resolve().parent.parent

# Text before '{' that makes the brace a function body: a parameter list, then the
# qualifiers a member function or a function may carry, then maybe a trailing return.
FUNCTION_TAIL = re.compile(
    r"\)\s*(?:(?:const|volatile|noexcept(?:\s*\([^)]*\))?|override|final|mutable|&&|&)\s*)*"
    r"(?:->[^;{}]*)?$"
)
# A constructor's initializer list has begun: ") :" (not "::").
INIT_LIST = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")
SCOPE = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union|extern)\b", re.S)
ACCESS = re.compile(r"^\s*(?:public|private|protected)\s*:(?!:)")


def blank(text):
    """Returns text with comments, string and character literals and preprocessor lines
    replaced by spaces; newlines are kept so that offsets keep their line numbers."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            wipe(i, j)
            i = j
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"' and i > 0 and text[i - 1] == "R":
            m = re.compile(r'"([^(\s]*)\(').match(text, i)
            end = text.find(")" + m.group(1) + '"', m.end()) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            wipe(i + 1, j - 1)
            i = j
        elif c == '"' or (c == "'" and not digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            wipe(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def digit_separator(text, i):
    """Whether the quote at i separates digits (100'000) rather than opening 'x'."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_'."):
        j -= 1
    return j < i and text[j].isdigit()


def assigns(header):
    """Whether header declares a variable with "= ..." (outside any parentheses and
    a leading template parameter list)."""
    if re.match(r"template\s*<", header):
        angles = 0
        for k, ch in enumerate(header):
            angles += {"<": 1, ">": -1}.get(ch, 0)
            if ch == ">" and angles == 0:
                header = header[k + 1:]
                break
    depth = 0
    for k, ch in enumerate(header):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "=" and depth == 0 and header[k + 1:k + 2] != "=" and \
                header[k - 1:k] not in ("=", "!", "<", ">") and \
                not re.search(r"operator\s*[-+*/%^&|<>]*$", header[:k]):
            return True
    return False


def without_template_args(header):
    """Returns header without its <...> lists, so that std::function<void(int)> F(...)
    is named F, not void (approximate: a '<' of operator< is taken for a list too)."""
    while True:
        shorter = re.sub(r"<[^<>;{}]*>", "", header)
        if shorter == header:
            return header
        header = shorter


def functions(text):
    """Yields (name, first line, last line) of each function body in the file."""
    code = blank(text)
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_of[k] = line
        if ch == "\n":
            line += 1
    line_of[len(code)] = line

    def skip_block(k):
        """Returns the offset just past the brace matching the '{' at k."""
        depth = 0
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    return k + 1
            k += 1
        return k

    def scan(start, end):
        header_start = start
        k = start
        while k < end:
            ch = code[k]
            if ch in ";}":
                header_start = k + 1
                k += 1
                continue
            if ch != "{":
                k += 1
                continue
            header = code[header_start:k]
            access = ACCESS.match(header)
            if access:
                header_start += access.end()
                header = code[header_start:k]
            stripped = header.strip()
            close = skip_block(k)
            if stripped.count("(") > stripped.count(")"):
                k = close  # a lambda or braces inside parentheses: the header goes on
                continue
            if SCOPE.match(stripped) and not FUNCTION_TAIL.search(stripped) and \
                    not assigns(stripped):
                scan(k + 1, close - 1)  # a namespace or class: look inside
            elif INIT_LIST.search(stripped) and re.search(r"[\w>]\s*$", stripped) and \
                    not FUNCTION_TAIL.search(stripped):
                k = close  # a member's braced initializer: the header goes on
                continue
            elif assigns(stripped):
                pass  # a variable's initializer, a lambda's body included
            elif FUNCTION_TAIL.search(stripped) or INIT_LIST.search(stripped):
                first = header_start + (len(header) - len(header.lstrip()))
                name = re.search(r"([~\w:]+|operator\s*\S+)\s*\(", without_template_args(stripped))
                yield_list.append((name.group(1) if name else "?", line_of[first],
                                   line_of[close - 1]))
            header_start = close
            k = close

    yield_list = []
    scan(0, len(code))
    return yield_list


def main(argv):
    top = 0
    if argv[:1] == ["--top"]:
        top = int(argv[1])
        argv = argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 64
    found = []
    for folder in argv:
        base = (ROOT / folder) if not pathlib.Path(folder).is_absolute() else pathlib.Path(folder)
        if not base.is_dir():
            print(f"function-length.py: {folder}: not a folder", file=sys.stderr)
            return 64
        for path in sorted(base.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for name, first, last in functions(text):
                found.append((last - first + 1, path.relative_to(ROOT), first, name))
    long = [f for f in found if f[0] >= LIMIT]
    for length, path, first, name in sorted(long, key=lambda f: (str(f[1]), f[2])):
        print(f"{path}:{first}: {name} is {length} lines (limit: under {LIMIT})")
    for length, path, first, name in sorted(found, reverse=True)[:top]:
        print(f"  {length:4d}  {path}:{first} {name}")
    print(f"function-length.py: {len(found)} functions in {' '.join(argv)}; "
          f"{len(long)} of {LIMIT} lines or more")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
