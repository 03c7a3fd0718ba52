/**
 * The two HTML documents. They are static: no run data is ever written into
 * them (the scripts fetch it and render it as text), so there is nothing to
 * escape here and nothing an attacker-controlled run id could inject.
 */

function shell(title: string, script: string, bodyClass: string, main: string, withTallies: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>${title}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/common.js" defer></script>
<script src="/assets/${script}" defer></script>
</head>
<body class="${bodyClass}">
<header class="top">
  <div class="brand"><a href="/">runwarden</a><span class="root" id="root"></span></div>
  ${withTallies ? '<div class="tallies" id="tallies" aria-label="runs by state"></div>' : ''}
  ${
    withTallies
      ? '<div class="cost-box"><span class="label">Total cost</span><span class="value" id="cost">—</span><span class="sub" id="cost-sub"></span></div>'
      : '<div class="cost-box"></div>'
  }
  <div class="live" id="live" data-state="connecting" role="status" aria-live="polite"><span class="dot"></span><span class="text">connecting</span></div>
</header>
<main id="main">
<p class="stale-banner">Updates have stopped arriving; what you see may be out of date. The page reconnects on its own.</p>
<p class="root-note" id="root-note" hidden></p>
${main}
</main>
<noscript><p class="noscript">This dashboard needs JavaScript. The same data is served as JSON at /api/runs.</p></noscript>
<footer>runwarden reads the runs root and never writes to it. Liveness comes from the kernel's flock(2) on each run's resume.lock. JSON: <a href="/api/runs">/api/runs</a></footer>
</body>
</html>
`;
}

function group(section: string, title: string, empty: string, note = ''): string {
  return `<section class="group" data-section="${section}"><h2>${title} <span class="count"></span>${note ? `<span class="note">${note}</span>` : ''}</h2><div class="cards"></div><p class="empty">${empty}</p></section>`;
}

/** The dashboard: every run, grouped. */
export const DASHBOARD_HTML = shell(
  'runwarden',
  'dashboard.js',
  'page-dashboard',
  [
    group('in-flight', 'In flight', 'Nothing in flight.', 'a live process holds the lock, or liveness cannot be told'),
    group('abandoned', 'Abandoned', 'No abandoned runs.', 'a leg started and its process is gone; nothing failed'),
    group('settled', 'Settled', 'No settled runs.'),
    group('other', 'No status', 'Nothing here.', 'not started yet, or unreadable'),
  ].join('\n'),
  true,
);

/** The run page; its script reads the run id from the address. */
export const RUN_HTML = shell('run · runwarden', 'run.js', 'page-run', '', false);

/** A small mark for the tab: a ring in the abandoned violet around a green dot. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><circle cx="16" cy="16" r="13" fill="none" stroke="#8d84a3" stroke-width="4"/><circle cx="16" cy="16" r="6" fill="#2b9353"/></svg>
`;
