/**
 * A two-panel line chart as a standalone SVG string, written by hand so the
 * bench needs no plotting dependency: left, probes per second against P;
 * right, p99 probe latency (log scale) against P. One colour per setting,
 * solid for runwarden's shared probe, dashed for the exclusive one.
 */

const COLORS = { held: '#d97706', free: '#16a34a', 'churn-0': '#2563eb', 'churn-default': '#9333ea' };
const DASH = { shared: '', exclusive: '7 4' };

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceStep(max, ticks) {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

function fmtCount(v) {
  if (v >= 1e6) return `${(v / 1e6).toFixed(v % 1e6 === 0 ? 0 : 1)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(0)}k`;
  return String(v);
}

function fmtUs(ns) {
  const us = ns / 1000;
  if (us >= 1000) return `${us / 1000} ms`;
  return `${us} µs`;
}

/**
 * One panel. `series`: [{setting, kind, points: [[P, y]…]}]. `log`: log10 y axis.
 */
function panel({ x0, y0, w, h, title, yLabel, series, Ps, log, fmtY }) {
  const parts = [];
  const lx = (P) => x0 + (Ps.length === 1 ? w / 2 : (Math.log2(P) - Math.log2(Ps[0])) / (Math.log2(Ps[Ps.length - 1]) - Math.log2(Ps[0])) * w);
  const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter((v) => Number.isFinite(v) && v > 0);
  let ty;
  let ticks;
  if (log) {
    const lo = Math.floor(Math.log10(Math.min(...ys)));
    const hi = Math.ceil(Math.log10(Math.max(...ys)));
    const span = Math.max(1, hi - lo);
    ty = (v) => y0 + h - ((Math.log10(v) - lo) / span) * h;
    ticks = [];
    for (let e = lo; e <= lo + span; e++) ticks.push(10 ** e);
  } else {
    const step = niceStep(Math.max(...ys) * 1.05, 5);
    const top = Math.ceil((Math.max(...ys) * 1.05) / step) * step;
    ty = (v) => y0 + h - (v / top) * h;
    ticks = [];
    for (let v = 0; v <= top + step / 2; v += step) ticks.push(v);
  }
  parts.push(`<text x="${x0 + w / 2}" y="${y0 - 14}" text-anchor="middle" class="title">${esc(title)}</text>`);
  parts.push(`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" class="frame"/>`);
  for (const t of ticks) {
    const y = ty(t);
    parts.push(`<line x1="${x0}" x2="${x0 + w}" y1="${y}" y2="${y}" class="grid"/>`);
    parts.push(`<text x="${x0 - 6}" y="${y + 4}" text-anchor="end" class="tick">${esc(fmtY(t))}</text>`);
  }
  for (const P of Ps) {
    const x = lx(P);
    parts.push(`<line x1="${x}" x2="${x}" y1="${y0}" y2="${y0 + h}" class="grid"/>`);
    parts.push(`<text x="${x}" y="${y0 + h + 16}" text-anchor="middle" class="tick">${P}</text>`);
  }
  parts.push(`<text x="${x0 + w / 2}" y="${y0 + h + 34}" text-anchor="middle" class="axis">P (concurrent poller processes)</text>`);
  parts.push(`<text transform="translate(${x0 - 52} ${y0 + h / 2}) rotate(-90)" text-anchor="middle" class="axis">${esc(yLabel)}</text>`);
  for (const s of series) {
    const pts = s.points.filter((p) => Number.isFinite(p[1]) && p[1] > 0);
    if (pts.length === 0) continue;
    const d = pts.map((p, i) => `${i === 0 ? 'M' : 'L'}${lx(p[0]).toFixed(1)},${ty(p[1]).toFixed(1)}`).join(' ');
    const dash = DASH[s.kind] ? ` stroke-dasharray="${DASH[s.kind]}"` : '';
    parts.push(`<path d="${d}" fill="none" stroke="${COLORS[s.setting]}" stroke-width="2"${dash}/>`);
    for (const p of pts) parts.push(`<circle cx="${lx(p[0]).toFixed(1)}" cy="${ty(p[1]).toFixed(1)}" r="2.5" fill="${COLORS[s.setting]}"/>`);
  }
  return parts.join('\n');
}

/**
 * The chart for the pollers matrix. `cells`: the pollers results;
 * `settings`/`kinds`: [{id, label}] in legend order; `caption`: a line under the title.
 */
export function pollersSvg({ cells, settings, kinds, caption }) {
  const Ps = [...new Set(cells.map((c) => c.P))].sort((a, b) => a - b);
  const series = (metric) =>
    settings.flatMap((s) =>
      kinds.map((k) => ({
        setting: s.id,
        kind: k.id,
        points: Ps.map((P) => {
          const c = cells.find((x) => x.P === P && x.setting === s.id && x.kind === k.id);
          return [P, c ? c[metric] : NaN];
        }),
      })),
    );
  const W = 1000;
  const H = 560;
  const pw = 380;
  const ph = 300;
  const body = [
    panel({ x0: 90, y0: 80, w: pw, h: ph, title: 'Total probes per second', yLabel: 'probes / s (all pollers)', series: series('probesPerSec'), Ps, log: false, fmtY: fmtCount }),
    panel({ x0: 590, y0: 80, w: pw, h: ph, title: 'p99 probe latency (log scale)', yLabel: 'p99 latency', series: series('p99'), Ps, log: true, fmtY: fmtUs }),
  ];
  const legend = [];
  let lxPos = 90;
  const ly = 450;
  settings.forEach((s, i) => {
    const x = 90 + (i % 2) * 440;
    const y = ly + Math.floor(i / 2) * 22;
    legend.push(`<line x1="${x}" x2="${x + 28}" y1="${y}" y2="${y}" stroke="${COLORS[s.id]}" stroke-width="3"/>`);
    legend.push(`<text x="${x + 36}" y="${y + 4}" class="legend">${esc(s.label)}</text>`);
  });
  lxPos = 90;
  const ky = ly + Math.ceil(settings.length / 2) * 22 + 8;
  kinds.forEach((k, i) => {
    const x = lxPos + i * 440;
    const dash = DASH[k.id] ? ` stroke-dasharray="${DASH[k.id]}"` : '';
    legend.push(`<line x1="${x}" x2="${x + 28}" y1="${ky}" y2="${ky}" stroke="#333" stroke-width="2"${dash}/>`);
    legend.push(`<text x="${x + 36}" y="${ky + 4}" class="legend">${esc(k.label)}</text>`);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif">
<style>
  .title { font-size: 15px; font-weight: 600; fill: #222; }
  .head { font-size: 18px; font-weight: 700; fill: #111; }
  .cap { font-size: 12px; fill: #555; }
  .tick { font-size: 11px; fill: #555; }
  .axis { font-size: 12px; fill: #333; }
  .legend { font-size: 12px; fill: #222; }
  .frame { fill: #fcfcfd; stroke: #bbb; }
  .grid { stroke: #e5e5e5; stroke-width: 1; }
</style>
<rect width="${W}" height="${H}" fill="#fff"/>
<text x="${W / 2}" y="28" text-anchor="middle" class="head">runwarden: many pollers on one run's lock</text>
<text x="${W / 2}" y="48" text-anchor="middle" class="cap">${esc(caption)}</text>
${body.join('\n')}
${legend.join('\n')}
</svg>
`;
}
