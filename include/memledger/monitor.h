/*
 * monitor.h - real GPU memory: vendor backends, the sampler behind `memledger watch`, the
 * timeline it writes and the plot it draws.
 *
 * This is an adapter ring, not a pure one: it loads vendor libraries with dlopen, reads the
 * clock, reads /proc and runs a child process. It never prints and never reads the
 * environment; the CLI passes library paths and search directories in (struct ml_backend_opts).
 *
 * Vendor libraries sit behind one table of function pointers (struct ml_backend, nvtop's
 * gpu_vendor with the state in an instance): NVML (libnvidia-ml.so.1), ROCm SMI
 * (librocm_smi64.so, also what Hygon's DTK ships) and "none". A reading that cannot be taken is
 * marked invalid in its `valid` bits, never reported as 0 bytes.
 */
#ifndef ML_MONITOR_H
#define ML_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/status.h"

#define ML_MON_MAX_DEVICES 64  /* devices sampled; more are ignored (and said so) */
#define ML_MON_MAX_PROCS   256 /* processes read per device per sample */
#define ML_MON_MAX_OTHERS  16  /* other processes remembered per device (start, peak) */

/* Which API produced a memory reading (carried into the timeline and the report). */
enum ml_mem_source {
    ML_MEM_SRC_NONE,     /* no reading */
    ML_MEM_SRC_NVML_V2,  /* nvmlDeviceGetMemoryInfo_v2: used excludes driver-reserved memory */
    ML_MEM_SRC_NVML_V1,  /* nvmlDeviceGetMemoryInfo: used includes driver-reserved memory */
    ML_MEM_SRC_RSMI_VRAM /* rsmi_dev_memory_{total,usage}_get(RSMI_MEM_TYPE_VRAM) */
};

/* Bits of struct ml_mem_reading.valid. */
#define ML_MEM_TOTAL_OK    1u
#define ML_MEM_USED_OK     2u
#define ML_MEM_FREE_OK     4u
#define ML_MEM_RESERVED_OK 8u

/* One device's memory at one instant. Plain value. */
struct ml_mem_reading {
    uint64_t total_bytes;    /* device memory the driver exposes */
    uint64_t used_bytes;     /* in use by every process (and, for NVML v1, the driver) */
    uint64_t free_bytes;     /* total - used - reserved, as the vendor reports it */
    uint64_t reserved_bytes; /* driver/firmware reserved (NVML v2 only) */
    uint32_t valid;          /* ML_MEM_*_OK bits: which fields were read */
    enum ml_mem_source source;
};

/* Static facts about a device. */
struct ml_dev_info {
    char name[96];        /* marketing name, "" if unknown */
    char uuid[96];        /* vendor UUID or "", for telling cards apart */
    uint64_t total_bytes; /* 0 if unknown */
};

/* One process on one device. */
struct ml_proc_mem {
    uint32_t pid;        /* as the driver reports it (host pid namespace) */
    uint64_t used_bytes; /* device memory it holds */
    bool used_ok;        /* used_bytes was reported (NVML may say "not available") */
};

/* Where to find the vendor libraries. Strings are borrowed for the duration of open(). */
struct ml_backend_opts {
    const char *nvml_lib;     /* explicit libnvidia-ml path (ML_NVML_LIBRARY), NULL = candidates */
    const char *rsmi_lib;     /* explicit librocm_smi64 path (ML_RSMI_LIBRARY), NULL = candidates */
    const char *rsmi_dirs[4]; /* extra directories to try first ($ROCM_SMI_LIB_PATH, $ROCM_PATH/lib) */
};

/*
 * The vendor table. Every function fills diag on failure; state is the backend's own.
 * read_procs returns ML_ERR_UNSUPPORTED when the driver has no per-process query.
 */
