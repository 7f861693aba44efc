// SPDX-License-Identifier: MIT
// volseg_fault_shim: faults below volseg, inside the libraries it calls
// (ROMIO and OMPIO under MPI-IO, PnetCDF, HDF5 under netCDF-4), where
// VOLSEG_FAULTS cannot reach. Loaded with LD_PRELOAD into the ranks only
// (mpirun -x LD_PRELOAD=...), it interposes the POSIX calls those libraries
// make (found with nm -D on libmpi, the io/fs/fbtl components, libpnetcdf and
// libhdf5_openmpi) and fails or slows them as asked:
//
//   VOLSEG_SHIM_FAULTS="write:eio@3,rank=1,path=o.nc;read:short,path=in.raw"
//
// The grammar is VOLSEG_FAULTS's (io/include/volseg/io/faults.hpp) plus a
// path filter:
//   rule   := CALL ":" KIND ["@" N] {"," KEY "=" VALUE}   (rules separated by ";")
//   CALL   := open | read | write | close | fsync | rename
//   KIND   := eio | enospc | short | slow
//   @N     := only the N-th call this rule matches (1-based); without it, every one
//   rank=R : only on rank R (OMPI_COMM_WORLD_RANK, PMI_RANK)
//   ms=M   : for slow, the delay in milliseconds (default 100)
//   path=S : only calls on a file whose name, as opened, contains S. Without
//            it a rule also hits MPI's own files, pipes and sockets: tests
//            always name their data files.
//
// CALL covers: open = open, open64, openat, openat64, creat, creat64;
// read = read, pread, pread64, readv, preadv, preadv64, preadv2; write =
// write, pwrite, pwrite64, writev, pwritev, pwritev64, pwritev2; close =
// close (the descriptor is closed, then the error returned, as a failed
// close(2) does); fsync = fsync, fdatasync; rename = rename, renameat
// (either name). Not covered: stdio (fopen/fwrite, which HDF5 and MPI use for
// logs only), POSIX AIO (OMPIO's MPI_File_iread/iwrite, which volseg does not
// call) and mmap.
//
// Watchdog: with VOLSEG_SHIM_WATCHDOG_S=T, a thread ends the process when no
// intercepted call has begun or ended for T seconds (a rank waiting in a
// collective call that will never complete makes none): it prints one line
// and calls MPI_Abort(MPI_COMM_WORLD, 99) if MPI is initialised and not
// finalised, else _exit(99). So a hang becomes a failure with status 99.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum call { CALL_OPEN, CALL_READ, CALL_WRITE, CALL_CLOSE, CALL_FSYNC, CALL_RENAME, CALL_COUNT };
enum kind { KIND_EIO, KIND_ENOSPC, KIND_SHORT, KIND_SLOW };

struct rule {
  enum call call;
  enum kind kind;
  long nth;   // 0: every matching call
  long rank;  // -1: every rank
  long ms;
  char path[256];  // "" : every file
  long seen;       // calls this rule matched so far
};

// What to do to one call.
struct decision {
  int error;     // errno to fail with, or 0
  int short_io;  // move half of what was asked
};

#define MAX_RULES 32
#define MAX_FDS 65536

static struct rule rules[MAX_RULES];
static int rule_count;
static long my_rank;
static int enabled;  // any rule
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char* fd_paths[MAX_FDS];  // the name each descriptor was opened under
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_llong last_activity_ms;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void activity(void) { atomic_store_explicit(&last_activity_ms, now_ms(), memory_order_relaxed); }

static void* real(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (!symbol) {
    fprintf(stderr, "volseg_fault_shim: no next definition of %s\n", name);
    _exit(2);
  }
  return symbol;
}

// The real function, looked up once (a benign race: every thread finds the same).
#define REAL(name)                      \
  static __typeof__(&name) next_##name; \
  if (!next_##name) next_##name = (__typeof__(&name))real(#name)

static void bad_spec(const char* what, const char* rule_text) {
  fprintf(stderr, "volseg_fault_shim: VOLSEG_SHIM_FAULTS: %s in '%s'\n", what, rule_text);
  _exit(2);
}

static long parse_count(const char* text, const char* rule_text) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (!*text || *end || value < 0) bad_spec("not a count", rule_text);
  return value;
}

