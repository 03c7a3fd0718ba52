/**
 * Whether an addon file is whole, asked before `process.dlopen`.
 *
 * Why: the dynamic loader maps a shared object's segments straight from the
 * file, so one cut short (an interrupted copy or download, a full disk) maps
 * pages past its end and the first touch of them kills the whole process with
 * SIGBUS: no exception, no fallback to the next candidate (seen here with a
 * linux prebuild truncated to half). The headers say how long the file must
 * be; a file shorter than that is refused with a reason, and the loader and the
 * install step go on as for any prebuild that does not load.
 *
 * Only 64-bit little-endian ELF and thin 64-bit Mach-O are read (what runwarden
 * ships and builds); anything else is left to the dynamic loader, which refuses
 * a file it does not know with an error rather than a signal.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

const ELF_MAGIC = 0x7f454c46;
const PT_LOAD = 1;
const MH_MAGIC_64 = 0xfeedfacf;
const LC_SEGMENT_64 = 0x19;
/** Enough for any header table runwarden's builds have; a longer table is read in full below. */
const HEAD = 64 * 1024;

/** Why the file at `path` is shorter than its own headers say, or undefined when it is whole (or not a format read here). */
export function truncatedAddon(path: string): string | undefined {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(Math.min(HEAD, size));
    readSync(fd, head, 0, head.length, 0);
    const need = head.length >= 4 && head.readUInt32BE(0) === ELF_MAGIC ? elfEnd(head) : head.length >= 4 && head.readUInt32LE(0) === MH_MAGIC_64 ? machEnd(head) : 0;
    if (need === undefined) return `its headers are cut short (${size} bytes)`;
    return need > size ? `it is cut short: ${size} bytes, its headers ask for ${need}` : undefined;
  } finally {
    closeSync(fd);
  }
}

/** The end of the last loadable segment or of the section header table, whichever is further; undefined when the headers themselves are cut. */
function elfEnd(b: Buffer): number | undefined {
  // EI_CLASS 2 (64-bit), EI_DATA 1 (little-endian): anything else is left to the loader.
  if (b.length < 64 || b[4] !== 2 || b[5] !== 1) return b.length < 64 ? undefined : 0;
  const phoff = Number(b.readBigUInt64LE(32));
  const shoff = Number(b.readBigUInt64LE(40));
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  const shentsize = b.readUInt16LE(58);
  const shnum = b.readUInt16LE(60);
  let end = shnum > 0 ? shoff + shnum * shentsize : 0;
  end = Math.max(end, phoff + phnum * phentsize);
  if (phoff + phnum * phentsize > b.length) return phoff + phnum * phentsize > HEAD ? end : undefined;
  for (let i = 0; i < phnum; i++) {
    const p = phoff + i * phentsize;
    if (b.readUInt32LE(p) !== PT_LOAD) continue;
    end = Math.max(end, Number(b.readBigUInt64LE(p + 8)) + Number(b.readBigUInt64LE(p + 32)));
  }
  return end;
}

/** The end of the last segment's bytes in the file; undefined when the load commands themselves are cut. */
function machEnd(b: Buffer): number | undefined {
  if (b.length < 32) return undefined;
  const ncmds = b.readUInt32LE(16);
  const sizeofcmds = b.readUInt32LE(20);
  if (32 + sizeofcmds > b.length) return 32 + sizeofcmds > HEAD ? 32 + sizeofcmds : undefined;
  let end = 32 + sizeofcmds;
  let off = 32;
  for (let i = 0; i < ncmds && off + 8 <= 32 + sizeofcmds; i++) {
    const cmd = b.readUInt32LE(off);
    const cmdsize = b.readUInt32LE(off + 4);
    if (cmdsize < 8) return undefined;
    if (cmd === LC_SEGMENT_64 && off + 56 <= b.length) end = Math.max(end, Number(b.readBigUInt64LE(off + 40)) + Number(b.readBigUInt64LE(off + 48)));
    off += cmdsize;
  }
  return end;
}
