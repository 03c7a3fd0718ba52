// XNU model: <errno.h> with darwin's numbers (xnu bsd/sys/errno.h), for the
// darwin sources: every errno name linux's <errno.h> defines is undefined,
// darwin's are defined with darwin's values (EWOULDBLOCK is EAGAIN, as there;
// ENOTSUP 45 and EOPNOTSUPP 102 differ), and `errno` reads the model's
// darwin-numbered copy of linux's (native/xnu-model/errno.cc: a linux error is
// named the same on darwin where darwin has that name, EIO where it has none,
// and linux's EOPNOTSUPP/ENOTSUP (one number there) is darwin's ENOTSUP unless
// the model says otherwise: open(2) of a socket, EOPNOTSUPP on darwin). The
// model's own sources (XNU_MODEL_INTERNAL) keep linux's.
#ifndef XNU_MODEL_ERRNO_H_
#define XNU_MODEL_ERRNO_H_
#include_next <errno.h>
#ifndef XNU_MODEL_INTERNAL
#undef E2BIG
#undef EACCES
#undef EADDRINUSE
#undef EADDRNOTAVAIL
#undef EADV
#undef EAFNOSUPPORT
#undef EAGAIN
#undef EALREADY
#undef EBADE
#undef EBADF
#undef EBADFD
#undef EBADMSG
#undef EBADR
#undef EBADRQC
#undef EBADSLT
#undef EBFONT
#undef EBUSY
#undef ECANCELED
#undef ECHILD
#undef ECHRNG
#undef ECOMM
#undef ECONNABORTED
#undef ECONNREFUSED
#undef ECONNRESET
#undef EDEADLK
#undef EDEADLOCK
#undef EDESTADDRREQ
#undef EDOM
#undef EDOTDOT
#undef EDQUOT
#undef EEXIST
#undef EFAULT
#undef EFBIG
#undef EHOSTDOWN
#undef EHOSTUNREACH
#undef EHWPOISON
#undef EIDRM
#undef EILSEQ
#undef EINPROGRESS
#undef EINTR
#undef EINVAL
#undef EIO
#undef EISCONN
#undef EISDIR
#undef EISNAM
#undef EKEYEXPIRED
#undef EKEYREJECTED
#undef EKEYREVOKED
#undef EL2HLT
#undef EL2NSYNC
#undef EL3HLT
#undef EL3RST
#undef ELIBACC
#undef ELIBBAD
#undef ELIBEXEC
#undef ELIBMAX
#undef ELIBSCN
#undef ELNRNG
#undef ELOOP
#undef EMEDIUMTYPE
#undef EMFILE
#undef EMLINK
#undef EMSGSIZE
#undef EMULTIHOP
#undef ENAMETOOLONG
#undef ENAVAIL
#undef ENETDOWN
#undef ENETRESET
#undef ENETUNREACH
#undef ENFILE
#undef ENOANO
#undef ENOBUFS
#undef ENOCSI
#undef ENODATA
#undef ENODEV
#undef ENOENT
#undef ENOEXEC
#undef ENOKEY
#undef ENOLCK
#undef ENOLINK
#undef ENOMEDIUM
#undef ENOMEM
#undef ENOMSG
#undef ENONET
#undef ENOPKG
#undef ENOPROTOOPT
#undef ENOSPC
#undef ENOSR
#undef ENOSTR
#undef ENOSYS
#undef ENOTBLK
#undef ENOTCONN
#undef ENOTDIR
#undef ENOTEMPTY
#undef ENOTNAM
#undef ENOTRECOVERABLE
#undef ENOTSOCK
#undef ENOTSUP
#undef ENOTTY
#undef ENOTUNIQ
#undef ENXIO
#undef EOPNOTSUPP
#undef EOVERFLOW
#undef EOWNERDEAD
#undef EPERM
#undef EPFNOSUPPORT
#undef EPIPE
#undef EPROTO
#undef EPROTONOSUPPORT
#undef EPROTOTYPE
#undef ERANGE
#undef EREMCHG
#undef EREMOTE
#undef EREMOTEIO
#undef ERESTART
#undef ERFKILL
#undef EROFS
#undef ESHUTDOWN
#undef ESOCKTNOSUPPORT
#undef ESPIPE
#undef ESRCH
#undef ESRMNT
#undef ESTALE
#undef ESTRPIPE
#undef ETIME
#undef ETIMEDOUT
#undef ETOOMANYREFS
#undef ETXTBSY
#undef EUCLEAN
#undef EUNATCH
#undef EUSERS
#undef EWOULDBLOCK
#undef EXDEV
#undef EXFULL
#define EPERM 1
#define ENOENT 2
#define ESRCH 3
#define EINTR 4
#define EIO 5
#define ENXIO 6
#define E2BIG 7
#define ENOEXEC 8
#define EBADF 9
#define ECHILD 10
#define EDEADLK 11
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define ENOTBLK 15
#define EBUSY 16
#define EEXIST 17
#define EXDEV 18
#define ENODEV 19
#define ENOTDIR 20
#define EISDIR 21
#define EINVAL 22
#define ENFILE 23
#define EMFILE 24
#define ENOTTY 25
#define ETXTBSY 26
#define EFBIG 27
#define ENOSPC 28
#define ESPIPE 29
#define EROFS 30
#define EMLINK 31
#define EPIPE 32
#define EDOM 33
#define ERANGE 34
#define EAGAIN 35
#define EINPROGRESS 36
#define EALREADY 37
#define ENOTSOCK 38
#define EDESTADDRREQ 39
#define EMSGSIZE 40
#define EPROTOTYPE 41
#define ENOPROTOOPT 42
#define EPROTONOSUPPORT 43
#define ESOCKTNOSUPPORT 44
#define ENOTSUP 45
#define EPFNOSUPPORT 46
#define EAFNOSUPPORT 47
#define EADDRINUSE 48
#define EADDRNOTAVAIL 49
#define ENETDOWN 50
#define ENETUNREACH 51
#define ENETRESET 52
#define ECONNABORTED 53
#define ECONNRESET 54
#define ENOBUFS 55
#define EISCONN 56
#define ENOTCONN 57
#define ESHUTDOWN 58
#define ETOOMANYREFS 59
#define ETIMEDOUT 60
#define ECONNREFUSED 61
#define ELOOP 62
#define ENAMETOOLONG 63
#define EHOSTDOWN 64
#define EHOSTUNREACH 65
#define ENOTEMPTY 66
#define EPROCLIM 67
#define EUSERS 68
#define EDQUOT 69
#define ESTALE 70
#define EREMOTE 71
#define EBADRPC 72
#define ERPCMISMATCH 73
#define EPROGUNAVAIL 74
#define EPROGMISMATCH 75
#define EPROCUNAVAIL 76
#define ENOLCK 77
#define ENOSYS 78
#define EFTYPE 79
#define EAUTH 80
#define ENEEDAUTH 81
#define EPWROFF 82
#define EDEVERR 83
#define EOVERFLOW 84
#define EBADEXEC 85
#define EBADARCH 86
#define ESHLIBVERS 87
#define EBADMACHO 88
#define ECANCELED 89
#define EIDRM 90
#define ENOMSG 91
#define EILSEQ 92
#define ENOATTR 93
#define EBADMSG 94
#define EMULTIHOP 95
#define ENODATA 96
#define ENOLINK 97
#define ENOSR 98
#define ENOSTR 99
#define EPROTO 100
#define ETIME 101
#define EOPNOTSUPP 102
#define ENOPOLICY 103
#define ENOTRECOVERABLE 104
#define EOWNERDEAD 105
#define EQFULL 106
#define EWOULDBLOCK EAGAIN
#undef errno
#ifdef __cplusplus
extern "C" {
#endif
int* xnu_errno(void);
#ifdef __cplusplus
}
#endif
#define errno (*xnu_errno())
#endif  // XNU_MODEL_INTERNAL
#endif  // XNU_MODEL_ERRNO_H_
