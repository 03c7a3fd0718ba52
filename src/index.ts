/**
 * runwarden's library entry point: the public API, chosen by hand. Its
 * reference (docs/api/) and report (etc/runwarden.api.md) are generated
 * from these exports by `npm run docs`. Everything else under src/ is
 * internal and is not reachable from the package root.
 *
 * Importing it has no side effects: the native addon loads on the first
 * call that needs the kernel.
 */

// The contract: file names, formats, and the words every surface uses (docs/CONTRACT.md).
export { EVENTS_FILE, LOCK_FILE, STATE_FILE } from './contract/files.js';
export { LOCK_MARKER, HEAD_BYTES, classifyHead, parseLegacyPid, type HeadKind } from './contract/marker.js';
export { STREAM_SCHEMA, MAX_LINE_BYTES, parseEventLine, type StreamEvent } from './contract/events.js';
export type { LastLeg, LegRecord, FoldOptions } from './contract/fold.js';
export {
  STATUSES,
  PROBE_REASONS,
  type Status,
  type NodeState,
  type Liveness,
  type ProbeReason,
  type HeldReason,
  type FreeReason,
  type UnknownReason,
  type LivenessAnswer,
  type ReportLiveness,
  type RunReportFields,
  type LegFacts,
  type StreamFacts,
  type RunReport,
  type SkippedRun,
  JSON_SCHEMA,
  type RunsDocument,
} from './contract/types.js';
export { compareNewestFirst, isValidRunId, resolveRoot, runDirForId } from './contract/runid.js';

// One error family.
export {
  ERROR_CODES,
  RunwardenError,
  NativeError,
  AddonLoadError,
  UnsupportedPlatformError,
  LockHeldError,
  LockFileError,
  RunFileError,
  StreamError,
  RunUnreadableError,
  RunIdError,
  WriteError,
  LockLostError,
  AbortError,
  ProperLockfileError,
  type ProperLockfileErrorCode,
  type ErrorCode,
  type LockFileErrorCode,
  type LockLostReason,
  type StreamErrorCode,
  type SkipKind,
  type LockHeldDetails,
} from './contract/errors.js';

// Kernel facts.
export { setAddonPath } from './kernel/native.js';
export { processPresence, groupPresence, filesystemType, type ProcessPresence } from './kernel/presence.js';
export { LINUX_LOCAL_FS, DARWIN_LOCAL_FS, describeFsType } from './kernel/fsgate.js';
export type { FileKind } from './kernel/filekind.js';

// The lock: a leg takes it, a reader probes it.
export { acquireLock, acquireLockAsync, type AcquireOptions, type AcquireAsyncOptions, type HeldLock, type LockState } from './lock/acquire.js';
export { probeLock, type ProbeResult, type ProbeOptions } from './lock/probe.js';

// Writing a leg: what `runwarden exec` does around a command, as calls.
export {
  startLeg,
  startLegAsync,
  LEG_EVENTS,
  type Leg,
  type LegEvent,
  type LegOutcome,
  type LegState,
  type StartLegOptions,
  type StartLegAsyncOptions,
} from './write/writer.js';

// Reading a run's files.
export { readStream, type ReadStreamOptions } from './read/stream.js';
export type { FoldHooks } from './read/lines.js';
export { readLastLeg, type ReadLastLegOptions, type TailFacts } from './read/tail.js';
export { readSnapshot, SNAPSHOT_SCHEMA, SNAPSHOT_MAX_BYTES, type SnapshotRead, type Snapshot, type NodeRecord, type GraphNode } from './read/snapshot.js';

// Status: the derivation and the reports every surface shows.
export { deriveStatus, type RunFacts, type Derivation } from './status/derive.js';
export { runStatus, type RunStatusOptions } from './status/inspect.js';
export { runDetail, type RunDetail, type RunDetailOptions, type DetailNode, type DetailLeg } from './status/detail.js';
export { listRuns, runsDocument, pickCurrentRun, type RunList, type SkippedEntry, type ListRunsOptions } from './status/list.js';
export { parseStatusFilter, type RunSelection } from './status/select.js';
export { followRun, FOLLOW_RECHECK_MS, type FollowItem, type FollowRunOptions } from './live/follow.js';
export { abandonedHint, pausedHint, ORPHAN_WARNING, type AbandonedHintFacts, type MarkScan, type OrphanEvidence } from './status/hints.js';

// Live: every run's status kept current by the kernel's change notification.
export {
  LiveEngine,
  LIVE_SAFETY_MS,
  LIVE_SAFETY_SETTLED_PER_PASS,
  LIVE_RUNS_PER_TURN,
  LIVE_OPEN_RECHECK_MS,
  LIVE_POLL_MS,
  type LiveEngineOptions,
  type LiveChange,
  type LiveLine,
  type LiveRootFacts,
  type LiveRun,
  type LiveStats,
} from './live/engine.js';
