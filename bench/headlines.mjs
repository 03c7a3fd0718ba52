#!/usr/bin/env node
/**
 * The headline blocks of docs/benchmarks.md and bench/RESULTS.md, generated from
 * bench/headlines.json (bench/lib/headlines.js).
 *
 * usage: node bench/headlines.mjs [--write]
 *   (no option)  say whether both blocks match the file; exit 1 when one does not
 *   --write      rewrite both blocks from the file
 * Edit bench/headlines.json (a full `npm run bench` records its own entries
 * there), then run with --write.
 */
import { readFileSync } from 'node:fs';
import { BENCHMARKS_PATH, blockIn, docsBlock, loadHeadlines, resultsBlock, RESULTS_PATH, writeDocs } from './lib/headlines.js';

const args = process.argv.slice(2);
if (args.some((a) => a !== '--write')) {
  process.stderr.write(`headlines: unknown option ${args.find((a) => a !== '--write')}; usage: node bench/headlines.mjs [--write]\n`);
  process.exit(2);
}
let doc;
try {
  doc = loadHeadlines();
} catch (e) {
  process.stderr.write(`headlines: ${e.message}\n`);
  process.exit(1);
}
if (args.includes('--write')) {
  const changed = writeDocs(doc);
  process.stdout.write(changed.length ? `rewrote ${changed.join(', ')}\n` : 'both blocks already match bench/headlines.json\n');
} else {
  let bad = 0;
  for (const [path, want] of [[BENCHMARKS_PATH, docsBlock(doc)], [RESULTS_PATH, resultsBlock(doc)]]) {
    const have = blockIn(readFileSync(path, 'utf8'));
    const ok = have === want;
    if (!ok) bad++;
    process.stdout.write(`${path}: ${have === undefined ? 'no headline markers' : ok ? 'matches' : 'differs from bench/headlines.json (run with --write)'}\n`);
  }
  process.exit(bad ? 1 : 0);
}