static void parse_rule(char* text) {
  static const char* calls[] = {"open", "read", "write", "close", "fsync", "rename"};
  char copy[512];
  snprintf(copy, sizeof copy, "%s", text);
  if (rule_count == MAX_RULES) bad_spec("too many rules", copy);
  struct rule* r = &rules[rule_count];
  memset(r, 0, sizeof *r);
  r->rank = -1;
  r->ms = 100;
  char* save = NULL;
  char* head = strtok_r(text, ",", &save);
  char* colon = head ? strchr(head, ':') : NULL;
  if (!colon) bad_spec("not CALL:KIND[@N][,rank=R][,ms=M][,path=S]", copy);
  *colon = '\0';
  int found = 0;
  for (int i = 0; i < CALL_COUNT; ++i)
    if (strcmp(head, calls[i]) == 0) r->call = (enum call)i, found = 1;
  if (!found) bad_spec("unknown call (open, read, write, close, fsync, rename)", copy);
  char* kind = colon + 1;
  char* at = strchr(kind, '@');
  if (at) {
    *at = '\0';
    r->nth = parse_count(at + 1, copy);
    if (r->nth == 0) bad_spec("'@0': calls count from 1", copy);
  }
  if (strcmp(kind, "eio") == 0)
    r->kind = KIND_EIO;
  else if (strcmp(kind, "enospc") == 0)
    r->kind = KIND_ENOSPC;
  else if (strcmp(kind, "short") == 0)
    r->kind = KIND_SHORT;
  else if (strcmp(kind, "slow") == 0)
    r->kind = KIND_SLOW;
  else
    bad_spec("unknown fault (eio, enospc, short, slow)", copy);
  if (r->kind == KIND_SHORT && r->call != CALL_READ && r->call != CALL_WRITE)
    bad_spec("only reads and writes can be short", copy);
  for (char* field; (field = strtok_r(NULL, ",", &save));) {
    char* eq = strchr(field, '=');
    if (!eq) bad_spec("a key without '='", copy);
    *eq = '\0';
    if (strcmp(field, "rank") == 0)
      r->rank = parse_count(eq + 1, copy);
    else if (strcmp(field, "ms") == 0)
      r->ms = parse_count(eq + 1, copy);
    else if (strcmp(field, "path") == 0)
      snprintf(r->path, sizeof r->path, "%s", eq + 1);
    else
      bad_spec("unknown key (rank, ms, path)", copy);
  }
  ++rule_count;
}

static void load(void) {
  const char* rank = getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = getenv("PMI_RANK");
  my_rank = rank ? strtol(rank, NULL, 10) : 0;
  const char* spec = getenv("VOLSEG_SHIM_FAULTS");
  if (!spec || !*spec) return;
  char* text = strdup(spec);
  char* save = NULL;
  for (char* part = strtok_r(text, ";", &save); part; part = strtok_r(NULL, ";", &save))
    if (*part) parse_rule(part);
  free(text);
  enabled = rule_count > 0;
}

static const char* path_of(int fd) { return fd >= 0 && fd < MAX_FDS ? fd_paths[fd] : NULL; }

// Decides a call on the file(s) named; sleeps here for slow rules.
static struct decision decide(enum call call, const char* path, const char* other_path) {
  struct decision d = {0, 0};
  pthread_once(&once, load);
  if (!enabled) return d;
  long delay = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < rule_count; ++i) {
    struct rule* r = &rules[i];
    if (r->call != call || (r->rank >= 0 && r->rank != my_rank)) continue;
    if (r->path[0] && !(path && strstr(path, r->path)) && !(other_path && strstr(other_path, r->path))) continue;
    ++r->seen;
    if (r->nth && r->nth != r->seen) continue;
    switch (r->kind) {
      case KIND_EIO:
        d.error = EIO;
        break;
      case KIND_ENOSPC:
        d.error = ENOSPC;
        break;
      case KIND_SHORT:
        d.short_io = 1;
        break;
      case KIND_SLOW:
        delay += r->ms;
        break;
    }
  }
  pthread_mutex_unlock(&lock);
  if (delay > 0) {
    struct timespec t = {delay / 1000, (delay % 1000) * 1000000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
  }
  return d;
}

static void remember(int fd, const char* path) {
  if (fd < 0 || fd >= MAX_FDS) return;
  char* copy = path ? strdup(path) : NULL;
  pthread_mutex_lock(&lock);
  free(fd_paths[fd]);
  fd_paths[fd] = copy;
  pthread_mutex_unlock(&lock);
}

static void forget(int fd) { remember(fd, NULL); }

// The first half of an I/O vector (at least one byte when any was asked).
static int half_vector(const struct iovec* in, int count, struct iovec* out) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += in[i].iov_len;
  size_t want = total / 2 ? total / 2 : total;
  int n = 0;
  for (int i = 0; i < count && want > 0; ++i) {
    out[n] = in[i];
    if (out[n].iov_len > want) out[n].iov_len = want;
    want -= out[n].iov_len;
    ++n;
  }
  return n;
}

