/*
 * The syscall floors for runwarden's probe (CONTRACT §5.4).
 *
 * usage: floor <lock-path> <iterations> [reference|same]
 *
 * reference (the default): THE floor, fixed. The 7 system calls a probe was
 *   first measured against, and which the budget is stated in: statfs of the
 *   run directory checked against the known-local list, open of the lock file
 *   O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC, fstat, pread of 128 bytes at 0,
 *   flock(LOCK_SH|LOCK_NB), LOCK_UN when it was granted, close (6 when held).
 *   It does not follow the implementation: a call added to the probe shows up
 *   as a higher ratio to it, never as a higher floor.
 * same: the probe's own sequence today (CONTRACT §4.2, native/probe.cc), with
 *   the filesystem judgement remembered as the probe remembers it: open of the
 *   run directory O_PATH|O_DIRECTORY|O_NOFOLLOW, statx of the lock entry (no
 *   follow; type, size, inode, mount root, unique mount id), fstatfs of the
 *   directory on the first iteration only, openat2 of the lock file
 *   O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC with RESOLVE_NO_XDEV, pread 128
 *   (its length checked against the statx size), flock(LOCK_SH|LOCK_NB),
 *   close, close of the directory. The ratio to it is the price of asking
 *   from Node alone.
 * Either leaves out everything that is not a syscall (the JS call, argument
 * conversion, the result object). Prints one JSON line:
 * {"ns_per_iter":…, "iterations":…, "last":"granted"|"contended"|…, "loop":…}
 * It times itself with CLOCK_MONOTONIC around the loop only (with
 * RW_FLOOR_CLOCK=cpu: CLOCK_PROCESS_CPUTIME_ID), so process start-up is not
 * counted. It writes nothing to the lock file, ever.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* The same known-local list src/fsgate.ts hands the addon (CONTRACT §4.2). */
static const uint32_t kLocal[] = {0xEF53u,     0x9123683Eu, 0x58465342u, 0x01021994u, 0x794C7630u,
                                  0x2FC12FC1u, 0xF2F52010u, 0x858458F6u, 0xCA451A4Eu};

enum { kGranted, kContended, kNotLocal, kFailed };

static int local_type(uint32_t type) {
  for (size_t i = 0; i < sizeof kLocal / sizeof kLocal[0]; i++) {
    if (type == kLocal[i]) return 1;
  }
  return 0;
}

/* The shared lock's attempt and answer, common to both loops. */
static int shared_lock(int fd) {
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) return kGranted;
  return errno == EWOULDBLOCK ? kContended : kFailed;
}

static int reference_once(const char *dir, const char *path, unsigned char *head) {
  struct statfs sfs;
  if (statfs(dir, &sfs) != 0) return kFailed;
  if (!local_type((uint32_t)sfs.f_type)) return kNotLocal;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return kFailed;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return kFailed; }
  if (pread(fd, head, 128, 0) < 0) { close(fd); return kFailed; }
  int r = shared_lock(fd);
  if (r == kGranted) flock(fd, LOCK_UN);
  close(fd);
  return r;
}

#define RW_STATX_MNT_ID_UNIQUE 0x4000u
#define RW_RESOLVE_NO_XDEV 0x01u
#define RW_SYS_OPENAT2 437
struct rw_open_how { uint64_t flags, mode, resolve; };
#define RW_STATX_ATTR_MOUNT_ROOT 0x2000u

static int same_once(const char *dir, const char *name, unsigned char *head, int *judged) {
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0) return kFailed;
  int r = kFailed;
  struct statx stx;
  if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT,
            STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | RW_STATX_MNT_ID_UNIQUE, &stx) != 0) goto out;
  if (stx.stx_attributes & RW_STATX_ATTR_MOUNT_ROOT) { r = kNotLocal; goto out; }
  if (!*judged) {
    struct statfs sfs;
    if (fstatfs(dirfd, &sfs) != 0) goto out;
    if (!local_type((uint32_t)sfs.f_type)) { r = kNotLocal; goto out; }
    *judged = 1;
  }
  if (!S_ISREG(stx.stx_mode)) goto out;
  struct rw_open_how how = {O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0, RW_RESOLVE_NO_XDEV};
  int fd = (int)syscall(RW_SYS_OPENAT2, dirfd, name, &how, sizeof how);
  if (fd < 0) goto out;
  ssize_t n = pread(fd, head, 128, 0);
  if (n < 0 || (n < 128 ? (uint64_t)n != stx.stx_size : stx.stx_size < 128)) { close(fd); goto out; }
  r = shared_lock(fd);
  close(fd);
out:
  close(dirfd);
  return r;
}

/* RW_FLOOR_CLOCK=cpu times the loop in this process's CPU time instead of wall time (bench/probe-budget.mjs). */
static clockid_t loop_clock = CLOCK_MONOTONIC;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(loop_clock, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s <lock-path> <iterations> [reference|same]\n", argv[0]);
    return 2;
  }
  const char *path = argv[1];
  long n = strtol(argv[2], NULL, 10);
  if (n <= 0) {
    fprintf(stderr, "iterations must be a positive integer\n");
    return 2;
  }
  const char *clock_name = getenv("RW_FLOOR_CLOCK");
  if (clock_name != NULL && strcmp(clock_name, "cpu") == 0) loop_clock = CLOCK_PROCESS_CPUTIME_ID;
  int same = 0;
  if (argc == 4) {
    if (strcmp(argv[3], "same") == 0) {
      same = 1;
    } else if (strcmp(argv[3], "reference") != 0) {
      fprintf(stderr, "loop must be reference or same\n");
      return 2;
    }
  }
  char dirbuf[PATH_MAX];
  snprintf(dirbuf, sizeof dirbuf, "%s", path);
  const char *dir = dirname(dirbuf);
  const char *slash = strrchr(path, '/');
  const char *name = slash == NULL ? path : slash + 1;
  static unsigned char head[128];
  volatile unsigned sink = 0;
  int judged = 0;

  /* One untimed round warms the dentry and inode caches (and, for `same`, makes the one fstatfs). */
  int last = same ? same_once(dir, name, head, &judged) : reference_once(dir, path, head);
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    last = same ? same_once(dir, name, head, &judged) : reference_once(dir, path, head);
    sink += head[0];
  }
  double t1 = now_ns();
  static const char *names[] = {"granted", "contended", "not-local", "failed"};
  printf("{\"ns_per_iter\":%.1f,\"iterations\":%ld,\"last\":\"%s\",\"loop\":\"%s\"}\n", (t1 - t0) / (double)n, n, names[last],
         same ? "same" : "reference");
  (void)sink;
  return last == kFailed || last == kNotLocal ? 1 : 0;
}
