/**
 * A broken install reads as a broken install on every surface: with
 * RUNWARDEN_ADDON naming a real text file, a real truncated copy of the
 * built addon, or a FIFO nobody writes to (which a plain open would wait on
 * for ever), every command says the loader's AddonLoadError in
 * one line and exits 1. Never "cannot read runs root", never a metrics text
 * with `runwarden_root_readable 0`, never a server that starts and answers
 * 500, and never SIGBUS (the truncated file is checked before dlopen).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addonFileProblem } from '../src/kernel/native.js';
import { CLI, cleanupTemp, ROOT, tempDir } from './helpers/lock-procs.js';
import { eventLine } from './helpers/events.js';

const BUILT = join(ROOT, 'build', 'Release', 'runwarden.node');
let dir: string;
let root: string;
let textFile: string;
let truncated: string;
let segmentCut: string;
let fifo: string;

beforeAll(() => {
  dir = tempDir();
  root = join(dir, 'runs');
  mkdirSync(join(root, 'r1'), { recursive: true });
  writeFileSync(join(root, 'r1', 'events.jsonl'), eventLine({ event: 'run_started' }, { runId: 'r1', ts: '2026-12-01T00:00:00Z' }));
  textFile = join(dir, 'text.node');
  writeFileSync(textFile, 'this is not a shared object\n');
  // What `head -c 4096 runwarden.node > x.node` makes.
  truncated = join(dir, 'head4096.node');
  writeFileSync(truncated, readFileSync(BUILT).subarray(0, 4096));
  // A copy whose section header table is dropped (e_shoff = 0, e_shnum = 0) and whose
  // bytes stop inside a loadable segment: only the PT_LOAD rule can catch it.
  const whole = Buffer.from(readFileSync(BUILT));
  whole.writeBigUInt64LE(0n, 40);
  whole.writeUInt16LE(0, 60);
  segmentCut = join(dir, 'segment-cut.node');
  writeFileSync(segmentCut, whole.subarray(0, Math.floor(whole.length / 2)));
  // A FIFO nobody writes to: opening it for reading blocks until a writer comes.
  fifo = join(dir, 'fifo.node');
  const made = spawnSync('mkfifo', [fifo]);
  expect(made.status).toBe(0);
});
afterAll(() => cleanupTemp());

function cli(addon: string, args: string[]): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  // The timeout turns a command that hangs (on a FIFO, say) into a failure: killed, no exit status.
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, RUNWARDEN_ADDON: addon, NO_COLOR: '1' } });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

describe('the addon file is checked before dlopen', () => {
  it('the built addon passes; a text file, a 4096-byte head and a copy cut inside a segment are each refused with why', () => {
    expect(addonFileProblem(BUILT)).toBeUndefined();
    expect(addonFileProblem(textFile)).toMatch(/not an ELF shared object/);
    expect(addonFileProblem(truncated)).toMatch(/truncated: its section headers end at byte \d+, past its size of 4096 bytes/);
    expect(addonFileProblem(segmentCut)).toMatch(/truncated: its loadable segment \d+ end/);
    // Positive control: the same bytes uncut (but with the section table dropped) pass, so the cut is what is caught.
    const uncut = join(dir, 'uncut.node');
    const whole = Buffer.from(readFileSync(BUILT));
    whole.writeBigUInt64LE(0n, 40);
    whole.writeUInt16LE(0, 60);
    writeFileSync(uncut, whole);
    expect(addonFileProblem(uncut)).toBeUndefined();
  });

  it('the Mach-O rule (darwin) on synthetic headers: sound, a segment past the end, load commands past the end, a universal file (parsed here; never loaded)', () => {
    /** A 64-bit Mach-O bundle header with one LC_SEGMENT_64 covering [0, filesize), padded to `size` bytes. */
    const macho = (filesize: number, size: number, sizeofcmds = 72): Buffer => {
      const b = Buffer.alloc(size);
      b.writeUInt32LE(0xfeedfacf, 0);
      b.writeUInt32LE(0x0100000c, 4); // arm64
      b.writeUInt32LE(8, 12); // MH_BUNDLE
      b.writeUInt32LE(1, 16);
      b.writeUInt32LE(sizeofcmds, 20);
      b.writeUInt32LE(0x19, 32); // LC_SEGMENT_64
      b.writeUInt32LE(72, 36);
      b.writeBigUInt64LE(0n, 32 + 40);
      b.writeBigUInt64LE(BigInt(filesize), 32 + 48);
      return b;
    };
    const at = (name: string, b: Buffer): string => {
      const p = join(dir, name);
      writeFileSync(p, b);
      return p;
    };
    expect(addonFileProblem(at('m-ok', macho(4096, 4096)), 'darwin')).toBeUndefined();
    expect(addonFileProblem(at('m-seg', macho(8192, 4096)), 'darwin')).toMatch(/truncated: its segment 1 end at byte 8192, past its size of 4096 bytes/);
    expect(addonFileProblem(at('m-cmds', macho(104, 104, 4096)), 'darwin')).toMatch(/truncated: its load commands end/);
    expect(addonFileProblem(at('m-elf', readFileSync(BUILT)), 'darwin')).toMatch(/not a 64-bit Mach-O file/);
    // A universal file with one slice at offset 4096.
    const fat = (slice: Buffer, sliceSize: number): Buffer => {
      const head = Buffer.alloc(4096);
      head.writeUInt32BE(0xcafebabe, 0);
      head.writeUInt32BE(1, 4);
      head.writeUInt32BE(4096, 8 + 8);
      head.writeUInt32BE(sliceSize, 8 + 12);
      return Buffer.concat([head, slice]);
    };
    expect(addonFileProblem(at('m-fat', fat(macho(4096, 4096), 4096)), 'darwin')).toBeUndefined();
    expect(addonFileProblem(at('m-fat-cut', fat(macho(4096, 4096), 8192)), 'darwin')).toMatch(/truncated: its slice 1 end/);
    expect(addonFileProblem(at('m-fat-seg', fat(macho(8192, 4096), 4096)), 'darwin')).toMatch(/truncated: its segment 1 end at byte 12288/);
  });

  it('a copy of the built addon under another name still loads (the check refuses nothing sound)', () => {
    const copy = join(dir, 'copy.node');
    copyFileSync(BUILT, copy);
    const r = cli(copy, ['runs', '--root', root]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('r1');
  });
});

