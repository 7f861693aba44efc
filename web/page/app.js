// SPDX-License-Identifier: MIT
// volseg web's page: one WebSocket to the job (docs/web.md, "The protocol").
// What the page shows comes from the session's `state`, which every page of
// the job receives, so a second browser sees the same session.
'use strict';

const $ = (id) => document.getElementById(id);
let socket = null, nextId = 1, state = null, histogram = null, range = null, hasMask = false;
let view = null, slices = null, objectShown = null;
// The coarse surface's budget, which the view sets by its renderer (a GPU's, or a software one).
let TRIANGLES = 100000, SIDE = 128;
window.volsegState = null;

// --- the histogram's counts, as the job counts (app/session/src/threshold.cpp) ---
// The bins' edges and Otsu's threshold come with the histogram from the job
// (the session computes them as segment does): the page only draws.
function edge(h, i) { return h.edges[i]; }
// The largest double below x (C's nextafter(x, -inf)).
function below(x) {
  if (x === 0) return -Number.MIN_VALUE;
  const f = new Float64Array([x]), b = new BigInt64Array(f.buffer);
  b[0] += x > 0 ? -1n : 1n;
  return f[0];
}
function belowEdge(h, e) { return (h.integers || e >= h.hi || e <= h.lo) ? e : below(e); }
function countBetween(h, lo, hi) {
  let voxels = 0, exact = true;
  if (Number.isNaN(lo) || Number.isNaN(hi) || lo > hi) return {voxels, exact};
  if ((h.below > 0 && lo < h.lo) || (h.above > 0 && hi > h.hi)) exact = false;
  for (let i = 0; i < h.bins && i < h.counts.length; ++i) {
    const count = h.counts[i];
    if (count === 0) continue;
    if (h.integers) {
      const value = h.lo + 0.5 + i;
      if (lo <= value && value <= hi) voxels += count;
      continue;
    }
    const a = edge(h, i), b = edge(h, i + 1), last = i === h.bins - 1;
    const inside = a >= lo && b <= hi, outside = a >= hi || (last ? b < lo : b <= lo);
    if (inside) voxels += count;
    else if (!outside) {
      const f = b > a ? Math.min(Math.max((Math.min(b, hi) - Math.max(a, lo)) / (b - a), 0), 1) : 1;
      voxels += f * count;
      exact = false;
    }
  }
  return {voxels, exact};
}
function countInRange(h, lo, hi) {
  if (!h.integers) {
    const b = Math.round((hi - h.lo) / ((h.hi - h.lo) / h.bins));
    if (b > 0 && b < h.bins) {
      const e = edge(h, b);
      if (hi === belowEdge(h, e)) return countBetween(h, lo, e);
    }
  }
  return countBetween(h, lo, hi);
}
// A range of whole bins a..b (inclusive) as thresholds: integers for integer
// bins; otherwise lo on an edge and hi just below one, so segment counts the same.
function binsToRange(h, a, b) {
  if (h.integers) return [edge(h, a) + 0.5, edge(h, b + 1) - 0.5];
  return [edge(h, a), belowEdge(h, edge(h, b + 1))];
}
function binOf(h, v) { return Math.min(h.bins - 1, Math.max(0, Math.floor((v - h.lo) / (h.hi - h.lo) * h.bins))); }

// --- the connection ---
function send(message) {
  message.id = nextId++;
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  return message.id;
}
function showError(text) { $('error-text').textContent = text; $('error').classList.remove('hidden'); }
function setPageState(s) { document.body.dataset.state = s; $('status').textContent = s; }

