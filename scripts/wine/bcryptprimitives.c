/*
 * A stand-in for Windows 10's bcryptprimitives.dll, which Wine 8 does not have:
 * its one export that Rust's standard library imports, ProcessPrng, filled by
 * RtlGenRandom (advapi32's SystemFunction036). Only the Wine lane's test
 * tooling needs it (the win32 build of rolldown, under vitest), never runwarden,
 * whose addon imports nothing but N-API and kernel32, ntdll and msvcrt.
 * Built with zig by scripts/test-windows.mjs into the lane's Wine prefix.
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!RtlGenRandom(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
