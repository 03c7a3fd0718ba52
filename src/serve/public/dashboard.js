// @ts-check
/**
 * The dashboard page's script, served from /assets/dashboard.js as this
 * file's bytes. It renders the server's cards and applies its patches; it
 * derives nothing: every state word and hint comes from the server, which
 * takes them from the same runStatus/listRuns the CLI prints, and the list of
 * states the header counts comes from /assets/states.js, which the server
 * writes from CARD_STATES.
 */

/** @typedef {import('../view.js').RunCard} RunCard */
/** @typedef {import('../view.js').DashboardDoc} DashboardDoc */
/** @typedef {import('../view.js').DashboardPatch} DashboardPatch */
/** @typedef {import('../view.js').Beat} Beat */
/**
 * What the header is drawn from: a snapshot, a patch, or the two merged.
 * @typedef {import('../view.js').Totals & { root?: string, root_missing: boolean, skipped_count?: number, skipped?: readonly unknown[] }} HeaderDoc
 */

(function () {
  'use strict';
  var RW = window.RW;
  var el = RW.el;
  /** @type {Record<string, RunCard>} run id -> card data */
  var cards = {};
  /** @type {Record<string, HTMLElement>} run id -> element */
  var nodes = {};
  /** @type {readonly string[]} run ids, newest first */
  var order = [];
  /** @type {Section[]} */
  var SECTIONS = ['in-flight', 'abandoned', 'settled', 'other'];

  /** @param {Section} name */
  function section(name) { return RW.find(document, 'section.group[data-section="' + name + '"]'); }

  /** @param {HeaderDoc} doc */
  function renderHeader(doc) {
    if (doc.root !== undefined) RW.byId('root').textContent = doc.root;
    var note = RW.byId('root-note');
    var skipped = doc.skipped_count !== undefined ? doc.skipped_count : (doc.skipped || []).length;
    var unknown = doc.tallies.unknown || 0;
    var strays = skipped - unknown;
    if (doc.root_missing) note.textContent = 'The runs root does not exist yet. Runs will appear here as soon as it does.';
    else if (strays > 0) note.textContent = strays + ' entr' + (strays === 1 ? 'y' : 'ies') + ' under the root ' + (strays === 1 ? 'is' : 'are') + ' not a run directory (a stray file or a symlink, never followed); /api/runs lists ' + (strays === 1 ? 'it' : 'them') + '.';
    else note.textContent = '';
    note.hidden = note.textContent === '';
    var t = RW.byId('tallies');
    RW.clear(t);
    // Every state the server knows, in its order; those of no section (no
    // status yet, unreadable) only when some run has them.
    var states = RW.CARD_STATES.filter(function (s) { return RW.STATE_SECTION[s] !== 'other' || doc.tallies[s] > 0; });
    states.forEach(function (s) {
      var n = doc.tallies[s] || 0;
      t.appendChild(el('span', { class: 'tally' + (n === 0 ? ' zero' : ''), 'data-state': s, 'data-tally': s }, [
        el('span', { class: 'dot' }), el('b', { text: String(n) }), s,
      ]));
    });
    var v = RW.byId('cost');
    var sub = RW.byId('cost-sub');
    if (doc.cost.unknown) {
      v.textContent = 'unknown';
      sub.textContent = doc.cost.known_usd > 0 ? RW.money(doc.cost.known_usd) + ' known' : 'some costs were not reported';
    } else {
      v.textContent = RW.money(doc.cost.known_usd);
      sub.textContent = 'all runs';
    }
  }

  /** @param {RunCard} c */
  function timesText(c) {
    var start = RW.ms(c.started_at), end = RW.ms(c.ended_at), lastEv = RW.ms(c.last_event_at);
    if (c.state === 'pending') return 'no events yet';
    if (c.state === 'unknown') return c.checked_at ? 'as of ' + RW.ago(c.checked_at) : '';
    if (isNaN(start)) return '';
    var parts = ['started ' + RW.when(c.started_at)];
    if (c.section === 'in-flight') {
      // Wall clock on purpose: elapsed since a wall-clock timestamp, shown to people only.
      parts.push('elapsed ' + RW.duration(Date.now() - start));
    } else if (c.state === 'abandoned') {
      if (!isNaN(lastEv)) parts.push('last heard ' + RW.ago(c.last_event_at));
    } else if (!isNaN(end)) {
      parts.push('ended ' + RW.when(c.ended_at));
      parts.push('took ' + RW.duration(end - start));
    }
    if (c.checked_at) parts.push('status as of ' + RW.ago(c.checked_at) + ' (long stream: checked less often)');
    return parts.join('  ·  ');
  }

  /** @param {RunCard} c */
  function buildCard(c) {
    /** @type {Partial<RunReport>} */
    var r = c.report || {};
    var graph = r.graph;
    var head = el('div', { class: 'card-head' }, [
      el('span', { class: 'graph' + (graph ? '' : ' none'), title: graph || '', text: graph || RW.noGraph(c.state) }),
      el('span', { class: 'cost' + (r.cost_unknown || typeof r.cost_usd !== 'number' ? ' unknown' : ''), text: c.report ? (typeof r.cost_usd === 'number' || r.cost_unknown ? RW.money(r.cost_usd, r.cost_unknown) : 'no cost') : '' }),
    ]);
    var idRow = el('div', { class: 'runid' }, [el('a', { href: RW.runHref(c.run_id), title: c.run_id, text: c.run_id })]);
    var counts = '';
    if (typeof r.nodes_total === 'number') counts = (r.nodes_passed || 0) + '/' + r.nodes_total + ' passed';
    else if (c.nodes && c.nodes.length) counts = c.nodes.length + ' node' + (c.nodes.length === 1 ? '' : 's') + ' seen';
    var stripRow = el('div', { class: 'row' }, [RW.pill(c.state), RW.strip(c.nodes, c.nodes_more), counts ? el('span', { class: 'counts', text: counts }) : null]);
    var times = el('div', { class: 'row times', 'data-times': '1', text: timesText(c) });
    var kids = [el('a', { class: 'cover', href: RW.runHref(c.run_id), 'aria-label': 'open run ' + c.run_id }), head, idRow, stripRow, times];
    if (c.state === 'abandoned' && r.hint) {
      kids.push(el('div', { class: 'hint', 'data-kind': 'abandoned', 'data-hint': '1' }, [el('span', { class: 'hint-title', text: 'What now' }), ...RW.hintNodes(r.hint)]));
    }
    if (c.error) kids.push(el('div', { class: 'error', 'data-error': '1', text: 'Cannot read this run: ' + c.error }));
    if (r.warnings && r.warnings.length) kids.push(el('div', { class: 'warnings', text: r.warnings.join('; ') }));
    return el('article', { class: 'card', 'data-state': c.state, 'data-run-id': c.run_id, 'data-section': c.section }, kids);
  }

  function place() {
    var counts = /** @type {Record<Section, number>} */ ({});
    SECTIONS.forEach(function (s) { counts[s] = 0; });
    order.forEach(function (id) {
      var c = cards[id], e = nodes[id];
      if (!c || !e) return;
      var box = RW.find(section(c.section), '.cards');
      box.appendChild(e); // moves it; keeps newest-first order within each section
      counts[c.section]++;
    });
    SECTIONS.forEach(function (s) {
      var sec = section(s);
      sec.classList.toggle('has-cards', counts[s] > 0);
      RW.find(sec, 'h2 .count').textContent = counts[s] ? String(counts[s]) : '';
      if (s === 'other') sec.hidden = counts[s] === 0;
    });
  }

  /** @param {RunCard} c */
  function upsert(c) {
    var old = nodes[c.run_id];
    var e = buildCard(c);
    if (old && old.parentNode) old.parentNode.replaceChild(e, old);
    cards[c.run_id] = c;
    nodes[c.run_id] = e;
  }

  /** @param {string} id */
  function remove(id) {
    var e = nodes[id];
    if (e && e.parentNode) e.parentNode.removeChild(e);
    delete nodes[id];
    delete cards[id];
  }

  /** @param {DashboardDoc} doc */
  function onSnapshot(doc) {
    // Until the first picture arrives the page says it is loading, never "Nothing in flight".
    document.getElementById('main')?.classList.add('has-data');
    Object.keys(nodes).forEach(remove);
    doc.runs.forEach(upsert);
    order = doc.order;
    renderHeader(doc);
    place();
  }

  /** @param {DashboardPatch} p */
  function onPatch(p) {
    (p.remove || []).forEach(remove);
    (p.upsert || []).forEach(upsert);
    if (p.order) order = p.order;
    renderHeader(p);
    place();
  }

  // Elapsed and "ago" texts move on their own between server pushes.
  setInterval(function () {
    Object.keys(nodes).forEach(function (id) {
      var n = nodes[id], c = cards[id];
      var t = n && n.querySelector('[data-times]');
      if (t && c) t.textContent = timesText(c);
    });
  }, 1000);

  // A beat carries an error when the server could not read the root this time.
  /** @type {HeaderDoc | null} */
  var lastDoc = null;
  /** @param {Beat} b */
  function onBeat(b) {
    var note = RW.byId('root-note');
    if (b.error) {
      note.textContent = 'The server cannot read the runs root right now (' + b.error + '); the cards show the last answer it had.';
      note.hidden = false;
    } else if (lastDoc) {
      renderHeader(lastDoc);
    }
  }

  RW.connect('/api/events', {
    snapshot: function (d) { lastDoc = d; onSnapshot(d); },
    patch: function (p) { lastDoc = Object.assign({}, lastDoc || {}, p); onPatch(p); },
    beat: onBeat,
  });
})();
