/*
 * term.c - the layout of standard output (term.h).
 */
#include "term.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* COLUMNS as a width, 0 when unset or not a number (as coreutils reads it). */
static size_t columns_env(void)
{
    const char *v = getenv("COLUMNS");
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    return *end || n == 0 || n > 100000 ? 0 : (size_t)n;
}

void ml_term_layout(bool wide, struct ml_layout *lay)
{
    memset(lay, 0, sizeof(*lay));
    bool tty = isatty(STDOUT_FILENO) == 1;
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    /* https://no-color.org: present and not empty disables colour. */
    lay->colour = tty && !(no_color && *no_color) && !(term && !strcmp(term, "dumb"));
    if (wide)
        return;
    size_t w = columns_env();
    struct winsize ws;
    if (!w && tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
        w = ws.ws_col;
    if (w && w < ML_TERM_MIN_WIDTH)
        w = ML_TERM_MIN_WIDTH;
    lay->width = w;
}
