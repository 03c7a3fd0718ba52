// @ts-check
/**
 * Browser code shared by both pages, served from /assets/common.js as this
 * file's bytes. Type-checked by tsconfig.public.json against the documents
 * the server sends (src/serve/view.ts).
 *
 * Invariant: run data reaches the DOM only as text. `el()` sets text with
 * `textContent` and attributes with `setAttribute` on a fixed allow-list;
 * nothing here assigns `innerHTML`, so a node id or run id holding markup is
 * shown as the characters it is. Text and titles go through `RW.printable`
 * (the one printing rule), so a name cannot reorder or hide what the page shows.
 */

/** @typedef {import('../view.js').CardState} CardState */
/** @typedef {import('../view.js').Section} Section */
/** @typedef {import('../view.js').NodeChip} NodeChip */
/** @typedef {import('../view.js').StreamEvents} StreamEvents */
/** @typedef {import('../../contract/types.js').RunReport} RunReport */
/** @typedef {Record<string, string | number | boolean | null | undefined>} ElProps */
/** @typedef {Node | string | null | undefined | false} ElChild */

/**
 * What this script publishes as `window.RW` (a global `var`, so the other
 * scripts' `window.RW` is typed by it).
 */
var RW = (function () {
  'use strict';
  var RW = {};

  /**
   * Builds an element; 'text' is set with textContent, children appended.
   * @param {string} tag
   * @param {ElProps | null} [props]
   * @param {readonly ElChild[]} [children]
   * @returns {HTMLElement}
   */
  RW.el = function (tag, props, children) {
    var e = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') e.textContent = RW.printable(String(v));
        else if (k === 'class') e.className = String(v);
        else if (k === 'title') e.setAttribute(k, RW.printable(String(v)));
        else if (k === 'href' || k === 'id' || k === 'role' || k.indexOf('data-') === 0 || k.indexOf('aria-') === 0) e.setAttribute(k, String(v));
        else throw new Error('RW.el: attribute not allowed: ' + k);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(RW.printable(c)) : c);
    });
    return e;
  };

  /** @param {Node} e */
  RW.clear = function (e) { while (e.firstChild) e.removeChild(e.firstChild); };

  /**
   * An element the page's own HTML always has. Throws when it is missing,
   * which is what touching the null would have done, with a clearer message.
   * @param {string} id
   * @returns {HTMLElement}
   */
  RW.byId = function (id) {
    var e = document.getElementById(id);
    if (e === null) throw new Error('RW.byId: no element #' + id);
    return e;
  };

  /**
   * The first element under `root` matching `selector`, which the page's own
   * structure always has; throws like {@link RW.byId} when it is missing.
   * @param {ParentNode} root
   * @param {string} selector
   * @returns {HTMLElement}
   */
  RW.find = function (root, selector) {
    var e = root.querySelector(selector);
    if (!(e instanceof HTMLElement)) throw new Error('RW.find: no element ' + selector);
    return e;
  };

  /**
   * Every card state, in the order the header counts them, and the section
   * each belongs to. Empty here: /assets/states.js, which the server writes
   * from CARD_STATES in src/serve/view.ts, fills them in before the page's
   * own script runs.
   * @type {readonly CardState[]}
   */
  RW.CARD_STATES = [];
  /** @type {Readonly<Partial<Record<CardState, Section>>>} */
  RW.STATE_SECTION = {};
  /** Each report status word (PASS, …) and its card state (passed, …); also from states.js. @type {Readonly<Record<string, CardState>>} */
  RW.STATUS_STATE = {};
  /**
   * Text as printed everywhere else (names.ts printableText: controls and bidi
   * controls as visible escapes). states.js, which both pages load right after
   * this file, sets it to that rule itself; until then printing is refused
   * rather than done raw.
   * @type {(text: string) => string}
   */
  RW.printable = function () { throw new Error('RW.printable: /assets/states.js is not loaded'); };

  /**
   * @param {number | null | undefined} usd
   * @param {boolean} [unknown]
   */
  RW.money = function (usd, unknown) {
    if (unknown) return 'unknown';
    if (typeof usd !== 'number') return '—';
    if (usd === 0) return '$0';
    if (usd < 0.01) return '<$0.01';
    return '$' + usd.toFixed(2);
  };

  /**
   * Milliseconds since the epoch from an RFC 3339 string, or NaN. Display only.
   * @param {unknown} ts
   */
  RW.ms = function (ts) {
    if (typeof ts !== 'string') return NaN;
    var t = Date.parse(ts);
    return isNaN(t) ? NaN : t;
  };

  /** @param {number} ms */
  RW.duration = function (ms) {
    if (!(ms >= 0)) return '';
    var s = Math.floor(ms / 1000);
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60); s = s % 60;
    if (m < 60) return m + 'm ' + (s < 10 ? '0' : '') + s + 's';
    var h = Math.floor(m / 60); m = m % 60;
    if (h < 48) return h + 'h ' + (m < 10 ? '0' : '') + m + 'm';
    var d = Math.floor(h / 24); h = h % 24;
    return d + 'd ' + h + 'h';
  };

  /**
   * How long ago a wall-clock timestamp from the server was. Wall clock on
   * purpose: the timestamp is one (an event's ts, an "as of"), so only the
   * wall clock can be compared with it; a step shows, it decides nothing.
   * @param {unknown} ts
   */
  RW.ago = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = Date.now() - t;
    if (d < 0) d = 0;
    if (d < 5000) return 'just now';
    return RW.duration(d) + ' ago';
  };

  /** @param {number} n */
  function pad(n) { return (n < 10 ? '0' : '') + n; }
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

  /**
   * A short local clock time, with the date when it is not today.
   * @param {unknown} ts
   */
  RW.when = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    // Wall clock on purpose: "is it today?" is a question about the calendar (display only).
    var d = new Date(t), now = new Date();
    var hm = pad(d.getHours()) + ':' + pad(d.getMinutes());
    if (d.toDateString() === now.toDateString()) return hm;
    var day = MONTHS[d.getMonth()] + ' ' + d.getDate();
    if (d.getFullYear() !== now.getFullYear()) day += ' ' + d.getFullYear();
    return day + ' ' + hm;
  };

  /** @param {unknown} ts */
  RW.clock = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = new Date(t);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  };

  /** @param {unknown} ts */
  RW.day = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = new Date(t);
    return MONTHS[d.getMonth()] + ' ' + d.getDate() + ', ' + d.getFullYear();
  };

  /** @param {string} state */
  RW.pill = function (state) {
    return RW.el('span', { class: 'pill', 'data-state': state, text: state });
  };

  /**
   * The compact node strip: one coloured cell per node, capped.
   * @param {readonly NodeChip[] | null | undefined} nodes
   * @param {number} more
   */
  RW.strip = function (nodes, more) {
    var s = RW.el('div', { class: 'strip', 'aria-label': 'node states' });
    if (!nodes || nodes.length === 0) {
      s.appendChild(RW.el('span', { class: 'none', text: 'no nodes recorded' }));
      return s;
    }
    nodes.forEach(function (n) {
      s.appendChild(RW.el('span', { class: 'cell', 'data-state': n.state, title: n.id + ' — ' + n.state }));
    });
    if (more > 0) s.appendChild(RW.el('span', { class: 'more', text: '+' + more }));
    return s;
  };

  /** @param {string} id */
  RW.runHref = function (id) { return '/run/' + encodeURIComponent(id); };

  /**
   * A hint's text with its backquoted commands set as code (still text nodes only).
   * @param {string} text
   * @returns {Node[]}
   */
  RW.hintNodes = function (text) {
    return String(text).split('`').map(function (part, i) {
      return i % 2 === 1 ? RW.el('code', { text: part }) : document.createTextNode(part);
    });
  };

  /**
   * What to say when a report names no graph.
   * @param {string} state
   */
  RW.noGraph = function (state) {
    return state === 'planning' || state === 'running' || state === 'pending' ? 'graph not recorded yet' : 'no graph recorded';
  };

  /**
   * The open event stream, once RW.connect has opened it.
   * @type {EventSource | undefined}
   */
  RW.stream = undefined;

  /**
   * Opens the server-sent event stream and drives the live indicator: live
   * while messages keep arriving (the server beats every second), stale after
   * STALE_MS without one, offline while the connection is down. handlers maps
   * event names to functions of the parsed data.
   */
  RW.STALE_MS = 4000;
  /**
   * @param {string} url
   * @param {{ [K in keyof StreamEvents]?: (data: StreamEvents[K]) => void }} handlers
   */
  RW.connect = function (url, handlers) {
    var live = document.getElementById('live');
    var text = live ? live.querySelector('.text') : null;
    // When the last frame arrived, on the page's monotonic clock (performance.now()):
    // a wall clock stepped back must not make a dead stream look live (0 = none yet).
    var last = 0;
    /** @type {EventSource | null} */
    var es = null;
    /**
     * @param {string} state
     * @param {string} label
     */
    function show(state, label) {
      if (!live) return;
      live.setAttribute('data-state', state);
      if (text) text.textContent = label;
      document.body.classList.toggle('is-stale', state !== 'live' && last > 0);
    }
    function judge() {
      if (!es) return;
      var age = performance.now() - last;
      if (es.readyState !== 1) {
        show('offline', last ? 'offline · ' + Math.round(age / 1000) + 's' : 'connecting');
      } else if (last && age > RW.STALE_MS) {
        show('stale', 'stale · ' + Math.round(age / 1000) + 's');
      } else if (last) {
        show('live', 'live');
      }
    }
    /**
     * @param {keyof StreamEvents} name
     * @returns {(ev: MessageEvent<string>) => void}
     */
    function onAny(name) {
      return function (ev) {
        last = performance.now();
        var data = null;
        try { data = JSON.parse(ev.data); } catch (e) { return; }
        var handler = handlers[name];
        if (handler) handler(data);
        judge();
      };
    }
    var source = new EventSource(url);
    es = source;
    /** @type {(keyof StreamEvents)[]} */
    var names = ['snapshot', 'patch', 'beat', 'run'];
    names.forEach(function (n) { source.addEventListener(n, onAny(n)); });
    source.onerror = function () { judge(); };
    setInterval(judge, 500);
    RW.stream = source;
    return source;
  };

  return RW;
})();
