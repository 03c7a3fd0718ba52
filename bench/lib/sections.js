/**
 * One rule for writing a bench's section into a results file (bench/RESULTS.md):
 * the section replaces everything from its heading to the next heading of
 * level 1 or 2 (or the end); a file without that heading gets the section
 * before `before` when given and present, else at the end; a missing file is
 * started with a title. Headings match case-insensitively, so a section that
 * was written by hand with other capitals is still replaced, not duplicated.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Writes `section` (which starts with `heading`) into `file`; returns the file's new text. */
export function writeSection(file, heading, section, { before } = {}) {
  const doc = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const body = section.trimEnd();
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l.trim().toLowerCase() === heading.trim().toLowerCase());
  let out;
  if (start < 0) {
    const at = before === undefined ? -1 : doc.indexOf(`\n${before}`);
    if (at >= 0) out = `${doc.slice(0, at).trimEnd()}\n\n${body}\n${doc.slice(at)}`;
    else out = `${doc.trimEnd() ? `${doc.trimEnd()}\n\n` : '# Benchmark results\n\n'}${body}\n`;
  } else {
    let end = lines.length;
    for (let i = start + 1; i < lines.length; i++) {
      if (/^#{1,2}\s/.test(lines[i])) {
        end = i;
        break;
      }
    }
    out = [...lines.slice(0, start), ...body.split('\n'), ...(end < lines.length ? ['', ...lines.slice(end)] : [''])].join('\n');
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, out);
  return out;
}
