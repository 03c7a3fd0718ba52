/**
 * The reader of `state.json` (CONTRACT §3.1): the snapshot of settled node
 * verdicts that a run rewrites atomically.
 *
 * Invariants this module keeps, and why:
 * - Reading never throws for anything in the file system or the file: the
 *   answer is `missing` (a fact about the run, never an error), `ok`, or
 *   `error` with a one-line reason. A broken snapshot must not crash a
 *   listing, and must not hide the run's liveness (CONTRACT §4.3).
 * - Schema is exactly 3. Anything else is "incompatible snapshot schema",
 *   because a different schema may mean different things by the same words.
 * - "All nodes passed" is set membership: every node id in `graph.nodes` has
 *   a `"PASS"` record. A count match is not enough (a record for a node that
 *   is not in the graph must not stand in for one that is).
 * - Bounded: a snapshot larger than {@link SNAPSHOT_MAX_BYTES} is refused
 *   before it is read, and one nested deeper than {@link MAX_JSON_DEPTH} is
 *   refused by a byte scan before it is parsed, so a hostile file cannot
 *   exhaust memory either way (bytes, or objects per byte).
 * - Opened read-only, non-blocking, without following a symlink; only a
 *   regular file is read.
 */
import { jsonDeeperThan, MAX_JSON_DEPTH } from '../contract/depth.js';
import { RunFileError } from '../contract/errors.js';
import { basename } from 'node:path';
import { closeQuietly, openForRead, openForReadAt, readAt } from '../kernel/open.js';

/** The snapshot schema this version reads, exactly. */
export const SNAPSHOT_SCHEMA = 3;
/**
 * The largest snapshot read: 16 MiB. A snapshot holds one small record per
 * node (verdict, cost, usage), so real ones are kilobytes; 16 MiB leaves room
 * for graphs of tens of thousands of nodes while bounding what a reader holds.
 */
export const SNAPSHOT_MAX_BYTES = 16 * 1024 * 1024;

/** One node's record in `state.json`'s `nodes` map (only the fields runwarden uses). */
export interface NodeRecord {
  /** `"PASS"`, `"FAIL"`, or `""` for a not-yet-terminal marker (anything else is kept as given). */
  verdict: string;
  /** Reported spend in USD, when the record carries a finite number. */
  cost_usd: number | null;
  /** The record says its cost is unknown (or carries a cost that is not a number). */
  cost_unknown: boolean;
}

/** One node of `graph.nodes`. */
export interface GraphNode {
  /** The node's id, as the stream's node events name it. */
  id: string;
  /** `depends_on` ids when the snapshot lists them (strings only), else []. */
  depends_on: string[];
}

/** A snapshot that read cleanly. */
export interface Snapshot {
  /** `run_id` as recorded, or null. */
  run_id: string | null;
  /** The graph's `name`, or null. */
  graph: string | null;
  /** `graph.nodes`, in order, first occurrence of each id. */
  graphNodes: GraphNode[];
  /** `nodes`: node id → record. */
  records: Map<string, NodeRecord>;
  /** Distinct node ids in the graph. */
  nodes_total: number;
  /** Graph node ids with a `"PASS"` record. */
  nodes_passed: number;
  /** The graph has at least one node and every one of them passed. */
  all_passed: boolean;
  /** Sum of every record's finite `cost_usd`. */
  cost_usd: number;
  /** Some record's cost is unknown, so `cost_usd` is a lower bound. */
  cost_unknown: boolean;
  /** Ids in `nodes` that are not in `graph.nodes` (ignored for verdicts). */
  stray_ids: string[];
}

/** The three answers: absent (a fact), readable, or present but unreadable. */
export type SnapshotRead =
  | {
      /** There is no `state.json`: a fact (exec legs write none), not an error. */
      kind: 'missing';
    }
  | {
      /** The snapshot read and parsed cleanly. */
      kind: 'ok';
      /** What it holds. */
      snapshot: Snapshot;
    }
  | {
      /** The file is there but cannot be used; nothing may be derived from it. */
      kind: 'error';
      /** Why, in one line starting `state.json:`. */
      error: string;
      /** The errno name when the kernel refused the read (EACCES, …). */
      errno?: string | undefined;
    };

