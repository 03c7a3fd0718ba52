/**
 * Whether an addon file is a whole, loadable shared object for this process,
 * asked before `process.dlopen`.
 *
 * Why: the dynamic loader maps a shared object's segments straight from the
 * file, so one cut short (an interrupted copy or download, a full disk) maps
 * pages past its end and the first touch of them kills the whole process with
 * SIGBUS: no exception, no fallback to the next candidate (a `head -c 4096`
 * copy killed every command with exit 135 and no message). The headers say
 * how long the file must be; a file that breaks them is refused with a
 * reason, and the loader and the install step go on as for any prebuild that
 * does not load.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { endianness as osEndianness } from 'node:os';

/** The most of an addon file's headers {@link addonFileProblem} reads: the ELF program headers or Mach-O load commands sit near the start. */
const HEADER_READ_MAX = 1 << 20;

/** ELF e_machine for each Node architecture the ELF check knows (others are not checked for machine). */
const ELF_MACHINE: Readonly<Record<string, number>> = { x64: 62, arm64: 183, ia32: 3, arm: 40, riscv64: 243, ppc64: 21, s390x: 22, loong64: 258 };

/**
 * Why the file at `path` cannot be a loadable shared object for this
 * process, or undefined when its headers are sound. Checked before dlopen
 * because the dynamic loader maps the file's segments as its headers
 * describe them, and touching a page past the end of a truncated file is
 * SIGBUS, not an error (a `head -c 4096` copy killed every command, exit
 * 135, no message). So every byte a header promises must be in the file:
 *
 * - linux (ELF): the magic, this process's class (64/32-bit) and byte order,
 *   a shared object (ET_DYN) for this machine; the program and section
 *   header tables inside the file; every PT_LOAD's offset + filesz inside it.
 * - darwin (Mach-O, 64-bit, or a universal file): the magic, the load
 *   commands inside the file, and every LC_SEGMENT_64's fileoff + filesize
 *   inside it (for a universal file, every slice inside it).
 * - Windows (PE): the MZ and PE signatures, a DLL for this machine, the
 *   headers and every section's raw data inside the file.
 *
 * Anything but a regular file (a FIFO, a device, a directory) is refused
 * before it is opened, so the check never blocks.
 *
 * A file changed between this check and dlopen is not covered: the check is
 * about a broken install, not about an attacker who can write the addon.
 * Exported for the tests.
 */