const SURFACES: [string, string[]][] = [
  ['runs', ['runs', '--root', '<root>']],
  ['runs --json', ['runs', '--json', '--root', '<root>']],
  ['runs --status', ['runs', '--status', 'running', '--root', '<root>']],
  ['metrics', ['metrics', '--no-process-metrics', '--root', '<root>']],
  ['status', ['status', 'r1', '--root', '<root>']],
  ['probe', ['probe', '<root>/r1']],
  ['watch', ['watch', 'r1', '--root', '<root>']],
  ['serve', ['serve', '--port', '0', '--root', '<root>']],
  ['exec', ['exec', 'r1', '--root', '<root>', '--', 'true']],
];

describe.each([
  ['a text file', () => textFile, /not an ELF shared object/],
  ['a truncated copy (head -c 4096)', () => truncated, /truncated/],
  ['a FIFO with no writer', () => fifo, /not a regular file/],
])('RUNWARDEN_ADDON names %s', (_what, addon, why) => {
  it.each(SURFACES)('%s says the AddonLoadError in one line, exit 1, and prints nothing on stdout', (_name, args) => {
    const before = readFileSync(join(root, 'r1', 'events.jsonl'));
    const r = cli(
      addon(),
      args.map((a) => a.replace('<root>', root)),
    );
    expect(r.signal).toBeNull();
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^runwarden: its native addon could not be loaded from /);
    expect(lines[0]).toMatch(why);
    expect(r.stderr).not.toMatch(/cannot read runs root|root_readable/);
    // exec appended nothing: the run is as it was.
    expect(readFileSync(join(root, 'r1', 'events.jsonl'))).toEqual(before);
  });
});
