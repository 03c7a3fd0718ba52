/**
 * Just enough of Mach-O and of Apple's text-based stubs (.tbd) to check a darwin
 * addon on linux, where it cannot be loaded: the 64-bit header, LC_SYMTAB's
 * nlist_64 entries, and the symbols a .tbd stub says a dylib exports.
 * Layouts from <mach-o/loader.h> and <mach-o/nlist.h> (zig ships both under
 * lib/libc/include/any-macos-any/mach-o/).
 */
import { readFileSync } from 'node:fs';

export const MH_MAGIC_64 = 0xfeedfacf;
export const CPU_TYPE_ARM64 = 0x0100000c;
export const CPU_TYPE_X86_64 = 0x01000007;
export const MH_DYLIB = 6;
export const MH_BUNDLE = 8;
const LC_SYMTAB = 0x2;
const LC_BUILD_VERSION = 0x32;
/** build_version_command.platform for macOS. */
export const PLATFORM_MACOS = 1;
const N_STAB = 0xe0;
const N_TYPE = 0x0e;
const N_EXT = 0x01;
const N_UNDF = 0x0;

export interface MachSymbol {
  name: string;
  /** Defined in this file (N_TYPE other than N_UNDF). */
  defined: boolean;
  /** Visible to other images (N_EXT). */
  external: boolean;
}

export interface MachO {
  cputype: number;
  filetype: number;
  symbols: MachSymbol[];
  /** LC_BUILD_VERSION: the platform and the oldest OS version the file says it runs on ("11.0"). */
  build?: { platform: number; minos: string };
}

/** A version packed as xxxx.yy.zz in nibbles (build_version_command.minos). */
function unpackVersion(v: number): string {
  const patch = v & 0xff;
  return `${v >>> 16}.${(v >>> 8) & 0xff}${patch ? `.${patch}` : ''}`;
}

/** Parses a thin 64-bit little-endian Mach-O file; throws with the reason when `buf` is not one. */
export function parseMachO(buf: Buffer): MachO {
  if (buf.length < 32) throw new Error(`${buf.length} bytes: too short for a mach_header_64`);
  const magic = buf.readUInt32LE(0);
  if (magic !== MH_MAGIC_64) throw new Error(`magic 0x${magic.toString(16)} is not MH_MAGIC_64 (0xfeedfacf)`);
  const cputype = buf.readUInt32LE(4);
  const filetype = buf.readUInt32LE(12);
  const ncmds = buf.readUInt32LE(16);
  const sizeofcmds = buf.readUInt32LE(20);
  if (32 + sizeofcmds > buf.length) throw new Error(`load commands (${sizeofcmds} bytes) run past the end of the file`);
  const symbols: MachSymbol[] = [];
  let build: MachO['build'];
  let off = 32;
  for (let i = 0; i < ncmds; i++) {
    if (off + 8 > 32 + sizeofcmds) throw new Error(`load command ${i} runs past sizeofcmds`);
    const cmd = buf.readUInt32LE(off);
    const cmdsize = buf.readUInt32LE(off + 4);
    if (cmdsize < 8) throw new Error(`load command ${i} has size ${cmdsize}`);
    if (cmd === LC_BUILD_VERSION) build = { platform: buf.readUInt32LE(off + 8), minos: unpackVersion(buf.readUInt32LE(off + 12)) };
    if (cmd === LC_SYMTAB) {
      const symoff = buf.readUInt32LE(off + 8);
      const nsyms = buf.readUInt32LE(off + 12);
      const stroff = buf.readUInt32LE(off + 16);
      const strsize = buf.readUInt32LE(off + 20);
      if (symoff + nsyms * 16 > buf.length || stroff + strsize > buf.length) throw new Error('LC_SYMTAB points past the end of the file');
      for (let s = 0; s < nsyms; s++) {
        const e = symoff + s * 16;
        const strx = buf.readUInt32LE(e);
        const type = buf.readUInt8(e + 4);
        if ((type & N_STAB) !== 0) continue; // debugger entries
        if (strx >= strsize) throw new Error(`symbol ${s} names string ${strx}, past the string table`);
        const start = stroff + strx;
        const end = buf.indexOf(0, start);
        const name = buf.toString('latin1', start, end === -1 || end > stroff + strsize ? stroff + strsize : end);
        symbols.push({ name, defined: (type & N_TYPE) !== N_UNDF, external: (type & N_EXT) !== 0 });
      }
    }
    off += cmdsize;
  }
  return { cputype, filetype, symbols, ...(build ? { build } : {}) };
}

export function readMachO(file: string): MachO {
  return parseMachO(readFileSync(file));
}

/**
 * The symbols a text-based stub (tbd-version 4, as zig ships libSystem's) says
 * are exported for `target` (e.g. `arm64-macos`), across the stub's documents
 * (libSystem.B.dylib and the libraries under /usr/lib/system it re-exports):
 * every `symbols`, `weak-symbols` and `thread-local-symbols` list of an
 * `exports` or `reexports` entry whose `targets` include `target`.
 */
export function tbdExports(text: string, target: string): Set<string> {
  const out = new Set<string>();
  // Join the flow sequences ([ a, b,\n c ]) that the stubs wrap over lines.
  const lines: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = pending === '' ? raw : `${pending} ${raw.trim()}`;
    const opens = (line.match(/\[/g) ?? []).length;
    const closes = (line.match(/\]/g) ?? []).length;
    if (opens > closes) {
      pending = line;
      continue;
    }
    pending = '';
    lines.push(line);
  }
  let section = '';
  let targets: string[] = [];
  for (const line of lines) {
    if (line === '---' || line.startsWith('--- ')) {
      section = '';
      continue;
    }
    const top = /^([a-z-]+):/.exec(line);
    if (top) {
      section = top[1];
      continue;
    }
    if (section !== 'exports' && section !== 'reexports') continue;
    const t = /^\s*-\s*targets:\s*\[(.*)\]/.exec(line);
    if (t) {
      targets = t[1].split(',').map((s) => s.trim());
      continue;
    }
    const s = /^\s*(symbols|weak-symbols|thread-local-symbols):\s*\[(.*)\]/.exec(line);
    if (s && targets.includes(target)) {
      for (const name of s[2].split(',')) {
        const n = name.trim().replace(/^'(.*)'$/, '$1');
        if (n !== '') out.add(n);
      }
    }
  }
  return out;
}
