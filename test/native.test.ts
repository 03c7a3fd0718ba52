/**
 * The native seam: expected answers are values, failures are NativeError
 * with a stable errno name in .code, .errno and .syscall, and arguments are
 * refused before any system call.
 */
import { closeSync, openSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AddonLoadError, filesystemType, groupPresence, NativeError, processPresence } from '../src/index.js';
import { checkNativeConstants, FLOCK_OP_NAMES, native, nativeConstants, OUT_SLOT_NAMES, SEAM_VERSION, STAGE_NAMES } from '../src/kernel/native.js';
import { cleanupTemp, ROOT, tempDir } from './helpers/lock-procs.js';
import { needs, testedPlatform } from './helpers/prereq.js';
import { leftByLeg } from './helpers/portable.js';

afterEach(() => cleanupTemp());

describe('native addon', () => {
  it('flock on a closed descriptor throws NativeError EBADF with errno and syscall', () => {
    const fd = openSync(join(tempDir(), 'f'), constants.O_RDWR | constants.O_CREAT);
    closeSync(fd);
    let e: unknown;
    try {
      native().flock(fd, nativeConstants().flockOp.Shared);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(NativeError);
    expect(e).toMatchObject({ code: 'EBADF', errno: 9, syscall: 'flock' });
  });

  it('statfs of a missing directory throws NativeError ENOENT', () => {
    expect(() => filesystemType(join(tempDir(), 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'statfs' }));
  });

  it('works from worker threads too: each environment keeps its own error class and probe buffers', async () => {
    const { Worker } = await import('node:worker_threads');
    const dir = tempDir();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'resume.lock'), leftByLeg(1));
    const src = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.index).then((m) => {
        const probe = m.probeLock(workerData.lock);
        let code;
        try { m.filesystemType(workerData.missing); } catch (e) { code = e instanceof m.NativeError ? e.code : 'not NativeError'; }
        parentPort.postMessage({ probe, code });
      });`;
    const index = new URL('../dist/index.js', import.meta.url).href;
    const results = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<unknown>((resolve, reject) => {
            const w = new Worker(src, { eval: true, workerData: { index, lock: join(dir, 'resume.lock'), missing: join(dir, 'nope') } });
            w.once('message', (m) => {
              resolve(m);
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    for (const r of results) expect(r).toEqual({ probe: { liveness: 'free', reason: 'flock-free' }, code: 'ENOENT' });
    // The main thread's own state is intact after the workers came and went.
    expect(() => filesystemType(join(dir, 'nope'))).toThrow(NativeError);
  });

  it('flock returns granted/contended as booleans, not exceptions', () => {
    const p = join(tempDir(), 'f');
    const a = openSync(p, constants.O_RDWR | constants.O_CREAT);
    const b = openSync(p, constants.O_RDONLY);
    try {
      expect(native().flock(a, nativeConstants().flockOp.Exclusive)).toBe(true);
      expect(native().flock(b, nativeConstants().flockOp.Shared)).toBe(false);
      expect(native().flock(b, nativeConstants().flockOp.Exclusive)).toBe(false);
      expect(native().flock(a, nativeConstants().flockOp.Unlock)).toBe(true);
      expect(native().flock(b, nativeConstants().flockOp.Shared)).toBe(true);
    } finally {
      closeSync(a);
      closeSync(b);
    }
  });

  it('the addon refuses bad arguments itself, with a code', () => {
    expect(() => native().flock(-1, nativeConstants().flockOp.Shared)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().flock(0, 9)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().pidProbe(0)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().pidProbe(-5)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().groupProbe(1)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().fsType('a\0b')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
  });

  it('kill(pid, 0) is classified: self present, pid 1 present, an exited pid gone', async () => {
    expect(processPresence(process.pid)).toBe('present');
    // pid 1 is init on POSIX systems (Windows's pids 0 and 4 are the idle and System processes: probe-files.test.ts).
    if (process.platform !== 'win32') expect(processPresence(1)).toBe('present');
    const { spawnSync } = await import('node:child_process');
    expect(processPresence(spawnSync(process.execPath, ['-e', '']).pid)).toBe('gone');
  });

  it('JS validates pids before the native call: never 0, negative, fractional or out of range', () => {
    for (const bad of [0, -1, 1.5, NaN, 2 ** 31, Infinity]) expect(() => processPresence(bad)).toThrow(RangeError);
    for (const bad of [0, 1, -3, 2 ** 31]) expect(() => groupPresence(bad)).toThrow(RangeError);
  });

  it('groupPresence: a live process group is present, then gone once its only member is killed', async (ctx) => {
    needs(ctx, 'posix: process groups (Windows has none: groupPresence is unknown there, CONTRACT §5.8 rule 5)');
    const { spawn } = await import('node:child_process');
    const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    const pgid = child.pid as number;
    try {
      expect(groupPresence(pgid)).toBe('present');
    } finally {
      process.kill(-pgid, 'SIGKILL');
    }
    await new Promise((r) => child.once('exit', r));
    expect(groupPresence(pgid)).toBe('gone');
  });
});

describe('importing runwarden', () => {
  it('has no side effects: the addon loads only on the first call that needs the kernel', async (ctx) => {
    needs(ctx, 'linux: reads /proc/self/maps');
    const { spawnSync } = await import('node:child_process');
    const index = new URL('../dist/index.js', import.meta.url).href;
    const script = `
      import { readFileSync } from 'node:fs';
      const loaded = () => readFileSync('/proc/self/maps', 'utf8').includes('runwarden.node');
      const m = await import(${JSON.stringify(index)});
      const before = loaded();
      m.probeLock('/nonexistent-rw/resume.lock');
      console.log(JSON.stringify({ before, after: loaded() }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ before: false, after: true });
  });
});