function connect() {
  const url = new URL('ws', location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  socket = new WebSocket(url);
  socket.binaryType = 'arraybuffer';
  socket.onopen = () => send({type: 'hello'});
  socket.onclose = () => {
    setPageState('closed');
    showError('The job has ended or the connection was lost: start it again and open the address it prints.');
    for (const b of document.querySelectorAll('button')) if (b.id !== 'error-close') b.disabled = true;
  };
  socket.onmessage = (event) => {
    if (typeof event.data !== 'string') return binary(event.data);
    const m = JSON.parse(event.data);
    if (m.type === 'state') onState(m.state);
    else if (m.type === 'progress') onProgress(m);
    else if (m.type === 'error') showError((m.request ? m.request + ': ' : '') + m.message);
    else if (m.type === 'reply') onReply(m);
  };
}

function binary(buffer) {
  const n = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, n)));
  const payload = buffer.slice(4 + n);
  if (header.type === 'surface' && view) view.setSurface(header, payload);
  else if (header.type === 'frame' && view) view.setFrame(header, payload);
  else if (header.type === 'slices' && slices) slices.setSlices(header, payload);
}

// --- the session's state ---
function stem(path) {
  const name = path.split('/').pop();
  const dot = name.indexOf('.');
  return path.slice(0, path.length - name.length) + (dot > 0 ? name.slice(0, dot) : name);
}

function onState(s) {
  // A broadcast whose table has not changed leaves it out: the table is
  // the one this page has (or, should it have none, a hello brings it).
  if (s.label && s.label.table_kept) {
    if (state && state.label && state.label.table) {
      s.label.table = state.label.table;
    } else {
      send({type: 'hello'});
      return;
    }
  }
  const opened = s.open && (!state || !state.open || state.open.pyramid !== s.open.pyramid ||
                            state.open.path !== s.open.path);
  const segmented = s.segment && (!state || !state.segment || state.segment.output !== s.segment.output ||
                                  state.segment.seconds !== s.segment.seconds);
  const labelled = s.label && (!state || !state.label || state.label.seconds !== s.label.seconds ||
                               state.label.edits !== s.label.edits || state.label.undone !== s.label.undone);
  state = s;
  window.volsegState = s;
  $('file-name').textContent = s.open ? s.open.path : s.file;
  $('ranks').textContent = s.ranks + (s.ranks === 1 ? ' rank' : ' ranks');
  setPageState(s.busy ? 'busy' : 'ready');
  $('cancel-btn').disabled = !s.busy;
  $('segment-btn').disabled = !!s.busy || !s.open;
  $('label-btn').disabled = !!s.busy || !s.segment;
  $('split-apply').disabled = !!s.busy || !splitShown || splitShown.parts.length < 2;
  for (const b of document.querySelectorAll('button.split-btn, button.delete-btn')) b.disabled = !!s.busy;
  $('edit-merge').disabled = !!s.busy || mergePicked.size < 2;
  $('edit-undo').disabled = !!s.busy || !(s.label && s.label.edits > 0);
  $('edit-redo').disabled = !!s.busy || !(s.label && s.label.undone > 0);
  $('edit-save').disabled = !!s.busy || !(s.label && s.label.edits > 0);
  $('seed-split').disabled = !!s.busy || !slices || slices.seeds.length < 2;
  $('open-btn').disabled = !!s.busy;
  $('command').textContent = s.command.length ? s.command.join('\n') : '(segment to see the command that redoes it)';
  if (s.last_error && s.busy === null && !opened) showError(s.last_error.request + ': ' + s.last_error.message);
  if (opened) onOpened(s.open);
  hasMask = !!s.segment;
  if (view) view.setHasMask(hasMask);
  if (segmented) onSegmented(s.segment);
  if (!s.segment) $('segment-result').textContent = '';
  if (labelled) onLabelled(s.label);
  if (!s.label) { table = []; renderTable(); $('label-result').textContent = ''; }
  if (pendingView) applyLinkView(s);
}

