/*
 * zluda-runner call tracer: a libcuda.so.1 that forwards every driver call to the real
 * driver named by $ZLUDA_RUNNER_TRACE_REAL and counts calls and results per function.
 *
 * Why generic trampolines: the driver API has ~690 exported symbols and cuGetProcAddress
 * hands out more; typed wrappers would need cuda.h at build time (we vendor no NVIDIA
 * header) and one mistake in a signature corrupts a call. Every driver function returns a
 * CUresult in eax, so a signature-blind trampoline is enough (x86-64 SysV):
 *   1. trampoline i loads its slot number into r11 (not an argument register) and jumps to
 *      zr_common (trampolines.S, generated from the reference data);
 *   2. zr_common (in assembly, touching no argument register) finds this thread's table through
 *      one initial-exec TLS pointer, bumps calls[slot] in it and pushes (slot, return address)
 *      on the table's shadow return stack; the first call of a thread or of a process image
 *      (and a nesting too deep) instead saves the argument registers (rdi..r9, rax for varargs,
 *      xmm0-7) and calls zr_enter(slot, return address), which does the same in C after setting
 *      the thread's table up and leaving the marker (below);
 *   3. it pops the caller's return address off the stack and `call`s the real function:
 *      the call pushes our own return address into the very same slot, so the callee sees
 *      exactly the stack (and stack-passed arguments) the caller built;
 *   4. on return it pops the caller's return address from the shadow stack, bumps ok[slot] for
 *      CUDA_SUCCESS or calls zr_fail(slot, result) (first failure, per-result counts: the rare
 *      path), and returns there with rax/rdx intact.
 * Hot path: no lock, no allocation, no atomic read-modify-write, no formatted write. Each thread
 * counts into a table of its own (mmap'd on its first call, never freed: the table of a thread that
 * ended is handed to the next new thread and keeps adding, since only sums are reported); the
 * report sums every table. Failures are counted in shared tables with atomics.
 * cuGetProcAddress, cuGetProcAddress_v2 and cuGetExportTable are typed C wrappers: they
 * record the lookup / GUID and hand out trampolines (pool of ZR_NDYN slots, one per distinct
 * real pointer) instead of the real pointers, including for cuGetProcAddress itself.
 *
 * Output: at exit (a destructor, so calls made by atexit handlers and static destructors of
 * libraries loaded before us are counted, and exit() from any thread writes it), one file per
 * process, <dir>/zr-trace-<pid>-<ns>.txt, written to a temporary name and renamed. After fork()
 * the child starts from zero counts and writes its own file; an exec'd program loads a fresh
 * copy. A process image that ends without running exit handlers (_exit(), exec(), a fatal
 * signal) cannot write its counts: so that it is still reported, its first traced call leaves a
 * small marker, <dir>/zr-trace-<pid>-<ns>.started, which the report is written over (the
 * reader lists a marker without counts as a process whose calls are missing).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* generated: ZR_NEXPORT, zr_export_names[], slot numbers of the C wrappers, ZR_NDYN, ZR_DEPTH and
 * the layout of a thread's table that zr_common uses (ZR_CALLS_AT, ZR_OK_AT, ZR_TABLE_SIZE) */
#include "zr_trace_table.h"

#define ZR_EXPORT __attribute__((visibility("default")))
#define ZR_HIDDEN __attribute__((visibility("hidden")))
#define ZR_NSLOT (ZR_NEXPORT + ZR_NDYN)
#define ZR_FAIL_HASH 8192
#define ZR_MAX_LOOKUPS 8192
#define ZR_MAX_GUIDS 256
#define ZR_STR2(x) #x
#define ZR_STR(x) ZR_STR2(x)
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_SHARED_OBJECT_INIT_FAILED 303

typedef int CUresult;
typedef unsigned long long cuuint64_t;
typedef struct { char bytes[16]; } CUuuid;
typedef CUresult (*gpa_v1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_t)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*get_export_table_t)(const void **, const CUuuid *);

extern char zr_tramp_base[] __attribute__((visibility("hidden"))); /* trampolines.S: slot i lives at zr_tramp_base + 16*i */

