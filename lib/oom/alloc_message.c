/*
 * alloc_message.c - PyTorch's allocator message (the kinds that wrap, ML_OOM_KINDS) read by its
 * phrases (scanner.h): every size in it classified by the words around it (labels[], read with
 * the blanks removed and in lower case, so a message wrapped over lines or with words run together
 * reads the same), the device word and ordinal, the classic form and the allocator variable its
 * hint names; and whether the message has ended. grammar.c decides which line is which message.
 *
 * The formats and what each number means are the shared field guide's
 * (reference/oom-messages.md, sections A1-A6).
 */
#include "scanner.h"

/* ---- the allocator message (A1-A6) ------------------------------------------------------- */

enum ml_oom_device ml_oom_device_word(const char *msg, const char *oom)
{
    /* The word right before "out of memory". */
    const char *e = oom;
    while (e > msg && e[-1] == ' ')
        e--;
    const char *b = e;
    while (b > msg && (is_word(b[-1])))
        b--;
    size_t n = (size_t)(e - b);
    static const struct {
        char w[8];
        enum ml_oom_device d;
    } words[] = {
        {"CUDA", ML_DEV_CUDA},   {"HIP", ML_DEV_HIP},   {"NPU", ML_DEV_NPU},   {"XPU", ML_DEV_XPU},
        {"MUSA", ML_DEV_MUSA},   {"MLU", ML_DEV_OTHER}, {"GCU", ML_DEV_OTHER}, {"DIPU", ML_DEV_OTHER},
        {"backend", ML_DEV_MPS}, {"cuda", ML_DEV_CUDA}, {"hip", ML_DEV_HIP},
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (n == strlen(words[i].w) && !strncmp(b, words[i].w, n))
            return words[i].d;
    return ML_DEV_UNKNOWN;
}

/* Does the text just before position p (within msg) end with key? */
static bool before_is(const char *msg, const char *p, const char *key)
{
    size_t k = strlen(key);
    return (size_t)(p - msg) >= k && !strncmp(p - k, key, k);
}

/* Which field a size of the allocator message is, by the words right before or right after it,
 * read with the message's blanks removed and in lower case (ml_oom_squeeze): the first row that
 * matches names it (so "maxallowed:" goes before "totalcapacity", and "isreservedbypytorch"
 * before "reservedbypytorch"). Robust to wrapped lines, a wrap between a number and its unit,
 * words run together ("MiBfree"), dropped sentences and the classic "(GPU 0; T total capacity;
 * ...)" tuple. */
enum { BEFORE, AFTER };
#define F_PROCESS 0u /* "Process <pid> has X memory in use": another process, into procs[] */
static const struct label {
    uint8_t side;
    char words[40];
    uint32_t fields; /* the ML_OOM_F_ bits the size goes to, or F_PROCESS */
} labels[] = {
    {BEFORE, "allocate", ML_OOM_F_REQUESTED},
    {BEFORE, "allocatemorethan", ML_OOM_F_REQUESTED},
    {BEFORE, "maxallowed:", ML_OOM_F_TOTAL | ML_OOM_F_ALLOWED}, /* MPS */
    {BEFORE, "capacityof", ML_OOM_F_TOTAL},
    {BEFORE, "capactyof", ML_OOM_F_TOTAL}, /* (sic) */
    {AFTER, "totalcapacity", ML_OOM_F_TOTAL},
    {AFTER, "totalcapacty", ML_OOM_F_TOTAL},
    {BEFORE, "ofwhich", ML_OOM_F_FREE},
    {BEFORE, "gpuhad", ML_OOM_F_FREE}, /* "Tried to allocate X. GPU had F free of T" (A1, newest) */
    {BEFORE, "freeof", ML_OOM_F_TOTAL},
    {AFTER, "free", ML_OOM_F_FREE},
    {AFTER, "isfree", ML_OOM_F_FREE},
    {BEFORE, "thisprocesshas", ML_OOM_F_THIS_PROCESS},
    {AFTER, "memoryinuse", F_PROCESS},
    {AFTER, "allowed", ML_OOM_F_ALLOWED},
    {AFTER, "allocatedinprivatepool", ML_OOM_F_PRIVATE_POOL},
    {BEFORE, "allocatedmemory", ML_OOM_F_ALLOCATED},
    {AFTER, "isallocatedbypytorch", ML_OOM_F_ALLOCATED},
    {AFTER, "alreadyallocated", ML_OOM_F_ALLOCATED},
    {BEFORE, "mpsallocated:", ML_OOM_F_ALLOCATED},
    {BEFORE, "currentlyallocated:", ML_OOM_F_ALLOCATED},
    {AFTER, "isreservedbypytorchbutunallocated", ML_OOM_F_RESERVED_UNALLOC},
    {AFTER, "reservedbypytorchbutunallocated", ML_OOM_F_RESERVED_UNALLOC},
    {AFTER, "reservedintotal", ML_OOM_F_RESERVED},
    {AFTER, "cached", ML_OOM_F_RESERVED},
    {AFTER, "currentactive", ML_OOM_F_ACTIVE},
    {BEFORE, "otherallocations:", ML_OOM_F_OTHER},
};

/* Where each size field (bits ML_OOM_F_REQUESTED .. ML_OOM_F_OTHER) lives in the event. */
static const size_t size_fields[] = {
    offsetof(struct ml_oom_event, requested),
    offsetof(struct ml_oom_event, total),
    offsetof(struct ml_oom_event, free),
    offsetof(struct ml_oom_event, allocated),
    offsetof(struct ml_oom_event, reserved_unalloc),
    offsetof(struct ml_oom_event, reserved),
    offsetof(struct ml_oom_event, active),
    offsetof(struct ml_oom_event, allowed),
    offsetof(struct ml_oom_event, private_pool),
    offsetof(struct ml_oom_event, this_process),
    offsetof(struct ml_oom_event, other),
};
#define N_SIZE_FIELDS (sizeof(size_fields) / sizeof(size_fields[0]))
_Static_assert(ML_OOM_F_OTHER == 1u << (N_SIZE_FIELDS - 1), "a slot per size field");
#define SIZE_BITS ((1u << N_SIZE_FIELDS) - 1)

/* The allocator variable the message's hint names: the first found. */
static const struct {
    char needle[40];
    enum ml_oom_hint hint;
} hints[] = {
    {"PYTORCH_CUDA_ALLOC_CONF=expandable", ML_HINT_CUDA_CONF},
    {"PYTORCH_HIP_ALLOC_CONF", ML_HINT_HIP_CONF},
    {"PYTORCH_NPU_ALLOC_CONF", ML_HINT_NPU_CONF},
    {"PYTORCH_MUSA_ALLOC_CONF", ML_HINT_MUSA_CONF},
    {"PYTORCH_ALLOC_CONF", ML_HINT_ALLOC_CONF},
    {"max_split_size_mb", ML_HINT_MAX_SPLIT},
    {"HIGH_WATERMARK_RATIO", ML_HINT_MPS_WATERMARK},
    {"empty_cache", ML_HINT_EMPTY_CACHE},
};

/* The first value of a field wins (a message repeats no field; text gathered after it does). */
static void put_size(struct ml_oom_event *e, uint32_t fields, uint64_t v)
{
    if (e->has & fields)
        return;
    for (size_t b = 0; b < N_SIZE_FIELDS; b++)
        if (fields >> b & 1)
            memcpy((char *)e + size_fields[b], &v, sizeof(v));
    e->has |= fields;
}

/* "process<pid>has X memory in use" (squeezed, lower case): bp is where X starts. */
static void put_process(struct ml_oom_event *e, const char *lo, const char *bp, uint64_t v)
{
    if (!before_is(lo, bp, "has"))
        return;
    const char *q = bp - 3;
    const char *d = q;
    while (d > lo && is_digit(d[-1]))
        d--;
    uint64_t pid = 0;
    if (d < q && before_is(lo, d, "process") && ml_oom_parse_u64(d, &pid)) {
        if (e->n_procs < ML_OOM_MAX_PROCS) {
            e->procs[e->n_procs].pid = pid;
            e->procs[e->n_procs].bytes = v;
            e->n_procs++;
        }
        e->n_procs_seen++;
    }
}

/* The size at lo[i..end) of the squeezed message: its field by labels[]. */
static void label_size(struct ml_oom_event *e, const char *lo, size_t i, size_t end, uint64_t v)
{
    for (size_t k = 0; k < sizeof(labels) / sizeof(labels[0]); k++) {
        const struct label *lb = &labels[k];
        if (lb->side == BEFORE ? !before_is(lo, lo + i, lb->words) : !starts(lo + end, lb->words))
            continue;
        if (lb->fields == F_PROCESS)
            put_process(e, lo, lo + i, v);
        else
            put_size(e, lb->fields, v);
        return;
    }
}

/* Device ordinal: "(GPU 3;" "(NPU 0;" "GPU 5 has" "NPU 1;", read squeezed. */
static void read_ordinal(struct ml_oom_event *e, const char *lo)
{
    static const char ords[][6] = {"(gpu", "(npu", "gpu", "npu", "(xpu", "xpu"};
    for (size_t i = 0; i < sizeof(ords) / sizeof(ords[0]) && e->gpu < 0; i++) {
        size_t k0 = strlen(ords[i]);
        for (const char *q = find(lo, ords[i]); q; q = find(q + 1, ords[i])) {
            uint64_t g;
            size_t k = ml_oom_parse_u64(q + k0, &g);
            const char *t = q + k0 + k;
            if (k && g < 4096 && (*t == ';' || starts(t, "has"))) {
                e->gpu = (int32_t)g;
                break;
            }
        }
    }
}

/* Fill the numbers of an allocator-family message by classifying every size in it by the
 * words around it, then the device ordinal, the classic form and the hint's variable. The
 * message is read whole each time (it grows as continuation lines arrive). */
void ml_oom_alloc_numbers(struct ml_oom_event *e, const char *msg)
{
    char sq[ML_OOM_MSG_MAX + 1], lo[ML_OOM_MSG_MAX + 1];
    bool gap[ML_OOM_MSG_MAX + 1];
    size_t n = ml_oom_squeeze(sq, lo, gap, sizeof(sq), msg, strlen(msg));
    e->has &= ~SIZE_BITS;
    e->n_procs = e->n_procs_seen = 0;
    for (size_t i = 0; i < n; i++) {
        /* A number starts after a non-digit, or after a blank ("use. 70.00 GiB allowed"); a
         * number cut by a wrap ("4 0.30 GiB") was read whole from its first digit. */
        if (!is_digit(sq[i]) || (i && !gap[i] && (is_digit(sq[i - 1]) || sq[i - 1] == '.')))
            continue;
        uint64_t v;
        size_t k = ml_oom_parse_size_loose(sq + i, &v);
        if (!k)
            continue;
        label_size(e, lo, i, i + k, v);
        i += k - 1;
    }
    read_ordinal(e, lo);
    if (find(lo, "totalcapacity;") || find(lo, "alreadyallocated;"))
        e->classic = true;
    /* torch 1.0-1.3 printed the cache it held beyond the allocated memory as "X cached)"; 1.4
     * renamed the field "reserved in total by PyTorch" and printed all of it (A1). */
    if (find(lo, "cached)"))
        e->cached_form = true;
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        if (find(sq, hints[i].needle)) {
            e->hint = hints[i].hint;
            break;
        }
    }
}

/* Has the allocator message ended? Its last sentence is the hint, the documentation pointer or
 * the accounting in brackets (every era and backend), read squeezed and in lower case. */
bool ml_oom_alloc_complete(const char *msg)
{
    static const char ends[][28] = {
        "alloc_conf", "max_split_size_mb", "seedocumentation",  "unallocated.", "reservedintotalbypytorch)", "cached)",
        "pool.",      "empty_cache",       "task_queue_enable", "morethan1eb",
    };
    char sq[ML_OOM_MSG_MAX + 1], lo[ML_OOM_MSG_MAX + 1];
    (void)ml_oom_squeeze(sq, lo, NULL, sizeof(sq), msg, strlen(msg));
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
        if (find(lo, ends[i]))
            return true;
    return false;
}
