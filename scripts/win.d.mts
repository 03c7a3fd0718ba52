// Types of scripts/win.mjs, for the tests that import it (test/win-build.test.ts).
export declare const WIN_TARGETS: Record<'x64' | 'arm64', { triple: string; dlltool: string; machine: number; machineName: string }>;
export interface WinBuild {
  sources: string[];
  defines: string[];
  includeDirs: string[];
  cxxflags: string[];
  libraries: string[];
}
export declare function winBuild(root: string): WinBuild;
export declare function napiSymbols(root: string): string[];
export interface WinBuildResult {
  compiled: Array<{ source: string; ok: boolean; output: string }>;
  linked: { ok: boolean; output: string };
}
export declare function buildWin(zig: string, root: string, arch: string, nodedir: string, output: string, opts?: { werror?: boolean }): WinBuildResult;
