// What every prebuilt addon must be, checked from its bytes on linux (a darwin
// or arm64 file cannot be loaded here): one home for the checks that
// scripts/prebuild.mjs runs after each build and scripts/release-gate.mjs runs
// on the packed tarball before a publish.
//
//   ELF (linux, glibc and musl), layouts from <elf.h>: the machine; the
//   undefined symbols, each N-API's (napi_*, node_api_*) or the C library's;
//   never a libuv symbol (uv_*: Node-API does not promise libuv, and Bun and
//   Deno lack it). glibc builds: the newest GLIBC_ symbol version needed is at
//   most GLIBC_FLOOR, and every other undefined symbol carries a version of
//   glibc, libstdc++ or libgcc_s. musl builds: no GLIBC_ version at all, only
//   musl's libc.so needed, and every other undefined symbol one that musl's
//   libc exports (zig's list of them, lib/libc/musl/libc.S).
//
//   Mach-O (darwin), layouts from <mach-o/loader.h> and <mach-o/nlist.h>: the
//   CPU type; a bundle or dylib whose LC_BUILD_VERSION says macOS 11.0; the
//   only library loaded is libSystem; a dylib's install name (LC_ID_DYLIB) is
//   not a path of the machine that built it; arm64 carries a code signature
//   (LC_CODE_SIGNATURE: arm64 macOS refuses to map unsigned code); every
//   undefined symbol is N-API's or exported by macOS 11's libSystem (zig's
//   .tbd stub of it); none is libuv's.
//
//   PE (Windows), layouts from the PE format specification
//   (learn.microsoft.com/windows/win32/debug/pe-format): the COFF machine; a
//   DLL; a PE32+ optional header; exports napi_register_module_v1; the DLLs it
//   imports are node.exe, for N-API functions only, and kernel32, ntdll and
//   msvcrt, which every Windows has, so no Visual C++ runtime is needed and no
//   libuv symbol is imported. (The Windows addon finds three libuv functions of
//   the host at run time, by name: native/win/win.h says why.)
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Every prebuild a release ships: its directory under prebuilds/, its format and machine. */
export const RELEASE_PREBUILDS = {
  'linux-x64': { format: 'elf', libc: 'glibc', machine: 0x3e, machineName: 'x86-64' },
  'linux-arm64': { format: 'elf', libc: 'glibc', machine: 0xb7, machineName: 'AArch64' },
  'linuxmusl-x64': { format: 'elf', libc: 'musl', machine: 0x3e, machineName: 'x86-64' },
  'linuxmusl-arm64': { format: 'elf', libc: 'musl', machine: 0xb7, machineName: 'AArch64' },
  'darwin-x64': { format: 'macho', cputype: 0x01000007, cpuName: 'x86_64', tbdTarget: 'x86_64-macos' },
  'darwin-arm64': { format: 'macho', cputype: 0x0100000c, cpuName: 'arm64', tbdTarget: 'arm64-macos' },
  'win32-x64': { format: 'pe', machine: 0x8664, machineName: 'x86-64 (AMD64)' },
  'win32-arm64': { format: 'pe', machine: 0xaa64, machineName: 'ARM64' },
};

/** The DLLs a Windows prebuild may import besides node.exe: parts of every Windows (lower case). */
export const WINDOWS_SYSTEM_DLLS = ['kernel32.dll', 'ntdll.dll', 'msvcrt.dll'];

/** The newest glibc the glibc prebuilds may need (docs/install.md states it). */
export const GLIBC_FLOOR = '2.34';

/** The macOS the darwin prebuilds are built for (binding.gyp's MACOSX_DEPLOYMENT_TARGET). */
export const MACOS_MIN = '11.0';

const NODE_API = /^(napi|node_api)_/;
const LIBUV = /^uv_/;