struct slot {
    const char *name;
    int missing; /* exported by us, absent from the real driver */
};
struct fail_entry { uint64_t key; uint64_t count; };
struct lookup { char *symbol; int version; cuuint64_t flags; int found; uint64_t count; };
struct guid_entry { unsigned char guid[16]; int found; uint64_t count; };
/* One thread's table (the layout zr_common knows): depth at 0, frame i at 16 + 16*i, then at
 * ZR_CALLS_AT (page-aligned) uint64_t calls[ZR_NSLOT] and at ZR_OK_AT uint64_t ok[ZR_NSLOT]. */
struct table {
    uint64_t depth;
    uint64_t unused;
    struct { void *ret; uint64_t slot; } e[ZR_DEPTH];
    struct table *next_all;  /* every table, newest first (published with a release store) */
    struct table *next_free; /* tables of threads that ended, under `lock` */
};
_Static_assert(offsetof(struct table, e) == 16 && sizeof(((struct table *)0)->e[0]) == 16, "zr_common's layout");
_Static_assert(sizeof(struct table) <= ZR_CALLS_AT && ZR_CALLS_AT % 4096 == 0, "counts start on their own page");
_Static_assert(ZR_OK_AT == ZR_CALLS_AT + 8 * ZR_NSLOT && ZR_TABLE_SIZE >= ZR_OK_AT + 8 * ZR_NSLOT, "table size");
#define CALLS(t) ((uint64_t *)((char *)(t) + ZR_CALLS_AT))
#define OKS(t) ((uint64_t *)((char *)(t) + ZR_OK_AT))

ZR_HIDDEN __thread struct table *zr_self __attribute__((tls_model("initial-exec")));
ZR_HIDDEN void *zr_real[ZR_NSLOT]; /* what trampoline i calls */
ZR_HIDDEN int zr_marked;           /* this process image has left its .started marker */
static struct table *all_tables;
static struct table *free_tables;
static pthread_key_t table_key;
static struct slot slots[ZR_NSLOT];
static uint64_t sum_calls[ZR_NSLOT], sum_ok[ZR_NSLOT]; /* the report's sums (at exit only) */
static uint32_t first_fail[ZR_NSLOT];
static uint64_t first_fail_at[ZR_NSLOT];
static struct fail_entry fails[ZR_FAIL_HASH];
static uint64_t fail_overflow;
static struct lookup lookups[ZR_MAX_LOOKUPS];
static int n_lookups;
static struct guid_entry guids[ZR_MAX_GUIDS];
static int n_guids;
static int n_dyn;
static uint64_t dyn_overflow; /* pointers handed out untraced: the pool was full */
static char trace_dir[3800];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *real_handle;
static char real_error[512];
static gpa_v1_t real_gpa_v1;
static gpa_v2_t real_gpa_v2;
static get_export_table_t real_get_export_table;
static pid_t my_pid;
static uint64_t my_start_ns;

static CUresult gpa_v1_impl(const char *, void **, int, cuuint64_t);
static CUresult gpa_v2_impl(const char *, void **, int, cuuint64_t, int *);
static CUresult get_export_table_impl(const void **, const CUuuid *);

static CUresult missing_in_real(void) { return CUDA_ERROR_NOT_FOUND; }
static CUresult real_not_loaded(void) { return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED; }

static void *tramp(int slot) { return zr_tramp_base + 16 * (size_t)slot; }

static void file_name(char *buf, size_t size, const char *suffix) {
    snprintf(buf, size, "%s/zr-trace-%d-%llu%s", trace_dir, (int)my_pid, (unsigned long long)my_start_ns, suffix);
}

/* First traced call of this process image: leave the marker (open/write only; errno kept). */
static __attribute__((noinline)) void write_marker(void) {
    if (__atomic_exchange_n(&zr_marked, 1, __ATOMIC_ACQ_REL) || trace_dir[0] == '\0') return;
    int saved = errno;
    char path[4096], text[96];
    file_name(path, sizeof path, ".started");
    int n = snprintf(text, sizeof text, "zluda-runner-trace 1\npid %d\nppid %d\nstarted\n", (int)my_pid,
                     (int)getppid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, text, (size_t)n);
        (void)w;
        close(fd);
    }
    errno = saved;
}

