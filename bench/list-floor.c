/*
 * The system-call floor of `runwarden runs --json` (bench/list-floor.mjs).
 *
 * For every run directory under a root, the system calls one inspection
 * makes, in the same order and with the same flags, and nothing else:
 *
 *   sync   run directory openat(O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC); for
 *          events.jsonl and state.json relative to it openat(O_RDONLY|
 *          O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC), fstat, pread (the stream's
 *          last 16 KiB, the snapshot whole plus one byte), close; close of
 *          the directory (native/runfiles.cc, CONTRACT §1.2, §1.3). A run
 *          whose stream does not end in `run_finished` or a pause (an open
 *          last leg) also pays what inspect.ts adds for it: the §4.2 probe
 *          (statx of the lock entry, no follow; the directory's fstatfs on
 *          the first probe only, as the probe remembers a mount judged
 *          local; openat2 RESOLVE_NO_XDEV, pread 128, flock LOCK_SH|LOCK_NB,
 *          close)
 *          twice, the
 *          replaced-lock look (openat, fstat, pread, close) and the re-read
 *          of the stream's identity (openat, fstat, close). /proc/locks,
 *          read once per 256 runs, is left out.
 *   uring  the settled part of the same kernel work (open the directories;
 *          open, read and close both files) submitted through io_uring in
 *          batches of 256 runs, one io_uring_enter per step, WITHOUT the two
 *          fstat calls (io_uring's statx is always handed to a kernel
 *          worker thread, which costs more than it saves): a lower bound
 *          for what batching could reach, not a design.
 *
 * Linux is what it was written for; elsewhere it compiles with fstatat for
 * statx and without io_uring (written for darwin, not compiled there).
 *
 * usage: list-floor <root> sync|uring
 * prints one JSON line: {"mode":…, "runs":…, "seconds":…, "open_legs":…}
 * (CLOCK_MONOTONIC around the loop only; the listing of names before it is
 * not counted). It writes nothing, and its flocks are shared and released.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <sys/vfs.h>
#else
#include <sys/mount.h>
#include <sys/param.h>
#endif
#include <time.h>
#include <unistd.h>

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#define HAVE_URING 1
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static char tail[16384];
static char snap[65536];
static const int FILE_FLAGS = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC;

/* open, fstat, pread, close of one file; returns the bytes read (the stream's last 16 KiB). */
static ssize_t read_file(int dirfd, const char* name, int from_end, char* buf, size_t cap) {
  int fd = openat(dirfd, name, FILE_FLAGS);
  if (fd < 0) return -1;
  struct stat st;
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size_t want = from_end ? ((size_t)st.st_size < cap ? (size_t)st.st_size : cap) : (size_t)st.st_size + 1;
    if (want <= cap) n = pread(fd, buf, want, from_end ? st.st_size - (off_t)want : 0);
  }
  close(fd);
  return n;
}

/* Whether the stream's last line (in buf[0, n)) closes or pauses its leg. */
static int leg_closed(const char* buf, ssize_t n) {
  if (n <= 0) return 1;
  ssize_t end = buf[n - 1] == '\n' ? n - 1 : n;
  ssize_t s = end;
  while (s > 0 && buf[s - 1] != '\n') s--;
  return memmem(buf + s, end - s, "\"run_finished\"", 14) != NULL;
}

static void probe(int dirfd) {
  static int judged;
  char head[128];
#ifdef STATX_TYPE
  struct statx stx;
  if (statx(dirfd, "resume.lock", AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | 0x4000u, &stx) != 0) return;
#else
  struct stat lst;
  if (fstatat(dirfd, "resume.lock", &lst, AT_SYMLINK_NOFOLLOW) != 0) return;
#endif
  if (!judged) {
    struct statfs sf;
    fstatfs(dirfd, &sf);
    judged = 1;
  }
#ifdef __linux__
  struct { uint64_t flags, mode, resolve; } how = {FILE_FLAGS, 0, 0x01 /* RESOLVE_NO_XDEV */};
  int fd = (int)syscall(437 /* openat2 */, dirfd, "resume.lock", &how, sizeof how);
  if (fd < 0) return;
#else
  int fd = openat(dirfd, "resume.lock", FILE_FLAGS);
  if (fd < 0) return;
  struct stat st;
  fstat(fd, &st);
#endif
  pread(fd, head, sizeof head, 0);
  flock(fd, LOCK_SH | LOCK_NB);
  close(fd);
}

static int sync_loop(int root, char** names, int n) {
  int open_legs = 0;
  for (int i = 0; i < n; i++) {
    int dirfd = openat(root, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0) continue;
    ssize_t t = read_file(dirfd, "events.jsonl", 1, tail, sizeof tail);
    read_file(dirfd, "state.json", 0, snap, sizeof snap);
    if (!leg_closed(tail, t)) {
      open_legs++;
      probe(dirfd);
      char head[128];
      struct stat st;
      int fd = openat(dirfd, "resume.lock", FILE_FLAGS);
      if (fd >= 0) {
        fstat(fd, &st);
        pread(fd, head, sizeof head, 0);
        close(fd);
      }
      fd = openat(dirfd, "events.jsonl", FILE_FLAGS);
      if (fd >= 0) {
        fstat(fd, &st);
        close(fd);
      }
      probe(dirfd);
    }
    close(dirfd);
  }
  return open_legs;
}