struct ml_backend {
    const char *name; /* "nvml", "rocm-smi", "none" */
    enum ml_status (*open)(const struct ml_backend_opts *opts, void **state, struct ml_diag *diag);
    enum ml_status (*device_count)(void *state, uint32_t *n, struct ml_diag *diag);
    enum ml_status (*device_info)(void *state, uint32_t dev, struct ml_dev_info *out, struct ml_diag *diag);
    enum ml_status (*read_memory)(void *state, uint32_t dev, struct ml_mem_reading *out, struct ml_diag *diag);
    enum ml_status (*read_procs)(void *state, uint32_t dev, struct ml_proc_mem *out, uint32_t cap, uint32_t *n,
                                 struct ml_diag *diag);
    /* One line about the loaded library and API ("libnvidia-ml.so.1, memory API v2"); static
     * storage inside the state, valid until close. */
    const char *(*describe)(void *state);
    void (*close)(void *state); /* vendor shutdown, dlclose, free; safe on NULL */
};

extern const struct ml_backend ml_backend_nvml;
extern const struct ml_backend ml_backend_rsmi;
extern const struct ml_backend ml_backend_none;

/* "nvml", "rocm-smi" (alias "rsmi"), "none"; NULL if unknown. */
const struct ml_backend *ml_backend_find(const char *name);

/* An open backend and its devices. */
struct ml_monitor {
    const struct ml_backend *be;                /* never NULL after a successful open */
    void *state;                                /* the backend's; owned */
    uint32_t n_dev;                             /* devices sampled (<= ML_MON_MAX_DEVICES) */
    uint32_t n_dev_found;                       /* devices the driver reported */
    struct ml_dev_info dev[ML_MON_MAX_DEVICES]; /* per device */
    char why_none[400];                         /* auto chose "none": why each backend failed */
};

/*
 * Open a backend by name, or "auto": NVML, then ROCm SMI, keeping the first with at least one
 * device, else "none" with why_none saying what was tried. A named backend that fails is an
 * error (diag names the library or symbol at fault). Release with ml_monitor_close.
 */
enum ml_status ml_monitor_open(struct ml_monitor *m, const char *name, const struct ml_backend_opts *opts,
                               struct ml_diag *diag);
void ml_monitor_close(struct ml_monitor *m);

/* "nvml_v2", "nvml_v1", "rocm_smi_vram", "none". */
const char *ml_mem_source_name(enum ml_mem_source s);

/* ---- clock -------------------------------------------------------------------------------- */

/* Time goes through this, so tests can drive the sampler with a clock of their own. */
struct ml_clock {
    uint64_t (*now_ns)(void *ctx); /* monotonic nanoseconds */
    void *ctx;
};

/* CLOCK_MONOTONIC. */
struct ml_clock ml_clock_monotonic(void);

/* ---- processes ---------------------------------------------------------------------------- */

/* What /proc says about a pid. */
struct ml_proc_info {
    uint32_t pid;
    uint32_t ppid; /* 0 if unknown */
    char name[32]; /* comm, "" if the process is gone or unreadable */
};

/* Read proc_root/PID/stat (proc_root "/proc" normally). ML_ERR_NOTFOUND if gone. */
enum ml_status ml_proc_read(const char *proc_root, uint32_t pid, struct ml_proc_info *out);

/* True if pid is root or descends from it (walks at most 64 parents). */
bool ml_proc_descends(const char *proc_root, uint32_t pid, uint32_t root);

/* ---- the sampler's bookkeeping (no I/O: unit-testable with made-up samples) ---------------- */

/* A process seen on a device, with its name. */
struct ml_watch_proc {
    uint32_t pid;
    uint64_t bytes; /* device memory it held */
    bool bytes_ok;  /* bytes was reported */
    char name[32];  /* comm, "" if unknown */
};

/* One device over the run. */
struct ml_watch_dev {
    struct ml_dev_info info;
    uint32_t n_ok;                  /* readings taken */
    uint32_t n_errors;              /* readings that failed */
    char first_error[200];          /* the first failure, for the report */
    bool has_baseline;              /* a reading before the command started */
    struct ml_mem_reading baseline; /* that reading */
    struct ml_mem_reading peak;     /* the reading with the largest used_bytes */
    uint64_t peak_t_ns;             /* when, from the start */
    bool has_peak;
    bool procs_ok;            /* per-process figures were available at least once */
    uint64_t tree_peak_bytes; /* largest sum over the command's process tree */
    uint64_t tree_peak_t_ns;
    struct ml_watch_proc others_start[ML_MON_MAX_OTHERS]; /* other processes at the baseline */
    uint32_t n_others_start;
    struct ml_watch_proc others_peak[ML_MON_MAX_OTHERS]; /* other processes at the device peak */
    uint32_t n_others_peak;
};

