/**
 * A leg's verdict and a full disk (CONTRACT §2.6): on a real 64 KiB
 * tmpfs that the leg's own command fills until the kernel says ENOSPC, the
 * closing events still land, because the writer kept room for them when the
 * leg started and kept it as the stream grew. Where that room is not enough
 * (closing events larger than it), `exec` says "disk full" in one line and
 * still exits with the command's own status. Where the filesystem cannot
 * reserve at all (ramfs; ext2 on a loop device, which the command fills), the
 * leg runs as before, quietly, and a full disk is said in that one line.
 *
 * Needs root and mount(8) (the ext2 case also mkfs.ext2 and loop devices):
 * skipped with the reason locally, failed under CI.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statfsSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runStatus, startLeg, WriteError } from '../src/index.js';
import { CLOSING_RESERVE_BYTES } from '../src/write/append.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, tempDir } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { encodeEvents } from './helpers/events.js';

const mounts: string[] = [];
let base: string;

function mount(type: 'tmpfs' | 'ramfs', options: string[]): string {
  const mnt = join(base, `${type}-${mounts.length}`);
  mkdirSync(mnt);
  const r = spawnSync('mount', ['-t', type, ...options, `rw-${type}`, mnt], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mount -t ${type} ${options.join(' ')} ${mnt} failed: ${r.error?.message ?? r.stderr}`);
  mounts.push(mnt);
  return mnt;
}

/** Every line of the stream is one complete JSON object ending in a newline. */
function wellFormed(path: string): Record<string, unknown>[] {
  const text = readFileSync(path, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const PAGE = 4096;

/**
 * A shell command that writes zeros into `file` until the disk refuses, then
 * exits `code`; padded with an ignored argument so that the stream's two
 * opening lines (`run_started` carries the command) end 16 bytes short of a
 * page (or `block`). Then no closing event fits in the stream's first block: without
 * room kept for them, they would need a block the command has taken.
 */
function fillThenExit(runId: string, file: string, code: number, block = PAGE): string[] {
  const argv = (pad: string) => ['sh', '-c', `head -c 100000000 /dev/zero > '${file}'; exit ${code}`, 'pad', pad];
  const ts = new Date(0).toISOString(); // every ts has this length
  const opening = (pad: string) =>
    Buffer.byteLength(
      encodeEvents([
        { schema: 3, ts, run_id: runId, event: 'run_started', command: argv(pad) },
        { schema: 3, ts, run_id: runId, event: 'node_started', node_id: 'command' },
      ]),
    );
  return argv('p'.repeat(block - 16 - opening('')));
}

/** Fills the filesystem of `dir` from this process until write(2) says ENOSPC; returns the bytes written. */
function fillFromHere(file: string): number {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(4096);
  let total = 0;
  try {
    for (;;) {
      try {
        total += writeSync(fd, chunk);
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
        return total;
      }
    }
  } finally {
    closeSync(fd);
  }
}

beforeAll(() => {
  base = tempDir('rw-disk-');
});
afterEach(() => killAll());
afterAll(async () => {
  await killAll();
  for (const m of mounts.splice(0).reverse()) spawnSync('umount', [m]);
  cleanupTemp();
});

describe('the closing events of a leg on a full disk', () => {
  it("a 64 KiB tmpfs filled by the leg's own command, exit 0: exec exits 0, the run reads PASS, the stream is well-formed", async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('tmpfs', ['-o', 'size=64k']);
    const root = join(mnt, 'runs');
    const fill = join(mnt, 'fill');
    const r = await run(['exec', '--root', root, 'r', '--', ...fillThenExit('r', fill, 0)]);
    // The command really met a full disk: head(1) said so, and wrote less than asked.
    expect(r.stderr).toMatch(/No space left on device/);
    expect(statSync(fill).size).toBeLessThan(64 * 1024);
    expect(r.stderr).not.toMatch(/runwarden/);
    expect(r.code).toBe(0);
    const lines = wellFormed(join(root, 'r', 'events.jsonl'));
    expect(Buffer.byteLength(encodeEvents(lines.slice(0, 2)))).toBe(PAGE - 16);
    expect(lines.map((l) => l['event'])).toEqual(['run_started', 'node_started', 'node_passed', 'run_finished']);
    expect(runStatus(join(root, 'r')).status).toBe('PASS');
    const status = await run(['status', '--root', root, 'r', '--json']);
    expect(JSON.parse(status.stdout).status).toBe('PASS');
    // The room kept past the end was given back when the leg closed.
    expect(statfsSync(mnt).bfree).toBeGreaterThan(0);
  });

  it("the command's own failing status passes through, and its verdict is recorded (FAIL, not ABANDONED)", async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('tmpfs', ['-o', 'size=64k']);
    const root = join(mnt, 'runs');
    const r = await run(['exec', '--root', root, 'r', '--', ...fillThenExit('r', join(mnt, 'fill'), 3)]);
    expect(r.stderr).toMatch(/No space left on device/);
    expect(r.code).toBe(3);
    const lines = wellFormed(join(root, 'r', 'events.jsonl'));
    expect(lines.map((l) => l['event'])).toEqual(['run_started', 'node_started', 'node_failed', 'run_finished']);
    expect(lines[2]?.['detail']).toBe('exit code 3');
    expect(runStatus(join(root, 'r')).status).toBe('FAIL');
  });

  it('a library leg keeps the room as its stream grows: appends past the first room, a full disk refuses the next event, finish still lands', (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('tmpfs', ['-o', 'size=128k']);
    const runDir = join(mnt, 'runs', 'lib');
    const leg = startLeg(runDir);
    try {
      expect(leg.closingReserve).toBe('kept');
      // More than the first room's worth of events: the room must have moved with the end.
      const detail = 'x'.repeat(1000);
      for (let i = 0; i < 2 * (CLOSING_RESERVE_BYTES / 1000); i++) leg.append({ event: 'node_passed', node_id: `n${i}`, detail });
      const before = statSync(join(runDir, 'events.jsonl')).size;
      expect(before).toBeGreaterThan(CLOSING_RESERVE_BYTES * 2);
      fillFromHere(join(mnt, 'fill'));
      let refused: unknown;
      try {
        // Larger than a page: the room after it reaches past every block kept so far.
        leg.append({ event: 'node_started', node_id: 'late', detail: 'y'.repeat(5000) });
      } catch (e) {
        refused = e;
      }
      expect(refused).toBeInstanceOf(WriteError);
      expect((refused as WriteError).code).toBe('EWRITE');
      expect((refused as WriteError).errno).toBe('ENOSPC');
      expect((refused as WriteError).message).toMatch(/^disk full: /);
      // Refused before anything was written.
      expect(statSync(join(runDir, 'events.jsonl')).size).toBe(before);
      leg.finish('passed');
    } finally {
      leg.release();
    }
    const lines = wellFormed(join(runDir, 'events.jsonl'));
    expect(lines.at(-1)?.['event']).toBe('run_finished');
    expect(runStatus(runDir).status).toBe('PASS');
  });

  it('closing events larger than the room kept: one "disk full" line naming what and where, and the command\'s own status', async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('tmpfs', ['-o', 'size=64k']);
    const root = join(mnt, 'runs');
    // A node id this long makes node_failed alone larger than the room (it is written twice in the pair).
    const name = 'n'.repeat(CLOSING_RESERVE_BYTES + 4096);
    const r = await run(['exec', '--root', root, '--name', name, 'r', '--', ...fillThenExit('r', join(mnt, 'fill'), 3)]);
    expect(r.code).toBe(3);
    const ours = r.stderr.split('\n').filter((l) => l.startsWith('runwarden:'));
    expect(ours).toHaveLength(1);
    const events = join(root, 'r', 'events.jsonl');
    expect(ours[0]).toContain('runwarden: disk full: could not write node_failed and run_finished to ');
    expect(ours[0]).toContain(events);
    expect(ours[0]).toContain('ENOSPC');
    expect(ours[0]).toContain('the command exited 3');
    expect(ours[0]).not.toMatch(/short write|\n\s+at /);
    // Honest, not healed: the leg is open and its lock free.
    expect(runStatus(join(root, 'r')).status).toBe('ABANDONED');
  });

  it('a disk already full when the leg would start: "disk full", nothing run, the stream left without an open leg', async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('tmpfs', ['-o', 'size=64k']);
    const root = join(mnt, 'runs');
    const runDir = join(root, 'r');
    mkdirSync(runDir, { recursive: true });
    // Lock and stream files made while there is room; then no room at all.
    const first = await run(['exec', '--root', root, 'r', '--', 'true']);
    expect(first.code).toBe(0);
    fillFromHere(join(mnt, 'fill'));
    const marker = join(mnt, 'ran');
    const r = await run(['exec', '--root', root, 'r', '--', 'touch', marker]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^runwarden: disk full: /m);
    expect(r.stderr).toMatch(/the command was not run/);
    expect(() => statSync(marker)).toThrow();
    const status = runStatus(runDir).status;
    expect(status === 'PASS' || status === 'FAIL').toBe(true);
    rmSync(join(mnt, 'fill'));
  });

  it('whatever room is left when a leg starts (0 to 10 pages), it either runs and closes, or says "disk full" and runs nothing; never ABANDONED', async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('tmpfs', ['-o', 'size=64k']);
    const root = join(mnt, 'runs');
    const runDir = join(root, 'r');
    const outcomes = new Set<number | null>();
    for (let pages = 0; pages <= 10; pages++) {
      rmSync(root, { recursive: true, force: true });
      const first = await run(['exec', '--root', root, 'r', '--', 'true']);
      expect(first.code).toBe(0);
      const fill = join(mnt, 'fill');
      const size = fillFromHere(fill);
      truncateSync(fill, Math.max(0, size - pages * PAGE));
      const marker = join(mnt, 'ran');
      rmSync(marker, { force: true });
      const r = await run(['exec', '--root', root, 'r', '--', 'sh', '-c', `echo > '${marker}' || exit 0`]);
      outcomes.add(r.code);
      const status = runStatus(runDir).status;
      const why = `${pages} free pages: exit ${r.code}, ${status}, stderr ${r.stderr}`;
      expect(status, why).not.toBe('ABANDONED');
      expect(r.stderr, why).not.toMatch(/short write|\n\s+at /);
      if (r.code === 0) {
        expect(status, why).toBe('PASS');
      } else {
        expect(r.code, why).toBe(1);
        expect(r.stderr, why).toMatch(/^runwarden: disk full: .*the command was not run/m);
        expect(existsSync(marker), why).toBe(false);
      }
      // Every line complete and parsable: nothing half-written was left behind.
      wellFormed(join(runDir, 'events.jsonl'));
      expect(existsSync(join(runDir, 'exec.pgid.tmp')), why).toBe(false);
      rmSync(fill);
    }
    // The range spans the boundary: some starts were refused, some ran.
    expect([...outcomes].sort()).toEqual([0, 1]);
  });

  it('ext2 cannot reserve, and its command fills it and exits 0: exec says "disk full" in one line and exits 0, not 1', async (ctx) => {
    needs(ctx, 'root', 'mount', 'mkfs.ext2', 'loop');
    const image = join(base, 'ext2.img');
    const mk = spawnSync('sh', ['-c', `truncate -s 1M '${image}' && mkfs.ext2 -q -F -b 1024 '${image}'`], { encoding: 'utf8' });
    expect(mk.status, mk.stderr).toBe(0);
    const mnt = join(base, 'ext2');
    mkdirSync(mnt);
    const m = spawnSync('mount', ['-o', 'loop', image, mnt], { encoding: 'utf8' });
    if (m.status !== 0) throw new Error(`mount -o loop ${image} failed: ${m.stderr}`);
    mounts.push(mnt);
    const root = join(mnt, 'runs');
    const r = await run(['exec', '--root', root, 'r', '--', ...fillThenExit('r', join(mnt, 'fill'), 0, 1024)]);
    expect(r.stderr).toMatch(/No space left on device/);
    expect(r.code).toBe(0);
    const ours = r.stderr.split('\n').filter((l) => l.startsWith('runwarden:'));
    expect(ours).toHaveLength(1);
    expect(ours[0]).toContain(`runwarden: disk full: could not write node_passed and run_finished to ${join(root, 'r', 'events.jsonl')} (ENOSPC; this filesystem cannot keep room for them (EOPNOTSUPP))`);
    expect(ours[0]).toContain('the command exited 0');
    expect(runStatus(join(root, 'r')).status).toBe('ABANDONED');
  });

  it('ramfs cannot reserve: the leg runs and closes as before, with nothing said about it', async (ctx) => {
    needs(ctx, 'root', 'mount');
    const mnt = mount('ramfs', []);
    const root = join(mnt, 'runs');
    const r = await run(['exec', '--root', root, 'r', '--', 'sh', '-c', 'exit 0']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(runStatus(join(root, 'r')).status).toBe('PASS');
    const leg = startLeg(join(root, 'lib'));
    try {
      leg.append({ event: 'node_started', node_id: 'a' });
      expect(leg.closingReserve).toBe('unsupported');
      leg.finish('passed');
    } finally {
      leg.release();
    }
    expect(runStatus(join(root, 'lib')).status).toBe('PASS');
  });
});
