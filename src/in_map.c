/*
 * in_map.c - a regular file's bytes mapped a window at a time in place of read(2) (io.h,
 * ml_in_map): no copy from the page cache, and the memory held stays two windows whatever the
 * file's size. Apart from io.c so that its test links it alone (tests/unit/test_in_map.c).
 */
/* MAP_POPULATE is Linux's, outside the POSIX the build asks for */
#define _DEFAULT_SOURCE

#include "io.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef MAP_POPULATE
#define IN_MAP_POPULATE MAP_POPULATE
#else
#define IN_MAP_POPULATE 0
#endif

/* The windows ml_in_map holds (io.h): the last two it mapped (the one being read, and the next, which
 * another thread may be reading ahead: src/cmd_diagnose.c); a process reads one file at a time. A
 * SIGBUS inside one (the file was cut shorter while mapped) maps zeros over the rest of it and
 * marks the file as ended. The handler runs in the thread that faulted; the windows change only
 * while no other thread reads them. */
static struct {
    char *base[2];
    size_t len[2];
    unsigned next; /* the slot the next window takes (the older one) */
    size_t page;
    int zero; /* /dev/zero, mapped over a cut window; -1 until opened */
} in_map = {{NULL, NULL}, {0, 0}, 0, 0, -1};
static volatile sig_atomic_t in_map_cut;

static void in_map_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char *a = si->si_addr;
    for (unsigned i = 0; i < 2; i++) {
        char *b = in_map.base[i];
        if (!b || a < b || a >= b + in_map.len[i])
            continue;
        char *pg = b + ((size_t)(a - b) & ~(in_map.page - 1));
        if (mmap(pg, (size_t)(b + in_map.len[i] - pg), PROT_READ, MAP_PRIVATE | MAP_FIXED, in_map.zero, 0) !=
            MAP_FAILED) {
            in_map_cut = 1;
            return; /* the load is made again, and reads a zero */
        }
    }
    signal(sig, SIG_DFL); /* not ours: the default action, when the load is made again */
}

/* Unmap the window of slot i. */
static void in_map_drop(unsigned i)
{
    if (in_map.base[i])
        munmap(in_map.base[i], in_map.len[i]);
    in_map.base[i] = NULL;
    in_map.len[i] = 0;
}

void ml_in_unmap(void)
{
    in_map_drop(0);
    in_map_drop(1);
    in_map.next = 0;
    in_map_cut = 0;
}

long ml_in_map(int h, size_t n, const char **p)
{
    unsigned slot = in_map.next;
    in_map_drop(slot);
    if (in_map_cut)
        return 0; /* the file was cut: its end (ml_in_read finds no more past the cut) */
    struct stat st;
    off_t pos;
    if (fstat(h, &st) != 0 || !S_ISREG(st.st_mode) || (pos = lseek(h, 0, SEEK_CUR)) < 0 || pos >= st.st_size)
        return 0;
    if (in_map.zero < 0) { /* once: the page size and /dev/zero */
        long pg = sysconf(_SC_PAGESIZE);
        in_map.zero = pg > 0 ? open("/dev/zero", O_RDONLY | O_CLOEXEC) : -1;
        if (in_map.zero < 0)
            return 0;
        in_map.page = (size_t)pg;
    }
    struct sigaction sa; /* (each time: whoever set another handler since, this window needs ours) */
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = in_map_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, NULL) != 0)
        return 0;
    size_t skip = (size_t)pos & (in_map.page - 1);
    size_t len = (uint64_t)(st.st_size - pos) < n ? (size_t)(st.st_size - pos) : n;
    /* the window's pages mapped in one call, not 16 at a page fault (Linux's fault-around) */
    void *m = mmap(NULL, skip + len, PROT_READ, MAP_PRIVATE | IN_MAP_POPULATE, h, pos - (off_t)skip);
    if (m == MAP_FAILED)
        return 0;
    if (lseek(h, pos + (off_t)len, SEEK_SET) < 0) {
        munmap(m, skip + len);
        return 0;
    }
    posix_fadvise(h, 0, 0, POSIX_FADV_SEQUENTIAL); /* (the read-ahead of a file not yet cached) */
    in_map.base[slot] = m;
    in_map.len[slot] = skip + len;
    in_map.next = slot ^ 1;
    *p = (const char *)m + skip;
    return (long)len;
}