#ifdef HAVE_URING
enum { BATCH = 256, DEPTH = 1024 };
static int ring;
static struct io_uring_sqe* sqes;
static struct io_uring_cqe* cqes;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static unsigned pending;
static int res[DEPTH];
static char bufs[BATCH][2][16384];

static int uring_setup(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  ring = (int)syscall(__NR_io_uring_setup, DEPTH, &p);
  if (ring < 0) return -1;
  char* sq = mmap(0, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
  char* cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
  sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) return -1;
  sq_tail = (unsigned*)(sq + p.sq_off.tail);
  sq_mask = (unsigned*)(sq + p.sq_off.ring_mask);
  sq_array = (unsigned*)(sq + p.sq_off.array);
  cq_head = (unsigned*)(cq + p.cq_off.head);
  cq_tail = (unsigned*)(cq + p.cq_off.tail);
  cq_mask = (unsigned*)(cq + p.cq_off.ring_mask);
  cqes = (struct io_uring_cqe*)(cq + p.cq_off.cqes);
  return 0;
}

static struct io_uring_sqe* sqe(int op, int fd, unsigned slot) {
  unsigned t = *sq_tail, i = t & *sq_mask;
  sq_array[i] = i;
  struct io_uring_sqe* s = &sqes[i];
  memset(s, 0, sizeof *s);
  s->opcode = (unsigned char)op;
  s->fd = fd;
  s->user_data = slot;
  atomic_store_explicit((_Atomic unsigned*)sq_tail, t + 1, memory_order_release);
  pending++;
  return s;
}

/* Submits what is pending and waits for all of it; results land in res[user_data]. */
static void run_batch(void) {
  unsigned want = pending, got = 0, h = *cq_head;
  if (syscall(__NR_io_uring_enter, ring, want, want, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
    perror("io_uring_enter");
    exit(1);
  }
  while (got < want) {
    unsigned t = atomic_load_explicit((_Atomic unsigned*)cq_tail, memory_order_acquire);
    for (; h != t; h++, got++) res[cqes[h & *cq_mask].user_data] = cqes[h & *cq_mask].res;
    if (got < want) syscall(__NR_io_uring_enter, ring, 0, want - got, IORING_ENTER_GETEVENTS, NULL, 0);
  }
  atomic_store_explicit((_Atomic unsigned*)cq_head, h, memory_order_release);
  pending = 0;
}

static void uring_loop(int root, char** names, int n) {
  static const char* files[2] = {"events.jsonl", "state.json"};
  int dirs[BATCH], fds[BATCH][2];
  for (int s = 0; s < n; s += BATCH) {
    int m = n - s < BATCH ? n - s : BATCH;
    for (int i = 0; i < m; i++) {
      struct io_uring_sqe* q = sqe(IORING_OP_OPENAT, root, i);
      q->addr = (unsigned long)names[s + i];
      q->open_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    }
    run_batch();
    for (int i = 0; i < m; i++) dirs[i] = res[i];
    for (int i = 0; i < m; i++)
      for (int k = 0; k < 2; k++) {
        struct io_uring_sqe* q = sqe(IORING_OP_OPENAT, dirs[i], i * 2 + k);
        q->addr = (unsigned long)files[k];
        q->open_flags = FILE_FLAGS;
      }
    run_batch();
    for (int i = 0; i < m; i++)
      for (int k = 0; k < 2; k++) fds[i][k] = res[i * 2 + k];
    for (int i = 0; i < m; i++)
      for (int k = 0; k < 2; k++) {
        struct io_uring_sqe* q = sqe(IORING_OP_READ, fds[i][k], i * 2 + k);
        q->addr = (unsigned long)bufs[i][k];
        q->len = sizeof bufs[i][k];
      }
    run_batch();
    for (int i = 0; i < m; i++) {
      for (int k = 0; k < 2; k++) sqe(IORING_OP_CLOSE, fds[i][k], i * 3 + k);
      sqe(IORING_OP_CLOSE, dirs[i], i * 3 + 2);
    }
    run_batch();
  }
}
#endif

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[2], "sync") != 0 && strcmp(argv[2], "uring") != 0)) {
    fprintf(stderr, "usage: list-floor <root> sync|uring\n");
    return 2;
  }
  DIR* d = opendir(argv[1]);
  if (d == NULL) {
    perror(argv[1]);
    return 1;
  }
  int cap = 1024, n = 0;
  char** names = malloc(sizeof(char*) * cap);
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) names = realloc(names, sizeof(char*) * (cap *= 2));
    names[n++] = strdup(e->d_name);
  }
  int root = dirfd(d);
  int open_legs = 0;
  double t0 = now();
  if (strcmp(argv[2], "sync") == 0) {
    open_legs = sync_loop(root, names, n);
  } else {
#ifdef HAVE_URING
    if (uring_setup() != 0) {
      printf("{\"mode\":\"uring\",\"unavailable\":\"%s\"}\n", strerror(errno));
      return 0;
    }
    uring_loop(root, names, n);
#else
    printf("{\"mode\":\"uring\",\"unavailable\":\"not linux\"}\n");
    return 0;
#endif
  }
  printf("{\"mode\":\"%s\",\"runs\":%d,\"seconds\":%.4f,\"open_legs\":%d}\n", argv[2], n, now() - t0, open_legs);
  return 0;
}
