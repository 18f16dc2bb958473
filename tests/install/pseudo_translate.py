#!/usr/bin/env python3
"""pseudo_translate.py IN.po OUT.po - "translate" every message of a msgen catalog (msgstr = msgid)
as a translator writing a full catalog would: every ASCII letter becomes its fullwidth form (two
columns, like Chinese), while the printf directives memledger's messages really use (%s, %u,
%llu, %zu, %d, %x, %c, %.0f, %g, %%, with flags and widths, but never the space flag, which
memledger never uses) and the escapes of the .po syntax (\\n, \\", \\t) stay as they are. A message
that xgettext flagged c-format only because of "5% headroom" loses its phantom directive here, and
msgfmt --check then fails on it. One pass over the file (msgfilter would start a process per
message)."""
import re
import sys

DIRECTIVE = re.compile(r"%%|%(?:\d+\$)?[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t)?[diouxXcspfeEgG]")
TOKEN = re.compile(r"\\.|" + DIRECTIVE.pattern)


def wide(text):
    return "".join(chr(ord(c) - 0x21 + 0xFF01) if c.isascii() and c.isalpha() else c for c in text)


def translate(body):
    out, pos = [], 0
    for m in TOKEN.finditer(body):
        out.append(wide(body[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(wide(body[pos:]))
    return "".join(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    lines = open(src, encoding="utf-8").read().split("\n")
    out, in_str, header = [], False, True
    for line in lines:
        if line.startswith("msgid "):
            in_str = False
            header = line == 'msgid ""'
        elif line.startswith("msgstr"):
            in_str = not header
            if in_str:
                key, _, rest = line.partition(" ")
                line = key + " " + '"' + translate(rest[1:-1]) + '"'
            header = False
        elif line.startswith('"') and in_str:
            line = '"' + translate(line[1:-1]) + '"'
        elif not line.startswith('"'):
            in_str = False
        out.append(line)
    open(dst, "w", encoding="utf-8").write("\n".join(out))


main()