static size_t half(size_t count) { return count / 2 ? count / 2 : count; }

// ---- open --------------------------------------------------------------

static int mode_of(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, int) : 0; }

#define OPEN_BODY(name, call_real)                        \
  activity();                                             \
  struct decision d = decide(CALL_OPEN, path, NULL);      \
  int fd = d.error ? (errno = d.error, -1) : (call_real); \
  if (fd >= 0) remember(fd, path);                        \
  activity();                                             \
  return fd

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_of(flags, ap);
  va_end(ap);
  REAL(open);
  OPEN_BODY(open, next_open(path, flags, mode));
}

int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_of(flags, ap);
  va_end(ap);
  REAL(open64);
  OPEN_BODY(open64, next_open64(path, flags, mode));
}

int openat(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_of(flags, ap);
  va_end(ap);
  REAL(openat);
  OPEN_BODY(openat, next_openat(dir, path, flags, mode));
}

int openat64(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_of(flags, ap);
  va_end(ap);
  REAL(openat64);
  OPEN_BODY(openat64, next_openat64(dir, path, flags, mode));
}

int creat(const char* path, mode_t mode) {
  REAL(creat);
  OPEN_BODY(creat, next_creat(path, mode));
}

int creat64(const char* path, mode_t mode) {
  REAL(creat64);
  OPEN_BODY(creat64, next_creat64(path, mode));
}

// ---- read and write ------------------------------------------------------

// One body for every plain (buffer, count) call: fail, shorten or pass.
#define IO_BODY(call_kind, call_real)                       \
  activity();                                               \
  struct decision d = decide(call_kind, path_of(fd), NULL); \
  ssize_t result;                                           \
  if (d.error) {                                            \
    errno = d.error;                                        \
    result = -1;                                            \
  } else {                                                  \
    if (d.short_io) count = half(count);                    \
    result = (call_real);                                   \
  }                                                         \
  activity();                                               \
  return result

// The same for vectors, shortened to their first half.
#define VECTOR_BODY(call_kind, call_real)                                                     \
  activity();                                                                                 \
  struct decision d = decide(call_kind, path_of(fd), NULL);                                   \
  ssize_t result;                                                                             \
  struct iovec* shortened = NULL;                                                             \
  if (d.error) {                                                                              \
    errno = d.error;                                                                          \
    result = -1;                                                                              \
  } else {                                                                                    \
    if (d.short_io && count > 0 && (shortened = malloc(sizeof *shortened * (size_t)count))) { \
      count = half_vector(vector, count, shortened);                                          \
      vector = shortened;                                                                     \
    }                                                                                         \
    result = (call_real);                                                                     \
    int saved = errno;                                                                        \
    free(shortened);                                                                          \
    errno = saved;                                                                            \
  }                                                                                           \
  activity();                                                                                 \
  return result

ssize_t read(int fd, void* buffer, size_t count) {
  REAL(read);
  IO_BODY(CALL_READ, next_read(fd, buffer, count));
}

ssize_t pread(int fd, void* buffer, size_t count, off_t offset) {
  REAL(pread);
  IO_BODY(CALL_READ, next_pread(fd, buffer, count, offset));
}

ssize_t pread64(int fd, void* buffer, size_t count, off64_t offset) {
  REAL(pread64);
  IO_BODY(CALL_READ, next_pread64(fd, buffer, count, offset));
}

ssize_t readv(int fd, const struct iovec* vector, int count) {
  REAL(readv);
  VECTOR_BODY(CALL_READ, next_readv(fd, vector, count));
}

ssize_t preadv(int fd, const struct iovec* vector, int count, off_t offset) {
  REAL(preadv);
  VECTOR_BODY(CALL_READ, next_preadv(fd, vector, count, offset));
}

ssize_t preadv64(int fd, const struct iovec* vector, int count, off64_t offset) {
  REAL(preadv64);
  VECTOR_BODY(CALL_READ, next_preadv64(fd, vector, count, offset));
}

ssize_t preadv2(int fd, const struct iovec* vector, int count, off_t offset, int flags) {
  REAL(preadv2);
  VECTOR_BODY(CALL_READ, next_preadv2(fd, vector, count, offset, flags));
}

ssize_t write(int fd, const void* buffer, size_t count) {
  REAL(write);
  IO_BODY(CALL_WRITE, next_write(fd, buffer, count));
}

ssize_t pwrite(int fd, const void* buffer, size_t count, off_t offset) {
  REAL(pwrite);
  IO_BODY(CALL_WRITE, next_pwrite(fd, buffer, count, offset));
}

