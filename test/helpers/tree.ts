/**
 * What "a reader wrote nothing" is checked against: every path under a
 * directory with its mode, size, mtime and inode, in a stable order.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every path under dir with its type, size, mode and mtime. */
export function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p, { bigint: true });
      out.push(`${p} ${st.mode} ${st.size} ${st.mtimeNs} ${st.ino}`);
      if (st.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}
