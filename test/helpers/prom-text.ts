/**
 * A small reader for the Prometheus text exposition format (version 0.0.4),
 * enough to check the numbers runwarden writes: one sample per line,
 * `name{label="value",…} number`, label values with \\, \" and \n escapes.
 * Comment lines (# HELP, # TYPE) are kept apart by family name.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** Family name -> its # TYPE word. */
  types: Map<string, string>;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0 || text[eq + 1] !== '"') throw new Error(`bad labels in: ${line}`);
    const key = text.slice(i, eq).trim();
    let j = eq + 2;
    let v = '';
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        j++;
        v += text[j] === 'n' ? '\n' : text[j];
      } else v += text[j];
    }
    if (j >= text.length) throw new Error(`unterminated label value in: ${line}`);
    labels[key] = v;
    i = j + 1;
    if (text[i] === ',') i++;
  }
  return labels;
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const m = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (m) types.set(m[1], m[2]);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    samples.push({ name: m[1], labels: m[2] === undefined ? {} : parseLabels(m[2], line), value });
  }
  return { samples, types };
}

/** The samples of one metric name. */
export function samplesOf(e: Exposition, name: string): Sample[] {
  return e.samples.filter((s) => s.name === name);
}

/** The single value of `name` whose labels include `labels`; undefined when there is none. */
export function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samplesOf(e, name).filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
