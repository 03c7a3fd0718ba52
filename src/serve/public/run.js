// @ts-check
/**
 * The run page's script, served from /assets/run.js as this file's bytes:
 * one run's header, hint, leg history, event timeline and node map. Like the
 * dashboard it derives nothing; it draws the server's detail document,
 * pushed again on change.
 */

/** @typedef {import('../view.js').RunPage} RunPage */
/** @typedef {import('../view.js').NodeDetail} NodeDetail */
/** @typedef {import('../view.js').LegView} LegView */
/** @typedef {import('../http.js').ErrorBody} ErrorBody */
/**
 * A timeline item, with whether its run_started continues a leg already
 * started (an auto run's planning start and the start after it).
 * @typedef {import('../view.js').TimelineItem & { continues?: boolean }} TimelineEntry
 */

(function () {
  'use strict';
  var RW = window.RW;
  var el = RW.el;
  var prefix = '/run/';
  /** @type {string | null} */
  var id = null;
  try { id = decodeURIComponent(location.pathname.slice(prefix.length)); } catch (e) { id = null; }
  var main = RW.byId('main');
  /** @type {RunPage | null} */
  var current = null;
  var lastJson = '';

  var LEGEND = ['planning', 'running', 'abandoned', 'gate-paused', 'passed', 'failed', 'pending'];
  /** @type {Record<string, [string, string]>} event name -> [what it says, state it is drawn in] */
  var VERB = {
    node_started: ['started', 'running'], node_passed: ['passed', 'passed'], node_failed: ['failed', 'failed'],
    node_retried: ['retried', 'running'], gate_paused: ['gate paused', 'paused'], gate_approved: ['gate approved', 'passed'],
    gate_rejected: ['gate rejected', 'failed'],
  };
  /** @type {Record<string, string>} */
  var OUTCOME_STATE = { passed: 'passed', failed: 'failed', paused: 'paused' };

  /**
   * @param {string} label
   * @param {string} value
   * @param {ElProps} [attrs]
   */
  function fact(label, value, attrs) {
    return el('div', attrs || null, [el('dt', { text: label }), el('dd', { text: value })]);
  }

  /** @param {RunPage} d */
  function head(d) {
    /** @type {Partial<RunReport>} */
    var r = d.report || {};
    var start = RW.ms(d.started_at), end = RW.ms(d.ended_at);
    var took = '';
    if (!isNaN(start)) {
      // Wall clock on purpose: elapsed since the run's wall-clock start, shown to people only.
      if (d.section === 'in-flight') took = RW.duration(Date.now() - start);
      else if (d.state === 'abandoned') took = isNaN(RW.ms(d.last_event_at)) ? '' : RW.duration(RW.ms(d.last_event_at) - start) + ' until silent';
      else if (!isNaN(end)) took = RW.duration(end - start);
    }
    var facts = el('dl', { class: 'facts' }, [
      fact('Nodes', typeof r.nodes_total === 'number' ? (r.nodes_passed || 0) + ' / ' + r.nodes_total + ' passed' : (d.nodes.length ? d.nodes.length + ' seen' : '—')),
      fact('Cost', d.report ? RW.money(r.cost_usd, r.cost_unknown) : '—'),
      fact('Started', d.started_at ? RW.when(d.started_at) : '—'),
      fact(d.section === 'in-flight' ? 'Elapsed' : 'Ran', took || '—', { 'data-elapsed': '1' }),
      fact('Ended', d.ended_at && d.section === 'settled' ? RW.when(d.ended_at) : '—'),
      fact('Legs', String((d.legs_earlier || 0) + d.legs.length)),
      fact('Last event', d.last_event_at ? RW.ago(d.last_event_at) : '—'),
      fact('Lock', r.liveness ? r.liveness + ' (' + r.reason + ')' : 'not probed (last leg closed)'),
    ]);
    var graph = r.graph;
    var kids = [
      el('div', { class: 'title' }, [el('h1', { class: graph ? '' : 'none', text: graph || RW.noGraph(d.state) }), RW.pill(d.state)]),
      el('div', { class: 'runid', text: d.run_id }),
      facts,
    ];
    if (r.hint) {
      var kind = d.state === 'abandoned' ? 'abandoned' : 'paused';
      kids.push(el('div', { class: 'hint', 'data-kind': kind, 'data-hint': '1' }, [el('span', { class: 'hint-title', text: kind === 'abandoned' ? 'This run is abandoned — what now' : 'Paused — what now' }), ...RW.hintNodes(r.hint)]));
    }
    if (d.error) kids.push(el('div', { class: 'error', 'data-error': '1', text: 'Cannot read this run: ' + d.error }));
    var warn = (r.warnings || []).slice();
    if (d.stream_error) warn.push('node states and legs unavailable: ' + d.stream_error);
    if (d.checked_at) warn.push('status as of ' + RW.ago(d.checked_at) + ': this run\'s last leg is long, so it is checked less often');
    if (warn.length) kids.push(el('div', { class: 'warnings', text: warn.join('; ') }));
    return el('section', { class: 'run-head', 'data-state': d.state }, kids);
  }

  /** @param {RunPage} d */
  function legsTable(d) {
    if (!d.legs.length) return el('p', { class: 'timeline-note', text: 'No legs: the stream holds no run_started yet.' });
    var rows = d.legs.slice().reverse().map(function (l) {
      var st, end;
      if (l.state === 'open') {
        st = d.state === 'abandoned' ? 'abandoned' : d.section === 'in-flight' ? (l.phase === 'planning' ? 'planning' : 'running') : 'unknown';
        end = d.section === 'in-flight' ? 'in flight' : 'open';
      } else if (l.state === 'abandoned') {
        st = 'abandoned';
        end = 'never reported an end';
      } else {
        st = OUTCOME_STATE[String(l.outcome)] || 'pending';
        end = (l.outcome || 'closed') + (l.finished_ts ? ' at ' + RW.when(l.finished_ts) : '');
      }
      var took = !isNaN(RW.ms(l.started_ts)) && !isNaN(RW.ms(l.finished_ts)) ? RW.duration(RW.ms(l.finished_ts) - RW.ms(l.started_ts)) : '';
      return el('tr', { 'data-state': st }, [
        el('td', { class: 'mono', text: '#' + l.n }),
        el('td', { class: 'mono', text: l.started_ts ? RW.when(l.started_ts) : '—' }),
        el('td', null, [RW.pill(st)]),
        el('td', { text: end + (took ? ' (' + took + ')' : '') + (l.command ? '  — exec: ' + l.command.join(' ') : '') }),
      ]);
    });
    var table = el('table', { class: 'legs' }, [
      el('thead', null, [el('tr', null, [el('th', { text: 'Leg' }), el('th', { text: 'Started' }), el('th', { text: 'State' }), el('th', { text: 'End' })])]),
      el('tbody', null, rows),
    ]);
    if (!d.legs_earlier) return table;
    // The server sends the latest legs only (a run page stays small whatever the run's history).
    var more = d.legs_earlier + ' earlier leg' + (d.legs_earlier === 1 ? '' : 's') + ' not shown';
    return el('div', null, [table, el('p', { class: 'timeline-note', 'data-legs-earlier': String(d.legs_earlier), text: more })]);
  }

  /** @param {TimelineEntry} item */
  function eventItem(item) {
    /** @type {Record<string, unknown>} */
    var ev = item.event || {};
    var name = String(ev.event || '?');
    var t = el('span', { class: 't', text: RW.clock(ev.ts), title: typeof ev.ts === 'string' ? ev.ts : '' });
    if (name === 'run_started') {
      var what = 'Leg ' + (item.leg || '?') + ' started' + (ev.phase ? ' (' + ev.phase + ')' : '');
      if (item.continues) what = 'Leg ' + (item.leg || '?') + ': planning done, running';
      var extra = Array.isArray(ev.command) ? ' — exec: ' + ev.command.join(' ') : '';
      return el('li', { class: 'leg', 'data-state': ev.phase === 'planning' ? 'planning' : 'running' }, [t, el('span', { class: 'mark' }), el('span', { class: 'body' }, [el('span', { class: 'what', text: what }), extra])]);
    }
    if (name === 'run_finished') {
      var st = OUTCOME_STATE[String(ev.outcome)] || 'pending';
      return el('li', { class: 'leg', 'data-state': st }, [t, el('span', { class: 'mark' }), el('span', { class: 'body' }, [
        el('span', { class: 'what', text: 'Leg ' + (item.leg || '?') + ' finished: ' + (ev.outcome || '?') }),
        ev.detail ? el('span', { class: 'detail', text: String(ev.detail) }) : null,
      ])]);
    }
    var v = VERB[name] || [name.replace(/_/g, ' '), 'pending'];
    /** @type {ElChild[]} */
    var kids = [el('span', { class: 'what', text: v[0] + ' ' }), ev.node_id !== undefined ? el('span', { class: 'node', text: String(ev.node_id) }) : null];
    if (name === 'node_retried' && ev.retries !== undefined) kids.push(' (retry ' + String(ev.retries) + ')');
    if (name === 'node_passed' || name === 'node_failed') {
      if (ev.cost_unknown) kids.push(el('span', { class: 'money', text: 'cost unknown' }));
      else if (typeof ev.cost_usd === 'number') kids.push(el('span', { class: 'money', text: RW.money(ev.cost_usd) }));
    }
    if (ev.detail) kids.push(el('span', { class: 'detail', text: String(ev.detail) }));
    return el('li', { 'data-state': v[1], 'data-event': name }, [t, el('span', { class: 'mark' }), el('span', { class: 'body' }, kids)]);
  }

  /** @param {RunPage} d */
  function timeline(d) {
    var kids = [el('h2', null, ['Timeline', el('span', { class: 'note', text: d.events_note || '' })]), legsTable(d)];
    var list = el('ol', { class: 'timeline' });
    var lastDay = '';
    /** @type {Record<string, boolean>} */
    var started = {};
    d.timeline.forEach(function (/** @type {TimelineEntry} */ item) {
      if (item.event && item.event.event === 'run_started') {
        // CONTRACT §2.3: an auto run's planning start and the start after it are one leg.
        item.continues = item.leg !== null && started[item.leg] === true;
        started[String(item.leg)] = true;
      }
      var day = RW.day(item.event && item.event.ts);
      if (day && day !== lastDay) { list.appendChild(el('li', { class: 'day', text: day })); lastDay = day; }
      list.appendChild(eventItem(item));
    });
    var last = d.legs[d.legs.length - 1];
    if (d.state === 'abandoned' && last && last.state !== 'closed') {
      list.appendChild(el('li', { class: 'dead', 'data-state': 'abandoned' }, [
        el('span', { class: 't', text: '' }), el('span', { class: 'mark' }),
        el('span', { class: 'body' }, [el('span', { class: 'what', text: 'Leg ' + last.n + ' never reported an end.' }), ' Its process is gone: no one holds the run lock.']),
      ]));
    }
    if (!d.timeline.length) list.appendChild(el('li', { class: 'day', text: 'no events' }));
    kids.push(list);
    return el('section', { class: 'panel', 'data-panel': 'timeline' }, kids);
  }

  /** @param {NodeDetail} n */
  function nodeBox(n) {
    var kids = [el('div', { class: 'id', text: n.id }), el('div', { class: 'st' }, [el('b', { text: n.state }), el('span', { class: 'c', text: n.cost_unknown ? 'cost unknown' : (typeof n.cost_usd === 'number' ? RW.money(n.cost_usd) : '') })])];
    if (n.detail) kids.push(el('div', { class: 'detail', title: n.detail, text: n.detail }));
    return el('div', { class: 'nodebox', 'data-state': n.state, 'data-node': n.id }, kids);
  }

  /**
   * Dependency depth per node; cycles and unknown ids count as depth 0.
   * @param {readonly NodeDetail[]} nodes
   * @returns {Record<string, number>}
   */
  function depths(nodes) {
    /** @type {Record<string, NodeDetail>} */
    var byId = {};
    /** @type {Record<string, number>} */
    var memo = {};
    /** @type {Record<string, boolean>} */
    var visiting = {};
    nodes.forEach(function (n) { byId[n.id] = n; });
    /**
     * @param {string} id
     * @returns {number}
     */
    function depth(id) {
      if (Object.prototype.hasOwnProperty.call(memo, id)) return /** @type {number} */ (memo[id]);
      if (visiting[id]) return 0;
      visiting[id] = true;
      var n = byId[id], best = 0;
      (n && n.depends_on || []).forEach(function (dep) {
        if (Object.prototype.hasOwnProperty.call(byId, dep)) best = Math.max(best, depth(dep) + 1);
      });
      visiting[id] = false;
      memo[id] = best;
      return best;
    }
    /** @type {Record<string, number>} */
    var out = {};
    nodes.forEach(function (n) { out[n.id] = depth(n.id); });
    return out;
  }

  /**
   * @param {HTMLElement} map
   * @param {readonly NodeDetail[]} nodes
   */
  function drawEdges(map, nodes) {
    var old = map.querySelector('svg.edges');
    if (old && old.parentNode) old.parentNode.removeChild(old);
    var ns = 'http://www.w3.org/2000/svg';
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'edges');
    svg.setAttribute('width', String(map.scrollWidth));
    svg.setAttribute('height', String(map.scrollHeight));
    var box = map.getBoundingClientRect();
    /** @type {Record<string, DOMRect>} */
    var boxes = {};
    map.querySelectorAll('.nodebox').forEach(function (b) { boxes[String(b.getAttribute('data-node'))] = b.getBoundingClientRect(); });
    nodes.forEach(function (n) {
      var to = boxes[n.id];
      (n.depends_on || []).forEach(function (dep) {
        var from = boxes[dep];
        if (!from || !to) return;
        // Parent's bottom edge to child's top edge (layers run top to bottom).
        var x1 = from.left + from.width / 2 - box.left + map.scrollLeft, y1 = from.bottom - box.top;
        var x2 = to.left + to.width / 2 - box.left + map.scrollLeft, y2 = to.top - box.top;
        var my = (y1 + y2) / 2;
        var p = document.createElementNS(ns, 'path');
        p.setAttribute('d', 'M' + x1 + ',' + y1 + ' C' + x1 + ',' + my + ' ' + x2 + ',' + my + ' ' + x2 + ',' + y2);
        svg.appendChild(p);
      });
    });
    map.insertBefore(svg, map.firstChild);
  }

  /** @param {RunPage} d */
  function nodeMap(d) {
    var legend = el('div', { class: 'legend' }, LEGEND.map(function (s) { return el('span', null, [el('i', { 'data-state': s }), s]); }));
    var total = d.nodes.length + (d.nodes_more || 0);
    var kids = [el('h2', null, ['Nodes', el('span', { class: 'note', text: total + ' node' + (total === 1 ? '' : 's') })]), legend];
    var map = el('div', { class: 'nodemap', 'data-layout': d.layout });
    if (!d.nodes.length) {
      map.appendChild(el('p', { class: 'nodemap-note', text: 'No nodes recorded yet.' }));
    } else if (d.layout === 'layers') {
      var dep = depths(d.nodes);
      /** @type {NodeDetail[][]} */
      var cols = [];
      d.nodes.forEach(function (n) {
        var k = /** @type {number} */ (dep[n.id]); // depths() answers for every node
        (cols[k] = cols[k] || []).push(n);
      });
      var layers = el('div', { class: 'layers' });
      cols.forEach(function (col, i) {
        if (!col) return;
        layers.appendChild(el('div', { class: 'layer' }, [el('div', { class: 'layer-label', text: i === 0 ? 'roots' : 'depth ' + i }), ...col.map(nodeBox)]));
      });
      map.appendChild(layers);
    } else {
      map.appendChild(el('div', { class: 'nodelist' }, d.nodes.map(nodeBox)));
      map.appendChild(el('p', { class: 'nodemap-note', text: 'The snapshot records no dependencies, so nodes are listed in graph order.' }));
    }
    kids.push(map);
    // The server sends the first nodes only (a run page stays small whatever the graph's size).
    if (d.nodes_more) kids.push(el('p', { class: 'nodemap-note', 'data-nodes-more': String(d.nodes_more), text: d.nodes_more + ' more node' + (d.nodes_more === 1 ? '' : 's') + ' not shown' }));
    return el('section', { class: 'panel', 'data-panel': 'nodes' }, kids);
  }

  /** @param {RunPage} d */
  function render(d) {
    var json = JSON.stringify(d);
    if (json === lastJson) return;
    lastJson = json;
    current = d;
    var scroll = window.scrollY;
    RW.clear(main);
    document.title = RW.printable((d.report && d.report.graph ? d.report.graph + ' · ' : '') + d.run_id + ' · runwarden');
    main.appendChild(el('p', { class: 'crumbs' }, [el('a', { href: '/', text: '← All runs' })]));
    main.appendChild(head(d));
    var body = el('div', { class: 'run-body' }, [timeline(d), nodeMap(d)]);
    main.appendChild(body);
    var map = main.querySelector('.nodemap[data-layout="layers"]');
    if (map instanceof HTMLElement) drawEdges(map, d.nodes);
    window.scrollTo(0, scroll);
  }

  /** @param {string} msg */
  function notFound(msg) {
    RW.clear(main);
    main.appendChild(el('p', { class: 'crumbs' }, [el('a', { href: '/', text: '← All runs' })]));
    main.appendChild(el('div', { class: 'notfound', 'data-error': '1' }, [el('h1', { text: 'No such run' }), el('p', { text: msg })]));
  }

  window.addEventListener('resize', function () {
    var map = main.querySelector('.nodemap[data-layout="layers"]');
    if (map instanceof HTMLElement && current) drawEdges(map, current.nodes);
  });
  // The elapsed time of an in-flight run moves on between pushes (since a
  // wall-clock timestamp, so wall clock on purpose: display only).
  setInterval(function () {
    if (!current || current.section !== 'in-flight') return;
    var dd = main.querySelector('[data-elapsed] dd');
    var start = RW.ms(current.started_at);
    if (dd && !isNaN(start)) dd.textContent = RW.duration(Date.now() - start);
  }, 1000);

  if (id === null || id === '') { notFound('The address does not name a run.'); return; }
  var runId = id;
  /**
   * Whether the server answered with its error document rather than a run.
   * @param {RunPage | ErrorBody} d
   * @returns {d is ErrorBody}
   */
  function isError(d) {
    return !!d && typeof d.error === 'object' && d.error !== null && !!d.error.code;
  }
  /** @param {RunPage | ErrorBody} d */
  function onDoc(d) {
    if (isError(d)) { lastJson = ''; current = null; notFound(d.error.message); } else render(d);
  }
  // First picture from the API; then live updates. A malformed id is final,
  // a missing run may still appear (its directory is created later).
  fetch('/api/runs/' + encodeURIComponent(runId)).then(function (r) {
    return r.json().then(function (d) { return { status: r.status, doc: d }; });
  }).then(function (x) {
    onDoc(x.doc);
    if (x.status !== 400) RW.connect('/api/events?run=' + encodeURIComponent(runId), { run: onDoc });
  }, function () {
    RW.connect('/api/events?run=' + encodeURIComponent(runId), { run: onDoc });
  });
})();
