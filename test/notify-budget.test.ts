/**
 * The notifiers' threads and descriptors, counted from /proc (a deterministic
 * budget, not a timing): each open notifier holds exactly one waiting thread,
 * its kernel notifier and one wake descriptor (an eventfd), plus one pidfd
 * per watched process; and nothing of it is left once the notifier is
 * closed, once a worker thread that opened notifiers ends (by itself or
 * terminated, without close()), or once a LiveEngine is closed. The counts
 * are taken in a child process (test/fixtures/notify-budget.mjs), so the
 * runner's own threads do not move them.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runScript } from './helpers/exec-procs.js';
import { cleanupTemp, killAll, ROOT, tempDir, track } from './helpers/lock-procs.js';
import { needs } from './helpers/prereq.js';

afterEach(async () => {
  await killAll();
  cleanupTemp();
});

interface Count {
  threads: number;
  fds: number;
  /** Threads named rw-notify (the addon names its notifier threads so). */
  notifierThreads: number;
}
interface Report {
  baseline: Count;
  open: Count;
  closed: Count;
  workerReturned: { during: Count; after: Count };
  workerTerminated: { during: Count; after: Count };
  engineOpen: Count;
  engineClosed: Count;
}

const FIXTURE = join(ROOT, 'test', 'fixtures', 'notify-budget.mjs');

describe('notifier threads and descriptors', () => {
  it('one thread and two descriptors per notifier (plus a pidfd per watched process), none left after close, a worker\'s end, or an engine\'s close', async (ctx) => {
    needs(ctx, 'linux: /proc/self/task and /proc/self/fd, inotify and pidfd');
    const dir = tempDir('rw-budget-');
    const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
    track(sleeper);
    const r = await runScript(FIXTURE, [dir, String(sleeper.pid)]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const c = JSON.parse(r.stdout) as Report;
    const b = c.baseline;
    // Six notifiers (three change, three exit, each exit one watching a pid):
    // six threads; six kernel notifiers, six eventfds and three pidfds.
    expect(b.notifierThreads).toBe(0);
    expect(c.open).toEqual({ threads: b.threads + 6, fds: b.fds + 6 + 6 + 3, notifierThreads: 6 });
    expect(c.closed).toEqual(b);
    // A worker is a thread of its own and keeps descriptors of its own (its
    // loop); its four notifiers add four threads and 4 + 4 + 2 descriptors.
    for (const w of [c.workerReturned, c.workerTerminated]) {
      expect(w.during.notifierThreads).toBe(4);
      expect(w.during.threads).toBeGreaterThanOrEqual(b.threads + 1 + 4);
      expect(w.during.fds).toBeGreaterThanOrEqual(b.fds + 4 + 4 + 2);
      // Bun keeps threads of its own after terminating a worker (measured: two, none of them
      // named rw-notify): under Bun a terminated worker is held to no notifier thread and no descriptor.
      if (process.versions['bun'] !== undefined && w === c.workerTerminated) expect({ fds: w.after.fds, notifierThreads: w.after.notifierThreads }).toEqual({ fds: b.fds, notifierThreads: 0 });
      else expect(w.after).toEqual(b);
    }
    expect(c.engineOpen.notifierThreads).toBeGreaterThan(0);
    expect(c.engineClosed).toEqual(b);
  });
});
