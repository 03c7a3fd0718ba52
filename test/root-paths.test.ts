/**
 * A runs root may be any path to a directory: a symlink, a symlink to a
 * symlink, a path with `..`, a bind mount. Through each, every surface is as
 * safe and as live as through the real path:
 * - a live leg's replaced lock (CONTRACT §4.5) is found whichever path the
 *   leg opened it by and whichever path the reader reads it by, so the run
 *   reads RUNNING (lock-replaced), never ABANDONED, and a second leg is
 *   refused; the kernel names a holder's descriptor by its own path
 *   (`d_path`), which is not the reader's;
 * - the exit watch's search for a holder that took the lock over (kernel
 *   /holders.ts descriptorHolders) finds it through any of the paths;
 * - the live engine watches the root itself: a run made under it is told
 *   with the safety pass out of reach, and serve says nothing of a root it
 *   cannot watch.
 */
import { copyFileSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it, type TestContext } from 'vitest';
import { LiveEngine, probeLock, runStatus } from '../src/index.js';
import { descriptorHolders } from '../src/kernel/holders.js';
import { systemFacts } from '../src/kernel/system.js';
import { eventLine } from './helpers/events.js';
import { run } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, startHolder, tempDir, until } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';
import { getJson } from './helpers/serve-client.js';
import { startServeCli } from './helpers/serve-cli.js';

const mounts: string[] = [];
afterEach(async () => {
  await killAll();
  for (const m of mounts.splice(0)) spawnSync('umount', [m]);
  cleanupTemp();
});

/** The other paths to the real root `real` (made under `base`), by the name of their kind. */
const FORMS: Record<string, { prereqs?: ('root' | 'mount')[]; make: (base: string, real: string) => string }> = {
  symlink: {
    make: (base, real) => {
      symlinkSync(real, join(base, 'link'));
      return join(base, 'link');
    },
  },
  'a symlink to a symlink': {
    make: (base, real) => {
      symlinkSync(real, join(base, 'link1'));
      symlinkSync(join(base, 'link1'), join(base, 'link2'));
      return join(base, 'link2');
    },
  },
  'a path with ..': {
    make: (base, real) => {
      mkdirSync(join(base, 'side'));
      // Unnormalised on purpose: the reader is handed the path as a user would type it.
      return `${base}/side/../${real.slice(base.length + 1)}`;
    },
  },
  'a bind mount': {
    prereqs: ['root', 'mount'],
    make: (base, real) => {
      const at = join(base, 'bound');
      mkdirSync(at);
      const m = spawnSync('mount', ['--bind', real, at], { encoding: 'utf8' });
      if (m.status !== 0) throw new Error(`mount --bind failed: ${m.stderr}`);
      mounts.push(at);
      return at;
    },
  },
};

function setUp(ctx: TestContext, form: string): { real: string; other: string } {
  // Run wherever the suite runs: linux finds holders through /proc, darwin (the XNU model lane) through libproc.
  for (const p of FORMS[form]?.prereqs ?? []) needs(ctx, p);
  const base = tempDir('rw-rootpaths-');
  const real = join(base, 'runs.real');
  mkdirSync(real);
  return { real, other: (FORMS[form]).make(base, real) };
}

/** An open leg's run `id` under `root`, its lock held by a runwarden holder that opened it through `root`. */
async function heldRun(root: string, id: string): Promise<{ kill: () => void; pid: number }> {
  const dir = join(root, id);
  mkdirSync(dir);
  const holder = await startHolder(join(dir, 'resume.lock'));
  writeFileSync(join(dir, 'events.jsonl'), eventLine({ event: 'run_started' }));
  return { kill: () => holder.proc.kill('SIGKILL'), pid: holder.pid };
}

/** A restore's replacement: a copy renamed over the lock (a new inode at the path, unlocked). */
function replaceLock(lock: string): void {
  copyFileSync(lock, `${lock}.x`);
  renameSync(`${lock}.x`, lock);
}