function onOpened(o) {
  const md = $('metadata');
  md.replaceChildren();
  const rows = [['format', o.format + ' (' + o.backend + ')'], ['dims', o.dims.slice().reverse().join(' × ') + ' (x y z)'],
                ['type', o.dtype], ['spacing', o.spacing.join(', ')], ['range', o.range.map(fmt).join(' … ')],
                ['voxels', o.valid.toLocaleString() + ' valid of ' + o.voxels.toLocaleString()]];
  if (o.steps !== undefined) rows.push(['step', o.step + ' of ' + o.steps]);
  for (const [k, v] of rows) {
    const dt = document.createElement('dt'), dd = document.createElement('dd');
    dt.textContent = k; dd.textContent = v; md.append(dt, dd);
  }
  const select = $('variable');
  select.replaceChildren();
  for (const v of o.variables || []) {
    const name = v.split('(')[0].trim(), option = document.createElement('option');
    option.value = name; option.textContent = v; option.selected = name === o.variable;
    select.append(option);
  }
  $('step-row').classList.toggle('hidden', o.steps === undefined);
  if (o.steps !== undefined) { $('step').max = o.steps - 1; $('step').value = o.step; }
  $('expr').value = o.expr || '';
  $('where').value = o.where || '';
  histogram = o.histogram;
  const start = binOf(histogram, histogram.otsu);
  range = binsToRange(histogram, start, histogram.bins - 1);
  $('segment-output').value = stem(o.path) + '-mask.nc';
  $('label-output').value = stem(o.path) + '-labels.nc';
  showRange();
  drawHistogram();
  if (view) { view.setColours(o.colours); view.reset(); view.setBand(range[0], range[1]); }
  if (slices) { slices.full = o.dims.slice(); slices.seeds = []; }
  showSeeds();
  if (!state.segment) send({type: 'surface', lo: range[0], hi: range[1], max_triangles: TRIANGLES, max_side: SIDE});
  if (slices) slices.request();
}

function onSegmented(s) {
  $('segment-result').textContent = `${s.in_range.toLocaleString()} voxels in [${fmt(s.lo)}, ${fmt(s.hi)}]` +
      (s.operators ? `, then ${s.operators}\n` : '\n') +
      `${s.seconds.toFixed(2)} s on ${s.ranks.length} ranks → ${s.output}`;
  range = [s.lo, s.hi];
  showRange();
  drawHistogram();
  objectShown = null;
  if (view) { view.setHasMask(true); send({type: 'surface', max_triangles: TRIANGLES, max_side: SIDE}); }
  if (slices) slices.request();
}

function onReply(m) {
  if (m.request === 'segment') finishProgress();
  if (m.request === 'split') onSplit(m.data);
  if (m.request === 'edit') onEdit(m.data);
}

// --- the histogram and its range ---
function fmt(v) { return Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(4) : +v.toPrecision(7) + ''; }
function showRange() {
  $('lo').value = range[0];
  $('hi').value = range[1];
  const c = countInRange(histogram, range[0], range[1]);
  $('count').textContent = (c.exact ? '' : '≈ ') + Math.round(c.voxels).toLocaleString() + ' voxels in range';
}

function drawHistogram() {
  const canvas = $('histogram'), ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== w * ratio) { canvas.width = w * ratio; canvas.height = h * ratio; }
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  if (!histogram) return;
  const top = Math.log10(Math.max(...histogram.counts) + 1), bins = histogram.bins;
  const a = binOf(histogram, range[0]), b = binOf(histogram, range[1]);
  g.fillStyle = 'rgba(242,89,58,0.25)';
  g.fillRect(a / bins * w, 0, (b - a + 1) / bins * w, h);
  for (let i = 0; i < bins; ++i) {
    const c = histogram.counts[i];
    if (!c) continue;
    const y = Math.log10(c + 1) / top * (h - 14);
    g.fillStyle = i >= a && i <= b ? '#f2593a' : '#8a94b8';
    g.fillRect(i / bins * w, h - 12 - y, Math.max(1, w / bins), y);
  }
  g.fillStyle = '#9aa3c0';
  g.font = '10px sans-serif';
  g.fillText(fmt(histogram.lo + (histogram.integers ? 0.5 : 0)), 2, h - 2);
  const right = fmt(histogram.hi - (histogram.integers ? 0.5 : 0));
  g.fillText(right, w - g.measureText(right).width - 2, h - 2);
  g.fillText('log count', 2, 10);
}

