/**
 * Readers write nothing: every file under a root holding
 * every case (hostile inputs, live and killed lock holders, settled runs) is
 * fingerprinted — content hash, size, mode, mtime, ctime, inode, type —
 * before and after `runs`, `status` and `probe` (CLI and library), and
 * nothing differs and nothing is new.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listRuns } from '../src/status/list.js';
import { runDetail } from '../src/status/detail.js';
import { runStatus } from '../src/status/inspect.js';
import { buildHostileRoot } from './helpers/reading-cases.js';
import { fingerprint } from './helpers/tree.js';
import { cleanup, cli, ev, makeRun, runId, snapshot, startHolder, tempDir } from './helpers/reading-fixtures.js';

afterAll(cleanup);

describe('readers write nothing', () => {
  it('runs, status and probe leave every file under the root exactly as it was', async () => {
    const root = tempDir('rw-ro-');
    const outside = tempDir('rw-ro-out-');
    const cases = buildHostileRoot(root, outside);
    const started = ev('run_started') + ev('node_started', { node_id: 'a' });
    const live = makeRun(root, runId(), { state: snapshot({ a: '' }) });
    const dead = makeRun(root, runId(), {});
    const paused = makeRun(root, runId(), { events: started + ev('gate_paused', { node_id: 'g' }) + ev('run_finished', { outcome: 'paused' }), lock: 'marked' });
    const holder = await startHolder([{ dir: live, lines: started }]);
    const victim = await startHolder([{ dir: dead, lines: started }]);
    await victim.kill();

    const before = fingerprint(root, outside);

    const ids = readdirSync(root);
    expect(ids.length).toBe(cases.length + 3);
    const results = [cli(['runs', '--root', root]), cli(['runs', '--root', root, '--json']), cli(['runs', '--root', root, '--show-skipped']), cli(['status', '--root', root])];
    ids.forEach((id, i) => {
      results.push(cli(['status', id, '--root', root, '--json']));
      results.push(cli(['probe', join(root, id)]));
      // The other spellings on a rotating subset, to keep the run short.
      if (i % 3 === 0) results.push(cli(['status', id, '--root', root]));
      if (i % 3 === 1) results.push(cli(['status', join(root, id) + '/']));
      if (i % 3 === 2) results.push(cli(['probe', join(root, id, 'resume.lock'), '--json']));
    });
    for (const r of results) expect(r.status, r.stderr).not.toBeNull(); // none hung
    // And the library surfaces, in this process.
    listRuns(root);
    for (const id of ids) {
      try {
        runStatus(join(root, id));
        runDetail(join(root, id));
      } catch {
        /* unreadable runs throw; they must still write nothing */
      }
    }
    // The live run really was live and the dead one dead while we read.
    const json = JSON.parse(cli(['runs', '--root', root, '--json']).stdout) as { runs: { run_id: string; status: string }[] };
    expect(json.runs.find((r) => live.endsWith(r.run_id))?.status).toBe('RUNNING');
    expect(json.runs.find((r) => dead.endsWith(r.run_id))?.status).toBe('ABANDONED');
    expect(json.runs.find((r) => paused.endsWith(r.run_id))?.status).toBe('PAUSED');

    expect(fingerprint(root, outside)).toEqual(before);
    await holder.kill();
  }, 600_000);
});
