/**
 * The dashboard's one stylesheet. Served from /assets/app.css (the CSP allows
 * styles from this origin only, never inline).
 *
 * One colour per state, used everywhere (CONTRACT §5.3): running amber, passed
 * green, failed red, paused orange, planning blue, pending grey, abandoned a
 * muted grey-violet (nothing failed, so it must not read as an alarm);
 * unknown (unreadable) is slate with a dashed edge, because it is a doubt,
 * not a state.
 */
export const CSS = String.raw`
:root {
  --c-planning: #2f6bd8;
  --c-running: #d69a00;
  --c-abandoned: #8d84a3;
  --c-paused: #e2650f;
  --c-passed: #2b9353;
  --c-failed: #cf3a31;
  --c-pending: #a5a9b0;
  --c-unknown: #5d6570;

  --bg: #f5f4f0;
  --panel: #ffffff;
  --ink: #1d2126;
  --ink-2: #4b535c;
  --ink-3: #7b838c;
  --rule: #e3e1da;
  --rule-2: #d2cfc6;
  --violet-wash: #f1eff6;
  --violet-ink: #4f4766;
  --orange-wash: #fdf1e7;
  --mono: ui-monospace, "SF Mono", "JetBrains Mono", "Cascadia Mono", "DejaVu Sans Mono", Menlo, Consolas, monospace;
  --sans: system-ui, -apple-system, "Segoe UI", "Inter", "Noto Sans", "DejaVu Sans", Roboto, "Helvetica Neue", Arial, sans-serif;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 var(--sans); font-feature-settings: "tnum" 1;
}
a { color: inherit; }
code, .mono { font-family: var(--mono); font-size: 0.92em; }

/* ---- top bar ---- */
.top {
  position: sticky; top: 0; z-index: 5;
  display: flex; align-items: center; gap: 28px; flex-wrap: wrap;
  padding: 12px 28px; background: #1f2228; color: #eceae4;
  border-bottom: 1px solid #000;
}
.brand { display: flex; align-items: baseline; gap: 12px; min-width: 0; }
.brand a { font-weight: 700; font-size: 16px; letter-spacing: 0.01em; text-decoration: none; color: #fff; }
.brand .root { font-family: var(--mono); font-size: 12px; color: #a7abb2; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 38vw; }
.tallies { display: flex; gap: 14px; flex-wrap: wrap; }
.tally { display: inline-flex; align-items: baseline; gap: 6px; font-size: 13px; color: #c9cbd0; }
.tally b { font-size: 17px; font-weight: 650; color: #fff; }
.tally .dot { width: 9px; height: 9px; border-radius: 50%; display: inline-block; align-self: center; background: var(--c); }
.tally.zero { opacity: 0.42; }
.cost-box { display: flex; flex-direction: column; line-height: 1.15; margin-left: auto; text-align: right; }
.cost-box .label { font-size: 11px; text-transform: uppercase; letter-spacing: 0.08em; color: #9a9ea6; }
.cost-box .value { font-size: 17px; font-weight: 650; color: #fff; }
.cost-box .sub { font-size: 11px; color: #9a9ea6; }
.live { display: inline-flex; align-items: center; gap: 8px; font-size: 12px; padding: 4px 10px; border-radius: 999px; border: 1px solid #3a3f47; color: #cfd2d6; min-width: 92px; }
.live .dot { width: 8px; height: 8px; border-radius: 50%; background: #6b7079; }
.live[data-state="live"] .dot { background: #35c26b; box-shadow: 0 0 0 0 rgba(53,194,107,0.6); animation: pulse 2s infinite; }
.live[data-state="live"] { border-color: #2f5e41; color: #bfe8cd; }
.live[data-state="stale"] { border-color: #6a5a2a; color: #e9d49a; border-style: dashed; }
.live[data-state="stale"] .dot { background: transparent; border: 1.5px solid #d9b85a; }
.live[data-state="offline"] { border-color: #6a3a36; color: #f0b9b3; border-style: dashed; }
.live[data-state="offline"] .dot { background: transparent; border: 1.5px solid #e0867d; }
@keyframes pulse { 0% { box-shadow: 0 0 0 0 rgba(53,194,107,0.55); } 70% { box-shadow: 0 0 0 7px rgba(53,194,107,0); } 100% { box-shadow: 0 0 0 0 rgba(53,194,107,0); } }
@media (prefers-reduced-motion: reduce) { .live .dot { animation: none !important; } }

/* ---- layout ---- */
main { max-width: 1440px; margin: 0 auto; padding: 22px 28px 60px; }
.stale-banner { display: none; margin: 0 0 16px; padding: 8px 12px; border: 1px dashed #c7a84a; background: #fbf6e4; color: #6b5412; border-radius: 6px; font-size: 13px; }
body.is-stale .stale-banner { display: block; }
body.is-stale main .card { filter: saturate(0.55); }
section.group { margin: 0 0 30px; }
.root-note { margin: 0 0 16px; font-size: 13px; color: var(--ink-2); }
section.group > h2 {
  display: flex; align-items: baseline; gap: 10px; margin: 0 0 12px; padding-bottom: 6px;
  font-size: 13px; font-weight: 650; text-transform: uppercase; letter-spacing: 0.09em; color: var(--ink-2);
  border-bottom: 1px solid var(--rule);
}
section.group > h2 .count { font-size: 12px; color: var(--ink-3); font-weight: 500; letter-spacing: 0; }
section.group > h2 .note { font-size: 12px; color: var(--ink-3); font-weight: 400; letter-spacing: 0; text-transform: none; margin-left: auto; }
section.group .empty { color: var(--ink-3); font-size: 13px; margin: 4px 0 0; }
section.group.has-cards .empty { display: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 14px; }

/* ---- cards ---- */
.card {
  position: relative; display: flex; flex-direction: column; gap: 7px; min-width: 0;
  background: var(--panel); border: 1px solid var(--rule); border-left: 4px solid var(--c);
  border-radius: 8px; padding: 12px 14px 12px 14px; box-shadow: 0 1px 2px rgba(20,20,10,0.04);
}
.card:hover { border-color: var(--rule-2); border-left-color: var(--c); box-shadow: 0 2px 8px rgba(20,20,10,0.08); }
.card[data-state="unknown"] { border-left-style: dashed; }
.card[data-state="abandoned"] { background: linear-gradient(#fbfaFD, #fbfafd); }
.card-head { display: flex; align-items: center; gap: 10px; }
.card .graph { font-weight: 650; font-size: 15px; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.card .graph.none { color: var(--ink-3); font-weight: 500; font-style: italic; }
.card .cost { margin-left: auto; font-weight: 600; font-size: 14px; white-space: nowrap; }
.card .cost.unknown { color: var(--ink-3); font-weight: 500; }
.card .runid { font-family: var(--mono); font-size: 12px; color: var(--ink-3); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; margin-top: -5px; }
.card .runid a { text-decoration: none; }
.card .runid a:hover { text-decoration: underline; color: var(--ink); }
.card a.cover { position: absolute; inset: 0; z-index: 0; border-radius: 8px; }
.card a.cover:focus-visible { outline: 2px solid var(--c-planning); outline-offset: 2px; }
.card .hint, .card .error, .card .warnings, .card .runid a, .card .hint * { position: relative; z-index: 1; }
.card .row { display: flex; align-items: center; gap: 10px; font-size: 12.5px; color: var(--ink-2); }
.card .row .sep { color: var(--rule-2); }
.card .counts { white-space: nowrap; color: var(--ink-2); font-size: 12.5px; margin-left: auto; }

.pill {
  display: inline-flex; align-items: center; gap: 6px; flex: none;
  font-size: 11.5px; font-weight: 650; letter-spacing: 0.05em; text-transform: uppercase;
  padding: 2px 8px 2px 7px; border-radius: 999px;
  color: var(--c); background: color-mix(in srgb, var(--c) 12%, white); border: 1px solid color-mix(in srgb, var(--c) 35%, white);
}
.pill::before { content: ""; width: 7px; height: 7px; border-radius: 50%; background: var(--c); }
.pill[data-state="running"]::before, .pill[data-state="planning"]::before { animation: breathe 1.6s ease-in-out infinite; }
.pill[data-state="running"] { color: #8a6400; }
.pill[data-state="abandoned"] { color: #62597a; }
.pill[data-state="pending"] { color: #6c7179; }
.pill[data-state="unknown"] { border-style: dashed; }
.pill[data-state="unknown"]::before { background: transparent; border: 1.5px solid var(--c); width: 5px; height: 5px; }
@keyframes breathe { 50% { opacity: 0.4; } }
@media (prefers-reduced-motion: reduce) { .pill::before { animation: none !important; } }

[data-state="planning"] { --c: var(--c-planning); }
[data-state="running"] { --c: var(--c-running); }
[data-state="abandoned"] { --c: var(--c-abandoned); }
[data-state="paused"], [data-state="gate-paused"] { --c: var(--c-paused); }
[data-state="passed"] { --c: var(--c-passed); }
[data-state="failed"] { --c: var(--c-failed); }
[data-state="pending"] { --c: var(--c-pending); }
[data-state="unknown"] { --c: var(--c-unknown); }

/* node strip: one cell per node, coloured by its state */
.strip { display: flex; flex-wrap: wrap; gap: 3px; min-height: 10px; align-items: center; flex: 1 1 auto; min-width: 0; }
.strip .cell { width: 14px; height: 10px; border-radius: 2px; background: var(--c); }
.strip .cell[data-state="running"] { animation: breathe 1.6s ease-in-out infinite; }
.strip .cell[data-state="abandoned"] { background: repeating-linear-gradient(135deg, var(--c-abandoned) 0 3px, #b9b2cc 3px 5px); }
.strip .cell[data-state="pending"] { background: transparent; border: 1.5px solid var(--c-pending); }
.strip .more { font-size: 11px; color: var(--ink-3); margin-left: 3px; }
.strip .none { font-size: 12px; color: var(--ink-3); }

.hint {
  margin: 2px 0 0; padding: 8px 10px; border-radius: 6px; font-size: 12.5px; line-height: 1.45;
  background: var(--violet-wash); color: var(--violet-ink); border: 1px solid #e1dcec;
  white-space: pre-wrap; overflow-wrap: anywhere; font-family: var(--sans);
}
.hint[data-kind="paused"] { background: var(--orange-wash); color: #7a3d0b; border-color: #f4d9c2; }
.hint code { -webkit-box-decoration-break: clone; box-decoration-break: clone; font-family: var(--mono); font-size: 11.5px; background: rgba(255,255,255,0.7); border: 1px solid #ddd7e8; border-radius: 4px; padding: 0 4px; overflow-wrap: anywhere; }
.hint[data-kind="paused"] code { border-color: #f0d3b8; }
.hint .hint-title { display: block; font-weight: 650; font-size: 11px; letter-spacing: 0.07em; text-transform: uppercase; margin-bottom: 3px; opacity: 0.8; }
.error { font-size: 12.5px; color: #3e444b; background: #eef0f2; border: 1px dashed #b9bec5; border-radius: 6px; padding: 6px 9px; overflow-wrap: anywhere; }
.warnings { font-size: 12px; color: #7a5b12; overflow-wrap: anywhere; }
.warnings::before { content: "⚠ "; }

/* ---- run page ---- */
.crumbs { font-size: 13px; margin: 0 0 14px; color: var(--ink-3); }
.crumbs a { color: var(--ink-2); text-decoration: none; }
.crumbs a:hover { text-decoration: underline; }
.run-head { background: var(--panel); border: 1px solid var(--rule); border-left: 5px solid var(--c); border-radius: 8px; padding: 16px 18px; margin-bottom: 18px; }
.run-head .title { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.run-head h1 { margin: 0; font-size: 21px; font-weight: 700; overflow-wrap: anywhere; }
.run-head h1.none { color: var(--ink-3); font-style: italic; font-weight: 500; }
.run-head .runid { font-family: var(--mono); font-size: 13px; color: var(--ink-3); margin-top: 3px; overflow-wrap: anywhere; }
.facts { display: flex; flex-wrap: wrap; gap: 8px 26px; margin: 12px 0 0; padding: 0; }
.facts div { display: flex; flex-direction: column; }
.facts dt { font-size: 11px; text-transform: uppercase; letter-spacing: 0.07em; color: var(--ink-3); }
.facts dd { margin: 0; font-size: 14px; font-weight: 560; }
.run-head .hint, .run-head .error, .run-head .warnings { margin-top: 12px; }
.run-body { display: grid; grid-template-columns: minmax(0, 1.05fr) minmax(0, 1fr); gap: 18px; align-items: start; }
@media (max-width: 980px) { .run-body { grid-template-columns: minmax(0, 1fr); } }
.panel { background: var(--panel); border: 1px solid var(--rule); border-radius: 8px; padding: 14px 16px; min-width: 0; }
.panel > h2 { margin: 0 0 10px; font-size: 13px; text-transform: uppercase; letter-spacing: 0.09em; color: var(--ink-2); display: flex; align-items: baseline; gap: 10px; }
.panel > h2 .note { margin-left: auto; font-size: 12px; text-transform: none; letter-spacing: 0; color: var(--ink-3); font-weight: 400; }

.legs { width: 100%; border-collapse: collapse; font-size: 12.5px; margin-bottom: 14px; }
.legs th { text-align: left; font-weight: 600; color: var(--ink-3); font-size: 11px; text-transform: uppercase; letter-spacing: 0.06em; padding: 4px 8px 4px 0; border-bottom: 1px solid var(--rule); }
.legs td { padding: 5px 8px 5px 0; border-bottom: 1px solid #f0eee9; vertical-align: top; }
.legs td.mono { white-space: nowrap; }

.timeline { list-style: none; margin: 0; padding: 0; font-size: 12.5px; }
.timeline li { display: grid; grid-template-columns: 66px 14px minmax(0, 1fr); gap: 8px; padding: 3px 0; align-items: start; }
.timeline .t { font-family: var(--mono); font-size: 11.5px; color: var(--ink-3); padding-top: 1px; white-space: nowrap; }
.timeline .mark { width: 9px; height: 9px; border-radius: 50%; margin-top: 5px; background: var(--c, var(--c-pending)); }
.timeline .body { min-width: 0; overflow-wrap: anywhere; }
.timeline .what { font-weight: 560; }
.timeline .node { font-family: var(--mono); font-size: 12px; }
.timeline .detail { color: var(--ink-2); white-space: pre-wrap; display: block; margin-top: 1px; }
.timeline .money { color: var(--ink-2); font-weight: 560; margin-left: 6px; }
.timeline li.leg { margin: 10px 0 4px; padding: 6px 8px; background: #f3f2ee; border-radius: 5px; grid-template-columns: 58px 14px minmax(0, 1fr); }
.timeline li.leg:first-child { margin-top: 0; }
.timeline li.leg .what { text-transform: uppercase; letter-spacing: 0.06em; font-size: 11.5px; }
.timeline li.dead { background: var(--violet-wash); color: var(--violet-ink); border: 1px dashed #cfc7e0; border-radius: 5px; padding: 6px 8px; margin-top: 6px; }
.timeline li.day { display: block; font-size: 11px; color: var(--ink-3); text-transform: uppercase; letter-spacing: 0.07em; padding: 8px 0 2px; }
.timeline-note { font-size: 12px; color: var(--ink-3); margin: 0 0 8px; }

.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; font-size: 12px; color: var(--ink-2); margin: 0 0 12px; }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
.legend i { width: 14px; height: 10px; border-radius: 2px; background: var(--c); display: inline-block; }
.legend i[data-state="abandoned"] { background: repeating-linear-gradient(135deg, var(--c-abandoned) 0 3px, #b9b2cc 3px 5px); }
.legend i[data-state="pending"] { background: transparent; border: 1.5px solid var(--c-pending); }
.nodemap { position: relative; overflow-x: auto; }
.nodemap svg.edges { position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible; }
.nodemap svg.edges path { fill: none; stroke: #c9c6bd; stroke-width: 1.5; }
.layers { position: relative; display: flex; flex-direction: column; gap: 26px; padding: 2px 2px 8px; }
.layer { display: flex; flex-direction: row; flex-wrap: wrap; gap: 10px 12px; align-items: flex-start; }
.layer-label { flex: 0 0 100%; font-size: 10.5px; text-transform: uppercase; letter-spacing: 0.08em; color: var(--ink-3); margin-bottom: -4px; }
.nodelist { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px; }
.nodebox {
  position: relative; z-index: 1; width: 168px; padding: 7px 9px; border-radius: 6px; background: var(--panel);
  border: 1px solid var(--rule-2); border-left: 4px solid var(--c); font-size: 12px;
}
.nodelist .nodebox { width: auto; }
.nodebox .id { font-family: var(--mono); font-weight: 600; font-size: 12px; overflow-wrap: anywhere; }
.nodebox .st { display: flex; gap: 8px; color: var(--ink-2); margin-top: 2px; }
.nodebox .st .c { margin-left: auto; }
.nodebox[data-state="abandoned"] { background: var(--violet-wash); border-left-style: solid; }
.nodebox[data-state="pending"] { background: #fbfaf8; color: var(--ink-2); border-style: dashed; border-left-style: solid; }
.nodebox[data-state="running"] .st b::after { content: " …"; }
.nodebox .detail { color: var(--ink-3); margin-top: 3px; font-size: 11.5px; overflow-wrap: anywhere; max-height: 3.1em; overflow: hidden; }
.nodemap-note { font-size: 12px; color: var(--ink-3); margin: 8px 0 0; }

.notfound { background: var(--panel); border: 1px solid var(--rule); border-radius: 8px; padding: 20px; }
noscript p.noscript { max-width: 1440px; margin: 0 auto; padding: 0 28px 20px; }
footer { max-width: 1440px; margin: 0 auto; padding: 0 28px 30px; font-size: 12px; color: var(--ink-3); }
footer a { color: var(--ink-2); }
`;