function histogramDrag() {
  const canvas = $('histogram');
  let from = null;
  const binAt = (e) => {
    const r = canvas.getBoundingClientRect();
    return Math.min(histogram.bins - 1, Math.max(0, Math.floor((e.clientX - r.left) / r.width * histogram.bins)));
  };
  canvas.addEventListener('pointerdown', (e) => {
    if (!histogram) return;
    from = binAt(e);
    if (canvas.setPointerCapture && e.pointerId !== undefined) try { canvas.setPointerCapture(e.pointerId); } catch (_) { /* synthetic */ }
    range = binsToRange(histogram, from, from);
    showRange(); drawHistogram();
  });
  canvas.addEventListener('pointermove', (e) => {
    if (from === null) return;
    const to = binAt(e);
    range = binsToRange(histogram, Math.min(from, to), Math.max(from, to));
    showRange(); drawHistogram();
  });
  const end = () => {
    if (from === null) return;
    from = null;
    bandChanged();
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);
}

function bandChanged() {
  if (view) view.setBand(range[0], range[1]);
  if (!hasMask) send({type: 'surface', lo: range[0], hi: range[1], max_triangles: TRIANGLES, max_side: SIDE});
}

function rangeInputs() {
  for (const id of ['lo', 'hi']) {
    $(id).addEventListener('change', () => {
      const lo = parseFloat($('lo').value), hi = parseFloat($('hi').value);
      if (!(lo <= hi)) { showError('lo must be at most hi'); return; }
      range = [lo, hi];
      showRange(); drawHistogram(); bandChanged();
    });
  }
}

// --- segment, label and their progress ---
function onProgress(m) {
  const box = $('progress'), ranks = m.units.length;
  while (box.children.length > ranks) box.lastChild.remove();
  while (box.children.length < ranks) {
    const bar = document.createElement('div'), fill = document.createElement('div');
    bar.className = 'rank-bar'; bar.title = 'rank ' + box.children.length; bar.append(fill); box.append(bar);
  }
  const share = Math.max(1, m.total / ranks);
  m.units.forEach((u, r) => { box.children[r].firstChild.style.width = Math.min(100, 100 * u / share) + '%'; });
}
function finishProgress() {
  for (const bar of $('progress').children) bar.firstChild.style.width = '100%';
}

