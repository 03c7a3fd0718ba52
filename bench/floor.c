/*
 * The syscall floor for runwarden's probe (CONTRACT §5.4).
 *
 * A loop doing exactly the system calls one probeLock makes, in the same
 * order, with the same flags, and nothing else: open of the run directory
 * (O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC) and fstatfs of it checked against the
 * known-local list; the lock file's own type through an O_PATH descriptor
 * (openat, fstatfs, close); openat(O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC),
 * fstatfs of that descriptor, fstat, pread of 128 bytes at offset 0,
 * flock(LOCK_SH|LOCK_NB), LOCK_UN when it was granted, close, close of the
 * directory (CONTRACT §1.3, §4.2). What it leaves out is everything that is not a syscall
 * (the JS call, argument conversion, the result object), so the ratio of a
 * probe to this loop is the price of asking from Node.
 *
 * usage: floor <lock-path> <iterations>
 * prints one JSON line: {"ns_per_iter":…, "iterations":…, "last":"granted"|"contended"|…}
 * It times itself with CLOCK_MONOTONIC around the loop only, so process
 * start-up is not counted. It writes nothing to the lock file, ever.
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
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* The same known-local list src/fsgate.ts hands the addon (CONTRACT §4.2). */
static const uint32_t kLocal[] = {0xEF53u,     0x9123683Eu, 0x58465342u, 0x01021994u, 0x794C7630u,
                                  0x2FC12FC1u, 0xF2F52010u, 0x858458F6u, 0xCA451A4Eu};

enum { kGranted, kContended, kNotLocal, kFailed };

static int is_local(int fd) {
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0) return 0;
  for (size_t i = 0; i < sizeof kLocal / sizeof kLocal[0]; i++) {
    if ((uint32_t)sfs.f_type == kLocal[i]) return 1;
  }
  return 0;
}

static int probe_at(int dirfd, const char *name, unsigned char *head) {
  if (!is_local(dirfd)) return kNotLocal;
  int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (pfd < 0) return kFailed;
  int local = is_local(pfd);
  close(pfd);
  if (!local) return kNotLocal;
  int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return kFailed;
  if (!is_local(fd)) { close(fd); return kNotLocal; }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return kFailed; }
  if (pread(fd, head, 128, 0) < 0) { close(fd); return kFailed; }
  int r;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
    r = kGranted;
  } else {
    r = (errno == EWOULDBLOCK) ? kContended : kFailed;
  }
  close(fd);
  return r;
}

static int probe_once(const char *dir, const char *path, unsigned char *head) {
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0) return kFailed;
  const char *slash = strrchr(path, '/');
  int r = probe_at(dirfd, slash == NULL ? path : slash + 1, head);
  close(dirfd);
  return r;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <lock-path> <iterations>\n", argv[0]);
    return 2;
  }
  const char *path = argv[1];
  long n = strtol(argv[2], NULL, 10);
  if (n <= 0) {
    fprintf(stderr, "iterations must be a positive integer\n");
    return 2;
  }
  char dirbuf[PATH_MAX];
  snprintf(dirbuf, sizeof dirbuf, "%s", path);
  const char *dir = dirname(dirbuf);
  static unsigned char head[128];
  volatile unsigned sink = 0;

  int last = probe_once(dir, path, head); /* warm the dentry and inode caches */
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    last = probe_once(dir, path, head);
    sink += head[0];
  }
  double t1 = now_ns();
  static const char *names[] = {"granted", "contended", "not-local", "failed"};
  printf("{\"ns_per_iter\":%.1f,\"iterations\":%ld,\"last\":\"%s\"}\n", (t1 - t0) / (double)n, n, names[last]);
  (void)sink;
  return last == kFailed || last == kNotLocal ? 1 : 0;
}