function versionCmp(a, b) {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function cstr(buf, off, end = buf.length) {
  const z = buf.indexOf(0, off);
  return buf.toString('latin1', off, z === -1 || z > end ? end : z);
}

// --- ELF ----------------------------------------------------------------------

const SHT_DYNAMIC = 6;
const SHT_DYNSYM = 11;
const SHT_GNU_VERNEED = 0x6ffffffe;
const SHT_GNU_VERSYM = 0x6fffffff;
const DT_NEEDED = 1;
const STB_WEAK = 2;

/**
 * A 64-bit little-endian ELF file's machine, needed libraries, dynamic
 * symbols (each with the version it needs, when versioned) and the versions
 * it needs per library. Throws with the reason when `buf` is not one.
 */
export function parseElf(buf) {
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  if (buf[4] !== 2 || buf[5] !== 1) throw new Error(`ELF class ${buf[4]}, data ${buf[5]}: not 64-bit little-endian`);
  const machine = buf.readUInt16LE(18);
  const shoff = Number(buf.readBigUInt64LE(40));
  const shentsize = buf.readUInt16LE(58);
  const shnum = buf.readUInt16LE(60);
  if (shoff + shnum * shentsize > buf.length) throw new Error('section headers run past the end of the file');
  const sections = [];
  for (let i = 0; i < shnum; i++) {
    const o = shoff + i * shentsize;
    sections.push({
      type: buf.readUInt32LE(o + 4),
      offset: Number(buf.readBigUInt64LE(o + 24)),
      size: Number(buf.readBigUInt64LE(o + 32)),
      link: buf.readUInt32LE(o + 40),
      entsize: Number(buf.readBigUInt64LE(o + 56)),
    });
  }
  const strOf = (index) => {
    const s = sections[index];
    if (!s || s.offset + s.size > buf.length) throw new Error(`string table ${index} is not in the file`);
    return (off) => cstr(buf, s.offset + off, s.offset + s.size);
  };
  // Versions needed: vna_other (the index .gnu.version uses) -> name, per library.
  const versionByIndex = new Map();
  const needs = [];
  for (const s of sections.filter((x) => x.type === SHT_GNU_VERNEED)) {
    const str = strOf(s.link);
    let vn = s.offset;
    for (;;) {
      const cnt = buf.readUInt16LE(vn + 2);
      const entry = { file: str(buf.readUInt32LE(vn + 4)), versions: [] };
      let aux = vn + buf.readUInt32LE(vn + 8);
      for (let k = 0; k < cnt; k++) {
        const name = str(buf.readUInt32LE(aux + 8));
        versionByIndex.set(buf.readUInt16LE(aux + 6), name);
        entry.versions.push(name);
        const next = buf.readUInt32LE(aux + 12);
        if (next === 0) break;
        aux += next;
      }
      needs.push(entry);
      const next = buf.readUInt32LE(vn + 12);
      if (next === 0) break;
      vn += next;
    }
  }
  const symbols = [];
  const dynsym = sections.find((x) => x.type === SHT_DYNSYM);
  const versym = sections.find((x) => x.type === SHT_GNU_VERSYM);
  if (dynsym) {
    const str = strOf(dynsym.link);
    const n = Math.floor(dynsym.size / 24);
    for (let i = 1; i < n; i++) {
      const o = dynsym.offset + i * 24;
      const name = str(buf.readUInt32LE(o));
      if (name === '') continue;
      const info = buf[o + 4];
      const shndx = buf.readUInt16LE(o + 6);
      const vi = versym ? buf.readUInt16LE(versym.offset + i * 2) & 0x7fff : 0;
      symbols.push({ name, defined: shndx !== 0, weak: info >> 4 === STB_WEAK, version: versionByIndex.get(vi) });
    }
  }
  const needed = [];
  const dynamic = sections.find((x) => x.type === SHT_DYNAMIC);
  if (dynamic) {
    const str = strOf(dynamic.link);
    for (let o = dynamic.offset; o + 16 <= dynamic.offset + dynamic.size; o += 16) {
      const tag = Number(buf.readBigInt64LE(o));
      if (tag === 0) break;
      if (tag === DT_NEEDED) needed.push(str(Number(buf.readBigUInt64LE(o + 8))));
    }
  }
  return { machine, needed, needs, symbols };
}

/** The symbols musl's libc.so exports, from zig's list of them (every architecture's). */
export function muslExports(zigPath) {
  const file = join(dirname(zigPath), 'lib', 'libc', 'musl', 'libc.S');
  const out = new Set();
  for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:\.globl|\.weak|WEAK64)\s+([A-Za-z_][\w.]*)\s*$/gm)) out.add(m[1]);
  return out;
}