// --- the object table ---
let table = [], sortKey = 'voxels', sortUp = false, page = 0;
const pageRows = 200;
function sortValue(row, key) {
  if (key === 'cx') return row.centroid[0];
  if (key === 'cy') return row.centroid[1];
  if (key === 'cz') return row.centroid[2];
  if (key === 'box') return (row.box[1][0] - row.box[0][0] + 1) * (row.box[1][1] - row.box[0][1] + 1) *
                            (row.box[1][2] - row.box[0][2] + 1);
  return row[key];
}
function onLabelled(l) {
  $('label-result').textContent = `${l.objects.toLocaleString()} objects (${l.label_type}, ${l.connectivity}-connected), ` +
      `${l.seconds.toFixed(2)} s → ${l.output}` + (l.table_truncated ? `\ntable: the ${l.table.length} largest` : '');
  table = l.table.slice();
  page = 0;
  sortTable();
  $('journal-link').classList.toggle('hidden', !l.journal);
  if (slices) slices.request();  // the planes show the (edited) labels
}
function sortTable() {
  table.sort((a, b) => { const d = sortValue(a, sortKey) - sortValue(b, sortKey); return (sortUp ? d : -d) || a.id - b.id; });
  for (const th of document.querySelectorAll('#objects th')) {
    th.classList.toggle('sorted', th.dataset.key === sortKey);
    th.classList.toggle('up', th.dataset.key === sortKey && sortUp);
  }
  renderTable();
}
function renderTable() {
  const body = document.querySelector('#objects tbody');
  body.replaceChildren();
  const pages = Math.max(1, Math.ceil(table.length / pageRows));
  page = Math.min(page, pages - 1);
  $('page-info').textContent = table.length ? `${page + 1} / ${pages}` : '';
  $('objects-title').textContent = table.length ? `Objects (${table.length.toLocaleString()})` : 'Objects';
  for (const row of table.slice(page * pageRows, (page + 1) * pageRows)) {
    const tr = document.createElement('tr');
    tr.dataset.id = row.id;
    if (row.id === objectShown) tr.className = 'chosen';
    const box = `${row.box[0].join(',')} – ${row.box[1].join(',')}`;
    for (const v of [row.id, row.voxels.toLocaleString(), row.centroid[0].toFixed(1), row.centroid[1].toFixed(1),
                     row.centroid[2].toFixed(1), box, row.border ? 'yes' : '']) {
      const td = document.createElement('td'); td.textContent = v; tr.append(td);
    }
    const td = document.createElement('td'), button = document.createElement('button');
    const pick = document.createElement('input');
    pick.type = 'checkbox'; pick.className = 'merge-pick'; pick.dataset.id = row.id;
    pick.title = 'Tick two or more objects, then Merge';
    pick.checked = mergePicked.has(row.id);
    td.append(pick, ' ');
    button.className = 'split-btn'; button.textContent = 'Split'; button.dataset.id = row.id;
    button.title = 'Preview the watershed split of this object (volseg edit\'s split), then apply it';
    button.disabled = !!(state && state.busy);
    const remove = document.createElement('button');
    remove.className = 'delete-btn'; remove.textContent = 'Delete'; remove.dataset.id = row.id;
    remove.title = 'Delete this object (volseg edit\'s delete: its voxels become background)';
    remove.disabled = button.disabled;
    td.append(button, ' ', remove); tr.append(td);
    body.append(tr);
  }
}
function tableEvents() {
  for (const th of document.querySelectorAll('#objects th'))
    th.addEventListener('click', () => {
      if (sortKey === th.dataset.key) sortUp = !sortUp; else { sortKey = th.dataset.key; sortUp = th.dataset.key === 'id'; }
      sortTable();
    });
  document.querySelector('#objects tbody').addEventListener('click', (e) => {
    if (e.target.classList.contains('split-btn')) { askSplit(Number(e.target.dataset.id), false); return; }
    if (e.target.classList.contains('delete-btn')) { askEdit({op: 'delete', ids: [Number(e.target.dataset.id)]}); return; }
    if (e.target.classList.contains('merge-pick')) {
      const id = Number(e.target.dataset.id);
      if (e.target.checked) mergePicked.add(id); else mergePicked.delete(id);
      $('edit-merge').disabled = !!(state && state.busy) || mergePicked.size < 2;
      return;
    }
    const tr = e.target.closest('tr');
    if (!tr) return;
    objectShown = Number(tr.dataset.id);
    $('paint-id').value = objectShown;
    send({type: 'surface', object: objectShown, max_triangles: TRIANGLES, max_side: SIDE});
    $('show-all').disabled = false;
    renderTable();
  });
  $('show-all').addEventListener('click', () => {
    objectShown = null; $('show-all').disabled = true; renderTable();
    send(hasMask ? {type: 'surface', max_triangles: TRIANGLES, max_side: SIDE}
                 : {type: 'surface', lo: range[0], hi: range[1], max_triangles: TRIANGLES, max_side: SIDE});
  });
  $('split-apply').addEventListener('click', () => {
    if (!splitShown) return;
    const m = {type: 'split', object: splitShown.object, apply: true, base: state.label ? (state.label.edits || 0) : 0};
    if (splitShown.edit.seeds) m.seeds = splitShown.edit.seeds; else m.h = splitShown.edit.h;
    send(m);
  });
  $('edit-merge').addEventListener('click', () => {
    const ids = [...mergePicked].sort((a, b) => a - b);
    mergePicked.clear();
    askEdit({op: 'merge', ids});
  });
  $('edit-undo').addEventListener('click', () => askEdit({op: 'undo'}));
  $('edit-redo').addEventListener('click', () => askEdit({op: 'redo'}));
  $('edit-save').addEventListener('click', () => askEdit({op: 'save'}));
  $('split-cancel').addEventListener('click', () => { splitShown = null; $('split-box').classList.add('hidden'); });
  $('page-prev').addEventListener('click', () => { page = Math.max(0, page - 1); renderTable(); });
  $('page-next').addEventListener('click', () => { page += 1; renderTable(); });
}

