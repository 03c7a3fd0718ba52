/**
 * Names are bytes (CONTRACT §1.1): a directory under the runs root is read by
 * its exact name, and shown by one escaping rule that maps every possible
 * name to a distinct string and back.
 *
 * The rule: the bytes of the name that form valid UTF-8 are shown as those
 * characters; each byte that is not part of a valid UTF-8 sequence is shown
 * as `\xHH` (two lowercase hex digits); a backslash is shown as `\\`. So a
 * directory whose name holds the byte 0xff is `\xff`, and one really named
 * U+FFFD (the bytes ef bf bd) is `\u{fffd}` shown as itself: never the same
 * string, which decoding with replacement (Node's default) would make them.
 *
 * Reading a run id back ({@link nameBytes}) undoes exactly that: `\\` is a
 * backslash, `\xHH` is that byte, and a backslash followed by anything else
 * stands for itself (so an id typed without escapes still names its
 * directory when its name holds no backslash-x or double backslash).
 *
 * Printing is a second, separate step ({@link printableText}), for text that
 * reaches a terminal or a metrics file: a shown name may still hold
 * characters a terminal acts on (ESC, CR, NUL …) or that reorder what is
 * around them (the bidi controls), so each of those is printed as a visible
 * escape that {@link nameBytes} reads back to the same character: a C0
 * control or DEL (one byte in UTF-8) as `\xHH`, a C1 control or a bidi
 * control as `\u{HHHH}`. A printed run id can be pasted back as a RUN.
 * Pure functions: nothing here touches the file system.
 */

const BACKSLASH = 0x5c;

/** Length of the valid UTF-8 sequence starting at `buf[i]`, or 0 when the byte there starts none. */
function utf8SequenceLength(buf: Uint8Array, i: number): number {
  const b = buf[i] as number;
  if (b < 0x80) return 1;
  let len: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf) len = 2;
  else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
    if (b === 0xe0) lo = 0xa0; // overlong
    if (b === 0xed) hi = 0x9f; // surrogates
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
    if (b === 0xf0) lo = 0x90; // overlong
    if (b === 0xf4) hi = 0x8f; // above U+10FFFF
  } else return 0;
  if (i + len > buf.length) return 0;
  const second = buf[i + 1] as number;
  if (second < lo || second > hi) return 0;
  for (let k = 2; k < len; k++) {
    const c = buf[i + k] as number;
    if (c < 0x80 || c > 0xbf) return 0;
  }
  return len;
}

/**
 * Whether `text` is its own shown name, read either way: ASCII without a
 * backslash, so its characters are its bytes and no escape is in it. The
 * one test of that, for the paths that skip the escaping rule's work.
 */
export function isPlainName(text: string): boolean {
  return /^[\x00-\x5b\x5d-\x7f]*$/.test(text);
}

/**
 * The shown form of a name given as bytes: valid UTF-8 as itself, every
 * other byte as `\xHH`, a backslash as `\\`. Injective: two different names
 * never show the same.
 */
export function showName(name: Uint8Array): string {
  const buf = Buffer.from(name.buffer, name.byteOffset, name.byteLength);
  if (!buf.includes(BACKSLASH)) {
    const text = buf.toString('utf8');
    if (Buffer.byteLength(text, 'utf8') === buf.length && !text.includes('\ufffd')) return text;
  }
  let out = '';
  let run = 0; // start of the current stretch of plain bytes
  for (let i = 0; i < buf.length; ) {
    const len = buf[i] === BACKSLASH ? 0 : utf8SequenceLength(buf, i);
    if (len > 0) {
      i += len;
      continue;
    }
    out += buf.toString('utf8', run, i);
    out += buf[i] === BACKSLASH ? '\\\\' : `\\x${(buf[i] as number).toString(16).padStart(2, '0')}`;
    i += 1;
    run = i;
  }
  return out + buf.toString('utf8', run);
}

/**
 * Characters printed escaped ({@link printableText}): C0 controls, DEL, C1
 * controls, and the bidi controls (ALM U+061C, LRM/RLM U+200E/F, the
 * embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069).
 */
export const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The one rule for printing text that came from a run directory (run ids,
 * graph and node names, hints that quote them, error texts) on a terminal,
 * in a table, a hint line, `status`, `watch`, `serve`'s own lines and the
 * metrics text: every character in {@link UNPRINTABLE} becomes a visible
 * escape (`\xHH` below U+0080, else `\u{HHHH}`), so no file can move the
 * cursor, forge a line, retitle a window or reorder what a reader sees.
 * Everything else is left as it is. Applied to a shown name, the result
 * still reads back through {@link nameBytes} to the same bytes.
 */
export function printableText(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x80 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u{${n.toString(16).padStart(4, '0')}}`;
  });
}

/**
 * The bytes a shown name (or a run id typed by a person) stands for: the
 * inverse of {@link showName}, so `nameBytes(showName(b))` equals `b` for
 * every `b`; `\u{H…}` (1 to 6 hex digits, a Unicode scalar value) is that
 * character's UTF-8, as {@link printableText} prints a C1 or bidi control.
 */
export function nameBytes(shown: string): Buffer {
  if (!shown.includes('\\')) return Buffer.from(shown, 'utf8');
  const parts: Buffer[] = [];
  let run = 0;
  for (let i = 0; i < shown.length; i++) {
    if (shown.charCodeAt(i) !== BACKSLASH) continue;
    const next = shown[i + 1];
    let byte: number | undefined;
    let width = 0;
    if (next === '\\') {
      byte = BACKSLASH;
      width = 2;
    } else if (next === 'x' && /^[0-9a-fA-F]{2}$/.test(shown.slice(i + 2, i + 4))) {
      byte = parseInt(shown.slice(i + 2, i + 4), 16);
      width = 4;
    }
    let char: Buffer | undefined;
    if (byte === undefined && next === 'u') {
      const m = /^\{([0-9a-fA-F]{1,6})\}/.exec(shown.slice(i + 2, i + 11));
      const cp = m === null ? -1 : parseInt(m[1] as string, 16);
      if (m !== null && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff)) {
        char = Buffer.from(String.fromCodePoint(cp), 'utf8');
        width = 2 + m[0].length;
      }
    }
    if (byte === undefined && char === undefined) continue; // a lone backslash stands for itself
    parts.push(Buffer.from(shown.slice(run, i), 'utf8'), char ?? Buffer.of(byte as number));
    i += width - 1;
    run = i + 1;
  }
  parts.push(Buffer.from(shown.slice(run), 'utf8'));
  return Buffer.concat(parts);
}
