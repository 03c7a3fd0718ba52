// XNU model: <fcntl.h>, with darwin's O_EVTONLY and F_PREALLOCATE.
//
// open(2): "O_EVTONLY descriptor requested for event notifications only".
// The model opens it as a read-only descriptor (access mode 0, the value
// darwin's O_RDONLY has too), so what an O_RDONLY open does, the model's
// O_EVTONLY open does: it blocks on a FIFO without O_NONBLOCK, follows a
// symlink without O_NOFOLLOW, and fails on a socket. Not modelled: that an
// O_EVTONLY descriptor does not keep its volume from being unmounted.
//
// open(2), openat(2): "[EOPNOTSUPP] An attempt was made to open a socket
// (not currently implemented)", where linux answers ENXIO: the model's open
// answers EOPNOTSUPP (darwin's 102) for a socket, otherwise linux's answer.
//
// fcntl(2) F_PREALLOCATE: "Preallocate file storage space", a fstore_t
// with fst_flags F_ALLOCATECONTIG / F_ALLOCATEALL and fst_posmode
// F_PEOFPOSMODE ("allocate from the physical end of file") or
// F_VOLPOSMODE; fst_bytesalloc is set to the space allocated. Modelled by
// fallocate(2) FALLOC_FL_KEEP_SIZE from the end of the allocated blocks;
// ENOTSUP where the filesystem cannot. Numbers from xnu bsd/sys/fcntl.h.
#ifndef XNU_MODEL_FCNTL_H_
#define XNU_MODEL_FCNTL_H_
#include_next <fcntl.h>
#include <sys/types.h>

#define O_EVTONLY 0

#define F_PREALLOCATE 42
#define F_ALLOCATECONTIG 0x00000002
#define F_ALLOCATEALL 0x00000004
#define F_PEOFPOSMODE 3
#define F_VOLPOSMODE 4

typedef struct fstore {
  unsigned int fst_flags;
  int fst_posmode;
  off_t fst_offset;
  off_t fst_length;
  off_t fst_bytesalloc;
} fstore_t;

#ifdef __cplusplus
extern "C" {
#endif
int xnu_fcntl(int fd, int cmd, ...);
int xnu_open(const char* path, int flags, ...);
int xnu_openat(int dirfd, const char* path, int flags, ...);
#ifdef __cplusplus
}
#endif
#ifndef XNU_MODEL_INTERNAL
#define fcntl xnu_fcntl
#define open(...) xnu_open(__VA_ARGS__)
#define openat(...) xnu_openat(__VA_ARGS__)
#endif

#endif  // XNU_MODEL_FCNTL_H_
