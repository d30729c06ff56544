// flightrec view: plain JavaScript, no dependencies. State lives in the
// URL hash (#page?from=..&to=..&types=..), so views can be bookmarked and
// the brushed time range applies to every page.
'use strict';

const $ = (sel) => document.querySelector(sel);
const main = $('#main');
const tip = $('#tip');
let summary = null;
let typesInfo = null;
let threads = null;

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat(Infinity)) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

// show replaces the page's content, skipping null parts.
function show(...kids) {
  main.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined));
}

function svgEl(tag, attrs, ...kids) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

async function api(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const r = await fetch('/api/' + path + (q.toString() ? '?' + q : ''));
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// state reads and writes the hash.
function state() {
  const h = location.hash.slice(1);
  const i = h.indexOf('?');
  const page = (i < 0 ? h : h.slice(0, i)) || 'overview';
  const params = Object.fromEntries(new URLSearchParams(i < 0 ? '' : h.slice(i + 1)));
  return { page, params };
}
function setState(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const h = '#' + page + (q.toString() ? '?' + q : '');
  if (location.hash !== h) location.hash = h;
}
function update(changes) {
  const s = state();
  setState(s.page, Object.assign(s.params, changes));
}

const fmt = {
  n: (x) => Number(x).toLocaleString('en-US'),
  bytes: (b) => b >= 1 << 30 ? (b / (1 << 30)).toFixed(1) + ' GiB' : b >= 1 << 20 ? (b / (1 << 20)).toFixed(1) + ' MiB' : b >= 1024 ? (b / 1024).toFixed(1) + ' KiB' : b + ' B',
  ns: (ns) => ns >= 1e9 ? (ns / 1e9).toFixed(3) + ' s' : ns >= 1e6 ? (ns / 1e6).toFixed(3) + ' ms' : ns >= 1e3 ? (ns / 1e3).toFixed(1) + ' µs' : ns + ' ns',
  pct: (x) => (100 * x).toFixed(x < 0.01 ? 2 : 1) + '%',
  time: (ns) => new Date(ns / 1e6).toISOString().slice(11, 23),
  value: (v, unit) => unit === 'nanoseconds' ? fmt.ns(v) : unit === 'bytes' ? fmt.bytes(v) : fmt.n(v),
};

function color(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360},60%,${60 + (h >> 9) % 15}%)`;
}

function showTip(ev, text) {
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = Math.min(ev.clientX + 12, innerWidth - 320) + 'px';
  tip.style.top = (ev.clientY + 14) + 'px';
}
function hideTip() { tip.hidden = true; }

function renderRange() {
  const { params } = state();
  const r = $('#range');
  r.textContent = '';
  if (params.from || params.to) {
    const from = Number(params.from || summary.start), to = Number(params.to || summary.end);
    r.append('Range ' + fmt.time(from) + ' – ' + fmt.time(to) + ' (' + fmt.ns(to - from) + ')',
      el('button', { id: 'clear-range', onclick: () => update({ from: '', to: '' }) }, 'clear'));
  }
}

function ready(page) {
  document.body.dataset.ready = page;
}

// ---- Overview ----

function sparkline(hist) {
  const w = 128, h = 18, max = Math.max(1, ...hist);
  const pts = hist.map((v, i) => `${(i * w / (hist.length - 1)).toFixed(1)},${(h - v * (h - 1) / max).toFixed(1)}`).join(' ');
  return svgEl('svg', { width: w, height: h, class: 'spark' }, svgEl('polyline', { points: pts, fill: 'none', stroke: '#1f6feb', 'stroke-width': 1 }));
}

async function overview() {
  const { params } = state();
  const ranged = params.from || params.to;
  const s = ranged && !summary.indexing ? await api('summary', { from: params.from, to: params.to }) : summary;
  if (s.indexing) return quickOverview(s);
  const f = s.findings;
  const span = s.end - s.start;
  const items = [];
  items.push(el('li', { class: f.dataLossEvents ? 'warn' : '' }, f.dataLossEvents ? `Data loss: ${fmt.n(f.dataLossEvents)} jdk.DataLoss events, ${fmt.bytes(f.dataLossBytes)} lost` : 'No data loss recorded.'));
  items.push(el('li', { class: f.gcPauseRatio > 0.05 ? 'warn' : '' }, `GC pauses: ${fmt.ns(f.gcPauseNanos)}, ${fmt.pct(f.gcPauseRatio)} of the recording`));
  if (f.hottestMethod) items.push(el('li', {}, 'Hottest method (CPU samples, leaf): ', el('code', {}, f.hottestMethod), ` in ${fmt.pct(f.hottestShare)} of the samples`));
  items.push(el('li', { class: f.lockWaitNanos > span / 10 ? 'warn' : '' }, `Lock and park waits: ${fmt.n(f.lockEvents)} events, ${fmt.ns(f.lockWaitNanos)} in total`));
  items.push(el('li', { class: f.truncatedShare > 0.1 ? 'warn' : '' }, `Truncated stacks: ${fmt.pct(f.truncatedShare)} of ${fmt.n(f.stackEvents)} events with a stack trace`));
  if (f.goCpuOneThread) items.push(el('li', { class: 'note' }, 'CPU samples of this Go recording all sit on one synthetic thread: the Go profiler does not say which goroutine ran (the profile preset\'s execution tracer puts them on their goroutines).'));
  const files = el('table', {}, el('tr', {}, el('th', {}, 'file'), el('th', { class: 'num' }, 'size'), el('th', { class: 'num' }, 'chunks'), el('th', {}, 'start'), el('th', { class: 'num' }, 'duration')),
    s.files.map((x) => el('tr', {}, el('td', {}, x.name), el('td', { class: 'num' }, fmt.bytes(x.size)), el('td', { class: 'num' }, x.chunks), el('td', {}, new Date(x.start / 1e6).toISOString()), el('td', { class: 'num' }, fmt.ns(x.end - x.start)))));
  const types = [...s.types].sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
  const multi = s.files.length > 1;
  const table = el('table', { id: 'types' },
    el('tr', {}, el('th', {}, 'event type'), el('th', { class: 'num' }, 'count'), ranged ? el('th', { class: 'num' }, 'in range') : null, el('th', { class: 'num' }, 'size'), multi ? s.files.map((x) => el('th', { class: 'num' }, x.name)) : null, el('th', {}, 'rate over time')),
    types.map((t) => el('tr', { 'data-type': t.name },
      el('td', {}, el('a', { href: '#events?' + new URLSearchParams({ types: t.name }) }, t.name), t.stack ? ' ' : '', t.stack ? el('a', { href: '#flame?' + new URLSearchParams({ types: t.name }), title: 'flame graph of this type' }, 'flame') : ''),
      el('td', { class: 'num' }, fmt.n(t.count)), ranged ? el('td', { class: 'num in-range' }, fmt.n(t.inRange || 0)) : null, el('td', { class: 'num' }, fmt.bytes(t.bytes)),
      multi ? t.perFile.map((c) => el('td', { class: 'num' }, fmt.n(c))) : null,
      el('td', {}, sparkline(t.hist)))));
  show(
    el('h2', {}, 'Overview'),
    files,
    el('p', { class: 'note' }, `${fmt.n(s.events)} events of ${s.types.length} types on ${fmt.n(s.threads)} threads, ${fmt.n(s.stacks)} distinct stacks; indexed in ${s.indexMillis} ms into ${fmt.bytes(s.indexBytes)}.`),
    el('h3', {}, 'Findings'), el('ul', { class: 'findings', id: 'findings' }, items),
    el('h3', {}, 'Event types'), table);
  ready('overview');
}

// quickOverview shows the counts read from the record headers while the
// index is built; start() draws the full Overview once it is ready.
function quickOverview(s) {
  const types = [...s.types].sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
  show(el('h2', {}, 'Overview'),
    el('table', {}, el('tr', {}, el('th', {}, 'file'), el('th', { class: 'num' }, 'size'), el('th', { class: 'num' }, 'chunks'), el('th', { class: 'num' }, 'duration')),
      s.files.map((x) => el('tr', {}, el('td', {}, x.name), el('td', { class: 'num' }, fmt.bytes(x.size)), el('td', { class: 'num' }, x.chunks), el('td', { class: 'num' }, fmt.ns(x.end - x.start))))),
    el('p', { class: 'note', id: 'indexing' }, `${fmt.n(s.events)} events of ${s.types.length} types; indexing… (the other pages and the findings follow)`),
    el('table', { id: 'types' }, el('tr', {}, el('th', {}, 'event type'), el('th', { class: 'num' }, 'count'), el('th', { class: 'num' }, 'size')),
      types.map((t) => el('tr', { 'data-type': t.name }, el('td', {}, t.name), el('td', { class: 'num' }, fmt.n(t.count)), el('td', { class: 'num' }, fmt.bytes(t.bytes))))));
  ready('overview-quick');
}

// ---- Flame graph ----

let flameView = null;

async function flame() {
  const { params } = state();
  const stackTypes = summary.types.filter((t) => t.stack && t.count > 0).sort((a, b) => b.count - a.count);
  if (!stackTypes.length) {
    show(el('h2', {}, 'Flame graph'), el('p', {}, 'No event type with stack traces in these recordings.'));
    ready('flame');
    return;
  }
  const cpu = stackTypes.find((t) => t.name === 'jdk.ExecutionSample');
  const sel = (params.types || (cpu || stackTypes[0]).name).split(',');
  const typeSel = el('select', { id: 'flame-types', multiple: true, size: Math.min(6, stackTypes.length) },
    stackTypes.map((t) => el('option', { value: t.name, selected: sel.includes(t.name) }, `${t.name} (${fmt.n(t.count)})`)));
  typeSel.addEventListener('change', () => update({ types: [...typeSel.selectedOptions].map((o) => o.value).join(','), weight: '' }));
  const fields = new Set();
  for (const t of typesInfo) if (sel.includes(t.name)) for (const f of t.fields) if (f.numeric && f.name !== 'duration') fields.add(f.name);
  const weightSel = el('select', { id: 'flame-weight' }, el('option', { value: 'count' }, 'count'), el('option', { value: 'duration' }, 'duration'),
    [...fields].map((f) => el('option', { value: f }, f)));
  weightSel.value = params.weight || 'count';
  weightSel.addEventListener('change', () => update({ weight: weightSel.value }));
  const threadSel = threadSelect(params.thread);
  const invert = el('input', { type: 'checkbox', id: 'flame-invert', checked: params.invert === '1' });
  invert.addEventListener('change', () => update({ invert: invert.checked ? '1' : '' }));
  const search = el('input', { type: 'search', id: 'flame-search', placeholder: 'search functions', value: params.q || '' });
  const info = el('span', { id: 'flame-info' });
  const canvas = el('canvas', { id: 'flame' });
  show(el('h2', {}, 'Flame graph'),
    el('div', { class: 'controls' }, el('label', {}, 'types ', typeSel), el('label', {}, 'weight ', weightSel), el('label', {}, 'thread ', threadSel),
      el('label', {}, invert, ' bottom-up'), search, el('button', { id: 'flame-reset', onclick: () => { flameView.zoom = null; drawFlame(); } }, 'reset zoom'), info),
    canvas);
  const data = await api('flame', { types: sel.join(','), weight: params.weight, thread: params.thread, invert: params.invert, from: params.from, to: params.to });
  const fl = data.flame;
  flameView = { fl, canvas, zoom: null, search: params.q || '', info, boxes: [] };
  search.addEventListener('input', () => { flameView.search = search.value; drawFlame(); });
  search.addEventListener('change', () => update({ q: search.value }));
  canvas.addEventListener('mousemove', (ev) => {
    const b = flameHit(ev);
    if (!b) { hideTip(); canvas.dataset.hover = ''; return; }
    canvas.dataset.hover = b.name;
    showTip(ev, `${b.name}\n${fmt.value(b.node.v, fl.unit)} (${fmt.pct(b.node.v / fl.total)}), self ${fmt.value(b.node.s, fl.unit)}`);
  });
  canvas.addEventListener('mouseleave', hideTip);
  canvas.addEventListener('click', (ev) => {
    const b = flameHit(ev);
    flameView.zoom = b ? b.node : null;
    drawFlame();
  });
  drawFlame();
  ready('flame');
}

const ROW = 17;

function depthOf(n) {
  let d = 0;
  for (const c of n.c || []) d = Math.max(d, depthOf(c));
  return d + 1;
}

function drawFlame() {
  const v = flameView;
  const { fl, canvas } = v;
  const root = v.zoom || fl.root;
  const width = Math.max(600, main.clientWidth - 30);
  const depth = Math.min(depthOf(root), 200);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = (depth + 1) * ROW * dpr;
  canvas.style.width = width + 'px';
  canvas.style.height = (depth + 1) * ROW + 'px';
  const ctx = canvas.getContext('2d');
  ctx.scale(dpr, dpr);
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  v.boxes = [];
  const needle = v.search.toLowerCase();
  let matched = 0;
  const scale = width / Math.max(root.v, 1);
  const walk = (n, x, d, inMatch) => {
    const w = n.v * scale;
    if (w < 0.5 || d > depth) return;
    const name = n.n < 0 ? 'all' : fl.names[n.n];
    const hit = needle && name.toLowerCase().includes(needle);
    if (hit && !inMatch) matched += n.v;
    ctx.fillStyle = needle && !hit ? '#ddd' : hit ? '#e8a' : color(name);
    ctx.fillRect(x, d * ROW, Math.max(w - 0.5, 0.5), ROW - 1);
    if (w > 30) {
      ctx.fillStyle = '#000';
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, d * ROW, w - 2, ROW);
      ctx.clip();
      ctx.fillText(name, x + 3, d * ROW + ROW / 2);
      ctx.restore();
    }
    v.boxes.push({ x, y: d * ROW, w, node: n, name });
    let cx = x;
    for (const c of n.c || []) {
      walk(c, cx, d + 1, inMatch || hit);
      cx += c.v * scale;
    }
  };
  walk(root, 0, 0, false);
  canvas.dataset.total = fl.total;
  canvas.dataset.nodes = v.boxes.length;
  canvas.dataset.events = fl.events;
  v.info.textContent = `${fmt.n(fl.events)} events, total ${fmt.value(fl.total, fl.unit)}` + (v.zoom ? `, zoomed to ${fmt.pct(root.v / fl.total)}` : '') +
    (needle ? `; "${v.search}" matches ${fmt.pct(matched / Math.max(fl.total, 1))}` : '') + (fl.pruned ? `; ${fmt.n(fl.pruned)} nodes under ${fmt.pct(1 / 2000)} left out` : '');
}

function flameHit(ev) {
  const r = flameView.canvas.getBoundingClientRect();
  const x = ev.clientX - r.left, y = ev.clientY - r.top;
  for (const b of flameView.boxes) if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW) return b;
  return null;
}

function threadSelect(cur) {
  const s = el('select', { id: 'thread' }, el('option', { value: '' }, 'all threads'),
    threads.map((name, i) => i === 0 ? null : el('option', { value: i }, name || '(unnamed)')));
  s.value = cur || '';
  s.addEventListener('change', () => update({ thread: s.value }));
  return s;
}

// ---- Timeline ----

const LANE = 14, COUNTER_H = 60, LABEL_W = 180;

async function timeline() {
  const { params } = state();
  const width = Math.max(700, main.clientWidth - 30);
  const px = width - LABEL_W;
  const data = await api('lanes', { from: params.from, to: params.to, px });
  data.lanes = data.lanes || [];
  const canvas = el('canvas', { id: 'timeline' });
  const counters = (data.counters || []).filter((c) => c.points && c.points.length);
  const chartH = Math.max(COUNTER_H, counters.length * 12 + 8); // room for every label
  const height = counters.length ? chartH + 10 : 0;
  const dpr = window.devicePixelRatio || 1;
  const h = height + data.lanes.length * LANE + 20;
  canvas.width = width * dpr;
  canvas.height = h * dpr;
  canvas.style.width = width + 'px';
  canvas.style.height = h + 'px';
  show(el('h2', {}, 'Timeline'),
    el('p', { class: 'note' }, `${fmt.time(data.from)} – ${fmt.time(data.to)} (${fmt.ns(data.to - data.from)}); a lane per thread (the ${data.lanes.length} busiest), timed events as spans, others as ticks. Drag to select a time range: it filters every page.`),
    el('div', { class: 'controls', id: 'legend' }, counters.map((c) => el('span', {}, c.name + ' ↑' + (c.name.includes('CPU') ? fmt.pct(c.max) : fmt.n(Math.round(c.max)))))),
    canvas);
  const ctx = canvas.getContext('2d');
  ctx.scale(dpr, dpr);
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  counters.forEach((c, i) => {
    ctx.strokeStyle = color(c.name);
    ctx.beginPath();
    c.points.forEach(([x, y], j) => {
      const yy = chartH - y / (c.max || 1) * (chartH - 4);
      if (j === 0) ctx.moveTo(LABEL_W + x, yy); else ctx.lineTo(LABEL_W + x, yy);
    });
    ctx.stroke();
    ctx.fillStyle = color(c.name);
    ctx.fillText(c.name.replace(/^jdk\./, ''), 4, 8 + i * 12);
  });
  data.lanes.forEach((l, i) => {
    const y = height + i * LANE;
    ctx.fillStyle = i % 2 ? '#fafafa' : '#f0f2f5';
    ctx.fillRect(LABEL_W, y, px, LANE);
    ctx.fillStyle = '#222';
    ctx.fillText((l.name || '(unnamed)').slice(0, 28), 4, y + LANE / 2);
    for (const [a, b, t] of l.spans || []) {
      ctx.fillStyle = color(data.types[t]);
      ctx.fillRect(LABEL_W + a, y + 1, Math.max(b - a, 1), LANE - 2);
    }
    ctx.fillStyle = '#333';
    for (const [x] of l.ticks || []) ctx.fillRect(LABEL_W + x, y + LANE - 4, 1, 3);
  });
  canvas.dataset.lanes = data.lanes.length;
  canvas.dataset.counters = counters.length;
  canvas.dataset.spans = data.lanes.reduce((a, l) => a + (l.spans || []).length, 0);
  const toTime = (x) => Math.round(data.from + (x - LABEL_W) / px * (data.to - data.from));
  let start = null;
  const overlay = () => canvas.getBoundingClientRect();
  canvas.addEventListener('mousedown', (ev) => { start = ev.clientX - overlay().left; });
  canvas.addEventListener('mousemove', (ev) => {
    const x = ev.clientX - overlay().left, y = ev.clientY - overlay().top;
    const lane = data.lanes[Math.floor((y - height) / LANE)];
    if (x > LABEL_W && lane) {
      const span = (lane.spans || []).find(([a, b]) => x - LABEL_W >= a && x - LABEL_W < b);
      showTip(ev, `${lane.name}\n${fmt.time(toTime(x))}` + (span ? `\n${data.types[span[2]]}` : '') + `\n${fmt.n(lane.events)} events, busy ${fmt.pct(Math.min(lane.busy, 1))}`);
    } else hideTip();
  });
  canvas.addEventListener('mouseleave', hideTip);
  canvas.addEventListener('mouseup', (ev) => {
    if (start === null) return;
    const end = ev.clientX - overlay().left;
    const a = Math.max(Math.min(start, end), LABEL_W), b = Math.min(Math.max(start, end), width);
    start = null;
    if (b - a < 3) return;
    update({ from: toTime(a), to: toTime(b) });
  });
  ready('timeline');
}

// ---- Event browser ----

async function events() {
  const { params } = state();
  const cats = {};
  for (const t of typesInfo) {
    let node = cats;
    for (const c of t.category || ['Uncategorized']) node = node[c] = node[c] || {};
    (node[''] = node[''] || []).push(t);
  }
  const type = params.types ? params.types.split(',')[0] : [...typesInfo].sort((a, b) => b.count - a.count)[0].name;
  const tree = (node) => el('ul', {}, Object.keys(node).sort().map((k) => k === '' ?
    node[k].map((t) => el('li', {}, el('a', { class: t.name === type ? 'sel' : '', 'data-type': t.name, onclick: () => update({ types: t.name, offset: '', sort: '', q: '' }) }, `${t.label || t.name} (${fmt.n(t.count)})`))) :
    el('li', {}, k, tree(node[k]))));
  const offset = Number(params.offset || 0), limit = 100;
  const page = await api('events', { types: type, from: params.from, to: params.to, thread: params.thread, offset, limit, sort: params.sort, desc: params.desc, q: params.q });
  const search = el('input', { type: 'search', id: 'event-search', placeholder: 'filter rows', value: params.q || '' });
  search.addEventListener('change', () => update({ q: search.value, offset: '' }));
  const detail = el('div', { class: 'detail', id: 'detail' });
  const head = el('tr', {}, page.fields.map((f) => el('th', {
    class: 'sortable' + (f.numeric ? ' num' : ''), title: f.label || f.name,
    onclick: () => update({ sort: f.name, desc: params.sort === f.name && params.desc !== '1' ? '1' : '', offset: '' }),
  }, f.name + (params.sort === f.name ? (params.desc === '1' ? ' ▼' : ' ▲') : ''))));
  const rows = (page.rows || []).map((r) => {
    const tr = el('tr', { class: 'row', 'data-id': r.id }, r.cells.map((c, i) => el('td', { class: page.fields[i].numeric ? 'num' : '' }, c)));
    tr.addEventListener('click', async () => {
      for (const x of main.querySelectorAll('tr.sel')) x.classList.remove('sel');
      tr.classList.add('sel');
      const d = await api('event', { id: r.id });
      detail.replaceChildren(el('strong', {}, d.type), ` ${d.file} @${d.offset}, thread ${d.thread || '-'}`,
        el('table', {}, d.fields.map((f, i) => el('tr', {}, el('th', {}, f.label || f.name), el('td', {}, d.values[i])))),
        d.stack.length ? el('pre', { id: 'detail-stack' }, d.stack.join('\n') + (d.truncated ? '\n…' : '')) : el('p', { class: 'note' }, 'no stack trace'));
    });
    return tr;
  });
  const pager = el('span', {}, `${fmt.n(page.total)} events${page.capped ? ' (search and sorting looked at the first 1,048,576)' : ''}; rows ${page.total ? offset + 1 : 0}–${offset + (page.rows || []).length} `,
    el('button', { disabled: offset === 0, onclick: () => update({ offset: Math.max(0, offset - limit) }) }, '‹ prev'),
    el('button', { disabled: offset + limit >= page.total, onclick: () => update({ offset: offset + limit }) }, 'next ›'));
  show(el('h2', {}, 'Event browser'),
    el('div', { class: 'split' }, el('div', { class: 'tree', id: 'type-tree' }, tree(cats)),
      el('div', { class: 'grow' }, el('div', { class: 'controls' }, el('strong', {}, type), search, el('label', {}, 'thread ', threadSelect(params.thread)), pager),
        el('div', { class: 'tablewrap' }, el('table', { id: 'event-table', 'data-rows': rows.length }, head, rows)), detail)));
  ready('events');
}

// ---- Flow ----

async function flowPage() {
  const { params } = state();
  const data = await api('flow/traces');
  const list = el('table', { id: 'traces' }, el('tr', {}, el('th', { class: 'num' }, '#'), el('th', {}, 'tag'), el('th', { class: 'num' }, 'events'), el('th', {}, 'nodes'), el('th', {}, 'start'), el('th', { class: 'num' }, 'duration')),
    data.traces.slice(0, 500).map((t) => el('tr', { class: 'row' + (String(t.index) === params.trace ? ' sel' : ''), onclick: () => update({ trace: t.index }) },
      el('td', { class: 'num' }, t.index), el('td', {}, t.tag + (t.incomplete ? ' (incomplete)' : '')), el('td', { class: 'num' }, t.events), el('td', {}, t.nodes.join(', ')),
      el('td', {}, fmt.time(t.start)), el('td', { class: 'num' }, fmt.ns(t.duration)))));
  const m = data.merge;
  const offs = (m.nodes || []).map((n, i) => `${n}: ${fmt.ns(m.offsets[i])}`).join(', ');
  const diagram = el('div', { id: 'sequence', class: 'grow scroll' });
  show(el('h2', {}, 'Flow'),
    m.error ? el('p', { class: 'err' }, m.error) : null,
    el('p', { class: 'note' }, `${fmt.n(m.total || 0)} traces merged from ${(m.nodes || []).length} nodes; clock offsets ${offs || '-'}.`),
    el('div', { class: 'split' }, el('div', { class: 'tablewrap half' }, list), diagram));
  const i = params.trace !== undefined ? Number(params.trace) : (data.traces.length ? 0 : -1);
  if (i >= 0) diagram.append(sequence(await api('flow/trace', { i })));
  ready('flow');
}

// sequence draws a trace: a lifeline per node, events top to bottom in
// causal order, message arrows from send to receipt, handling as boxes.
function sequence(t) {
  const nodes = [...new Set(t.events.map((e) => e.node))];
  const colW = 180, rowH = 22, top = 40;
  const x = (n) => 80 + nodes.indexOf(n) * colW;
  const h = top + t.events.length * rowH + 20;
  const svg = svgEl('svg', { width: 80 + nodes.length * colW, height: h, id: 'sequence-svg', 'data-events': t.events.length });
  svg.append(svgEl('defs', {}, svgEl('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, svgEl('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#1f3a5f' }))));
  for (const n of nodes) {
    svg.append(svgEl('text', { x: x(n), y: 20, 'text-anchor': 'middle', 'font-weight': 'bold' }, n));
    svg.append(svgEl('line', { x1: x(n), y1: 28, x2: x(n), y2: h - 10, stroke: '#999', 'stroke-dasharray': '4 3' }));
  }
  const open = {};
  const sends = {};
  let arrows = 0;
  t.events.forEach((e, i) => {
    const y = top + i * rowH;
    if (e.type === 'Handling') open[e.node + e.payload] = y;
    if (e.type === 'MsgProcEnd' && open[e.node + e.payload] !== undefined) {
      const y0 = open[e.node + e.payload];
      svg.append(svgEl('rect', { x: x(e.node) - 6, y: y0, width: 12, height: y - y0, fill: '#cfe3ff', stroke: '#1f3a5f' }));
    }
    svg.append(svgEl('circle', { cx: x(e.node), cy: y, r: 3, fill: '#1f3a5f' }));
    svg.append(svgEl('text', { x: x(e.node) + 10, y: y + 4 }, `${e.type} ${e.payload || ''} [${e.thread}] +${fmt.ns(e.wallNs - t.events[0].wallNs)}`));
    if (e.type === 'ODStarted' || e.type === 'Retransmission') (sends[e.payload] = sends[e.payload] || []).push({ node: e.node, y });
    if (e.type === 'Incoming') {
      for (const s of sends[e.payload] || []) {
        if (s.node === e.node) continue;
        svg.append(svgEl('line', { x1: x(s.node), y1: s.y, x2: x(e.node), y2: y, stroke: '#1f3a5f', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)', class: 'msg' }));
        arrows++;
      }
    }
  });
  svg.dataset.arrows = arrows;
  return svg;
}

// ---- router ----

const pages = { overview, flame, timeline, events, flow: flowPage };

async function route() {
  const { page } = state();
  delete document.body.dataset.ready;
  // The time range and thread carry over to every page.
  const keep = new URLSearchParams();
  for (const k of ['from', 'to', 'thread']) if (state().params[k]) keep.set(k, state().params[k]);
  for (const a of document.querySelectorAll('header nav a')) {
    const name = a.id.slice(4);
    a.classList.toggle('active', name === page);
    a.href = '#' + name + (keep.toString() ? '?' + keep : '');
  }
  renderRange();
  hideTip();
  try {
    await (pages[page] || overview)();
  } catch (err) {
    show(el('p', { class: 'err' }, String(err.message || err)));
    document.body.dataset.ready = 'error';
  }
}

async function start() {
  summary = await api('summary');
  if (summary.indexing) {
    // Show the counts at once; the rest waits for the index.
    if (state().page === 'overview' && !state().params.from) quickOverview(summary);
    else main.replaceChildren(el('p', { id: 'indexing' }, 'Indexing…'));
    while (summary.indexing) {
      await new Promise((r) => setTimeout(r, 200));
      summary = await api('summary');
    }
  }
  [typesInfo, threads] = await Promise.all([api('types'), api('threads')]);
  if (summary.types.some((t) => t.name.startsWith('flightrec.flow.'))) $('#nav-flow').hidden = false;
  addEventListener('hashchange', route);
  await route();
}

start();