static inline void mark_started(void) {
    if (__builtin_expect(!__atomic_load_n(&zr_marked, __ATOMIC_RELAXED), 0)) write_marker();
}

static __attribute__((noreturn)) void die(const char *what) {
    fprintf(stderr, "zluda-runner trace: %s, aborting\n", what);
    abort();
}

/* A thread's table is its own: increments are plain loads and stores (relaxed atomics, so that
 * the report may read them from another thread), never a locked read-modify-write. */
static inline void bump(uint64_t *counter) {
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static void give_back_table(void *table) {
    struct table *t = table;
    if (zr_self == t) zr_self = NULL;
    pthread_mutex_lock(&lock);
    t->next_free = free_tables;
    free_tables = t;
    pthread_mutex_unlock(&lock);
}

/* This thread's table: the first call of a thread takes one that an ended thread left, or maps one. */
static struct table *my_table(void) {
    struct table *t = zr_self;
    if (__builtin_expect(t != NULL, 1)) return t;
    int saved = errno;
    pthread_mutex_lock(&lock);
    t = free_tables;
    if (t != NULL) free_tables = t->next_free;
    pthread_mutex_unlock(&lock);
    if (t == NULL) {
        void *mem = mmap(NULL, ZR_TABLE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) die("cannot map a thread's count table");
        t = mem;
        pthread_mutex_lock(&lock);
        t->next_all = all_tables;
        __atomic_store_n(&all_tables, t, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&lock);
    }
    t->depth = 0; /* a thread that ended inside a driver call left frames behind */
    zr_self = t;
    pthread_setspecific(table_key, t); /* give_back_table when this thread ends */
    errno = saved;
    return t;
}

/* calls[slot] of the process: the sum over every thread's table. */
static uint64_t calls_so_far(uint32_t slot) {
    uint64_t sum = 0;
    for (struct table *t = __atomic_load_n(&all_tables, __ATOMIC_ACQUIRE); t != NULL; t = t->next_all)
        sum += __atomic_load_n(&CALLS(t)[slot], __ATOMIC_RELAXED);
    return sum;
}

/* A failed result (called by zr_common with rax/rdx saved, and by the typed wrappers). */
ZR_HIDDEN void zr_fail(uint32_t slot, CUresult result) {
    uint32_t expected = 0;
    if (__atomic_load_n(&first_fail[slot], __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(&first_fail[slot], &expected, (uint32_t)result, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        __atomic_store_n(&first_fail_at[slot], calls_so_far(slot), __ATOMIC_RELAXED);
    uint64_t key = ((uint64_t)(slot + 1) << 32) | (uint32_t)result;
    uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 51; /* 13 bits */
    for (int probe = 0; probe < ZR_FAIL_HASH; probe++) {
        struct fail_entry *e = &fails[(h + probe) & (ZR_FAIL_HASH - 1)];
        uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            uint64_t zero = 0;
            if (__atomic_compare_exchange_n(&e->key, &zero, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                cur = key;
            else
                cur = zero;
        }
        if (cur == key) {
            __atomic_fetch_add(&e->count, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_fetch_add(&fail_overflow, 1, __ATOMIC_RELAXED);
}

static void record_result(uint32_t slot, CUresult result) {
    if (result == CUDA_SUCCESS) bump(&OKS(my_table())[slot]);
    else zr_fail(slot, result);
}

/* zr_common's slow path, with the argument registers saved: as its fast path, plus the setup. */
ZR_HIDDEN void *zr_enter(uint32_t slot, void *ret) {
    struct table *t = my_table();
    uint64_t depth = t->depth;
    if (depth >= ZR_DEPTH) die("call nesting deeper than " ZR_STR(ZR_DEPTH));
    t->depth = depth + 1; /* claim the frame first: a signal handler's call takes the next one */
    t->e[depth].ret = ret;
    t->e[depth].slot = slot;
    bump(&CALLS(t)[slot]);
    mark_started();
    return zr_real[slot];
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void reset_counts(void) {
    /* The threads of the other tables are gone: their tables are free; the counts restart. */
    free_tables = NULL;
    for (struct table *t = all_tables; t != NULL; t = t->next_all) {
        if (madvise(CALLS(t), ZR_TABLE_SIZE - ZR_CALLS_AT, MADV_DONTNEED) != 0)
            memset(CALLS(t), 0, ZR_TABLE_SIZE - ZR_CALLS_AT);
        if (t != zr_self) { t->next_free = free_tables; free_tables = t; }
    }
    memset(first_fail, 0, sizeof first_fail);
    memset(first_fail_at, 0, sizeof first_fail_at);
    memset(fails, 0, sizeof fails);
    fail_overflow = 0;
    dyn_overflow = 0;
    zr_marked = 0;
    for (int i = 0; i < n_lookups; i++) lookups[i].count = 0;
    for (int i = 0; i < n_guids; i++) guids[i].count = 0;
    my_pid = getpid();
    my_start_ns = now_ns();
}

static void atfork_child(void) {
    pthread_mutex_init(&lock, NULL);
    reset_counts();
}


/* The trampoline handing out `real`, under `name`; NULL when the pool is full. */
static void *wrap_pointer(void *real, const char *name) {
    if (real == NULL) return NULL;
    if (real_gpa_v1 && real == (void *)real_gpa_v1) return (void *)gpa_v1_impl;
    if (real_gpa_v2 && real == (void *)real_gpa_v2) return (void *)gpa_v2_impl;
    if (real_get_export_table && real == (void *)real_get_export_table) return (void *)get_export_table_impl;
    void *result = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ZR_NEXPORT + n_dyn; i++) {
        if (zr_real[i] == real) { result = tramp(i); break; }
    }
    if (result == NULL && n_dyn < ZR_NDYN) {
        int i = ZR_NEXPORT + n_dyn;
        slots[i].name = strdup(name);
        __atomic_store_n(&zr_real[i], real, __ATOMIC_RELEASE);
        n_dyn++;
        result = tramp(i);
    }
    if (result == NULL) dyn_overflow++;
    pthread_mutex_unlock(&lock);
    return result ? result : real; /* pool exhausted: hand out the real pointer, untraced */
}

static void record_lookup(const char *symbol, int version, cuuint64_t flags, int found) {
    if (symbol == NULL) symbol = "(null)";
    pthread_mutex_lock(&lock);
    int i;
    for (i = 0; i < n_lookups; i++) {
        struct lookup *l = &lookups[i];
        if (l->version == version && l->flags == flags && l->found == found && strcmp(l->symbol, symbol) == 0)
            break;
    }
    if (i == n_lookups && n_lookups < ZR_MAX_LOOKUPS) {
        lookups[i].symbol = strdup(symbol);
        lookups[i].version = version;
        lookups[i].flags = flags;
        lookups[i].found = found;
        n_lookups++;
    }
    if (i < n_lookups) lookups[i].count++;
    pthread_mutex_unlock(&lock);
}

static CUresult after_lookup(int slot, CUresult r, const char *symbol, void **pfn, int version,
                             cuuint64_t flags) {
    int found = r == CUDA_SUCCESS && pfn != NULL && *pfn != NULL;
    record_lookup(symbol, version, flags, found);
    if (found) {
        /* Asking for the lookup functions themselves yields our typed wrappers, whatever the
         * real driver returned (cuGetProcAddress at version >= 12000 is the _v2 signature). */
        if (strcmp(symbol, "cuGetProcAddress_v2") == 0 || (strcmp(symbol, "cuGetProcAddress") == 0 && version >= 12000))
            *pfn = (void *)gpa_v2_impl;
        else if (strcmp(symbol, "cuGetProcAddress") == 0)
            *pfn = (void *)gpa_v1_impl;
        else if (strcmp(symbol, "cuGetExportTable") == 0)
            *pfn = (void *)get_export_table_impl;
        else
            *pfn = wrap_pointer(*pfn, symbol);
    }
    record_result((uint32_t)slot, r);
    return r;
}

static CUresult gpa_v1_impl(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    bump(&CALLS(my_table())[ZR_SLOT_cuGetProcAddress]);
    mark_started();
    CUresult r = real_gpa_v1 ? real_gpa_v1(symbol, pfn, version, flags)
                             : (real_handle ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_SHARED_OBJECT_INIT_FAILED);
    return after_lookup(ZR_SLOT_cuGetProcAddress, r, symbol, pfn, version, flags);
}

static CUresult gpa_v2_impl(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status) {
    bump(&CALLS(my_table())[ZR_SLOT_cuGetProcAddress_v2]);
    mark_started();
    CUresult r = real_gpa_v2 ? real_gpa_v2(symbol, pfn, version, flags, status)
                             : (real_handle ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_SHARED_OBJECT_INIT_FAILED);
    return after_lookup(ZR_SLOT_cuGetProcAddress_v2, r, symbol, pfn, version, flags);
}

static CUresult get_export_table_impl(const void **table, const CUuuid *id) {
    bump(&CALLS(my_table())[ZR_SLOT_cuGetExportTable]);
    mark_started();
    CUresult r = real_get_export_table ? real_get_export_table(table, id)
                                       : (real_handle ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_SHARED_OBJECT_INIT_FAILED);
    int found = r == CUDA_SUCCESS && table != NULL && *table != NULL;
    if (id != NULL) {
        pthread_mutex_lock(&lock);
        int i;
        for (i = 0; i < n_guids; i++)
            if (memcmp(guids[i].guid, id->bytes, 16) == 0 && guids[i].found == found) break;
        if (i == n_guids && n_guids < ZR_MAX_GUIDS) {
            memcpy(guids[i].guid, id->bytes, 16);
            guids[i].found = found;
            n_guids++;
        }
        if (i < n_guids) guids[i].count++;
        pthread_mutex_unlock(&lock);
    }
    record_result(ZR_SLOT_cuGetExportTable, r);
    return r;
}

/* The exported names call the typed wrappers; handed-out pointers are the wrappers themselves. */
ZR_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    return gpa_v1_impl(symbol, pfn, version, flags);
}

ZR_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                       int *status) {
    return gpa_v2_impl(symbol, pfn, version, flags, status);
}

ZR_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id) {
    return get_export_table_impl(table, id);
}

/* "=" then the text, percent-encoding spaces, controls, "%" and non-ASCII: one token, never empty. */
static void write_escaped(FILE *f, const char *s) {
    fputc('=', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= ' ' || c == '%' || c >= 127) fprintf(f, "%%%02x", c);
        else fputc(c, f);
    }
}

static void write_report(void) {
    if (trace_dir[0] == '\0' || getpid() != my_pid) return;
    char path[4096], tmp[4200], marker[4096];
    file_name(path, sizeof path, ".txt");
    file_name(marker, sizeof marker, ".started");
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "zluda-runner trace: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    fprintf(f, "zluda-runner-trace 1\npid %d\nppid %d\nreal ", (int)my_pid, (int)getppid());
    const char *real = getenv("ZLUDA_RUNNER_TRACE_REAL");
    write_escaped(f, real ? real : "");
    fputc('\n', f);
    if (real_error[0]) { fputs("warning ", f); write_escaped(f, real_error); fputc('\n', f); }
    FILE *cmd = fopen("/proc/self/cmdline", "r");
    if (cmd) {
        char arg[4096];
        size_t n = 0;
        int c;
        while ((c = fgetc(cmd)) != EOF) {
            if (c == 0) { arg[n] = 0; fputs("arg ", f); write_escaped(f, arg); fputc('\n', f); n = 0; }
            else if (n < sizeof arg - 1) arg[n++] = (char)c;
        }
        fclose(cmd);
    }
    int n_slots = ZR_NEXPORT + __atomic_load_n(&n_dyn, __ATOMIC_ACQUIRE);
    memset(sum_calls, 0, sizeof sum_calls);
    memset(sum_ok, 0, sizeof sum_ok);
    for (struct table *t = __atomic_load_n(&all_tables, __ATOMIC_ACQUIRE); t != NULL; t = t->next_all) {
        for (int i = 0; i < n_slots; i++) {
            sum_calls[i] += __atomic_load_n(&CALLS(t)[i], __ATOMIC_RELAXED);
            sum_ok[i] += __atomic_load_n(&OKS(t)[i], __ATOMIC_RELAXED);
        }
    }
    for (int i = 0; i < n_slots; i++) {
        if (sum_calls[i] == 0) continue;
        fprintf(f, "call %d %s %llu %llu %u %llu %d\n", i, slots[i].name, (unsigned long long)sum_calls[i],
                (unsigned long long)sum_ok[i], first_fail[i], (unsigned long long)first_fail_at[i], slots[i].missing);
    }
    for (int i = 0; i < ZR_FAIL_HASH; i++) {
        if (fails[i].key == 0) continue;
        fprintf(f, "result %u %d %llu\n", (unsigned)(fails[i].key >> 32) - 1, (int)(uint32_t)fails[i].key,
                (unsigned long long)fails[i].count);
    }
    if (dyn_overflow)
        fprintf(f, "warning =%llu%%20entry%%20points%%20handed%%20out%%20untraced%%20(%d%%20dynamic%%20slots%%20full)\n",
                (unsigned long long)dyn_overflow, ZR_NDYN);
    if (fail_overflow) fprintf(f, "warning =%llu%%20failed%%20results%%20not%%20recorded%%20(table%%20full)\n",
                               (unsigned long long)fail_overflow);
    for (int i = 0; i < n_lookups; i++) {
        if (lookups[i].count == 0) continue;
        fputs("lookup ", f);
        write_escaped(f, lookups[i].symbol);
        fprintf(f, " %d %llu %d %llu\n", lookups[i].version, lookups[i].flags, lookups[i].found,
                (unsigned long long)lookups[i].count);
    }
    for (int i = 0; i < n_guids; i++) {
        if (guids[i].count == 0) continue;
        fputs("export_table ", f);
        for (int b = 0; b < 16; b++) fprintf(f, "%02x", guids[i].guid[b]);
        fprintf(f, " %d %llu\n", guids[i].found, (unsigned long long)guids[i].count);
    }
    fputs("end\n", f);
    if (fclose(f) == 0 && rename(tmp, path) == 0 && zr_marked) unlink(marker);
}

__attribute__((destructor)) static void zr_fini(void) { write_report(); }

__attribute__((constructor)) static void zr_init(void) {
    my_pid = getpid();
    my_start_ns = now_ns();
    const char *dir = getenv("ZLUDA_RUNNER_TRACE_DIR");
    if (dir != NULL && strlen(dir) < sizeof trace_dir) strcpy(trace_dir, dir);
    const char *real = getenv("ZLUDA_RUNNER_TRACE_REAL");
    if (real == NULL || *real == '\0') {
        snprintf(real_error, sizeof real_error, "ZLUDA_RUNNER_TRACE_REAL is not set");
    } else {
        real_handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
        if (real_handle == NULL) snprintf(real_error, sizeof real_error, "dlopen failed: %s", dlerror());
    }
    if (real_handle) {
        real_gpa_v1 = (gpa_v1_t)dlsym(real_handle, "cuGetProcAddress");
        real_gpa_v2 = (gpa_v2_t)dlsym(real_handle, "cuGetProcAddress_v2");
        real_get_export_table = (get_export_table_t)dlsym(real_handle, "cuGetExportTable");
    }
    for (int i = 0; i < ZR_NEXPORT; i++) {
        slots[i].name = zr_export_names[i];
        void *fn = real_handle ? dlsym(real_handle, zr_export_names[i]) : NULL;
        slots[i].missing = fn == NULL;
        zr_real[i] = fn ? fn : (real_handle ? (void *)missing_in_real : (void *)real_not_loaded);
    }
    if (real_error[0]) fprintf(stderr, "zluda-runner trace: %s\n", real_error);
    pthread_key_create(&table_key, give_back_table);
    pthread_atfork(NULL, NULL, atfork_child);
}