describe('the constants the addon exports', () => {
  it('are frozen objects holding every name TypeScript reads, each a distinct integer', () => {
    const c = native().constants as Record<string, unknown>;
    expect(Object.isFrozen(c)).toBe(true);
    for (const [table, names] of [
      ['stage', STAGE_NAMES],
      ['outSlot', OUT_SLOT_NAMES],
      ['flockOp', FLOCK_OP_NAMES],
    ] as const) {
      const t = c[table] as Record<string, number>;
      expect(Object.isFrozen(t), table).toBe(true);
      expect(Object.keys(t).sort(), table).toEqual([...names].sort());
      const values = Object.values(t);
      expect(values.every((v) => Number.isInteger(v) && v >= 0), table).toBe(true);
      expect(new Set(values).size, `${table} values are distinct`).toBe(values.length);
    }
    expect(c['seamVersion']).toBe(SEAM_VERSION);
    const outLength = c['outLength'] as number;
    expect(Object.values(c['outSlot'] as Record<string, number>).every((v) => v < outLength)).toBe(true);
    // A filesystem is named by a number (statfs f_type) on linux, by a name on darwin and Windows.
    expect(c['fsTypeKind']).toBe(testedPlatform() === 'linux' ? 'magic' : 'name');
    // The checked view is the addon's own object, not a copy made in TypeScript.
    expect(nativeConstants()).toBe(c);
  });

  it('the flock operations are the ones the kernel call takes: shared, exclusive, unlock', () => {
    const op = nativeConstants().flockOp;
    const p = join(tempDir(), 'f');
    const a = openSync(p, constants.O_RDWR | constants.O_CREAT);
    const b = openSync(p, constants.O_RDONLY);
    try {
      expect(native().flock(a, op.Shared)).toBe(true);
      expect(native().flock(b, op.Shared)).toBe(true); // two shared locks coexist
      expect(native().flock(b, op.Exclusive)).toBe(false);
      expect(native().flock(a, op.Unlock)).toBe(true);
      // flock(2) converts b's own shared lock to an exclusive one; LockFileEx keeps a handle's locks
      // apart, so there b's shared lock refuses its exclusive one until it is unlocked (runwarden
      // never converts: a probe unlocks at once, a leg asks for exclusive alone).
      if (process.platform === 'win32') expect(native().flock(b, op.Unlock)).toBe(true);
      expect(native().flock(b, op.Exclusive)).toBe(true);
      const unknownOp = Math.max(...Object.values(op)) + 1;
      expect(() => native().flock(a, unknownOp)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    } finally {
      closeSync(a);
      closeSync(b);
    }
  });

  it('probeSetup refuses an out array shorter than the exported outLength', () => {
    const { outLength } = nativeConstants();
    expect(() => native().probeSetup(new Uint32Array([0xef53]), Buffer.alloc(128), new Float64Array(outLength - 1))).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    );
  });

  /** A deep copy of the real constants with `edit` applied, frozen like the addon's. */
  function tampered(edit: (c: Record<string, unknown>) => void): unknown {
    const c = JSON.parse(JSON.stringify(native().constants)) as Record<string, unknown>;
    edit(c);
    for (const v of Object.values(c)) if (typeof v === 'object' && v !== null) Object.freeze(v);
    return Object.freeze(c);
  }

  function refusal(raw: unknown): { code: string; message: string } {
    try {
      checkNativeConstants(raw, 'test.node');
    } catch (e) {
      expect(e).toBeInstanceOf(AddonLoadError);
      return e as AddonLoadError;
    }
    throw new Error('a mismatched constants object was accepted');
  }

  it('a mismatch is refused as ERR_RUNWARDEN_NATIVE, naming what differs', () => {
    expect(checkNativeConstants(native().constants, 'real')).toBe(native().constants);
    const cases: [string, (c: Record<string, any>) => void, RegExp][] = [
      ['a stage TypeScript reads is missing', (c) => delete c['stage'].SharedError, /stage\.SharedError is missing/],
      ['a stage TypeScript does not know', (c) => (c['stage'].DirOpenError = 99), /stage\.DirOpenError is not one this version knows/],
      ['two stages share a number', (c) => (c['stage'].SharedGranted = c['stage'].SharedContended), /stage\.SharedContended and stage\.SharedGranted are both \d+|stage\.SharedGranted and stage\.SharedContended are both \d+/],
      ['a slot past the end of out', (c) => (c['outSlot'].fileSize = c['outLength']), /outSlot\.fileSize is \d+, not an integer from 0 to/],
      ['a flock op that is not an integer', (c) => (c['flockOp'].Unlock = 'LOCK_UN'), /flockOp\.Unlock is LOCK_UN/],
      ['another layout version', (c) => (c['seamVersion'] = SEAM_VERSION + 1), /seamVersion is \d+, this version reads/],
      ['an unknown fs type kind', (c) => (c['fsTypeKind'] = 'uuid'), /fsTypeKind is uuid/],
    ];
    for (const [what, edit, message] of cases) {
      const e = refusal(tampered(edit));
      expect(e.code, what).toBe('ERR_RUNWARDEN_NATIVE');
      expect(e.message, what).toMatch(message);
      expect(e.message, what).toMatch(/npm rebuild runwarden/);
    }
    expect(refusal(undefined).message).toMatch(/exports no constants object/);
    const unfrozen = JSON.parse(JSON.stringify(native().constants)) as unknown;
    expect(refusal(unfrozen).message).toMatch(/is not frozen/);
  });

  it('an addon whose constants do not match is refused when it loads, before any probe runs', async (ctx) => {
    needs(ctx, "not-wine: a compiled build of the addon, loaded through bindings and require's cache, which this test patches (the Wine lane has only the zig-built prebuild, opened with process.dlopen)");
    const { spawnSync } = await import('node:child_process');
    // The real addon, exporting a stage table of another version (one stage
    // renamed): what a stale build from other sources would look like.
    const script = `
      const { createRequire } = await import('node:module');
      const require = createRequire(${JSON.stringify(join(ROOT, 'package.json'))});
      const path = require.resolve(${JSON.stringify(join(ROOT, 'build', 'Release', 'runwarden.node'))});
      const real = require(path);
      const c = real.constants;
      const { SharedError, ...rest } = c.stage;
      const stage = Object.freeze({ ...rest, SharedFailed: SharedError });
      require.cache[path].exports = { ...real, constants: Object.freeze({ ...c, stage }) };
      const m = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});
      try {
        m.probeLock('/nonexistent-rw/resume.lock');
        console.log(JSON.stringify({ threw: false }));
      } catch (e) {
        console.log(JSON.stringify({ threw: true, code: e.code, name: e.name, message: e.message }));
      }`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, RUNWARDEN_ADDON: '' } });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { threw: boolean; code: string; name: string; message: string };
    expect(out).toMatchObject({ threw: true, code: 'ERR_RUNWARDEN_NATIVE', name: 'AddonLoadError' });
    expect(out.message).toMatch(/stage\.SharedError is missing; stage\.SharedFailed is not one this version knows/);
  });

  it('the TypeScript side reads the addon numbers only through the constants (no hand-copied numbers in src/)', () => {
    const files: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d)) {
        const p = join(d, e);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    walk(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(20);
    const offences: string[] = [];
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      // A flock call with a literal operation number.
      if (/\.flock\([^)]*,\s*\d/.test(text)) offences.push(`${f}: flock with a literal op`);
      // A probe result slot read by a literal index.
      if (/\bout\[\d/.test(text)) offences.push(`${f}: out[] read by a literal index`);
      // A table of stage numbers written out in TypeScript.
      for (const name of STAGE_NAMES) if (new RegExp(`\\b${name}\\s*:\\s*\\d`).test(text)) offences.push(`${f}: ${name} given a number`);
    }
    expect(offences).toEqual([]);
  });
});
