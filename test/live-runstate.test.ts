/**
 * The engine's per-run record (live/runstate.ts): a settled run holds no
 * RunMore, reads of its reading state answer the defaults, a write of a
 * non-default value makes one, shed() drops it once every field is back at
 * its default, and the flags are independent bits. The bytes this saves
 * are asserted by test/serve-memory.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FORGOTTEN, NO_BYTES, NO_EVENTS, RunState, SigSlots } from '../src/live/runstate.js';

describe('RunState', () => {
  it('starts compact, dirty, with every reading field at its default', () => {
    const r = new RunState('a', '/x/a', 0);
    expect(r.compact).toBe(true);
    expect([r.dirtyStream, r.dirtySnapshot, r.dirtyProbe, r.reported, r.announce, r.newer, r.held, r.behind, r.sought]).toEqual([true, true, true, false, false, false, false, false, false]);
    expect([r.offset, r.lastStart, r.streamError, r.print, r.newEvents, r.fold]).toEqual([0, -1, null, NO_BYTES, NO_EVENTS, FORGOTTEN]);
    r.offset = 0; // a default: nothing is made
    r.streamError = null;
    expect(r.compact).toBe(true);
  });

  it('makes its RunMore at the first non-default write and sheds it once all are defaults again', () => {
    const r = new RunState('a', '/x/a', 0);
    r.offset = 42;
    r.lastStart = 7;
    expect(r.compact).toBe(false);
    expect([r.offset, r.lastStart]).toEqual([42, 7]);
    r.offset = 0;
    r.shed();
    expect(r.compact).toBe(false); // lastStart is still 7
    r.lastStart = -1;
    r.shed();
    expect(r.compact).toBe(true);
    expect(r.offset).toBe(0);
  });

  it('keeps each flag in its own bit', () => {
    const r = new RunState('a', '/x/a', 0);
    r.dirtyStream = r.dirtySnapshot = r.dirtyProbe = false;
    r.held = true;
    expect([r.dirtyStream, r.dirtySnapshot, r.dirtyProbe, r.held, r.behind]).toEqual([false, false, false, true, false]);
    r.behind = true;
    r.held = false;
    expect([r.held, r.behind]).toEqual([false, true]);
  });
});

describe('SigSlots', () => {
  it('tells a change once, keeps slots apart, and makes a slot given back differ from everything', () => {
    const s = new SigSlots(3);
    const a = s.take();
    const b = s.take();
    expect(a).not.toBe(b);
    const fresh = new Float64Array([0, 1, 2, 3, 9, 9, 9]);
    expect(s.takeIfChanged(a, fresh, 1)).toBe(true);
    expect(s.takeIfChanged(a, fresh, 1)).toBe(false);
    expect(s.takeIfChanged(b, fresh, 4)).toBe(true);
    expect(s.takeIfChanged(a, fresh, 1)).toBe(false); // b's write did not touch a
    s.give(a);
    const c = s.take();
    expect(c).toBe(a);
    expect(s.takeIfChanged(c, fresh, 1)).toBe(true); // no longer a's identity
    expect(s.takeIfChanged(c, fresh, 1)).toBe(false);
    expect(s.takeIfChanged(-1, fresh, 1)).toBe(true); // a dropped run's slot always differs
  });

  it('tells a change in any one bit of any number', () => {
    const s = new SigSlots(12);
    const slot = s.take();
    const base = Float64Array.from({ length: 12 }, (_, i) => 1_700_000_000 + i * 977);
    expect(s.takeIfChanged(slot, base, 0)).toBe(true);
    const bits = new Uint32Array(base.buffer);
    let told = 0;
    for (let w = 0; w < bits.length; w++) {
      for (let b = 0; b < 32; b++) {
        bits[w] = (bits[w]) ^ (1 << b);
        if (s.takeIfChanged(slot, base, 0)) told++;
        bits[w] = (bits[w]) ^ (1 << b);
        s.takeIfChanged(slot, base, 0); // back to the base
      }
    }
    expect(told).toBe(12 * 64);
  });

  it('spans slabs', () => {
    const s = new SigSlots(2);
    const slots = Array.from({ length: 5000 }, () => s.take());
    const fresh = new Float64Array([5, 6]);
    expect(s.takeIfChanged(slots[4999], fresh, 0)).toBe(true);
    expect(s.takeIfChanged(slots[4999], fresh, 0)).toBe(false);
    expect(s.takeIfChanged(slots[0], new Float64Array(2), 0)).toBe(true); // a new slot equals nothing, zeros included
    expect(s.takeIfChanged(slots[0], new Float64Array(2), 0)).toBe(false);
  });

  it('a store addressed by another store\'s slots knows a slot once it was compared, and forgets it when cleared', () => {
    const owner = new SigSlots(2);
    const other = new SigSlots(4);
    const slots = Array.from({ length: 9000 }, () => owner.take());
    const far = slots[8999];
    expect(other.known(far)).toBe(false);
    const fresh = new Float64Array([1, 2, 3, 4]);
    expect(other.takeIfChanged(far, fresh, 0)).toBe(true);
    expect(other.known(far)).toBe(true);
    expect(other.known(slots[0])).toBe(false);
    expect(other.takeIfChanged(far, fresh, 0)).toBe(false);
    other.clear(far);
    expect(other.known(far)).toBe(false);
    expect(other.takeIfChanged(far, fresh, 0)).toBe(true);
    // clear keeps no slot for a take: the owner's next slot is a new one.
    expect(owner.take()).toBe(9000);
    expect(other.known(-1)).toBe(false);
  });
});