function checkElf(target, t, buf, { zig } = {}) {
  const problems = [];
  let e;
  try {
    e = parseElf(buf);
  } catch (err) {
    return [`${target}: ${err.message}`];
  }
  if (e.machine !== t.machine) problems.push(`${target}: ELF machine 0x${e.machine.toString(16)}, not ${t.machineName} (0x${t.machine.toString(16)})`);
  const undef = e.symbols.filter((s) => !s.defined);
  const uv = undef.filter((s) => LIBUV.test(s.name)).map((s) => s.name);
  if (uv.length) problems.push(`${target}: needs libuv symbols (not Node-API): ${uv.join(', ')}`);
  if (!undef.some((s) => s.name === 'napi_create_function')) problems.push(`${target}: needs no napi_create_function: not a Node-API addon?`);
  if (!e.symbols.some((s) => s.defined && s.name === 'napi_register_module_v1')) problems.push(`${target}: exports no napi_register_module_v1`);
  const glibc = e.needs.flatMap((n) => n.versions).filter((v) => v.startsWith('GLIBC_'));
  if (t.libc === 'glibc') {
    const newest = glibc.map((v) => v.slice(6)).sort(versionCmp).pop();
    if (newest !== undefined && versionCmp(newest, GLIBC_FLOOR) > 0) problems.push(`${target}: needs GLIBC_${newest}, newer than the floor ${GLIBC_FLOOR}`);
    const stray = undef.filter((s) => !NODE_API.test(s.name) && !s.weak && !/^(GLIBC|GLIBCXX|CXXABI|GCC)_/.test(s.version ?? ''));
    if (stray.length) problems.push(`${target}: undefined symbols from neither N-API nor glibc/libstdc++/libgcc: ${stray.map((s) => s.name).join(', ')}`);
  } else {
    if (glibc.length) problems.push(`${target}: needs glibc symbol versions (${[...new Set(glibc)].join(', ')}): not a musl build`);
    const others = e.needed.filter((n) => n !== 'libc.so');
    if (others.length) problems.push(`${target}: needs ${others.join(', ')} besides musl's libc.so`);
    if (!zig) {
      problems.push(`${target}: musl's symbol list needs zig (scripts/zig.sh): the undefined symbols were not checked`);
    } else {
      const musl = muslExports(zig);
      const stray = undef.filter((s) => !NODE_API.test(s.name) && !musl.has(s.name) && !s.weak);
      if (stray.length) problems.push(`${target}: undefined symbols from neither N-API nor musl's libc: ${stray.map((s) => s.name).join(', ')}`);
    }
  }
  return problems;
}

// --- Mach-O -------------------------------------------------------------------

const MH_MAGIC_64 = 0xfeedfacf;
const MH_DYLIB = 6;
const MH_BUNDLE = 8;
const LC_SYMTAB = 0x2;
const LC_LOAD_DYLIB = 0xc;
const LC_ID_DYLIB = 0xd;
const LC_LOAD_WEAK_DYLIB = 0x80000018;
const LC_REEXPORT_DYLIB = 0x8000001f;
const LC_CODE_SIGNATURE = 0x1d;
const LC_BUILD_VERSION = 0x32;
const PLATFORM_MACOS = 1;

/**
 * A thin 64-bit Mach-O file's CPU type, file type, build version, the
 * libraries it loads, its install name, whether it is signed, and its
 * external symbols. Throws with the reason when `buf` is not one.
 */
