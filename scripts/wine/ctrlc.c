/*
 * ctrlc.exe GATE COMMAND-LINE: a test's Ctrl-C for a console program on Windows, which Node cannot send
 * (its kill is TerminateProcess). Starts COMMAND-LINE in a console of its own (CREATE_NEW_CONSOLE), with
 * this program's standard handles as its own (so the test reads what it prints), waits
 * until the file GATE exists (the test creates it once the program is where the Ctrl-C should find it, at
 * most 120 s), attaches to that console, ignores Ctrl-C itself, sends it to every process there
 * (GenerateConsoleCtrlEvent, CTRL_C_EVENT, group 0), waits for the program to end, and exits with its
 * exit code. 120 to 125 are its own failures, said on stderr.
 * Microsoft's documentation: CreateProcessW (CREATE_NEW_CONSOLE), AttachConsole, SetConsoleCtrlHandler
 * (a NULL handler with TRUE ignores Ctrl-C), GenerateConsoleCtrlEvent ("generates a CTRL+C signal for all
 * processes that share the console of the calling process" with a group id of 0).
 * Only the Wine lane's tests use it (scripts/test-windows.mjs builds it with zig, RUNWARDEN_TEST_CTRLC).
 */
#include <windows.h>
#include <shellapi.h>
#include <stdio.h>

int main(void) {
  LPWSTR line = GetCommandLineW();
  int argc = 0;
  LPWSTR* argv = CommandLineToArgvW(line, &argc);
  if (argv == NULL || argc < 3) {
    fprintf(stderr, "usage: ctrlc.exe GATE COMMAND-LINE\n");
    return 120;
  }
  /* The command line after the program's name and GATE, as given. */
  LPWSTR rest = line;
  for (int skip = 2; skip > 0 && *rest != 0;) {
    int quoted = 0;
    while (*rest != 0 && (quoted || *rest != L' ')) {
      if (*rest == L'"') quoted = !quoted;
      rest++;
    }
    while (*rest == L' ') rest++;
    skip--;
  }
  STARTUPINFOW si;
  ZeroMemory(&si, sizeof si);
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION pi;
  if (!CreateProcessW(NULL, rest, NULL, NULL, TRUE, CREATE_NEW_CONSOLE, NULL, NULL, &si, &pi)) {
    fprintf(stderr, "ctrlc: CreateProcessW failed: %lu\n", GetLastError());
    return 121;
  }
  for (int i = 0; GetFileAttributesW(argv[1]) == INVALID_FILE_ATTRIBUTES; i++) {
    if (i >= 6000 || WaitForSingleObject(pi.hProcess, 20) == WAIT_OBJECT_0) {
      fprintf(stderr, "ctrlc: the gate never opened, or the program ended first\n");
      TerminateProcess(pi.hProcess, 1);
      return 122;
    }
  }
  FreeConsole();
  if (!AttachConsole(pi.dwProcessId)) {
    fprintf(stderr, "ctrlc: AttachConsole failed: %lu\n", GetLastError());
    TerminateProcess(pi.hProcess, 1);
    return 123;
  }
  SetConsoleCtrlHandler(NULL, TRUE);
  if (!GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0)) {
    TerminateProcess(pi.hProcess, 1);
    return 124;
  }
  if (WaitForSingleObject(pi.hProcess, 120000) != WAIT_OBJECT_0) {
    TerminateProcess(pi.hProcess, 1);
    return 125;
  }
  DWORD code = 0;
  GetExitCodeProcess(pi.hProcess, &code);
  return (int)code;
}
