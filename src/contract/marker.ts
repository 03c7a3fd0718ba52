/**
 * The lock file's format (CONTRACT §3.2): how its first bytes are read, and the
 * strict parse of a pre-flock file's pid. Pure functions over bytes, shared by
 * the acquire path and the probe so that both classify a file identically.
 */

export { LOCK_FILE } from './files.js';
/** The format marker: the first line of every lock file written under flock semantics. */
export const LOCK_MARKER = 'oh-my-graph-lock 1';
/** Only this many bytes of a lock file are ever read, at offset 0. */
export const HEAD_BYTES = 128;

const MARKER_PREFIX = Buffer.from('oh-my-graph-lock ', 'latin1');
const NL = 0x0a;
const CR = 0x0d;

/** What the first line of a lock file says about who wrote it. */
export type HeadKind = 'empty' | 'marked' | 'future' | 'unmarked';

/** Index just past the first line's content, with trailing CRs removed. */
function firstLineEnd(head: Uint8Array, len: number): number {
  let end = head.indexOf(NL);
  if (end < 0 || end > len) end = len;
  while (end > 0 && head[end - 1] === CR) end--;
  return end;
}

/**
 * Classifies the head of a lock file. `marked`: the first line is exactly
 * the marker. `future`: it is `oh-my-graph-lock <digits>` with another number,
 * written by a newer version whose rules we do not know. `unmarked`: anything
 * else non-empty, i.e. a pre-flock writer. Allocation-free on the hot path.
 */
export function classifyHead(head: Uint8Array, len: number = head.length): HeadKind {
  if (len === 0) return 'empty';
  const end = firstLineEnd(head, len);
  const p = MARKER_PREFIX.length;
  if (end <= p) return 'unmarked';
  for (let i = 0; i < p; i++) if (head[i] !== MARKER_PREFIX[i]) return 'unmarked';
  for (let i = p; i < end; i++) {
    const c = head[i] as number;
    if (c < 0x30 || c > 0x39) return 'unmarked';
  }
  return end === p + 1 && head[p] === 0x31 ? 'marked' : 'future';
}

const MAX_PID = 2 ** 31 - 1;

function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === CR;
}

/**
 * The strict pre-flock pid parse: the whole file is one line of ASCII digits
 * (no sign, no leading zero, 1..2^31-1), optionally surrounded by spaces,
 * tabs or CRs, optionally ending in one newline, and nothing else. Any doubt
 * returns undefined, because this pid may end up passed to kill(2).
 * `fileSize` guards the 128-byte read: a larger file cannot be one pid line.
 */
export function parseLegacyPid(head: Uint8Array, len: number, fileSize: number): number | undefined {
  if (fileSize !== len || len === 0) return undefined;
  let end = len;
  if (head[end - 1] === NL) end--;
  let i = 0;
  while (i < end && isBlank(head[i] as number)) i++;
  let j = end;
  while (j > i && isBlank(head[j - 1] as number)) j--;
  const digits = j - i;
  if (digits === 0 || digits > 10 || head[i] === 0x30) return undefined;
  let value = 0;
  for (let k = i; k < j; k++) {
    const c = head[k] as number;
    if (c < 0x30 || c > 0x39) return undefined;
    value = value * 10 + (c - 0x30);
  }
  return value >= 1 && value <= MAX_PID ? value : undefined;
}

/**
 * The pid label on the second line of a marked file, or undefined. A label
 * only: it names the process for a message and is never evidence of life.
 */
export function markedPid(head: Uint8Array, len: number): number | undefined {
  const nl = head.indexOf(NL);
  if (nl < 0 || nl >= len) return undefined;
  let end = head.indexOf(NL, nl + 1);
  if (end < 0 || end > len) end = len;
  const rest = head.subarray(nl + 1, end);
  return parseLegacyPid(rest, rest.length, rest.length);
}

/**
 * The lock label (CONTRACT §3.2, runwarden addition 64): the third line of a marked file whose
 * writer took a LockFileEx lock, which runwarden's writer adds on Windows. A free Windows lock
 * proves a dead leg only with it, because oh-my-graph's own Windows build writes the marker and
 * takes no lock at all.
 */
export const LOCKFILEEX_LABEL = 'locked-by LockFileEx';

/**
 * The exact bytes a holder writes once it holds the lock: the marker and the pid, and the lock
 * label when the lock taken is `LockFileEx` (Windows).
 */
export function markedContent(pid: number, lock: 'flock' | 'LockFileEx' = 'flock'): Buffer {
  return Buffer.from(`${LOCK_MARKER}\n${pid}\n${lock === 'LockFileEx' ? `${LOCKFILEEX_LABEL}\n` : ''}`, 'latin1');
}

/**
 * Whether the third line of a marked file's head is exactly the lock label (a trailing `\r`
 * allowed, as for the marker line).
 */
export function hasLockLabel(head: Uint8Array, len: number): boolean {
  const first = head.indexOf(NL);
  if (first < 0 || first >= len) return false;
  const second = head.indexOf(NL, first + 1);
  if (second < 0 || second >= len) return false;
  let end = head.indexOf(NL, second + 1);
  if (end < 0 || end > len) end = len;
  while (end > second + 1 && head[end - 1] === CR) end--;
  const label = LOCKFILEEX_LABEL;
  if (end - (second + 1) !== label.length) return false;
  for (let i = 0; i < label.length; i++) if (head[second + 1 + i] !== label.charCodeAt(i)) return false;
  return true;
}
