/*
 * fake_script.h - the scripted readings the fake vendor libraries replay (tests only).
 *
 * A script is a text file named by FAKE_NVML_SCRIPT or FAKE_RSMI_SCRIPT, one directive a line:
 *   # comment
 *   init CODE               the vendor init call fails with CODE
 *   count N                 N devices (default 1)
 *   name D TEXT             device D's name
 *   uuid D TEXT             device D's UUID
 *   total D BYTES           device D's memory (default 80 GiB)
 *   reserved D BYTES        NVML v2: driver-reserved memory
 *   v2 CODE                 NVML: the v2 memory call always returns CODE
 *   procs off | procs CODE  no process query (NOT_SUPPORTED) / it fails with CODE
 *   step D used=BYTES [procs=PID:BYTES,...]   one reading of device D
 *   step D fail=CODE                          one failed reading of device D
 * PID may be @child (the process whose parent is the process that loaded the library, i.e. the
 * command memledger watch started) and BYTES may be "na" (NVML's "not available"). Readings are
 * replayed in order per device; the last one repeats.
 */
#ifndef ML_FAKE_SCRIPT_H
#define ML_FAKE_SCRIPT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FK_DEV       8
#define FK_STEPS     64
#define FK_PROCS     8
#define FK_PID_CHILD 0xFFFFFFFFu

struct fk_proc {
    uint32_t pid; /* FK_PID_CHILD = @child */
    uint64_t bytes;
    bool na; /* "na" */
};

struct fk_step {
    int fail; /* vendor code, 0 = a reading */
    uint64_t used;
    uint32_t n_procs;
    struct fk_proc procs[FK_PROCS];
};

struct fk_dev {
    char name[96], uuid[96];
    uint64_t total, reserved;
    uint32_t n_steps;
    struct fk_step steps[FK_STEPS];
    uint32_t cur;  /* next step to replay */
    uint32_t last; /* step last replayed */
};

struct fk_script {
    bool loaded;
    int init_fail;
    int v2_code; /* -1 = normal */
    bool procs_off;
    int procs_fail;
    uint32_t count;
    struct fk_dev dev[FK_DEV];
};

static uint64_t fk_u64(const char *s, bool *na)
{
    if (na)
        *na = !strncmp(s, "na", 2);
    return strtoull(s, NULL, 10);
}

static void fk_load(struct fk_script *sc, const char *env)
{
    memset(sc, 0, sizeof(*sc));
    sc->loaded = true;
    sc->v2_code = -1;
    sc->count = 1;
    for (int d = 0; d < FK_DEV; d++) {
        (void)snprintf(sc->dev[d].name, sizeof(sc->dev[d].name), "Fake GPU %d", d);
        (void)snprintf(sc->dev[d].uuid, sizeof(sc->dev[d].uuid), "GPU-fake-%d", d);
        sc->dev[d].total = (uint64_t)80 << 30;
    }
    const char *path = getenv(env);
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *p = line;
        while (*p == ' ')
            p++;
        if (!*p || *p == '#')
            continue;
        char word[32] = "";
        int n = 0;
        if (sscanf(p, "%31s %n", word, &n) < 1)
            continue;
        char *rest = p + n;
        unsigned d = 0;
        int m = 0;
        if (!strcmp(word, "init")) {
            sc->init_fail = atoi(rest);
        } else if (!strcmp(word, "count")) {
            sc->count = (uint32_t)atoi(rest);
            if (sc->count > FK_DEV)
                sc->count = FK_DEV;
        } else if (!strcmp(word, "v2")) {
            sc->v2_code = atoi(rest);
        } else if (!strcmp(word, "procs")) {
            if (!strncmp(rest, "off", 3))
                sc->procs_off = true;
            else
                sc->procs_fail = atoi(rest);
        } else if (sscanf(rest, "%u %n", &d, &m) >= 1 && d < FK_DEV) {
            struct fk_dev *dv = &sc->dev[d];
            char *arg = rest + m;
            if (!strcmp(word, "name"))
                (void)snprintf(dv->name, sizeof(dv->name), "%s", arg);
            else if (!strcmp(word, "uuid"))
                (void)snprintf(dv->uuid, sizeof(dv->uuid), "%s", arg);
            else if (!strcmp(word, "total"))
                dv->total = fk_u64(arg, NULL);
            else if (!strcmp(word, "reserved"))
                dv->reserved = fk_u64(arg, NULL);
            else if (!strcmp(word, "step") && dv->n_steps < FK_STEPS) {
                struct fk_step *st = &dv->steps[dv->n_steps++];
                memset(st, 0, sizeof(*st));
                char *f1 = strstr(arg, "fail=");
                char *u = strstr(arg, "used=");
                char *pr = strstr(arg, "procs=");
                if (f1)
                    st->fail = atoi(f1 + 5);
                if (u)
                    st->used = fk_u64(u + 5, NULL);
                for (char *q = pr ? pr + 6 : NULL; q && *q && *q != ' ' && st->n_procs < FK_PROCS;) {
                    struct fk_proc *fp = &st->procs[st->n_procs++];
                    if (!strncmp(q, "@child", 6))
                        fp->pid = FK_PID_CHILD;
                    else
                        fp->pid = (uint32_t)strtoul(q, NULL, 10);
                    char *colon = strchr(q, ':');
                    if (colon)
                        fp->bytes = fk_u64(colon + 1, &fp->na);
                    char *comma = strchr(q, ',');
                    char *space = strchr(q, ' ');
                    if (!comma || (space && space < comma))
                        break;
                    q = comma + 1;
                }
            }
        }
    }
    fclose(f);
}

static struct fk_step fk_default_step = {0, (uint64_t)1 << 30, 0, {{0, 0, false}}};

/* The reading for device d now; advance: move on to the next one afterwards. */
static const struct fk_step *fk_step(struct fk_script *sc, uint32_t d, bool advance)
{
    struct fk_dev *dv = &sc->dev[d];
    if (!dv->n_steps)
        return &fk_default_step;
    uint32_t i = dv->cur < dv->n_steps ? dv->cur : dv->n_steps - 1;
    dv->last = i;
    if (advance || dv->steps[i].fail)
        dv->cur++;
    return &dv->steps[i];
}

/* The process whose parent is this process (the command memledger watch started). */
__attribute__((unused)) static uint32_t fk_child_pid(void)
{
    DIR *dir = opendir("/proc");
    if (!dir)
        return 0;
    uint32_t found = 0;
    long self = (long)getpid();
    struct dirent *e;
    while (!found && (e = readdir(dir))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        (void)snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *close_p = strrchr(buf, ')');
        long ppid = 0;
        if (close_p && sscanf(close_p + 1, " %*c %ld", &ppid) == 1 && ppid == self)
            found = (uint32_t)strtoul(e->d_name, NULL, 10);
    }
    closedir(dir);
    return found;
}

#endif /* ML_FAKE_SCRIPT_H */