/* A process in one sample, classified by the caller. */
struct ml_sample_proc {
    struct ml_watch_proc p;
    bool in_tree; /* descends from the watched command */
};

/* The run. Plain value (large: keep it static or on the heap). */
struct ml_watch {
    uint32_t n_dev;
    struct ml_watch_dev dev[ML_MON_MAX_DEVICES];
    uint64_t n_samples; /* sampling rounds */
};

void ml_watch_init(struct ml_watch *w, const struct ml_monitor *m);

/*
 * Record one device reading at t_ns from the start. baseline: taken before the command started.
 * procs may be NULL (no per-process data). A failed reading is recorded with ml_watch_add_error.
 */
void ml_watch_add(struct ml_watch *w, uint32_t dev, uint64_t t_ns, bool baseline, const struct ml_mem_reading *r,
                  const struct ml_sample_proc *procs, uint32_t n_procs);
void ml_watch_add_error(struct ml_watch *w, uint32_t dev, const char *msg);

/* ---- timeline: JSON Lines, one record per line (docs/cli/watch.md) ------------------------- */

/* Append a JSON string literal (quoted, escaped; invalid UTF-8 bytes become U+FFFD). */
enum ml_status ml_jsonl_str(struct ml_buf *b, const char *s, size_t n);

/*
 * The per-device memory history for the plot. Capped: past ML_SERIES_MAX points the series
 * halves its resolution, keeping the larger of each pair, so peaks survive.
 */
#define ML_SERIES_MAX 4096
struct ml_series {
    uint32_t n;                   /* points used */
    uint64_t t_ms[ML_SERIES_MAX]; /* from the start */
    uint64_t used[ML_SERIES_MAX]; /* bytes */
};
void ml_series_add(struct ml_series *s, uint64_t t_ms, uint64_t used);

/*
 * Draw memory over time, one line per device, the peak of each marked, into out (SVG 1.1).
 * series[i] belongs to w->dev[i]. Deterministic: integer coordinates, no locale.
 */
enum ml_status ml_watch_svg(const struct ml_watch *w, const struct ml_series *series, const char *title,
                            struct ml_buf *out);

/* ---- running the command -------------------------------------------------------------------- */

/* How the command ended. */
struct ml_child_exit {
    bool started;         /* the command ran */
    int spawn_errno;      /* why it did not start (ENOENT, EACCES, ...) */
    bool signaled;        /* killed by a signal */
    int code;             /* exit status, or the signal number */
    uint32_t pid;         /* its pid */
    int forwarded_signal; /* last signal forwarded to it, 0 if none */
    uint64_t t_end_ns;    /* when it ended, from the start */
};

/* Callbacks of the sampler. Each may be NULL. */
struct ml_watch_hooks {
    void *ctx;
    /* A timeline record (one line of JSON, with its '\n'). */
    void (*record)(void *ctx, const char *line, size_t len);
    /* Bytes the command wrote on its stderr (only with tee_stderr): pass them on at once. */
    void (*stderr_bytes)(void *ctx, uint64_t t_ns, const char *data, size_t n);
};

struct ml_watch_cfg {
    char *const *argv;     /* the command; argv[0] is looked up in PATH (posix_spawnp, no shell) */
    uint64_t interval_ns;  /* between samples */
    bool tee_stderr;       /* read the command's stderr through a pipe and hand it to the hooks */
    const char *proc_root; /* "/proc" */
    struct ml_clock clock;
    struct ml_watch_hooks hooks;
};

