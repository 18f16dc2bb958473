#!/usr/bin/env python3
"""pseudo_translate.py - a msgfilter filter: the message on stdin, "translated" on stdout, as a
translator writing a full catalog would: every ASCII letter becomes its fullwidth form (two
columns, like Chinese), while the printf directives memledger's messages really use (%s, %u,
%llu, %zu, %d, %x, %c, %.0f, %g, %%, with flags and widths, but never the space flag, which
memledger never uses) stay as they are. A message that xgettext flagged c-format only because of
"5% headroom" loses its phantom directive here, and msgfmt --check then fails on it."""
import re
import sys

DIRECTIVE = re.compile(r"%%|%(?:\d+\$)?[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t)?[diouxXcspfeEgG]")


def wide(text):
    return "".join(chr(ord(c) - 0x21 + 0xFF01) if c.isascii() and c.isalpha() else c for c in text)


def main():
    msg = sys.stdin.read()
    out, pos = [], 0
    for m in DIRECTIVE.finditer(msg):
        out.append(wide(msg[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(wide(msg[pos:]))
    sys.stdout.write("".join(out))


main()