ssize_t pwrite64(int fd, const void* buffer, size_t count, off64_t offset) {
  REAL(pwrite64);
  IO_BODY(CALL_WRITE, next_pwrite64(fd, buffer, count, offset));
}

ssize_t writev(int fd, const struct iovec* vector, int count) {
  REAL(writev);
  VECTOR_BODY(CALL_WRITE, next_writev(fd, vector, count));
}

ssize_t pwritev(int fd, const struct iovec* vector, int count, off_t offset) {
  REAL(pwritev);
  VECTOR_BODY(CALL_WRITE, next_pwritev(fd, vector, count, offset));
}

ssize_t pwritev64(int fd, const struct iovec* vector, int count, off64_t offset) {
  REAL(pwritev64);
  VECTOR_BODY(CALL_WRITE, next_pwritev64(fd, vector, count, offset));
}

ssize_t pwritev2(int fd, const struct iovec* vector, int count, off_t offset, int flags) {
  REAL(pwritev2);
  VECTOR_BODY(CALL_WRITE, next_pwritev2(fd, vector, count, offset, flags));
}

// ---- close, fsync, rename --------------------------------------------------

int close(int fd) {
  REAL(close);
  activity();
  struct decision d = decide(CALL_CLOSE, path_of(fd), NULL);
  forget(fd);
  int result = next_close(fd);  // the descriptor is gone either way, as after a failed close(2)
  if (d.error) errno = d.error, result = -1;
  activity();
  return result;
}

int fsync(int fd) {
  REAL(fsync);
  activity();
  struct decision d = decide(CALL_FSYNC, path_of(fd), NULL);
  int result = d.error ? (errno = d.error, -1) : next_fsync(fd);
  activity();
  return result;
}

int fdatasync(int fd) {
  REAL(fdatasync);
  activity();
  struct decision d = decide(CALL_FSYNC, path_of(fd), NULL);
  int result = d.error ? (errno = d.error, -1) : next_fdatasync(fd);
  activity();
  return result;
}

int rename(const char* from, const char* to) {
  REAL(rename);
  activity();
  struct decision d = decide(CALL_RENAME, from, to);
  int result = d.error ? (errno = d.error, -1) : next_rename(from, to);
  activity();
  return result;
}

int renameat(int from_dir, const char* from, int to_dir, const char* to) {
  REAL(renameat);
  activity();
  struct decision d = decide(CALL_RENAME, from, to);
  int result = d.error ? (errno = d.error, -1) : next_renameat(from_dir, from, to_dir, to);
  activity();
  return result;
}

// ---- the watchdog ---------------------------------------------------------

static void* watch(void* argument) {
  const long long limit_ms = (long long)(*(double*)argument * 1000);
  for (;;) {
    struct timespec t = {0, 200 * 1000000};
    nanosleep(&t, NULL);
    const long long idle = now_ms() - atomic_load_explicit(&last_activity_ms, memory_order_relaxed);
    if (idle < limit_ms) continue;
    int (*initialized)(int*) = (int (*)(int*))dlsym(RTLD_DEFAULT, "MPI_Initialized");
    int (*finalized)(int*) = (int (*)(int*))dlsym(RTLD_DEFAULT, "MPI_Finalized");
    int is_initialized = 0, is_finalized = 0;
    if (initialized) initialized(&is_initialized);
    if (finalized) finalized(&is_finalized);
    void* abort_function = dlsym(RTLD_DEFAULT, "MPI_Abort");
    // Open MPI's MPI_COMM_WORLD is the address of ompi_mpi_comm_world;
    // MPICH's is the integer 0x44000000.
    void* world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
    const int use_mpi = is_initialized && !is_finalized && abort_function;
    fprintf(stderr, "volseg_fault_shim: rank %ld (pid %ld): no I/O call for %.0f s, %s\n", my_rank, (long)getpid(),
            idle / 1000.0, use_mpi ? "MPI_Abort(MPI_COMM_WORLD, 99)" : "exit(99)");
    fflush(stderr);
    if (use_mpi && world)
      ((int (*)(void*, int))abort_function)(world, 99);
    else if (use_mpi)
      ((int (*)(int, int))abort_function)(0x44000000, 99);
    _exit(99);
  }
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  pthread_once(&once, load);
  activity();
  const char* limit = getenv("VOLSEG_SHIM_WATCHDOG_S");
  if (!limit || !*limit) return;
  static double seconds;
  seconds = strtod(limit, NULL);
  if (seconds <= 0) return;
  pthread_t thread;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&thread, &attributes, watch, &seconds) != 0)
    fprintf(stderr, "volseg_fault_shim: cannot start the watchdog\n");
  pthread_attr_destroy(&attributes);
}