/*
 * Take a baseline reading, start the command, sample every interval until it exits (forwarding
 * SIGINT, SIGTERM and SIGHUP sent to us by another process), take a last reading. Fills w, the
 * series (w->n_dev entries, may be NULL) and ex. Returns ML_ERR_CHILD with ex->spawn_errno set if
 * the command could not start; other errors are internal (pipe, signals, memory).
 * Installs signal handlers for the duration of the call (the one piece of global state in
 * the library: a signal handler needs it).
 */
enum ml_status ml_watch_run(const struct ml_watch_cfg *cfg, struct ml_monitor *m, struct ml_watch *w,
                            struct ml_series *series, struct ml_child_exit *ex, struct ml_diag *diag);

/* ---- measured runs: memledger_hook.py JSON Lines and watch timelines (for compare) ---------- */

#define ML_MEASURED_MAX_BYTES  ((size_t)64 << 20) /* a measurement file larger than this is refused */
#define ML_MEASURED_MAX_LINE   ((size_t)1 << 20)  /* one record */
#define ML_MEASURED_MAX_DTYPES 8
#define ML_MEASURED_MAX_PHASES 8

/* A figure that may be absent. */
struct ml_measured_fig {
    bool ok;        /* measured */
    uint64_t bytes; /* the largest value seen */
};

/*
 * What a measurement file holds, each figure the largest seen over the run (bytes, one GPU).
 * Plain value.
 */
struct ml_measured {
    uint32_t n_records;                       /* records read */
    uint32_t n_steps;                         /* hook "step" records */
    uint32_t n_samples;                       /* watch "sample" records */
    char device_name[96];                     /* from the hook's meta or watch's start, "" */
    char torch_version[32];                   /* hook meta, "" */
    char backend[16];                         /* "cuda", "hip" (hook) or the watch backend */
    uint64_t total_bytes;                     /* device capacity, 0 if unknown */
    struct ml_measured_fig weights;           /* parameters, every storage once */
    struct ml_measured_fig trainable_weights; /* of which trainable */
    struct ml_measured_fig gradients;         /* .grad tensors */
    struct ml_measured_fig optimizer;         /* optimizer state tensors */
    struct ml_measured_fig peak_allocated;    /* torch.cuda.max_memory_allocated per step */
    struct ml_measured_fig peak_reserved;     /* torch.cuda.max_memory_reserved per step */
    struct ml_measured_fig activations;       /* peak allocated - static, per step */
    struct ml_measured_fig device_used;       /* total - free (hook), or watch's used less its baseline */
    uint64_t baseline_used;                   /* watch: the device's used bytes before the run (others') */
    char device_source[24];                   /* "mem_get_info", "nvml_v2", ... */
    uint64_t params, trainable_params;        /* counts, 0 if unknown */
    uint32_t n_dtypes;
    struct {
        char name[16]; /* "bfloat16" */
        uint64_t bytes;
    } dtypes[ML_MEASURED_MAX_DTYPES]; /* weights by dtype */
    uint32_t n_phases;
    struct {
        char name[16]; /* "train", "eval", "save", "load" */
        uint64_t peak_allocated;
        uint64_t peak_reserved;
    } phases[ML_MEASURED_MAX_PHASES]; /* peaks per phase mark */
    uint32_t torn_line;               /* a last line cut short, skipped (0: none) */
};

/*
 * Read a measurement file (bytes): memledger_hook.py records (meta, static, step, phase) and
 * memledger watch timelines (start, sample) may be mixed; other record types are skipped.
 * Errors name origin:LINE: ML_ERR_PARSE (malformed JSON, not an object, a number that is not a
 * non-negative integer), ML_ERR_TOOBIG (over the caps), ML_ERR_INVALID (no measurement at all).
 * A last line that is not JSON and has no newline after it is one the writer never finished (a
 * killed run, a full disk): it is skipped and its number set in torn_line; the same line anywhere
 * else, or ended by a newline, is an error.
 */
enum ml_status ml_measured_parse(const char *data, size_t len, const char *origin, struct ml_measured *out,
                                 struct ml_diag *diag);

#endif /* ML_MONITOR_H */
