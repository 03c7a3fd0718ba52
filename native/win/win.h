// runwarden native, Windows: the primitives every Windows file of the addon
// is written with (native/win/*.cc, native/fs_win.cc).
//
// Descriptors. Node's fs on Windows takes C-runtime descriptors of node.exe's
// own C runtime, which an addon cannot open with its own: a handle becomes
// such a descriptor through libuv's uv_open_osfhandle, a descriptor goes back
// to its handle through uv_get_osfhandle, and uv_fs_close closes one. node.exe
// exports libuv (Node's C++ addon documentation lists libuv among what an
// addon may use); they are looked up at first use in node.exe, the module the
// N-API imports are bound to (else the process's executable), so the addon's
// import table names nothing but N-API and system DLLs. A host
// without them (a runtime that implements N-API but not libuv) answers ENOSYS
// wherever a descriptor is made, and every probe of the lock still works,
// because a probe opens no descriptor.
//
// Errors. Every function here returns 0 or an errno value of the C runtime's
// numbering (mingw-w64's errno.h, the same numbers as node's
// os.constants.errno on Windows), mapped from the Win32 error or NTSTATUS.
// The Win32 code is kept (LastWin32()) for messages.
//
// Paths. JavaScript hands UTF-8 (strings, or Buffers of UTF-8 bytes: the
// names readDirSorted gives are UTF-8). A path is made absolute and given
// the \\?\ prefix (GetFullPathNameW, "Maximum Path Length Limitation" in
// learn.microsoft.com/windows/win32/fileio/maximum-file-path-limitation), so
// paths longer than MAX_PATH work without the LongPathsEnabled setting; a
// name is one entry, opened relative to its directory's handle with
// NtCreateFile's RootDirectory, as openat(2) is on POSIX.
#ifndef RUNWARDEN_WIN_WIN_H_
#define RUNWARDEN_WIN_WIN_H_

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <winternl.h>

#include <napi.h>
#include <stdint.h>

#include <string>

namespace rw {
namespace win {

// The longest path, in UTF-16 units, the \\?\ form allows.
constexpr size_t kMaxWidePath = 32767;

// errno of a Win32 error / an NTSTATUS (EIO for anything unlisted).
int ErrnoOfWin32(DWORD err);
int ErrnoOfStatus(NTSTATUS status);
// The Win32 code behind the last errno these functions returned on this thread.
DWORD LastWin32();

// A UTF-8 path as an absolute \\?\ path (forward slashes become backslashes).
int WidePath(const char* utf8, std::wstring* out);
// A UTF-8 directory entry name: not empty, no '/', '\\' or ':' (a name with
// ':' would open a stream of another file), not "." or "..". EINVAL otherwise.
int WideName(const char* utf8, std::wstring* out);
// UTF-16 to UTF-8.
std::string Utf8(const wchar_t* s, size_t len);
// Whether `name` (UTF-8) is one entry as WideName requires.
bool IsEntryName(const char* name);

// Opens the entry `name` of the directory `dir` (NtCreateFile, RootDirectory
// = dir, OBJ_CASE_INSENSITIVE as Win32 opens are). `options` are NtCreateFile
// CreateOptions; FILE_SYNCHRONOUS_IO_NONALERT is always added, so the handle
// is synchronous as CreateFileW's are. Every share mode is granted to others
// (read, write, delete), so nothing opened here keeps another program from
// renaming or removing the file.
int OpenRelative(HANDLE dir, const std::wstring& name, ACCESS_MASK access, ULONG disposition, ULONG options, HANDLE* out);
// Opens the directory at `path` without following a link at its last
// component: FILE_FLAG_OPEN_REPARSE_POINT, then refused with ELOOP when the
// entry is a link (a symbolic link or a junction: a name-surrogate reparse
// point), ENOTDIR when it is not a directory. Links above it are followed.
int OpenDirectory(const char* path, ACCESS_MASK access, HANDLE* out);

// What a handle's file is, as POSIX and Node's fs.fstat name it: dev is the
// volume serial number and ino the file's index on it (as libuv's fstat
// reports them), mode a POSIX st_mode (S_IFREG, S_IFDIR or S_IFLNK for a
// name-surrogate reparse point), times in 100 ns units since 1601.
struct Facts {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  uint32_t mode = 0;
  uint32_t attributes = 0;
  int64_t mtime = 0;
  int64_t ctime = 0;
};
int FactsOf(HANDLE h, Facts* out);
// Milliseconds since 1970 from a 100 ns FILETIME count, computed as Node
// computes Stats' *Ms fields from libuv's timespec, so the two compare equal.
double MsOfFiletime(int64_t t);
// POSIX st_mode bits.
constexpr uint32_t kModeReg = 0100000, kModeDir = 0040000, kModeLink = 0120000;

// The filesystem of a handle's volume: its name (GetVolumeInformationByHandleW:
// "NTFS", "ReFS", "FAT32" …), prefixed "remote:" when the volume's device is a
// network one (FILE_FS_DEVICE_INFORMATION: FILE_DEVICE_NETWORK_FILE_SYSTEM or
// FILE_REMOTE_DEVICE), so a share or a mapped network drive is never on the
// known-local list.
int FsNameOf(HANDLE h, char (&name)[32]);

// Node's descriptors (see the top of this file).
int FdOfHandle(HANDLE h, int* fd);  // on failure the handle is closed
HANDLE HandleOfFd(int fd);          // INVALID_HANDLE_VALUE when fd is not open
int CloseFd(napi_env env, int fd);

// Reads up to `len` bytes at `offset` (a short count only at the end).
int ReadAt(HANDLE h, void* buf, size_t len, uint64_t offset, size_t* got);

}  // namespace win
}  // namespace rw

#endif  // RUNWARDEN_WIN_WIN_H_
