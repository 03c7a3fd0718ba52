/**
 * runwarden's library entry point. Importing it has no side effects: the
 * native addon loads on the first call that needs the kernel.
 */
export { LOCK_FILE, LOCK_MARKER, HEAD_BYTES, classifyHead, parseLegacyPid, type HeadKind } from './marker.js';
export { acquireLock, type AcquireOptions, type HeldLock } from './lock.js';
export { probeLock, PROBE_REASONS, type Liveness, type ProbeReason, type ProbeResult, type ProbeOptions } from './probe.js';
export { LockHeldError, LockFileError, NativeError, type FileKind, type LockHeldDetails } from './errors.js';
export { LINUX_LOCAL_FS, DARWIN_LOCAL_FS, describeFsType } from './fsgate.js';
export { processPresence, groupPresence, filesystemType } from './kernel.js';
export type { Status, NodeState, LegFacts, StreamFacts, RunReport, SkippedRun } from './types.js';
export * from './feed.js';
export * from './snapshot.js';
export * from './status.js';
export * from './hints.js';
