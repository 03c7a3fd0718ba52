/**
 * A leg for bench/darwin-live.mjs: resumes (or starts) the run at argv[2]
 * with the library (startLeg: the exclusive flock on resume.lock, its label
 * written, run_started appended; CONTRACT §4.1), appends node_started for
 * node "work", says READY with the moment it began (performance.timeOrigin +
 * performance.now(), the clock the bench stamps with) and holds until killed.
 * It loads whatever addon RUNWARDEN_ADDON names (the XNU model's, from the bench).
 */
import { startLeg } from '../../dist/index.js';

const [runDir] = process.argv.slice(2);
const t = performance.timeOrigin + performance.now();
const leg = startLeg(runDir);
leg.append({ event: 'node_started', node_id: 'work' });
process.stdout.write(`READY ${JSON.stringify({ t, pid: process.pid })}\n`);
setInterval(() => {}, 1 << 30);
void leg;
