/**
 * Reading docs/CONTRACT.md as data, for test/contract-doc.test.ts: its
 * headings (with the anchors GitHub gives them), its numbered items and table
 * rows, the runwarden-addition marks and §6.1's list of them, the relative
 * links of a Markdown file, and the § citations in the source tree.
 *
 * Text inside fenced code blocks is never read as structure (a fence may show
 * a `#` line or a link that is not one), and inline code is not read as a
 * link; both keep their line count, so line numbers stay true.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is test/helpers/contract-doc.ts). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A Markdown heading outside code. `number` is the leading section number ("4.2"), when it has one. */
export interface Heading {
  level: number;
  text: string;
  slug: string;
  line: number;
  number: string | undefined;
}

/** The text with every fenced block's lines blanked (line count kept). */
export function withoutFences(md: string): string {
  let fence = false;
  return md
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        fence = !fence;
        return '';
      }
      return fence ? '' : line;
    })
    .join('\n');
}

/** Inline code spans blanked to spaces of the same length, so a `[x](y)` shown as code is not a link. */
export function withoutInlineCode(text: string): string {
  return text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (m) => ' '.repeat(m.length));
}

/**
 * The anchor GitHub gives a heading: lower case, every character that is not
 * a letter, mark, digit, connector, space or hyphen dropped (so `§`, `.`,
 * backticks, parentheses and the en dash go), spaces turned into hyphens.
 */
export function githubSlug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading, with GitHub's de-duplicated anchors (`x`, `x-1`, `x-2`, ...). */
export function headings(md: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  withoutFences(md)
    .split('\n')
    .forEach((line, i) => {
      const m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
      if (!m) return;
      const text = (m[2]).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
      const base = githubSlug(text);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      const number = /^(\d+(?:\.\d+)*)\.?\s/.exec(text)?.[1];
      out.push({ level: (m[1]).length, text, slug: n === 0 ? base : `${base}-${n}`, line: i + 1, number });
    });
  return out;
}

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

/** A relative link of a Markdown file: its target path (may be empty: same file) and anchor. */
export interface Link {
  text: string;
  target: string;
  path: string;
  anchor: string | undefined;
  line: number;
}

/** Every inline link `[text](target)` outside code, except absolute URLs (scheme:) . */
export function relativeLinks(md: string): Link[] {
  const out: Link[] = [];
  withoutFences(md)
    .split('\n')
    .forEach((raw, i) => {
      const line = withoutInlineCode(raw);
      for (const m of line.matchAll(/\[([^\]]*)\]\(([^)\s]+)\)/g)) {
        const target = m[2];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const hash = target.indexOf('#');
        out.push({
          text: m[1],
          target,
          path: hash < 0 ? target : target.slice(0, hash),
          anchor: hash < 0 ? undefined : target.slice(hash + 1),
          line: i + 1,
        });
      }
    });
  return out;
}

/** Why a link of `fromFile` does not resolve (its file, or a heading for its anchor), or undefined when it does. */
export function brokenLink(fromFile: string, link: Link): string | undefined {
  const file = link.path === '' ? fromFile : resolve(dirname(fromFile), decodeURIComponent(link.path));
  if (!existsSync(file)) return `${link.target}: no file ${relative(REPO, file)}`;
  if (link.anchor === undefined) return undefined;
  if (!file.endsWith('.md') || !statSync(file).isFile()) return `${link.target}: an anchor into a file that is not Markdown`;
  const slugs = headings(readFileSync(file, 'utf8')).map((h) => h.slug);
  return slugs.includes(link.anchor) ? undefined : `${link.target}: no heading with the anchor #${link.anchor} in ${relative(REPO, file)}`;
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
