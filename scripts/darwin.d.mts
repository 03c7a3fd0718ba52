// Types of scripts/darwin.mjs, for the tests that import it (test/helpers/prereq.ts, test/darwin-build.test.ts).
export declare const DARWIN_TARGETS: Record<'arm64' | 'x64', { triple: string; cputype: number; cpuName: string }>;
export declare function zigVersion(): string;
export declare function zigHome(): string;
export declare function findZig(): { zig: string } | { why: string };
export declare function machHeader(file: string): { cputype: number; filetype: number } | { why: string };
export declare function gypConditionHolds(expr: string, os: string): boolean;
export interface MacBuild {
  sources: string[];
  defines: string[];
  includeDirs: string[];
  cxxflags: string[];
  deploymentTarget: string;
}
export declare function macBuild(root: string): MacBuild;
export declare function nodeIncludeDir(nodedir: string): string;
export declare function compileArgs(arch: string, build: MacBuild, nodeInclude: string, source: string, object: string, opts?: { werror?: boolean }): string[];
export declare function linkArgs(arch: string, build: MacBuild, objects: string[], output: string): string[];
export interface DarwinBuildResult {
  compiled: Array<{ source: string; ok: boolean; output: string }>;
  linked: { ok: boolean; output: string };
}
export declare function buildDarwin(zig: string, root: string, arch: string, nodedir: string, output: string, opts?: { werror?: boolean }): DarwinBuildResult;
