// Types of scripts/prebuild-check.mjs, for the tests that import it (test/win-build.test.ts).
export declare const RELEASE_PREBUILDS: Record<string, { format: 'elf' | 'macho' | 'pe' }>;
export declare const WINDOWS_SYSTEM_DLLS: string[];
export declare function parsePe(buf: Buffer): { machine: number; characteristics: number; magic: number; exports: string[]; imports: Array<{ dll: string; names: string[] }> };
export declare function checkPrebuild(target: string, file: string, opts?: { zig?: string }): string[];
