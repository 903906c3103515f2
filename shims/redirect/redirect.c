/*
 * zluda-runner redirector: an LD_AUDIT library that answers the dynamic
 * loader's library searches from a name -> file map.
 *
 * Why: glibc searches a requester's DT_RPATH before LD_LIBRARY_PATH, and PyPI
 * torch links its CUDA libraries with DT_RPATH, so a folder on
 * LD_LIBRARY_PATH cannot replace e.g. libcublas.so.13.  la_objsearch() is
 * called with the original name (LA_SER_ORIG) before any search; returning
 * an absolute path there makes ld.so open that file directly.
 *
 * Map file: path in $ZLUDA_RUNNER_REDIRECT_MAP, one "name<TAB>/abs/path"
 * per line; lines starting with '#' and blank lines are skipped.
 * $ZLUDA_RUNNER_REDIRECT_DEBUG=1 logs each redirect to stderr.
 *
 * Rules (issue 10; measured with glibc 2.36, see tests/launch/test_real_shape.py):
 *  - a bare name ("libcublas.so.13") whose text is in the map is answered
 *    with the mapped path; ld.so records the bare name too (origname), so
 *    later version needs on that file name find the object;
 *  - a path ("/x/nvidia/cu13/lib/libcublas.so.13") whose basename is in the
 *    map is answered with the BARE name, so the object is loaded (or found
 *    already loaded) under the needed name even when it has no DT_SONAME;
 *    kept unchanged when the requester is itself one of the mapped files (a
 *    replacement that forwards to the original library by path).  Only while
 *    the mapped file's folder is on LD_LIBRARY_PATH as ld.so read it at start
 *    (a child that dropped LD_LIBRARY_PATH but kept LD_AUDIT): else the bare
 *    name would find nothing, and the mapped path is the answer;
 *  - while ld.so searches for a mapped bare name, every candidate other than
 *    the mapped path itself is refused (NULL): an RPATH/RUNPATH/ld.so.cache
 *    copy of the NVIDIA library can never win.  The mapped paths must be the
 *    entries of the link folder that is first on LD_LIBRARY_PATH;
 *  - anything else is left alone (the name is returned unchanged).
 *
 * The map is read once, in la_version (process start, single-threaded), into
 * static storage; la_objsearch only compares strings: no allocation, no locks,
 * and the same read-only table serves every link-map namespace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAP_TEXT_MAX (256 * 1024)
#define MAP_ENTRIES_MAX 1024
/* the limits named in the messages below, and in zluda_runner/launch/redirect.py */
_Static_assert(MAP_TEXT_MAX == 262144 && MAP_ENTRIES_MAX == 1024, "update the messages");

static char map_text[MAP_TEXT_MAX + 1];
static const char *map_names[MAP_ENTRIES_MAX];
static const char *map_paths[MAP_ENTRIES_MAX];
static unsigned char map_searchable[MAP_ENTRIES_MAX]; /* the path's folder is on LD_LIBRARY_PATH */
static size_t map_count;
static int debug_enabled;

static void write_str(const char *s) {
    size_t len = strlen(s);
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, s, len);
        if (n <= 0) return;
        s += n;
        len -= (size_t)n;
    }
}

static void debug_log(const char *what, const char *a, const char *b) {
    if (!debug_enabled) return;
    write_str("zluda-runner redirect: ");
    write_str(what);
    write_str(" ");
    write_str(a);
    if (b) {
        write_str(" -> ");
        write_str(b);
    }
    write_str("\n");
}

/* A map that cannot be read whole stops the process: running on with part of a map (or none)
 * would let NVIDIA's library load in ZLUDA's place, silently. */
static void map_refused(const char *path, const char *why) {
    write_str("zluda-runner redirect: the map ");
    write_str(path);
    write_str(" ");
    write_str(why);
    write_str("; refused (the process does not start half-redirected): unset "
              "ZLUDA_RUNNER_REDIRECT_MAP or point it at a map zluda-runner wrote\n");
    _exit(127);
}

/* Is the folder of ``path`` an entry of the LD_LIBRARY_PATH ld.so read at start (':' or ';'
 * separated; a trailing '/' ignored)? */