function fail(error: string): SnapshotRead {
  return { kind: 'error', error: `state.json: ${error}` };
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Interprets parsed JSON as a snapshot, or says exactly what is wrong with it. */
export function interpretSnapshot(value: unknown): SnapshotRead {
  if (!isObject(value)) return fail(`not a JSON object (it is ${typeName(value)})`);
  const schema = value['schema'];
  if (schema !== SNAPSHOT_SCHEMA) {
    const shown = typeof schema === 'number' || typeof schema === 'string' ? JSON.stringify(schema) : schema === undefined ? 'missing' : typeName(schema);
    return fail(`incompatible snapshot schema ${shown} (this version reads schema ${SNAPSHOT_SCHEMA})`);
  }
  const graph = value['graph'];
  if (!isObject(graph)) return fail(`"graph" is not an object (it is ${typeName(graph)})`);
  const list = graph['nodes'];
  if (!Array.isArray(list)) return fail(`graph.nodes is not a list (it is ${typeName(list)})`);
  const graphNodes: GraphNode[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < list.length; i++) {
    const n: unknown = list[i];
    if (!isObject(n) || typeof n['id'] !== 'string') return fail(`graph.nodes[${i}] has no string "id"`);
    const id = n['id'];
    if (seen.has(id)) continue;
    seen.add(id);
    const deps = Array.isArray(n['depends_on']) ? (n['depends_on'] as unknown[]).filter((d): d is string => typeof d === 'string') : [];
    graphNodes.push({ id, depends_on: deps });
  }
  const name = typeof graph['name'] === 'string' ? graph['name'] : null;

  const rawNodes = value['nodes'];
  if (rawNodes !== undefined && rawNodes !== null && !isObject(rawNodes)) {
    return fail(`"nodes" is not a map of node records (it is ${typeName(rawNodes)})`);
  }
  const records = new Map<string, NodeRecord>();
  let cost = 0;
  let costUnknown = false;
  const stray: string[] = [];
  for (const [id, rec] of Object.entries(rawNodes ?? {})) {
    if (!isObject(rec)) return fail(`nodes[${JSON.stringify(id)}] is not a record (it is ${typeName(rec)})`);
    const verdict = typeof rec['verdict'] === 'string' ? rec['verdict'] : '';
    const c = rec['cost_usd'];
    let costUsd: number | null = null;
    let unknown = rec['cost_unknown'] === true;
    if (typeof c === 'number' && Number.isFinite(c)) costUsd = c;
    else if (c !== undefined && c !== null) unknown = true;
    if (costUsd !== null) cost += costUsd;
    if (unknown) costUnknown = true;
    records.set(id, { verdict, cost_usd: costUsd, cost_unknown: unknown });
    if (!seen.has(id)) stray.push(id);
  }
  let passed = 0;
  for (const n of graphNodes) if (records.get(n.id)?.verdict === 'PASS') passed++;
  const runId = value['run_id'];
  return {
    kind: 'ok',
    snapshot: {
      run_id: typeof runId === 'string' ? runId : null,
      graph: name,
      graphNodes,
      records,
      nodes_total: graphNodes.length,
      nodes_passed: passed,
      all_passed: graphNodes.length > 0 && passed === graphNodes.length,
      cost_usd: cost,
      cost_unknown: costUnknown,
      stray_ids: stray,
    },
  };
}

/**
 * Reads and interprets the snapshot at `statePath` (a run's `state.json`).
 * Never throws for file-system or content problems; see {@link SnapshotRead}.
 * With `options.at` (a descriptor of the run directory, kernel/dirfd.ts) the
 * file is opened relative to it and `statePath` only names it in messages.
 */
export function readSnapshot(statePath: string, options: { at?: number } = {}): SnapshotRead {
  let file;
  try {
    file = options.at === undefined ? openForRead(statePath, 'state.json') : openForReadAt(options.at, basename(statePath), 'state.json', statePath);
  } catch (err) {
    if (err instanceof RunFileError) return { kind: 'error', error: err.message, errno: err.errno };
    throw err;
  }
  if (file === undefined) return { kind: 'missing' };
  let buf: Buffer;
  let n: number;
  try {
    if (file.size === 0) return fail('empty file');
    if (file.size > SNAPSHOT_MAX_BYTES) {
      return fail(`${file.size} bytes, over the ${SNAPSHOT_MAX_BYTES / 1024 / 1024} MiB limit for a snapshot`);
    }
    // Read one byte past the size fstat gave, to notice a file that grew.
    buf = Buffer.allocUnsafe(file.size + 1);
    n = readAt(file.fd, buf, 0, file.size + 1, 0, 'state.json', statePath);
    if (n !== file.size) return fail('changed while it was being read');
  } catch (err) {
    if (err instanceof RunFileError) return { kind: 'error', error: err.message, errno: err.errno };
    throw err;
  } finally {
    closeQuietly(file.fd);
  }
  return snapshotOfBytes(buf, n);
}

/** The snapshot whose `n` bytes are `buf[0, n)`: bounded in depth, then parsed and interpreted. */
function snapshotOfBytes(buf: Buffer, n: number): SnapshotRead {
  if (jsonDeeperThan(buf, 0, n)) return fail(`nested deeper than ${MAX_JSON_DEPTH} levels (refused before parsing)`);
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8', 0, n));
  } catch (err) {
    return fail(`not valid JSON (${(err as Error).message})`);
  }
  return interpretSnapshot(value);
}

/**
 * {@link readSnapshot} for a snapshot already read (kernel/runfiles.ts):
 * a regular file whose size fstat gave as `size`, of which a read of
 * `size + 1` bytes returned `bytes` into `buf`. The same answers as
 * readSnapshot from there on (empty, over the limit, changed while read,
 * too deep, not JSON, not a snapshot).
 */
export function snapshotFromRead(buf: Buffer, bytes: number, size: number): SnapshotRead {
  if (size === 0) return fail('empty file');
  if (size > SNAPSHOT_MAX_BYTES) return fail(`${size} bytes, over the ${SNAPSHOT_MAX_BYTES / 1024 / 1024} MiB limit for a snapshot`);
  if (bytes !== size) return fail('changed while it was being read');
  return snapshotOfBytes(buf, bytes);
}
