/**
 * Browser code shared by both pages, served from /assets/common.js.
 *
 * Invariant: run data reaches the DOM only as text. `el()` sets text with
 * `textContent` and attributes with `setAttribute` on a fixed allow-list;
 * nothing here assigns `innerHTML`, so a node id or run id holding markup is
 * shown as the characters it is.
 */
export const COMMON_JS = String.raw`(function () {
  'use strict';
  var RW = {};

  /** Builds an element; 'text' is set with textContent, children appended. */
  RW.el = function (tag, props, children) {
    var e = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'text') e.textContent = String(v);
        else if (k === 'class') e.className = v;
        else if (k === 'title' || k === 'href' || k === 'id' || k === 'role' || k.indexOf('data-') === 0 || k.indexOf('aria-') === 0) e.setAttribute(k, String(v));
        else throw new Error('RW.el: attribute not allowed: ' + k);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  };

  RW.clear = function (e) { while (e.firstChild) e.removeChild(e.firstChild); };

  /** The state words, in the order the header counts them. */
  RW.TALLY_STATES = ['planning', 'running', 'abandoned', 'paused', 'passed', 'failed'];

  RW.money = function (usd, unknown) {
    if (unknown) return 'unknown';
    if (typeof usd !== 'number') return '—';
    if (usd === 0) return '$0';
    if (usd < 0.01) return '<$0.01';
    return '$' + usd.toFixed(2);
  };

  /** Milliseconds since the epoch from an RFC 3339 string, or NaN. Display only. */
  RW.ms = function (ts) {
    if (typeof ts !== 'string') return NaN;
    var t = Date.parse(ts);
    return isNaN(t) ? NaN : t;
  };

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

  RW.ago = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = Date.now() - t;
    if (d < 0) d = 0;
    if (d < 5000) return 'just now';
    return RW.duration(d) + ' ago';
  };

  function pad(n) { return (n < 10 ? '0' : '') + n; }
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

  /** A short local clock time, with the date when it is not today. */
  RW.when = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = new Date(t), now = new Date();
    var hm = pad(d.getHours()) + ':' + pad(d.getMinutes());
    if (d.toDateString() === now.toDateString()) return hm;
    var day = MONTHS[d.getMonth()] + ' ' + d.getDate();
    if (d.getFullYear() !== now.getFullYear()) day += ' ' + d.getFullYear();
    return day + ' ' + hm;
  };

  RW.clock = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = new Date(t);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  };

  RW.day = function (ts) {
    var t = RW.ms(ts);
    if (isNaN(t)) return '';
    var d = new Date(t);
    return MONTHS[d.getMonth()] + ' ' + d.getDate() + ', ' + d.getFullYear();
  };

  RW.pill = function (state) {
    return RW.el('span', { class: 'pill', 'data-state': state, text: state });
  };

  /** The compact node strip: one coloured cell per node, capped. */
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

  RW.runHref = function (id) { return '/run/' + encodeURIComponent(id); };

  /** A hint's text with its backquoted commands set as code (still text nodes only). */
  RW.hintNodes = function (text) {
    return String(text).split('\u0060').map(function (part, i) {
      return i % 2 === 1 ? RW.el('code', { text: part }) : document.createTextNode(part);
    });
  };

  /** What to say when a report names no graph. */
  RW.noGraph = function (state) {
    return state === 'planning' || state === 'running' || state === 'pending' ? 'graph not recorded yet' : 'no graph recorded';
  };

  /**
   * Opens the server-sent event stream and drives the live indicator: live
   * while messages keep arriving (the server beats every second), stale after
   * STALE_MS without one, offline while the connection is down. handlers maps
   * event names to functions of the parsed data.
   */
  RW.STALE_MS = 4000;
  RW.connect = function (url, handlers) {
    var live = document.getElementById('live');
    var text = live ? live.querySelector('.text') : null;
    var last = 0;
    var es = null;
    function show(state, label) {
      if (!live) return;
      live.setAttribute('data-state', state);
      if (text) text.textContent = label;
      document.body.classList.toggle('is-stale', state !== 'live' && last > 0);
    }
    function judge() {
      if (!es) return;
      var age = Date.now() - last;
      if (es.readyState !== 1) {
        show('offline', last ? 'offline · ' + Math.round(age / 1000) + 's' : 'connecting');
      } else if (last && age > RW.STALE_MS) {
        show('stale', 'stale · ' + Math.round(age / 1000) + 's');
      } else if (last) {
        show('live', 'live');
      }
    }
    function onAny(name) {
      return function (ev) {
        last = Date.now();
        var data = null;
        try { data = JSON.parse(ev.data); } catch (e) { return; }
        if (handlers[name]) handlers[name](data);
        judge();
      };
    }
    es = new EventSource(url);
    ['snapshot', 'patch', 'beat', 'run'].forEach(function (n) { es.addEventListener(n, onAny(n)); });
    es.onerror = function () { judge(); };
    setInterval(judge, 500);
    RW.stream = es;
    return es;
  };

  window.RW = RW;
})();
`;