// --- editing objects (volseg edit's journal): each edit based on the edits
// this page has seen, so one made on a state another page has changed since
// is refused by the job, never applied twice ---
const mergePicked = new Set();  // the objects ticked for a merge
function askEdit(edit) {
  const base = state && state.label ? (state.label.edits || 0) : 0;
  send(Object.assign({type: 'edit', base}, edit));
}
// A click in the planes with a tool on: paint or erase the brush's ball
// there, or put a seed of a split (every seed in one object, the first's).
function onPick(tool, zyx) {
  const radius = parseFloat($('brush-radius').value);
  if (tool === 'paint' || tool === 'erase') {
    if (!(radius > 0)) { showError(tool + ': the radius must be a number above 0'); return; }
    if (tool === 'erase') { askEdit({op: 'erase', center: zyx, radius}); return; }
    const id = parseInt($('paint-id').value, 10);
    if (!(id >= 1)) { showError('paint: give the id to paint (a row\'s click sets it), or a new one'); return; }
    askEdit({op: 'paint', object: id, center: zyx, radius});
    return;
  }
  const id = slices.labelAt(zyx);
  if (!id) { showError('seeds: click inside an object (the planes show none at ' + zyx.join(', ') + ')'); return; }
  if (seedObject && id !== seedObject) { showError(`seeds: all seeds lie in one object (${seedObject}), not ${id}`); return; }
  seedObject = id;
  slices.seeds.push(zyx);
  showSeeds();
  slices.draw();
}
let seedObject = 0;
function showSeeds() {
  const n = slices ? slices.seeds.length : 0;
  if (!n) seedObject = 0;
  $('seed-row').classList.toggle('hidden', !n);
  $('seed-info').textContent = n ? `object ${seedObject}: ${n} seed${n > 1 ? 's' : ''}` : '';
  $('seed-split').disabled = n < 2 || !!(state && state.busy);
}
function editTools() {
  slices.onPick = onPick;
  $('tool').addEventListener('change', () => { slices.tool = $('tool').value; });
  $('seed-clear').addEventListener('click', () => { slices.seeds = []; showSeeds(); slices.draw(); });
  $('seed-split').addEventListener('click', () => {
    send({type: 'split', object: seedObject, seeds: slices.seeds.slice(), apply: false});
  });
}
function onEdit(d) {
  if (d.op === 'save') {
    $('label-result').textContent += `\nsaved ${d.output} and its table of ${d.objects} objects, ${d.table_file}` +
        ` (${d.seconds.toFixed(2)} s)`;
    return;
  }
  const what = d.edit ? `${d.op} ${JSON.stringify(d.edit.ids || d.edit.center)}` : d.op;
  $('label-result').textContent += `\n${what} (edits ${d.edits}, undone ${d.undone}, ${d.seconds.toFixed(2)} s) → ${d.output}`;
}

// --- splitting an object (volseg edit's split): a preview, then apply ---
let splitShown = null;  // the preview on show: its reply's data
const PART_COLOURS = ['#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#46f0f0', '#f032e6', '#bcf60c',
                      '#fabebe', '#008080', '#e6beff', '#9a6324', '#fffac8', '#800000', '#aaffc3', '#808000'];
