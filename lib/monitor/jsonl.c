/*
 * jsonl.c - JSON string literals for the timeline's one-line records (our own bytes, as
 * everywhere in memledger; lib/render's writer indents, a JSON Lines record must not).
 */
#include "memledger/monitor.h"

#include <stdio.h>

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
            size_t l = ml_utf8_len(u + i, n - i);
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
