/*
 * term.c - the layout of standard output (term.h).
 */
#include "term.h"

#include <stdlib.h>
#include <string.h>

#include "io.h"

size_t ml_term_columns_env(void)
{
    const char *v = ml_env("COLUMNS");
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    return *end || n == 0 || n > 100000 ? 0 : (size_t)n;
}

void ml_term_layout(bool wide, struct ml_layout *lay)
{
    memset(lay, 0, sizeof(*lay));
    bool tty = ml_stdout_is_tty();
    const char *no_color = ml_env("NO_COLOR"), *term = ml_env("TERM");
    /* https://no-color.org: present and not empty disables colour. */
    lay->colour = tty && !(no_color && *no_color) && !(term && !strcmp(term, "dumb"));
    if (wide)
        return;
    size_t w = ml_term_columns_env();
    if (!w)
        w = ml_stdout_columns();
    if (w && w < ML_TERM_MIN_WIDTH)
        w = ML_TERM_MIN_WIDTH;
    lay->width = w;
}