function askSplit(object, apply) {
  const h = parseFloat($('split-h').value);
  if (!(h > 0)) { showError('split: h must be a number above 0'); return; }
  send({type: 'split', object, h, apply});
}
function onSplit(d) {
  const parts = d.parts;
  if (d.applied) {
    splitShown = null;
    $('split-box').classList.add('hidden');
    if (d.edit.seeds && slices) { slices.seeds = []; showSeeds(); }
    $('label-result').textContent += `\nsplit ${d.object} into ${parts.length}: ids ${parts.map((p) => p.id).join(', ')}` +
        ` (edit ${d.edits}, ${d.seconds.toFixed(2)} s) → ${d.output}`;
    if (objectShown === d.object) send({type: 'surface', object: d.object, max_triangles: TRIANGLES, max_side: SIDE});
    return;
  }
  splitShown = d;
  $('split-box').classList.remove('hidden');
  $('split-info').textContent = parts.length < 2
      ? `object ${d.object}: one part at h ${d.edit.h} (nothing to split; try a smaller h)`
      : `object ${d.object} → ${parts.length} parts at h ${d.edit.h}:\n` +
        parts.map((p, k) => `  ${k === 0 ? p.id + ' (keeps its id)' : p.id + ' (new)'}  ${p.voxels.toLocaleString()} voxels`).join('\n') +
        `\nshown: z = ${d.plane.z}, the box's middle plane`;
  $('split-apply').disabled = parts.length < 2 || !!(state && state.busy);
  if (d.edit.seeds) {
    $('split-info').textContent = parts.length < 2
        ? `object ${d.object}: one part from ${d.edit.seeds.length} seeds`
        : `object ${d.object} → ${parts.length} parts from ${d.edit.seeds.length} seeds:\n` +
          parts.map((p, k) => `  ${k === 0 ? p.id + ' (keeps its id)' : p.id + ' (new)'}  ${p.voxels.toLocaleString()} voxels`).join('\n') +
          `\nshown: z = ${d.plane.z}, the box's middle plane`;
  }
  const canvas = $('split-plane'), g = canvas.getContext('2d'), p = d.plane;
  canvas.width = p.width; canvas.height = p.height;
  const image = g.createImageData(p.width, p.height);
  for (let i = 0; i < p.cells.length; ++i) {
    const c = p.cells[i], hex = c ? PART_COLOURS[(c - 1) % PART_COLOURS.length] : '#1f1f29';
    image.data[4 * i] = parseInt(hex.slice(1, 3), 16);
    image.data[4 * i + 1] = parseInt(hex.slice(3, 5), 16);
    image.data[4 * i + 2] = parseInt(hex.slice(5, 7), 16);
    image.data[4 * i + 3] = 255;
  }
  g.putImageData(image, 0, 0);
}

