/**
 * The one clock for intervals, deadlines, timeouts and elapsed times.
 *
 * The wall clock (`Date.now()`, CLOCK_REALTIME) is moved by people and by
 * NTP: stepped back an hour, a deadline computed from it lies an hour in the
 * future (a 100 ms lock retry spins instead of refusing), and an "idle for
 * 1 s" check never comes true (watch never re-derives the run, so it never
 * sees a leg that was SIGKILLed). A monotonic clock (CLOCK_MONOTONIC, what
 * `performance.now()` and `process.hrtime` read) only ever moves forward at
 * the rate time passes, whatever is done to the wall clock.
 *
 * Rule for src/: every "how long since" and "until when" uses
 * {@link monotonicMs}. `Date.now()` / `new Date()` appear only where a
 * timestamp is written or shown to a person (an event's `ts`, "as of" times,
 * ages of wall-clock timestamps read from files), each with a comment saying
 * so. The browser files in src/serve/public use `performance.now()` for the
 * same reason.
 */

/**
 * Milliseconds on a monotonic clock, with sub-millisecond precision. Only
 * differences between two readings in the same process mean anything.
 */
export function monotonicMs(): number {
  return performance.now();
}