describe('a replaced lock through any path to the root', () => {
  for (const form of Object.keys(FORMS)) {
    for (const holderVia of ['the real path', form] as const) {
      it(`${form}: held through ${holderVia}, read through the other: RUNNING (lock-replaced), a second leg refused`, async (ctx) => {
        const { real, other } = setUp(ctx, form);
        const [holdRoot, readRoot] = holderVia === form ? [other, real] : [real, other];
        const holder = await heldRun(holdRoot, 'r');
        replaceLock(join(holdRoot, 'r', 'resume.lock'));
        const dir = join(readRoot, 'r');
        // The kernel alone would say dead: the path's lock is free.
        expect(probeLock(join(dir, 'resume.lock')).liveness).toBe('free');
        expect(runStatus(dir)).toMatchObject({ status: 'RUNNING', liveness: 'unknown', reason: 'lock-replaced' });
        const status = await run(['status', '--root', readRoot, 'r', '--json']);
        expect(JSON.parse(status.stdout)).toMatchObject({ status: 'RUNNING', reason: 'lock-replaced' });
        const second = await run(['exec', '--root', readRoot, 'r', '--', 'sh', '-c', `touch ${join(real, 'ran')}`]);
        expect(second.code, second.stderr).toBe(75);
        expect(second.stderr).toMatch(new RegExp(`in flight \\(pid ${holder.pid}\\)`));
        holder.kill();
        await until(() => runStatus(dir).status === 'ABANDONED', 30_000);
      });
    }

    it(`${form}: the holder of a lock is found by its descriptor whichever path opened it`, async (ctx) => {
      const { real, other } = setUp(ctx, form);
      const viaReal = await heldRun(real, 'a');
      const viaOther = await heldRun(other, 'b');
      for (const root of [real, other]) {
        expect(descriptorHolders(join(root, 'a', 'resume.lock'), 0)).toContain(viaReal.pid);
        expect(descriptorHolders(join(root, 'b', 'resume.lock'), 0)).toContain(viaOther.pid);
      }
    });

    it(`${form}: the live engine watches the root itself (a new run told with the safety pass out of reach)`, async (ctx) => {
      const { real, other } = setUp(ctx, form);
      const notices: string[] = [];
      const engine = new LiveEngine({ root: other, safetyMs: 1e9 });
      engine.subscribe((c) => {
        if (c.type === 'notice') notices.push(c.message);
      });
      try {
        await engine.start();
        expect(engine.stats.backend).not.toBe('polling');
        const listings = engine.stats.rootListings;
        const holder = await heldRun(real, 'new');
        await until(() => engine.runs().some((r) => r.runId === 'new' && r.report?.status === 'RUNNING'), 60_000);
        // Told by the root's watch, not found by a listing (where a directory's watch names the entry
        // that appeared: inotify; a kqueue directory says only that it changed, and is listed again).
        if (systemFacts().entryWrites) expect(engine.stats.rootListings).toBe(listings);
        holder.kill();
        await until(() => engine.runs().some((r) => r.runId === 'new' && r.report?.status === 'ABANDONED'), 60_000);
        expect(notices).toEqual([]);
      } finally {
        engine.close();
      }
    });
  }
});

describe('serve over a symlinked root', () => {
  it('watches the root, finds a replaced lock and never calls its run ABANDONED', async (ctx) => {
    const { real, other } = setUp(ctx, 'symlink');
    const holder = await heldRun(real, 'r');
    const serve = await startServeCli(other);
    try {
      replaceLock(join(real, 'r', 'resume.lock'));
      // Polled until the replacement is seen (a bound only for what never happens); never ABANDONED on the way.
      const end = Date.now() + 60_000;
      let reason: string | undefined;
      while (reason !== 'lock-replaced' && Date.now() < end) {
        const doc = await getJson(serve.port, '/api/dashboard');
        expect(doc.status).toBe(200);
        const card = doc.body.runs.find((c: { run_id: string }) => c.run_id === 'r');
        expect(card?.report?.status).toBe('RUNNING');
        reason = card?.report?.reason;
        if (reason !== 'lock-replaced') await new Promise((r) => setTimeout(r, 50));
      }
      expect(reason).toBe('lock-replaced');
      holder.kill();
      expect(serve.stderr()).not.toMatch(/cannot be watched/);
    } finally {
      serve.proc.kill('SIGKILL');
    }
  });
});
