/**
 * runwarden's library entry point. Importing it has no side effects: the
 * native addon loads on the first call that needs the kernel.
 */
export { LOCK_FILE, LOCK_MARKER, HEAD_BYTES, classifyHead, parseLegacyPid, type HeadKind } from './contract/marker.js';
export { acquireLock, type AcquireOptions, type HeldLock } from './lock/acquire.js';
export { probeLock, PROBE_REASONS, type Liveness, type ProbeReason, type ProbeResult, type ProbeOptions } from './lock/probe.js';
export { LockHeldError, LockFileError, NativeError, type FileKind, type LockHeldDetails } from './contract/errors.js';
export { LINUX_LOCAL_FS, DARWIN_LOCAL_FS, describeFsType } from './kernel/fsgate.js';
export { processPresence, groupPresence, filesystemType } from './kernel/presence.js';
export type { Status, NodeState, LegFacts, StreamFacts, RunReport, SkippedRun } from './contract/types.js';
export * from './read/stream.js';
export * from './read/snapshot.js';
export * from './status/inspect.js';
export * from './status/hints.js';