export function parseMachO(buf) {
  if (buf.length < 32 || buf.readUInt32LE(0) !== MH_MAGIC_64) throw new Error('not a thin 64-bit Mach-O file');
  const ncmds = buf.readUInt32LE(16);
  const sizeofcmds = buf.readUInt32LE(20);
  if (32 + sizeofcmds > buf.length) throw new Error('load commands run past the end of the file');
  const out = { cputype: buf.readUInt32LE(4), filetype: buf.readUInt32LE(12), dylibs: [], idDylib: undefined, signed: false, build: undefined, symbols: [] };
  let off = 32;
  for (let i = 0; i < ncmds; i++) {
    const cmd = buf.readUInt32LE(off);
    const size = buf.readUInt32LE(off + 4);
    if (size < 8 || off + size > 32 + sizeofcmds) throw new Error(`load command ${i} is malformed`);
    if (cmd === LC_LOAD_DYLIB || cmd === LC_LOAD_WEAK_DYLIB || cmd === LC_REEXPORT_DYLIB) out.dylibs.push(cstr(buf, off + buf.readUInt32LE(off + 8), off + size));
    if (cmd === LC_ID_DYLIB) out.idDylib = cstr(buf, off + buf.readUInt32LE(off + 8), off + size);
    if (cmd === LC_CODE_SIGNATURE) out.signed = buf.readUInt32LE(off + 12) > 0;
    if (cmd === LC_BUILD_VERSION) {
      const v = buf.readUInt32LE(off + 12);
      out.build = { platform: buf.readUInt32LE(off + 8), minos: `${v >>> 16}.${(v >>> 8) & 0xff}${v & 0xff ? `.${v & 0xff}` : ''}` };
    }
    if (cmd === LC_SYMTAB) {
      const symoff = buf.readUInt32LE(off + 8);
      const nsyms = buf.readUInt32LE(off + 12);
      const stroff = buf.readUInt32LE(off + 16);
      const strsize = buf.readUInt32LE(off + 20);
      if (symoff + nsyms * 16 > buf.length || stroff + strsize > buf.length) throw new Error('LC_SYMTAB points past the end of the file');
      for (let s = 0; s < nsyms; s++) {
        const e = symoff + s * 16;
        const type = buf[e + 4];
        if ((type & 0xe0) !== 0 || (type & 0x01) === 0) continue; // debugger entries, and symbols private to the file
        out.symbols.push({ name: cstr(buf, stroff + buf.readUInt32LE(e), stroff + strsize), defined: (type & 0x0e) !== 0 });
      }
    }
    off += size;
  }
  return out;
}

/** What a text-based stub (.tbd, as zig ships libSystem's) exports for `target` (arm64-macos …). */
export function tbdExports(text, target) {
  const out = new Set();
  // Flow sequences ([ a, b,\n c ]) wrap over lines: join them first.
  const joined = text.replace(/\[[^\]]*\]/g, (m) => m.replace(/\s*\n\s*/g, ' '));
  let section = '';
  let targets = [];
  for (const line of joined.split('\n')) {
    if (line.startsWith('---')) section = '';
    const top = /^([a-z-]+):/.exec(line);
    if (top) section = top[1];
    if (section !== 'exports' && section !== 'reexports') continue;
    const t = /^\s*-\s*targets:\s*\[(.*)\]/.exec(line);
    if (t) targets = t[1].split(',').map((s) => s.trim());
    const s = /^\s*(?:-\s*)?(symbols|weak-symbols|thread-local-symbols):\s*\[(.*)\]/.exec(line);
    if (s && targets.includes(target)) for (const n of s[2].split(',')) if (n.trim()) out.add(n.trim().replace(/^'(.*)'$/, '$1'));
  }
  return out;
}

