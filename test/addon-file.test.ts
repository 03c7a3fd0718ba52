/**
 * An addon file cut short is refused before process.dlopen maps it: the
 * dynamic loader would map pages past the file's end and the process would
 * die of SIGBUS instead of falling back (src/kernel/addon-file.ts, addonFileProblem).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addonFileProblem } from '../src/kernel/addon-file.js';
import { openAddonFile } from '../src/kernel/native.js';
import { ROOT } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

const work = mkdtempSync(join(tmpdir(), 'rw-addon-file-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const BUILT = join(ROOT, 'build', 'Release', 'runwarden.node');

describe('an addon file cut short', () => {
  it('dlopen of the first half of the real addon kills the process with SIGBUS (positive control)', (ctx) => {
    needs(ctx, 'linux: glibc maps the segments past the end of the file');
    const half = join(work, 'control.node');
    const whole = readFileSync(BUILT);
    writeFileSync(half, whole.subarray(0, whole.length >> 1));
    const r = spawnSync(process.execPath, ['-e', `process.dlopen({ exports: {} }, ${JSON.stringify(half)}); console.log('loaded')`], { encoding: 'utf8', timeout: 60_000 });
    expect(r.signal ?? `exit ${r.status}: ${r.stderr}`).toBe('SIGBUS');
  });

  it('is refused with its size and what its headers ask for, before dlopen; the whole file passes', () => {
    const whole = readFileSync(BUILT);
    expect(addonFileProblem(BUILT)).toBeUndefined();
    for (const len of [whole.length >> 1, whole.length - 1, 40]) {
      const cut = join(work, `cut-${len}.node`);
      writeFileSync(cut, whole.subarray(0, len));
      expect(addonFileProblem(cut), String(len)).toMatch(len < 64 ? /shorter than an ELF header/ : new RegExp(`truncated: .* end at byte \\d+, past its size of ${len} bytes`));
      expect(() => openAddonFile(cut)).toThrow(/truncated/);
    }
  });

  it('a Mach-O whose segment runs past the end of the file is refused; a text file is neither', () => {
    // mach_header_64 + one LC_SEGMENT_64 (72 bytes) whose fileoff + filesize is 8192.
    const b = Buffer.alloc(32 + 72);
    b.writeUInt32LE(0xfeedfacf, 0);
    b.writeUInt32LE(0x0100000c, 4);
    b.writeUInt32LE(6, 12);
    b.writeUInt32LE(1, 16);
    b.writeUInt32LE(72, 20);
    b.writeUInt32LE(0x19, 32);
    b.writeUInt32LE(72, 36);
    b.writeBigUInt64LE(4096n, 32 + 40);
    b.writeBigUInt64LE(4096n, 32 + 48);
    const mach = join(work, 'mach.node');
    writeFileSync(mach, b);
    expect(addonFileProblem(mach, 'darwin')).toBe(`it is truncated: its segment 1 end at byte 8192, past its size of ${b.length} bytes`);
    writeFileSync(mach, Buffer.concat([b, Buffer.alloc(8192 - b.length)]));
    expect(addonFileProblem(mach, 'darwin')).toBeUndefined();
    const text = join(work, 'text.node');
    writeFileSync(text, 'not an addon\n');
    expect(addonFileProblem(text)).toMatch(/not an ELF shared object/);
    expect(addonFileProblem(text, 'darwin')).toMatch(/not a 64-bit Mach-O file/);
  });
});