static int on_library_path(const char *path) {
    const char *ldp = getenv("LD_LIBRARY_PATH");
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    while (ldp && *ldp) {
        size_t len = strcspn(ldp, ":;");
        size_t cmp = len;
        while (cmp > 1 && ldp[cmp - 1] == '/') cmp--;
        if (cmp == dir_len && strncmp(ldp, path, dir_len) == 0) return 1;
        ldp += len;
        if (*ldp) ldp++;
    }
    return 0;
}

static void load_map(void) {
    const char *path = getenv("ZLUDA_RUNNER_REDIRECT_MAP");
    if (!path || !*path) {
        debug_log("no map:", "ZLUDA_RUNNER_REDIRECT_MAP is not set", NULL);
        return;
    }
    /* O_NONBLOCK: a FIFO with no writer must not block the process start (it would block every
     * start that inherits LD_AUDIT); only a regular file is a map, anything else is refused. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) map_refused(path, "cannot be opened (deleted?)");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        write_str("zluda-runner redirect: the map ");
        write_str(path);
        write_str(" is not a regular file (a FIFO, a device?): refused; unset "
                  "ZLUDA_RUNNER_REDIRECT_MAP or point it at the map zluda-runner wrote\n");
        _exit(127); /* never run half-redirected: NVIDIA's library could load in ZLUDA's place */
    }
    if (st.st_size > MAP_TEXT_MAX) {
        close(fd);
        map_refused(path, "is larger than the redirector's limit of 262144 bytes (256 KiB)");
    }
    size_t used = 0;
    for (;;) {
        if (used == MAP_TEXT_MAX) { /* grew while read: one byte more tells */
            char extra;
            ssize_t more = read(fd, &extra, 1);
            if (more != 0) {
                close(fd);
                map_refused(path, "is larger than the redirector's limit of 262144 bytes (256 KiB)");
            }
            break;
        }
        ssize_t n = read(fd, map_text + used, MAP_TEXT_MAX - used);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            close(fd);
            map_refused(path, "could not be read");
        }
        used += (size_t)n;
    }
    close(fd);
    map_text[used] = '\0';

    char *line = map_text;
    while (line && *line) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *tab = strchr(line, '\t');
        if (line[0] != '#' && tab && tab != line && tab[1] == '/') {
            *tab = '\0';
            if (map_count == MAP_ENTRIES_MAX)
                map_refused(path, "has more entries than the redirector's limit of 1024");
            map_names[map_count] = line;
            map_paths[map_count] = tab + 1;
            map_searchable[map_count] = (unsigned char)on_library_path(tab + 1);
            map_count++;
        }
        line = next;
    }
}

static int is_mapped_file(const char *path) {
    if (!path) return 0;
    for (size_t i = 0; i < map_count; i++)
        if (strcmp(map_paths[i], path) == 0) return 1;
    return 0;
}

unsigned int la_version(unsigned int version) {
    const char *dbg = getenv("ZLUDA_RUNNER_REDIRECT_DEBUG");
    debug_enabled = dbg && dbg[0] == '1';
    load_map();
    /* Version 1 is what every glibc with LD_AUDIT speaks; ask for no more. */
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
    (void)lmid;
    *cookie = (uintptr_t)map; /* so la_objsearch can tell who is asking */
    return 0;                 /* no symbol-binding callbacks: zero cost later */
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag) {
    if (map_count == 0 || !name) return (char *)name;
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    size_t i;
    for (i = 0; i < map_count; i++)
        if (strcmp(map_names[i], base) == 0) break;
    if (i == map_count || strcmp(map_paths[i], name) == 0) return (char *)name;
    if (flag != LA_SER_ORIG) {
        debug_log("refused candidate:", name, NULL);
        return NULL; /* only the mapped file may satisfy a mapped name */
    }
    if (!slash) {
        debug_log("redirect", name, map_paths[i]);
        return (char *)map_paths[i];
    }
    if (cookie && *cookie) {
        const struct link_map *requester = (const struct link_map *)*cookie;
        if (is_mapped_file(requester->l_name)) {
            debug_log("kept (requested by a replacement):", name, NULL);
            return (char *)name;
        }
    }
    if (!map_searchable[i]) { /* a bare name would find nothing: no link folder to search */
        debug_log("redirect (its folder is not on LD_LIBRARY_PATH)", name, map_paths[i]);
        return (char *)map_paths[i];
    }
    debug_log("redirect", name, map_names[i]);
    return (char *)map_names[i];
}