// --- the view link: the address's fragment holds the view (the open file,
// variable and step, the range, the camera, the planes, the objects shown
// and ticked), so a copied address reopens it on the same job. The token
// stays out: it is the cookie's (a colleague opens the job's printed address
// with the fragment after it; the redirect that drops the token keeps it) ---
let pendingView = null;  // a link's view, applied once its file is open
function numbers(text, n) {
  const a = (text || '').split(',').map(Number);
  return a.length === n && a.every(Number.isFinite) ? a : null;
}
function viewFromLink() {
  const fragment = location.hash.replace(/^#/, '');
  if (!fragment) return null;
  const q = new URLSearchParams(fragment);
  if (!q.has('file')) return null;
  return {file: q.get('file'), variable: q.get('var'), step: q.has('step') ? parseInt(q.get('step'), 10) : null,
          range: numbers(q.get('range'), 2), camera: numbers(q.get('camera'), 3), at: numbers(q.get('at'), 3),
          object: q.has('object') ? parseInt(q.get('object'), 10) : null,
          picked: (q.get('picked') || '').split(',').filter((t) => t).map(Number).filter(Number.isInteger)};
}
// Numbers as String() writes them: the shortest text that reads back the same double.
function linkOfView() {
  if (!state || !state.open || pendingView) return;
  const q = new URLSearchParams();
  q.set('file', state.open.path);
  if (state.open.variable) q.set('var', state.open.variable);
  if (state.open.steps !== undefined) q.set('step', state.open.step);
  if (range) q.set('range', range.map(String).join(','));
  if (view) { const c = window.volsegView.camera(); q.set('camera', [c.azimuth, c.elevation, c.zoom].map(String).join(',')); }
  if (slices) q.set('at', slices.at.map(String).join(','));
  if (objectShown) q.set('object', objectShown);
  if (mergePicked.size) q.set('picked', [...mergePicked].sort((a, b) => a - b).join(','));
  const fragment = '#' + q.toString();
  if (location.hash !== fragment) history.replaceState(null, '', fragment);
}
function applyLinkView(s) {
  const v = pendingView;
  if (!s.open || s.busy) return;
  const other = v.file !== s.open.path || (v.variable && v.variable !== s.open.variable) ||
                (v.step !== null && s.open.steps !== undefined && v.step !== s.open.step);
  if (other) {
    if (v.asked) { pendingView = null; return; }  // the open was refused: its error is on show
    v.asked = true;
    const m = {type: 'open', path: v.file};
    if (v.variable) m.var = v.variable;
    if (v.step !== null) m.time = v.step;
    send(m);
    return;
  }
  pendingView = null;
  if (v.range && histogram) { range = v.range; showRange(); drawHistogram(); bandChanged(); }
  if (v.camera && view) window.volsegView.setCamera(v.camera[0], v.camera[1], v.camera[2]);
  if (v.at && slices) { slices.at = v.at; slices.request(); }
  for (const id of v.picked) mergePicked.add(id);
  if (v.object && s.label) {
    objectShown = v.object;
    $('paint-id').value = objectShown;
    send({type: 'surface', object: objectShown, max_triangles: TRIANGLES, max_side: SIDE});
    $('show-all').disabled = false;
  }
  renderTable();
}

function buttons() {
  $('error-close').addEventListener('click', () => $('error').classList.add('hidden'));
  $('open-btn').addEventListener('click', () => {
    const m = {type: 'open', path: state.open ? state.open.path : state.file};
    if ($('expr').value.trim()) m.expr = $('expr').value.trim();
    else if ($('where').value.trim()) m.where = $('where').value.trim();
    else if ($('variable').value) m.var = $('variable').value;
    if (!$('step-row').classList.contains('hidden') && $('step').value !== '') m.time = parseInt($('step').value, 10);
    send(m);
  });
  $('segment-btn').addEventListener('click', () => {
    $('progress').replaceChildren();
    const m = {type: 'segment', lo: range[0], hi: range[1], output: $('segment-output').value,
               force: $('segment-force').checked};
    // The operators after the threshold (sent only when asked for).
    if ($('seed-on').checked) m.seed = [parseFloat($('seed-lo').value), parseFloat($('seed-hi').value)];
    const open = parseInt($('open-radius').value || '0', 10), close = parseInt($('close-radius').value || '0', 10);
    if (open > 0) m.open = open;
    if (close > 0) m.close = close;
    if ($('fill-holes').checked) m.fill_holes = true;
    if (m.seed || m.open || m.close || m.fill_holes) m.connectivity = parseInt($('connectivity').value, 10);
    send(m);
  });
  $('cancel-btn').addEventListener('click', () => send({type: 'cancel'}));
  $('label-btn').addEventListener('click', () => {
    $('progress').replaceChildren();
    send({type: 'label', output: $('label-output').value, connectivity: parseInt($('connectivity').value, 10),
          force: $('label-force').checked});
  });
  $('copy-btn').addEventListener('click', () => {
    const text = $('command').textContent;
    if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
  });
}

window.addEventListener('DOMContentLoaded', () => {
  if (window.VolsegView3D) view = new VolsegView3D($('view3d'), $('frame'), $('view-caption'), send);
  if (view) { TRIANGLES = view.triangleBudget; SIDE = view.sideBudget; }
  if (window.VolsegSlices) slices = new VolsegSlices([$('slice-z'), $('slice-y'), $('slice-x')], send);
  if (slices) editTools();
  window.volsegSlices = slices;
  pendingView = viewFromLink();
  setInterval(linkOfView, 300);
  histogramDrag();
  rangeInputs();
  tableEvents();
  buttons();
  window.addEventListener('resize', () => { drawHistogram(); if (view) view.resize(); if (slices) slices.draw(); });
  connect();
});
