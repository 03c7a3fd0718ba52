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
 * @typedef {import('../view.js').Totals & { root?: string, root_missing: boolean, root_replaced_at?: string | null, skipped_count?: number, skipped?: readonly unknown[] }} HeaderDoc
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
  /** How many runs each paged section leaves out (from the server). @type {import('../view.js').SectionMore} */
  var more = { settled: 0, other: 0 };
  /** The status filter /api/runs takes for each paged section's older runs. */
  var MORE_STATUS = { settled: 'paused,pass,fail', other: 'none' };
  /** Rows fetched so far past each paged section's cards, and the cursor for the next fetch. */
  var extra = { settled: { shown: 0, before: '' }, other: { shown: 0, before: '' } };

  /** @param {Section} name */
  function section(name) { return RW.find(document, 'section.group[data-section="' + name + '"]'); }

  /** The tallies the header shows now, as `state=n,…` (rebuilt only when it changes). */
  var talliesKey = '';

  /** @param {HeaderDoc} doc */
  function renderHeader(doc) {
    if (doc.root !== undefined) setText(RW.byId('root'), doc.root);
    var note = RW.byId('root-note');
    var skipped = doc.skipped_count !== undefined ? doc.skipped_count : (doc.skipped || []).length;
    var unknown = doc.tallies.unknown || 0;
    var strays = skipped - unknown;
    var noteText = '';
    if (doc.root_missing) noteText = 'The runs root is not there (not made yet, or removed). Runs will appear here as soon as it is.';
    else if (doc.root_replaced_at) noteText = 'The runs root was replaced by another directory at ' + doc.root_replaced_at + '; the cards are the new directory’s runs.';
    if (!doc.root_missing && strays > 0) noteText += (noteText ? ' ' : '') + strays + ' entr' + (strays === 1 ? 'y' : 'ies') + ' under the root ' + (strays === 1 ? 'is' : 'are') + ' not a run directory (a stray file or a symlink, never followed); /api/runs lists ' + (strays === 1 ? 'it' : 'them') + '.';
    setText(note, noteText);
    if (note.hidden !== (noteText === '')) note.hidden = noteText === '';
    var t = RW.byId('tallies');
    // Every state the server knows, in its order; those of no section (no
    // status yet, unreadable) only when some run has them.
    var states = RW.CARD_STATES.filter(function (s) { return RW.STATE_SECTION[s] !== 'other' || doc.tallies[s] > 0; });
    var key = states.map(function (s) { return s + '=' + (doc.tallies[s] || 0); }).join(',');
    if (key !== talliesKey) {
      talliesKey = key;
      RW.clear(t);
      states.forEach(function (s) {
        var n = doc.tallies[s] || 0;
        t.appendChild(el('span', { class: 'tally' + (n === 0 ? ' zero' : ''), 'data-state': s, 'data-tally': s }, [
          el('span', { class: 'dot' }), el('b', { text: String(n) }), s,
        ]));
      });
    }
    var v = RW.byId('cost');
    var sub = RW.byId('cost-sub');
    if (doc.cost.unknown) {
      setText(v, 'unknown');
      setText(sub, doc.cost.known_usd > 0 ? RW.money(doc.cost.known_usd) + ' known' : 'some costs were not reported');
    } else {
      setText(v, RW.money(doc.cost.known_usd));
      setText(sub, 'all runs');
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

  /**
   * Puts every card in its section, newest first, moving only the cards that
   * are not already where they belong: a patch that turns one card abandoned
   * moves that one card, so the browser re-lays out one card's worth, not
   * every card on the page (a DOM move is a removal and an insertion, and
   * each invalidates the layout around it).
   */
  function place() {
    /** @type {Record<Section, HTMLElement[]>} */
    var want = /** @type {Record<Section, HTMLElement[]>} */ ({});
    SECTIONS.forEach(function (s) { want[s] = []; });
    order.forEach(function (id) {
      var c = cards[id], e = nodes[id];
      if (c && e) want[c.section].push(e);
    });
    SECTIONS.forEach(function (s) {
      var box = RW.find(section(s), '.cards');
      // First take out what no longer belongs here (a card gone to another
      // section, or gone), so the cards that stay are not moved around it.
      for (var k = box.children.length - 1; k >= 0; k--) {
        var child = /** @type {HTMLElement} */ (box.children[k]);
        var id = child.getAttribute('data-run-id') || '';
        var c = cards[id];
        if (nodes[id] !== child || !c || c.section !== s) box.removeChild(child);
      }
    });
    SECTIONS.forEach(function (s) {
      var box = RW.find(section(s), '.cards');
      var list = want[s];
      for (var i = 0; i < list.length; i++) {
        var at = box.children[i] || null;
        if (at !== list[i]) box.insertBefore(/** @type {HTMLElement} */ (list[i]), at);
      }
    });
    SECTIONS.forEach(function (s) {
      var sec = section(s);
      var n = want[s].length;
      sec.classList.toggle('has-cards', n > 0);
      setText(RW.find(sec, 'h2 .count'), n ? String(n) : '');
      if (s === 'other') {
        var hide = n === 0 && more.other === 0;
        if (sec.hidden !== hide) sec.hidden = hide;
      }
    });
    renderMore('settled');
    renderMore('other');
  }

  /**
   * Sets an element's text only when it differs: an equal assignment would
   * still replace the text node and make the browser lay it out again.
   * @param {Element} e
   * @param {string} text
   */
  function setText(e, text) {
    text = RW.printable(text);
    if (e.textContent !== text) e.textContent = text;
  }

  /**
   * A report from /api/runs as one row: state, run id (a link to its page),
   * graph and cost. Rows are a picture of the moment they were fetched.
   * @param {RunReport} r
   */
  function reportRow(r) {
    var state = r.status === null ? 'pending' : (RW.STATUS_STATE[r.status] || 'unknown');
    return el('div', { class: 'row-run', 'data-run-id': r.run_id, 'data-state': state }, [
      RW.pill(state),
      el('a', { href: RW.runHref(r.run_id), title: r.run_id, text: r.run_id }),
      el('span', { class: 'graph', text: r.graph || RW.noGraph(state) }),
      el('span', { class: 'cost', text: typeof r.cost_usd === 'number' || r.cost_unknown ? RW.money(r.cost_usd, r.cost_unknown) : '' }),
    ]);
  }

  /** @param {'settled' | 'other'} name */
  function renderMore(name) {
    var box = /** @type {HTMLElement} */ (RW.find(section(name), '.more-box'));
    var left = more[name] - extra[name].shown;
    if (box.hidden !== (more[name] === 0)) box.hidden = more[name] === 0;
    setText(RW.find(box, '.more-text'), left > 0
      ? left + ' older ' + (name === 'settled' ? 'settled run' : 'run') + (left === 1 ? '' : 's') + ' not shown.'
      : (extra[name].shown > 0 ? 'All runs shown (older rows as of when they were loaded).' : ''));
    var btn = /** @type {HTMLButtonElement} */ (RW.find(box, '.more-btn'));
    if (btn.hidden !== (left <= 0)) btn.hidden = left <= 0;
  }

  /**
   * Fetches a page of /api/runs and hands its runs to `done`; errors are shown as text.
   * @param {string} query
   * @param {(doc: import('../../contract/types.js').RunsDocument) => void} done
   * @param {HTMLElement} errorAt
   */
  function fetchRuns(query, done, errorAt) {
    fetch('/api/runs?' + query, { headers: { accept: 'application/json' } })
      .then(function (res) { return res.json().then(function (body) { return { ok: res.ok, body: body }; }); })
      .then(function (r) {
        if (!r.ok) throw new Error(r.body && r.body.error ? r.body.error.message : 'the server refused the query');
        done(r.body);
      })
      .catch(function (e) { errorAt.textContent = 'Could not load runs: ' + (e && e.message ? e.message : String(e)); });
  }

  /** @param {'settled' | 'other'} name */
  function loadMore(name) {
    var box = /** @type {HTMLElement} */ (RW.find(section(name), '.more-box'));
    var rows = RW.find(box, '.rows');
    var cursor = extra[name].before;
    if (cursor === '') {
      // Start after the oldest card this section shows.
      var ids = order.filter(function (id) { return cards[id] && cards[id].section === name; });
      cursor = ids.length ? /** @type {string} */ (ids[ids.length - 1]) : '';
    }
    var q = 'status=' + MORE_STATUS[name] + '&limit=50' + (cursor ? '&before=' + encodeURIComponent(cursor) : '');
    fetchRuns(q, function (doc) {
      doc.runs.forEach(function (r) { rows.appendChild(reportRow(r)); });
      extra[name].shown += doc.runs.length;
      var last = doc.runs[doc.runs.length - 1];
      if (last) extra[name].before = last.run_id;
      if (!doc.more) extra[name].shown = Math.max(extra[name].shown, more[name]);
      renderMore(name);
    }, RW.find(box, '.more-text'));
  }
  ['settled', 'other'].forEach(function (name) {
    var n = /** @type {'settled' | 'other'} */ (name);
    RW.find(section(n), '.more-btn').addEventListener('click', function () { loadMore(n); });
  });

  // The search form: the same selection as `runs --status/--graph/--id` and /api/runs.
  var find = /** @type {HTMLFormElement} */ (RW.byId('find'));
  var results = RW.byId('results');
  var resultsRows = RW.find(results, '.rows');
  var resultsMore = /** @type {HTMLButtonElement} */ (RW.find(results, '.more-btn'));
  var clearBtn = RW.byId('find-clear');
  /** @type {{ query: string, before: string, count: number }} */
  var search = { query: '', before: '', count: 0 };
  function runSearch() {
    var q = search.query + '&limit=50' + (search.before ? '&before=' + encodeURIComponent(search.before) : '');
    fetchRuns(q, function (doc) {
      doc.runs.forEach(function (r) { resultsRows.appendChild(reportRow(r)); });
      search.count += doc.runs.length;
      search.before = doc.next_before || '';
      results.classList.toggle('has-cards', search.count > 0);
      RW.find(results, 'h2 .count').textContent = String(search.count) + (doc.more ? '+' : '');
      resultsMore.hidden = !doc.more;
    }, /** @type {HTMLElement} */ (RW.find(results, '.empty')));
  }
  find.addEventListener('submit', function (ev) {
    ev.preventDefault();
    /** @type {string[]} */
    var parts = [];
    ['id', 'graph', 'status'].forEach(function (k) {
      var v = /** @type {HTMLInputElement} */ (RW.byId('find-' + k)).value.trim();
      if (v) parts.push(k + '=' + encodeURIComponent(v));
    });
    search = { query: parts.join('&'), before: '', count: 0 };
    RW.clear(resultsRows);
    RW.find(results, '.empty').textContent = 'No run matches.';
    results.classList.remove('has-cards');
    results.hidden = false;
    clearBtn.hidden = false;
    runSearch();
  });
  resultsMore.addEventListener('click', runSearch);
  clearBtn.addEventListener('click', function () {
    results.hidden = true;
    clearBtn.hidden = true;
    RW.clear(resultsRows);
    find.reset();
  });

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
    // Until the first snapshot every section says "Loading…", never "Nothing in flight".
    document.body.classList.remove('is-loading');
    more = doc.more || { settled: 0, other: 0 };
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
    if (p.more) more = p.more;
    renderHeader(p);
    place();
  }

  // Elapsed and "ago" texts move on their own between server pushes.
  setInterval(function () {
    Object.keys(nodes).forEach(function (id) {
      var n = nodes[id], c = cards[id];
      var t = n && n.querySelector('[data-times]');
      if (t && c) setText(t, timesText(c));
    });
  }, 1000);

  // A beat carries an error when the server could not read the runs this time: the page says so and shows
  // no cards until a beat without one (cards it cannot vouch for would be a picture of another moment).
  /** @type {HeaderDoc | null} */
  var lastDoc = null;
  /** @param {Beat} b */
  function onBeat(b) {
    var note = RW.byId('root-note');
    document.body.classList.toggle('is-error', !!b.error);
    if (b.error) {
      note.textContent = RW.printable('The server cannot read the runs right now (' + b.error + '); no cards are shown until it can.');
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
