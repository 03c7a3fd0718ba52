// runwarden native: errno names, the addon's own table.
//
// An error thrown from the addon carries its errno's name as .code (ENOENT,
// EAGAIN ...). The names come from this table, built from the C library's
// own <errno.h> constants at compile time, so the addon needs nothing from
// the runtime beyond Node-API: libuv's uv_err_name is not part of Node-API,
// and runtimes that implement Node-API without libuv (Bun, Deno) lack it.
#ifndef RUNWARDEN_ERRNO_NAME_H_
#define RUNWARDEN_ERRNO_NAME_H_

#include <stddef.h>

namespace rw {

// The name of errno `err` ("ENOENT"), or "UNKNOWN" for a value this C
// library gives no name. Where two names share a value, the one Node's
// os.constants.errno lists first wins (EAGAIN over EWOULDBLOCK, ENOTSUP
// over EOPNOTSUPP on linux, EDEADLK over EDEADLOCK), as libuv names them.
const char* ErrnoName(int err);

// The table ErrnoName reads, entry by entry: its length, and the name (and
// value, into *value) of entry `i`, for the addon's `errnos` export.
size_t ErrnoCount();
const char* ErrnoAt(size_t i, int* value);

}  // namespace rw

#endif  // RUNWARDEN_ERRNO_NAME_H_
