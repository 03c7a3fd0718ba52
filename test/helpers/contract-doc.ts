/**
 * Reading docs/CONTRACT.md as data, for test/contract-doc.test.ts: its
 * numbered sections, items and table rows, the runwarden-addition marks and
 * §6.1's list of them, and the § citations in the source tree. Headings,
 * anchors and links are helpers/markdown.ts's, re-exported here.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { headings, REPO, withoutFences, type Heading } from './markdown.js';

export { brokenLink, githubSlug, headings, relativeLinks, REPO, withoutFences, withoutInlineCode, type Heading, type Link } from './markdown.js';

/**
 * The lines of one numbered section, from its heading to the next heading of
 * the same or a higher level (so §4 holds §4.1 to §4.5, and §4.1 only itself).
 */
export function section(md: string, number: string): { heading: Heading; lines: string[]; first: number } {
  const hs = headings(md);
  const at = hs.findIndex((h) => h.number === number);
  if (at < 0) throw new Error(`no heading numbered ${number}`);
  const heading = hs[at];
  const next = hs.slice(at + 1).find((h) => h.level <= heading.level);
  const all = withoutFences(md).split('\n');
  return { heading, lines: all.slice(heading.line, next === undefined ? all.length : next.line - 1), first: heading.line + 1 };
}

/** The lines a numbered heading holds itself: up to the next heading of any level (§4 without §4.1 …). */
export function ownLines(md: string, number: string): string[] {
  const hs = headings(md);
  const at = hs.findIndex((h) => h.number === number);
  if (at < 0) throw new Error(`no heading numbered ${number}`);
  const heading = hs[at];
  const next = hs[at + 1];
  const all = withoutFences(md).split('\n');
  return all.slice(heading.line, next === undefined ? all.length : next.line - 1);
}

/** The numbers of a section's top-level numbered items (`1. …` at the start of a line). */
export function numberedItems(lines: readonly string[]): number[] {
  return lines.flatMap((l) => {
    const m = /^(\d+)\.\s/.exec(l);
    return m ? [Number(m[1])] : [];
  });
}

/** The numbers in the first cell of a section's table rows (`| 3 | …`). */
export function tableRows(lines: readonly string[]): number[] {
  return lines.flatMap((l) => {
    const m = /^\s*\|\s*(\d+)\s*\|/.exec(l);
    return m ? [Number(m[1])] : [];
  });
}

/** A "(runwarden addition N)" mark, wherever a line break falls inside it. */
export const ADDITION_MARK = /\(runwarden\s+addition\s+(\d+)\)/g;

/** Every addition mark in `text` with its line number (1-based, relative to `firstLine`). */
export function additionMarks(lines: readonly string[], firstLine = 1): { n: number; line: number }[] {
  const text = lines.join('\n');
  const out: { n: number; line: number }[] = [];
  for (const m of text.matchAll(ADDITION_MARK)) {
    const line = firstLine + text.slice(0, m.index).split('\n').length - 1;
    out.push({ n: Number(m[1]), line });
  }
  return out;
}

/** A § citation in the source tree: the section, and the numbered item or table row it names, if any. */
export interface Citation {
  file: string;
  line: number;
  section: string;
  kind: 'step' | 'rule' | 'row' | 'item' | undefined;
  items: number[];
}

const SOURCE_EXT = /\.(ts|js|mjs|cjs|cc|cpp|h|hpp|c|md|css|html|sh|json)$/;

/** Every text file under `dirs` (folders or files, relative to the repository), skipping node_modules and build output. */
export function sourceFiles(dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name === 'build' || e.name.startsWith('.')) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && SOURCE_EXT.test(e.name)) out.push(p);
    }
  };
  for (const d of dirs) {
    const p = join(REPO, d);
    if (existsSync(p) && statSync(p).isFile()) out.push(p);
    else walk(p);
  }
  return out.sort();
}

/**
 * The § citations of the contract in `files`: every `§N` or `§N.M`, with a
 * following "step 3", "rules 2-5", "row 6" when present. A § that cites
 * another document (`RFC 9110 §7.2`, `ADR 0015 §4`) is not the contract's and is left out.
 */
export function citations(files: readonly string[]): Citation[] {
  const out: Citation[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('§')) continue;
    text.split('\n').forEach((line, i) => {
      for (const m of line.matchAll(/§(\d+(?:\.\d+)?)(?:\s+(step|rule|row|item)s?\s+(\d+)(?:\s*(?:[-–]|and|to)\s*(\d+))?)?/g)) {
        const before = line.slice(0, m.index);
        if (/\b(?:RFC|ADR)\s*\d+\s*$/i.test(before)) continue;
        const items = m[3] === undefined ? [] : [Number(m[3]), ...(m[4] === undefined ? [] : [Number(m[4])])];
        out.push({ file: relative(REPO, file), line: i + 1, section: m[1], kind: m[2] as Citation['kind'], items });
      }
    });
  }
  return out;
}
