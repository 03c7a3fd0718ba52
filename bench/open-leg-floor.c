/*
 * The floor of searching an open last leg for its start (CONTRACT §2.5 rule
 * 8): for each file given, read it from the end back to its first byte in
 * the windows the tail reader reads (16 KiB, doubling to 1 MiB, pread), and
 * nothing else: the cost of the bytes alone, below which no search of them
 * can go. With `scan` first, each window is also scanned backward once, byte
 * by byte, for the candidate strings `n_st`, `n_fi`, `te_pa`, `\u005`, `\u006`
 * and `\u007` (a plain search, for comparison; the addon's is vectorised). With `memrchr`
 * first, each window is searched once with libc's memrchr for a byte that
 * JSON text never holds raw (0x01), so every byte is looked at: the least
 * any search of these bytes costs beyond reading them, whatever it looks
 * for. Prints {"ns": total, "bytes": read, "hits": n} for one pass over all
 * the files.
 * usage: open-leg-floor [scan|memrchr] FILE...
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Needles that start at i in buf[0, n): the same four the tail reader searches for. */
static int needle_at(const unsigned char *b, size_t i, size_t n) {
  switch (b[i]) {
    case 'n':
      return i + 3 < n && b[i + 1] == '_' && ((b[i + 2] == 's' && b[i + 3] == 't') || (b[i + 2] == 'f' && b[i + 3] == 'i'));
    case 't':
      return i + 4 < n && b[i + 1] == 'e' && b[i + 2] == '_' && b[i + 3] == 'p' && b[i + 4] == 'a';
    case '\\':
      return i + 4 < n && b[i + 1] == 'u' && b[i + 2] == '0' && b[i + 3] == '0' && b[i + 4] >= '5' && b[i + 4] <= '7';
    default:
      return 0;
  }
}

int main(int argc, char **argv) {
  size_t cap = (1 << 20) + 8;
  unsigned char *buf = malloc(cap);
  if (buf == NULL) return 1;
  long long bytes = 0, hits = 0;
  int scan = argc > 1 && strcmp(argv[1], "scan") == 0;
  int one = argc > 1 && strcmp(argv[1], "memrchr") == 0;
  long long t0 = now_ns();
  for (int a = 1 + scan + one; a < argc; a++) {
    int fd = open(argv[a], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      perror(argv[a]);
      return 1;
    }
    off_t end = st.st_size;
    size_t chunk = 16 * 1024;
    while (end > 0) {
      size_t len = (size_t)(end < (off_t)chunk ? end : (off_t)chunk);
      ssize_t got = pread(fd, buf, len, end - (off_t)len);
      if (got != (ssize_t)len) {
        perror("pread");
        return 1;
      }
      bytes += got;
      if (scan)
        for (size_t i = len; i-- > 0;) hits += needle_at(buf, i, len);
      if (one) hits += memrchr(buf, 0x01, len) != NULL;
      end -= (off_t)len;
      if (chunk < (1 << 20)) chunk *= 2;
    }
    close(fd);
  }
  long long ns = now_ns() - t0;
  printf("{\"ns\": %lld, \"bytes\": %lld, \"hits\": %lld}\n", ns, bytes, hits);
  free(buf);
  return 0;
}