function checkMachO(target, t, buf, { zig } = {}) {
  const problems = [];
  let m;
  try {
    m = parseMachO(buf);
  } catch (err) {
    return [`${target}: ${err.message}`];
  }
  if (m.cputype !== t.cputype) problems.push(`${target}: Mach-O CPU type 0x${m.cputype.toString(16)}, not ${t.cpuName}`);
  if (m.filetype !== MH_BUNDLE && m.filetype !== MH_DYLIB) problems.push(`${target}: Mach-O file type ${m.filetype}, neither a bundle nor a dylib`);
  if (!m.build || m.build.platform !== PLATFORM_MACOS || m.build.minos !== MACOS_MIN) problems.push(`${target}: LC_BUILD_VERSION ${JSON.stringify(m.build)}, not macOS ${MACOS_MIN}`);
  const foreign = m.dylibs.filter((d) => d !== '/usr/lib/libSystem.B.dylib');
  if (foreign.length) problems.push(`${target}: loads ${foreign.join(', ')} (only /usr/lib/libSystem.B.dylib may be loaded)`);
  if (m.idDylib !== undefined && (m.idDylib.includes('/') && !m.idDylib.startsWith('@rpath/'))) problems.push(`${target}: install name ${String(m.idDylib)} is a path of the build machine`);
  if (t.cpuName === 'arm64' && !m.signed) problems.push(`${target}: no code signature (LC_CODE_SIGNATURE): arm64 macOS will not map it`);
  if (!m.symbols.some((s) => s.defined && s.name === '_napi_register_module_v1')) problems.push(`${target}: exports no _napi_register_module_v1`);
  const undef = [...new Set(m.symbols.filter((s) => !s.defined).map((s) => s.name))];
  const uv = undef.filter((n) => LIBUV.test(n.slice(1)));
  if (uv.length) problems.push(`${target}: needs libuv symbols (not Node-API): ${uv.join(', ')}`);
  if (!zig) {
    problems.push(`${target}: libSystem's symbol list needs zig (scripts/zig.sh): the undefined symbols were not checked`);
  } else {
    const stub = join(dirname(zig), 'lib', 'libc', 'darwin', 'libSystem.11.tbd');
    const libSystem = tbdExports(readFileSync(stub, 'utf8'), t.tbdTarget);
    const stray = undef.filter((n) => !NODE_API.test(n.slice(1)) && !libSystem.has(n));
    if (stray.length) problems.push(`${target}: undefined symbols from neither N-API nor macOS 11's libSystem: ${stray.join(', ')}`);
  }
  return problems;
}

// --- PE -----------------------------------------------------------------------

const IMAGE_FILE_DLL = 0x2000;
const PE32_PLUS = 0x20b;

/**
 * A PE file's COFF machine, characteristics, optional-header magic, exported
 * names and imports (each DLL with the names it imports; an import by
 * ordinal is `#n`). Throws with the reason when `buf` is not one.
 */
