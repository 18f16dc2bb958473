/*
 * jsonl.c - JSON string literals for the timeline's one-line records (our own bytes, as
 * everywhere in memledger; lib/render's writer indents, a JSON Lines record must not).
 */
#include "memledger/monitor.h"

#include <stdio.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    uint32_t cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

enum ml_status ml_jsonl_str(struct ml_buf *b, const char *s, size_t n)
{
    enum ml_status st = ml_buf_addc(b, '"');
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && st == ML_OK;) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') {
            char e[3] = {'\\', (char)c, 0};
            st = ml_buf_adds(b, e);
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            char e[8];
            (void)snprintf(e, sizeof(e), "\\u%04x", c);
            st = ml_buf_adds(b, e);
            i++;
        } else {
            size_t l = utf8_len(u + i, n - i);
            if (l == 0) {
                st = ml_buf_adds(b, "\\ufffd");
                i++;
            } else {
                st = ml_buf_add(b, u + i, l);
                i += l;
            }
        }
    }
    if (st == ML_OK)
        st = ml_buf_addc(b, '"');
    return st;
}
