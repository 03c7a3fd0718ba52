/**
 * The names of the files in a run directory (CONTRACT §1.2), each written
 * once. Every module that opens one of them takes its name from here.
 */

/** The stream: append-only, one JSON event per line (CONTRACT §2). */
export const EVENTS_FILE = 'events.jsonl';
/** The snapshot of settled node verdicts, rewritten atomically (CONTRACT §3.1). */
export const STATE_FILE = 'state.json';
/** The leg lock; never removed once created (CONTRACT §3.2, §4.1). */
export const LOCK_FILE = 'resume.lock';
/** Where a `runwarden exec` leg records its child's process group (CONTRACT §4.4). */
export const PGID_FILE = 'exec.pgid';