export function parsePe(buf) {
  if (buf.length < 64 || buf.readUInt16LE(0) !== 0x5a4d) throw new Error('not a PE file (no MZ header)');
  const pe = buf.readUInt32LE(0x3c);
  if (pe + 24 > buf.length || buf.readUInt32LE(pe) !== 0x00004550) throw new Error('not a PE file (no PE signature)');
  const machine = buf.readUInt16LE(pe + 4);
  const nsections = buf.readUInt16LE(pe + 6);
  const optSize = buf.readUInt16LE(pe + 20);
  const characteristics = buf.readUInt16LE(pe + 22);
  const opt = pe + 24;
  const magic = buf.readUInt16LE(opt);
  if (magic !== PE32_PLUS) return { machine, characteristics, magic, exports: [], imports: [] };
  const dirs = opt + 112;
  const dir = (i) => ({ rva: buf.readUInt32LE(dirs + i * 8), size: buf.readUInt32LE(dirs + i * 8 + 4) });
  const sections = [];
  for (let i = 0; i < nsections; i++) {
    const o = opt + optSize + i * 40;
    sections.push({ va: buf.readUInt32LE(o + 12), vsize: buf.readUInt32LE(o + 8), raw: buf.readUInt32LE(o + 20), rawSize: buf.readUInt32LE(o + 16) });
  }
  const off = (rva) => {
    const s = sections.find((x) => rva >= x.va && rva < x.va + Math.max(x.vsize, x.rawSize));
    if (!s) throw new Error(`RVA 0x${rva.toString(16)} lies in no section`);
    return s.raw + (rva - s.va);
  };
  const exports = [];
  const ex = dir(0);
  if (ex.rva !== 0) {
    const e = off(ex.rva);
    const count = buf.readUInt32LE(e + 24);
    const names = off(buf.readUInt32LE(e + 32));
    for (let i = 0; i < count; i++) exports.push(cstr(buf, off(buf.readUInt32LE(names + i * 4))));
  }
  const imports = [];
  const im = dir(1);
  if (im.rva !== 0) {
    for (let d = off(im.rva); ; d += 20) {
      const lookup = buf.readUInt32LE(d) || buf.readUInt32LE(d + 16);
      const nameRva = buf.readUInt32LE(d + 12);
      if (nameRva === 0) break;
      const entry = { dll: cstr(buf, off(nameRva)), names: [] };
      for (let t = off(lookup); ; t += 8) {
        const v = buf.readBigUInt64LE(t);
        if (v === 0n) break;
        entry.names.push(v >> 63n ? `#${Number(v & 0xffffn)}` : cstr(buf, off(Number(v & 0x7fffffffn)) + 2));
      }
      imports.push(entry);
    }
  }
  return { machine, characteristics, magic, exports, imports };
}

function checkPe(target, t, buf) {
  const problems = [];
  let p;
  try {
    p = parsePe(buf);
  } catch (err) {
    return [`${target}: ${err.message}`];
  }
  if (p.machine !== t.machine) problems.push(`${target}: PE machine 0x${p.machine.toString(16)}, not ${t.machineName} (0x${t.machine.toString(16)})`);
  if ((p.characteristics & IMAGE_FILE_DLL) === 0) problems.push(`${target}: not a DLL (characteristics 0x${p.characteristics.toString(16)})`);
  if (p.magic !== PE32_PLUS) problems.push(`${target}: optional header magic 0x${p.magic.toString(16)}, not PE32+`);
  if (!p.exports.includes('napi_register_module_v1')) problems.push(`${target}: exports no napi_register_module_v1`);
  const node = p.imports.filter((i) => i.dll.toLowerCase() === 'node.exe');
  if (node.length === 0) problems.push(`${target}: imports nothing from node.exe: not a Node-API addon?`);
  const notNapi = node.flatMap((i) => i.names).filter((n) => !NODE_API.test(n));
  if (notNapi.length) problems.push(`${target}: imports from node.exe what is not N-API: ${notNapi.join(', ')}`);
  const others = p.imports.map((i) => i.dll).filter((d) => d.toLowerCase() !== 'node.exe' && !WINDOWS_SYSTEM_DLLS.includes(d.toLowerCase()));
  if (others.length) problems.push(`${target}: imports ${others.join(', ')} (only node.exe and ${WINDOWS_SYSTEM_DLLS.join(', ')} may be imported)`);
  const uv = p.imports.flatMap((i) => i.names).filter((n) => LIBUV.test(n));
  if (uv.length) problems.push(`${target}: imports libuv symbols: ${uv.join(', ')}`);
  return problems;
}

/**
 * Every problem with the prebuild `file` for `target` (a RELEASE_PREBUILDS
 * key), as one line each; empty when it passes. `zig` (its executable's
 * path) supplies musl's and libSystem's symbol lists.
 */
export function checkPrebuild(target, file, opts = {}) {
  const t = RELEASE_PREBUILDS[target];
  if (!t) return [`${target}: not a prebuild a release ships (known: ${Object.keys(RELEASE_PREBUILDS).join(', ')})`];
  if (!existsSync(file)) return [`${target}: ${file} is missing`];
  const buf = readFileSync(file);
  return t.format === 'elf' ? checkElf(target, t, buf, opts) : t.format === 'pe' ? checkPe(target, t, buf) : checkMachO(target, t, buf, opts);
}