export function addonFileProblem(path: string, platform: NodeJS.Platform = process.platform): string | undefined {
  // Only a regular file is opened: opening a FIFO with no writer blocks until one comes (every command
  // hung), and a device can block or have effects of its own. The open is non-blocking too, so a file
  // swapped for a FIFO between the stat and the open cannot hang either; fstat then refuses it.
  try {
    if (!statSync(path).isFile()) return 'it is not a regular file';
  } catch (e) {
    return `cannot open it (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (e) {
    return `cannot open it (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return 'it is not a regular file';
    const size = st.size;
    const head = Buffer.alloc(Math.min(size, HEADER_READ_MAX));
    let got = 0;
    while (got < head.length) {
      const n = readSync(fd, head, got, head.length - got, got);
      if (n === 0) break;
      got += n;
    }
    const buf = head.subarray(0, got);
    return platform === 'darwin' ? machoProblem(buf, size) : platform === 'win32' ? peProblem(buf, size) : elfProblem(buf, size);
  } catch (e) {
    return `cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  } finally {
    closeSync(fd);
  }
}

/** {@link addonFileProblem} for ELF: `buf` is the file's first bytes, `size` its whole size. */
function elfProblem(buf: Buffer, size: number): string | undefined {
  if (buf.length < 16 || buf.readUInt32BE(0) !== 0x7f454c46) return `it is not an ELF shared object (no ELF magic; ${size} bytes)`;
  const is64 = buf[4] === 2;
  if (buf[4] !== 1 && buf[4] !== 2) return `its ELF class byte is ${String(buf[4])}`;
  const wantClass = process.arch === 'x64' || process.arch === 'arm64' || process.arch.endsWith('64') ? 2 : 1;
  if (buf[4] !== wantClass) return `it is a ${is64 ? '64' : '32'}-bit ELF file; this process is ${wantClass === 2 ? '64' : '32'}-bit`;
  const le = buf[5] === 1;
  if (buf[5] !== 1 && buf[5] !== 2) return `its ELF byte-order byte is ${String(buf[5])}`;
  if ((le ? 'LE' : 'BE') !== osEndianness()) return `its byte order (${le ? 'little' : 'big'}-endian) is not this machine's`;
  const ehsize = is64 ? 64 : 52;
  if (buf.length < ehsize) return `it is truncated: ${size} bytes, shorter than an ELF header`;
  const u16 = (o: number): number => (le ? buf.readUInt16LE(o) : buf.readUInt16BE(o));
  const u32 = (o: number): number => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const word = (o: number): number => (is64 ? Number(le ? buf.readBigUInt64LE(o) : buf.readBigUInt64BE(o)) : u32(o));
  if (u16(16) !== 3) return `it is an ELF file of type ${u16(16)}, not a shared object`;
  const machine = ELF_MACHINE[process.arch];
  if (machine !== undefined && u16(18) !== machine) return `it is built for ELF machine ${u16(18)}, not this ${process.arch} process (${machine})`;
  const phoff = word(is64 ? 32 : 28);
  const shoff = word(is64 ? 40 : 32);
  const phentsize = u16(is64 ? 54 : 42);
  const phnum = u16(is64 ? 56 : 44);
  const shentsize = u16(is64 ? 58 : 46);
  const shnum = u16(is64 ? 60 : 48);
  const truncated = (what: string, end: number): string => `it is truncated: ${what} end at byte ${end}, past its size of ${size} bytes`;
  if (phnum === 0) return 'it has no program headers';
  if (phentsize < (is64 ? 56 : 32)) return `its program header size (${phentsize}) is too small`;
  const phEnd = phoff + phnum * phentsize;
  if (phEnd > size) return truncated('its program headers', phEnd);
  if (shoff !== 0 && shoff + shnum * shentsize > size) return truncated('its section headers', shoff + shnum * shentsize);
  if (phEnd > buf.length) return `its program headers lie past the first ${HEADER_READ_MAX} bytes`;
  let loads = 0;
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    if (u32(o) !== 1) continue; // PT_LOAD
    loads++;
    const offset = word(o + (is64 ? 8 : 4));
    const filesz = word(o + (is64 ? 32 : 16));
    if (offset + filesz > size) return truncated(`its loadable segment ${loads}`, offset + filesz);
  }
  if (loads === 0) return 'it has no loadable segment';
  return undefined;
}

/** PE machine (IMAGE_FILE_MACHINE_*) for each Node architecture Windows runs. */
const PE_MACHINE: Readonly<Record<string, number>> = { x64: 0x8664, arm64: 0xaa64, ia32: 0x14c };

/** {@link addonFileProblem} for PE (learn.microsoft.com/windows/win32/debug/pe-format): `buf` is the file's first bytes, `size` its whole size. */
function peProblem(buf: Buffer, size: number): string | undefined {
  const truncated = (what: string, end: number): string => `it is truncated: ${what} end at byte ${end}, past its size of ${size} bytes`;
  if (buf.length < 64 || buf.readUInt16LE(0) !== 0x5a4d) return `it is not a Windows DLL (no MZ header; ${size} bytes)`;
  const pe = buf.readUInt32LE(0x3c);
  if (pe + 24 > size) return truncated('its PE header', pe + 24);
  if (pe + 24 > buf.length) return `its PE header lies past the first ${HEADER_READ_MAX} bytes`;
  if (buf.readUInt32LE(pe) !== 0x00004550) return 'it is not a Windows DLL (no PE signature)';
  const machine = buf.readUInt16LE(pe + 4);
  const want = PE_MACHINE[process.arch];
  if (want !== undefined && machine !== want) return `it is built for PE machine 0x${machine.toString(16)}, not this ${process.arch} process (0x${want.toString(16)})`;
  if ((buf.readUInt16LE(pe + 22) & 0x2000) === 0) return 'it is a PE file but not a DLL';
  const sections = buf.readUInt16LE(pe + 6);
  const table = pe + 24 + buf.readUInt16LE(pe + 20);
  if (table + sections * 40 > size) return truncated('its section table', table + sections * 40);
  if (table + sections * 40 > buf.length) return `its section table lies past the first ${HEADER_READ_MAX} bytes`;
  if (sections === 0) return 'it has no section';
  for (let i = 0; i < sections; i++) {
    const o = table + i * 40;
    const end = buf.readUInt32LE(o + 20) + buf.readUInt32LE(o + 16);
    if (end > size) return truncated(`its section ${i + 1}`, end);
  }
  return undefined;
}

/** {@link addonFileProblem} for Mach-O (64-bit, or universal): `buf` is the file's first bytes, `size` its whole size. */
function machoProblem(buf: Buffer, size: number, at = 0): string | undefined {
  const truncated = (what: string, end: number): string => `it is truncated: ${what} end at byte ${end}, past its size of ${size} bytes`;
  if (buf.length < at + 8) return `it is not a Mach-O file (${size} bytes)`;
  const magicBE = buf.readUInt32BE(at);
  if (at === 0 && (magicBE === 0xcafebabe || magicBE === 0xcafebabf)) {
    // Universal (fat) header: big-endian, nfat_arch entries of 20 (fat_arch) or 32 (fat_arch_64) bytes.
    const n = buf.readUInt32BE(4);
    const entry = magicBE === 0xcafebabe ? 20 : 32;
    if (n === 0 || n > 32) return `its universal header lists ${n} slices`;
    if (8 + n * entry > buf.length) return truncated('its universal header', 8 + n * entry);
    for (let i = 0; i < n; i++) {
      const e = 8 + i * entry;
      const offset = entry === 20 ? buf.readUInt32BE(e + 8) : Number(buf.readBigUInt64BE(e + 8));
      const sliceSize = entry === 20 ? buf.readUInt32BE(e + 12) : Number(buf.readBigUInt64BE(e + 16));
      if (offset + sliceSize > size) return truncated(`its slice ${i + 1}`, offset + sliceSize);
      if (offset + 32 <= buf.length) {
        const inner = machoProblem(buf, size, offset);
        if (inner !== undefined && !inner.startsWith('its load commands lie past')) return inner;
      }
    }
    return undefined;
  }
  if (buf.readUInt32LE(at) !== 0xfeedfacf) return `it is not a 64-bit Mach-O file (magic 0x${magicBE.toString(16)})`;
  if (buf.length < at + 32) return truncated('its Mach-O header', at + 32);
  const fileType = buf.readUInt32LE(at + 12);
  if (fileType !== 6 && fileType !== 8) return `it is a Mach-O file of type ${fileType}, not a dylib (6) or bundle (8)`;
  const ncmds = buf.readUInt32LE(at + 16);
  const sizeofcmds = buf.readUInt32LE(at + 20);
  if (at + 32 + sizeofcmds > size) return truncated('its load commands', at + 32 + sizeofcmds);
  if (at + 32 + sizeofcmds > buf.length) return `its load commands lie past the first ${HEADER_READ_MAX} bytes`;
  let o = at + 32;
  const end = at + 32 + sizeofcmds;
  let segments = 0;
  for (let i = 0; i < ncmds; i++) {
    if (o + 8 > end) return `its load command ${i + 1} lies outside its load commands`;
    const cmd = buf.readUInt32LE(o);
    const cmdsize = buf.readUInt32LE(o + 4);
    if (cmdsize < 8 || o + cmdsize > end) return `its load command ${i + 1} has a bad size (${cmdsize})`;
    if (cmd === 0x19) {
      // LC_SEGMENT_64: fileoff and filesize are relative to this (slice's) header.
      if (cmdsize < 72) return `its segment command ${i + 1} is too short (${cmdsize})`;
      segments++;
      const segEnd = at + Number(buf.readBigUInt64LE(o + 40)) + Number(buf.readBigUInt64LE(o + 48));
      if (segEnd > size) return truncated(`its segment ${segments}`, segEnd);
    }
    o += cmdsize;
  }
  if (segments === 0) return 'it has no segment';
  return undefined;
}

