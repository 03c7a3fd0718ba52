/**
 * The server-sent event hub's pacing (src/serve/hub.ts), on a fake clock:
 * a change waits no longer than the last derivation's own cost after it, and
 * the first picture, which waits for the model's first listing, is not
 * counted as a cost. Time here is vitest's fake clock (setTimeout and
 * performance.now), so nothing depends on this machine's speed.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveHub } from '../dist/serve/hub.js';
import type { DashboardDoc } from '../dist/serve/view.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A dashboard document with no runs: all the hub needs to diff. */
function doc(n: number): DashboardDoc {
  return {
    root: '/runs',
    root_missing: false,
    generated_at: `t${n}`,
    order: [],
    runs: [],
    more: {},
    skipped: [],
    skipped_count: 0,
    tallies: {},
    cost: {},
  } as unknown as DashboardDoc;
}

/** The response side of one page's GET /api/events: keeps what was written. */
function page(): { res: ServerResponse; req: IncomingMessage; text: () => string } {
  let text = '';
  const res = {
    writableLength: 0,
    setHeader() {},
    writeHead() {},
    write(s: string) {
      text += s;
      return true;
    },
    on() {},
    end() {},
    destroy() {},
  } as unknown as ServerResponse;
  return { res, req: { method: 'GET' } as IncomingMessage, text: () => text };
}

describe('hub pacing', () => {
  it('derives a change right after a first picture that took seconds (the first listing), then paces by real cost', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let release!: () => void;
    const listing = new Promise<void>((r) => (release = r));
    let calls = 0;
    let version = 1;
    let onChange!: () => void;
    // The first derivation waits for the listing; later ones take 3 s of (fake) work each.
    const hub = new LiveHub(
      {
        async dashboard() {
          calls++;
          if (calls === 1) await listing;
          else vi.advanceTimersByTime(3000);
          return doc(calls);
        },
        run: () => Promise.reject(new Error('no run pages here')),
        subscribe(cb) {
          onChange = cb;
          return () => {};
        },
        version: () => version,
      },
      { intervalMs: 1000, log: () => {} },
    );
    const p = page();
    hub.attach(p.req, p.res, undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    // The first listing takes 5 s; then the page has its picture.
    await vi.advanceTimersByTimeAsync(5000);
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(p.text()).toContain('event: snapshot');
    // A change 100 ms later is derived within the least gap (25 ms), not 5 s on.
    await vi.advanceTimersByTimeAsync(100);
    version++;
    onChange();
    await vi.advanceTimersByTimeAsync(30);
    expect(calls).toBe(2);
    // That derivation cost 3 s: the next change waits that long after it ended.
    version++;
    onChange();
    await vi.advanceTimersByTimeAsync(2900);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(200);
    expect(calls).toBe(3);
    hub.close();
  });
});
