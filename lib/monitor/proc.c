/*
 * proc.c - what /proc says about a process: its name and its parent (for the process tree of
 * the watched command and the names of the other processes on a GPU).
 */
#include "memledger/monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum ml_status ml_proc_read(const char *proc_root, uint32_t pid, struct ml_proc_info *out)
{
    memset(out, 0, sizeof(*out));
    out->pid = pid;
    char path[512];
    (void)snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ML_ERR_NOTFOUND;
    char buf[1024];
    ssize_t n;
    do {
        n = read(fd, buf, sizeof(buf) - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return ML_ERR_NOTFOUND;
    buf[n] = '\0';
    /* "PID (COMM) STATE PPID ...": comm may hold spaces and parentheses; it ends at the last ')'. */
    char *open_p = strchr(buf, '(');
    char *close_p = strrchr(buf, ')');
    if (!open_p || !close_p || close_p < open_p)
        return ML_ERR_PARSE;
    size_t len = (size_t)(close_p - open_p - 1);
    if (len >= sizeof(out->name))
        len = sizeof(out->name) - 1;
    memcpy(out->name, open_p + 1, len);
    out->name[len] = '\0';
    for (char *p = out->name; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    const char *p = close_p + 1;
    while (*p == ' ')
        p++;
    if (*p)
        p++; /* state */
    char *end = NULL;
    unsigned long ppid = strtoul(p, &end, 10);
    if (end != p && ppid <= UINT32_MAX)
        out->ppid = (uint32_t)ppid;
    return ML_OK;
}

bool ml_proc_descends(const char *proc_root, uint32_t pid, uint32_t root)
{
    if (root == 0)
        return false;
    for (int i = 0; i < 64 && pid > 1; i++) {
        if (pid == root)
            return true;
        struct ml_proc_info pi;
        if (ml_proc_read(proc_root, pid, &pi) != ML_OK)
            return false;
        pid = pi.ppid;
    }
    return pid == root;
}
