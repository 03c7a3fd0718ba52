/**
 * The one reader of Markdown for the tests: which lines are fenced code, the
 * anchors GitHub gives headings (and explicit `<a id>` anchors), the relative
 * links and images of a page, and whether a link resolves. test/docs.test.ts
 * checks every page with it, test/contract-doc.test.ts reads the contract
 * with it (through helpers/contract-doc.ts).
 *
 * Text inside fenced code blocks is never read as structure (a fence may show
 * a `#` line or a link that is not one), and inline code is not read as a
 * link; both keep their line count, so line numbers stay true.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is test/helpers/markdown.ts). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A line of a page, and whether it lies in a fenced code block (the fences included). */
export interface MdLine {
  n: number;
  text: string;
  code: boolean;
}

/** The page's lines, each marked whether it is fenced code: a fence of ``` or ~~~ ends at the next fence of the same character. */
export function markLines(md: string): MdLine[] {
  let fence: string | null = null;
  return md.split('\n').map((text, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(text);
    if (fence === null && m) {
      fence = m[1][0];
      return { n: i + 1, text, code: true };
    }
    if (fence !== null) {
      if (m && m[1][0] === fence) fence = null;
      return { n: i + 1, text, code: true };
    }
    return { n: i + 1, text, code: false };
  });
}

/** The text with every fenced block's lines blanked (line count kept). */
export function withoutFences(md: string): string {
  return markLines(md)
    .map((l) => (l.code ? '' : l.text))
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

/** A Markdown heading outside code. `number` is the leading section number ("4.2"), when it has one. */
export interface Heading {
  level: number;
  text: string;
  slug: string;
  line: number;
  number: string | undefined;
}

/** Every heading, with GitHub's de-duplicated anchors (`x`, `x-1`, `x-2`, ...); a link's or image's text stands for it, inline HTML is dropped. */
export function headings(md: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  for (const l of markLines(md)) {
    if (l.code) continue;
    const m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(l.text);
    if (!m) continue;
    const text = m[2].replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const base = githubSlug(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    const number = /^(\d+(?:\.\d+)*)\.?\s/.exec(text)?.[1];
    out.push({ level: m[1].length, text, slug: n === 0 ? base : `${base}-${n}`, line: l.n, number });
  }
  return out;
}

/** Every fragment a link may name in a page: its headings' anchors and its explicit `<a id="…">` / `<a name="…">` anchors. */
export function anchors(md: string): Set<string> {
  const out = new Set(headings(md).map((h) => h.slug));
  for (const l of markLines(md)) {
    if (l.code) continue;
    for (const m of l.text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]);
  }
  return out;
}

/** A relative link or image of a Markdown page: its target path (may be empty: same file) and anchor. */
export interface Link {
  text: string;
  target: string;
  path: string;
  anchor: string | undefined;
  line: number;
}

/** An image `![alt](target)` of a page; its target may be an absolute URL. */
export interface Image {
  alt: string;
  target: string;
  line: number;
}

/** Every inline link and image outside code, absolute URLs included (an optional "title" is not part of the target). */
function inlineLinks(md: string): (Image & { image: boolean })[] {
  const out: (Image & { image: boolean })[] = [];
  for (const l of markLines(md)) {
    if (l.code) continue;
    for (const m of withoutInlineCode(l.text).matchAll(/(!?)\[((?:[^\]]|\][^(])*?)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      out.push({ image: m[1] === '!', alt: m[2], target: m[3], line: l.n });
    }
  }
  return out;
}

/** Every inline link `[text](target)` and image `![alt](target)` outside code, except absolute URLs (scheme:). */
export function relativeLinks(md: string): Link[] {
  return inlineLinks(md)
    .filter((f) => !/^[a-z][a-z0-9+.-]*:/i.test(f.target))
    .map((f) => {
      const hash = f.target.indexOf('#');
      return {
        text: f.alt,
        target: f.target,
        path: hash < 0 ? f.target : f.target.slice(0, hash),
        anchor: hash < 0 || hash === f.target.length - 1 ? undefined : f.target.slice(hash + 1),
        line: f.line,
      };
    });
}

/** Every image `![alt](target)` outside code, absolute URLs included. */
export function images(md: string): Image[] {
  return inlineLinks(md)
    .filter((f) => f.image)
    .map(({ alt, target, line }) => ({ alt, target, line }));
}

/**
 * Why a link of `fromFile` does not resolve (a file outside `root` or missing, or no such anchor there), or
 * undefined when it does. `root` is the repository, or an unpacked package whose pages must resolve inside it.
 */
export function brokenLink(fromFile: string, link: Link, root: string = REPO): string | undefined {
  const file = link.path === '' ? fromFile : resolve(dirname(fromFile), decodeURIComponent(link.path));
  const inRepo = relative(root, file);
  if (inRepo.startsWith('..')) return `${link.target}: ${file} is outside ${root === REPO ? 'the repository' : root}`;
  if (!existsSync(file)) return `${link.target}: no file ${inRepo}`;
  if (link.anchor === undefined) return undefined;
  if (!file.endsWith('.md') || !statSync(file).isFile()) return `${link.target}: an anchor into a file that is not Markdown`;
  return anchors(readFileSync(file, 'utf8')).has(link.anchor) ? undefined : `${link.target}: no heading or explicit anchor #${link.anchor} in ${inRepo}`;
}
