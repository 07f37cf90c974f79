// The page: reads a dropped or picked snapshot (a pickle, or the same dict saved as JSON),
// replays it through allocsim_core (the module inlined above) under the settings below and a
// capacity the user sets, shows the answer, and draws the recorded settings' replay and the
// chosen setting's with the report's own script (allocsimDrawReport, studies/report/report.js).
// A pasted OOM message is answered as `allocsim explain` answers it.
// The numbers are the module's (docs/web.md), the same the command line prints; the DOM
// carries them raw in data-* attributes for web/tests/page_matches_native.py.
'use strict';

// The settings compared, as `allocsim replay --policy` spells them (policies/registry).
const SETTINGS = [
  'caching',
  'expandable',
  'caching:max_split_size=64MiB',
  'caching:max_split_size=256MiB',
  'caching:gc_threshold=0.8,fraction=0.95',
];

const $ = (id) => document.getElementById(id);
let core = null;
let recording = null;  // {name, bytes} of the last file given
let shown = null;      // {answer, request, bytes} of the table on the page
let chartsAsked = 0;   // the charts drawn are those of the last request only

function setState(status, text) {
  document.body.setAttribute('data-status', status);
  $('state').textContent = text;
}

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
  $('result').hidden = true;
}

// A module call on (bytes, request): the bytes copied into its memory, the request as a C string.
function call(entry, bytes, request) {
  const data = core._malloc(Math.max(bytes.length, 1));
  core.HEAPU8.set(bytes, data);
  const text = JSON.stringify(request);
  const size = core.lengthBytesUTF8(text) + 1;
  const requestText = core._malloc(size);
  core.stringToUTF8(text, requestText, size);
  try {
    return JSON.parse(core.UTF8ToString(entry(data, bytes.length, requestText)));
  } finally {
    core._free(data);
    core._free(requestText);
  }
}

function capacityRequest() {
  const gib = $('capacity').value.trim();
  return gib === '' ? null : `${gib}GiB`;
}

function cell(row, text, field, value, title) {
  const td = row.insertCell();
  td.textContent = text;
  if (field) { td.dataset.field = field; td.dataset.value = String(value); }
  if (title) td.title = title;
  return td;
}

// The fields the table shows, a row each, by their CSV names (docs/outputs.md): each cell
// shows the field's brief text ("6.74 GiB"), its title the command line's ("6.74 GiB
// (7235174400 B)"), and carries its value (bytes and counts as numbers); the row's caption
// is the module's (answer.columns).
const ROWS = ['policy', 'peak_reserved_bytes', 'peak_allocated_bytes', 'oom_count',
  // An OOM's two names (docs/outputs.md): the run's verdict, and each OOM's kind at the request.
  'verdict', 'at_the_request'];
const OOM_ROWS = ['verdict', 'at_the_request'];

function show(answer) {
  const recorded = answer.sides[0];
  $('recording').textContent =
    `${answer.recording.name}: device ${answer.recording.device}, ${answer.recording.events} events, ` +
    `${answer.recording.blocks_live_at_start} blocks live at the start. Recorded: peak reserved ` +
    `${recorded.text.peak_reserved_bytes}, peak allocated ${recorded.text.peak_allocated_bytes}, ${recorded.oom_count} OOMs. ` +
    `Capacity: ${recorded.text.capacity_bytes} (${answer.capacity_source.replace('--capacity', 'the Capacity field')}). ` +
    `PYTORCH_CUDA_ALLOC_CONF as recorded: ${answer.alloc_conf ? answer.alloc_conf : answer.settings_recorded ? '(empty)' : '(not in this snapshot)'}.`;
  const verdict = $('verdict');
  verdict.dataset.verdict = answer.replay_check;
  verdict.className = answer.replay_check;
  verdict.textContent = answer.replay_check === 'exact'
    ? 'replay-check: exact, caching replays what PyTorch did'
    : `replay-check: diverged (${answer.replay_check_divergence})`;
  if (answer.replay_check !== 'exact') verdict.dataset.divergence = answer.replay_check_divergence;

  // The side to take, and what to set in PyTorch for it: the core's answer, as the command
  // line's replay prints it (policies/torch_alloc_conf).
  const best = answer.best ?? -1;
  const head = $('sides').tHead;
  head.innerHTML = '';
  const headRow = head.insertRow();
  headRow.appendChild(document.createElement('th')).textContent = '';
  answer.sides.forEach((side, i) => {
    const th = headRow.appendChild(document.createElement('th'));
    th.textContent = side.side;
    th.dataset.side = i;
  });
  const body = $('sides').tBodies[0];
  body.innerHTML = '';
  const labels = Object.fromEntries(answer.columns.map((column) => [column.name, column.label]));
  for (const field of ROWS) {
    const row = body.insertRow();
    row.appendChild(document.createElement('th')).textContent = labels[field];
    answer.sides.forEach((side, i) => {
      const text = side.brief[field];
      const value = typeof side[field] === 'number' ? side[field] : side.text[field];
      const exact = side.text[field] !== text ? side.text[field] : '';
      const td = cell(row, text, field, value, OOM_ROWS.includes(field) ? side.first_oom ?? '' : exact);
      td.dataset.side = i;
      if (i === best) td.classList.add('best');
      if (field === 'oom_count' && side.oom_count > 0) td.classList.add('oom');
    });
  }
  for (const failure of answer.failed) showError(`${failure.policy}: ${failure.error}`);
  $('best').dataset.policy = best >= 0 ? answer.sides[best].policy : '';
  $('best').textContent = best >= 0
    ? `${answer.sides[best].policy}: peak reserved ${answer.sides[best].text.peak_reserved_bytes}\n` +
      answer.sides[best].torch_setting
    : 'every setting ran out of memory at this capacity';
  $('result').hidden = false;
  return best;
}

// The charts of the recorded settings' replay (`caching`, which replay-check holds to the
// recording) and of side `chosen`, on one axis of the trace's events: the data the command
// line's --report draws, drawn by the same script.
function drawCharts(chosen) {
  const { answer, request, bytes } = shown;
  const policy = answer.sides[chosen].policy;
  const policies = policy === 'caching' ? ['caching'] : ['caching', policy];
  const asked = ++chartsAsked;
  const charts = $('charts');
  charts.dataset.state = 'drawing';
  charts.dataset.policies = policies.join(',');
  for (const td of document.querySelectorAll('#sides [data-side]')) td.classList.toggle('chosen', Number(td.dataset.side) === chosen);
  $('charts-note').textContent = `Drawing ${policies.join(' and ')}…`;
  charts.hidden = false;
  setTimeout(() => {
    if (asked !== chartsAsked) return;
    const report = call(core._allocsim_report, bytes, { ...request, policies });
    const root = d3.select('#report');
    root.html('');
    window.allocsimShownReport = null;
    if (report.error) {
      $('charts-note').textContent = report.error;
      charts.dataset.state = 'error';
      return;
    }
    $('charts-note').textContent =
      `caching: the recorded settings, replayed (replay-check: ${answer.replay_check})` +
      (policies.length > 1 ? `; ${policy}: the chosen setting` : '') +
      '. Click a column of the table to choose another. The same page, with these charts: ' +
      `allocsim ${report.command}`;
    allocsimDrawReport(report, root);
    window.allocsimShownReport = report;  // what web/tests/page_matches_native.py compares with --report's
    charts.dataset.state = 'done';
  }, 0);
}

function run() {
  if (!core || !recording) return;
  const started = performance.now();
  setState('running', `replaying ${recording.name}…`);
  $('error').hidden = true;
  // Let the browser paint the state before the replay holds the thread.
  setTimeout(() => {
    const { bytes } = recording;
    const request = { name: recording.name, policies: SETTINGS, capacity: capacityRequest() };
    const answer = call(core._allocsim_replay, bytes, request);
    document.body.dataset.milliseconds = (performance.now() - started).toFixed(0);
    if (answer.error) {
      shown = null;
      $('charts').hidden = true;
      showError(answer.error);
      setState('error', 'could not read that file');
      return;
    }
    shown = { answer, request, bytes };
    const best = show(answer);
    setState('done', `${recording.name}: replayed in ${document.body.dataset.milliseconds} ms`);
    // With every setting out of memory, the recorded settings alone.
    drawCharts(best >= 0 ? best : 1);
  }, 0);
}

async function give(file) {
  setState('reading', `reading ${file.name}…`);
  try {
    recording = { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
  } catch (error) {
    recording = null;
    showError(`${file.name}: the browser could not read the file: ${error.message}`);
    setState('error', 'could not read that file');
    return;
  }
  run();
}

// `allocsim explain`'s answer to the pasted text, as the command prints it.
function explain() {
  if (!core) return;
  const text = $('oom-text').value;
  const size = core.lengthBytesUTF8(text) + 1;
  const pointer = core._malloc(size);
  core.stringToUTF8(text, pointer, size);
  let answer;
  try {
    answer = JSON.parse(core.UTF8ToString(core._allocsim_explain(pointer)));
  } finally {
    core._free(pointer);
  }
  const out = $('explanation');
  out.textContent = answer.error ?? answer.text;
  out.dataset.decided = answer.error ? 'error' : String(answer.decided);
  out.hidden = false;
}

$('file').addEventListener('change', (e) => { if (e.target.files.length) give(e.target.files[0]); });
$('capacity').addEventListener('change', run);
$('sides').addEventListener('click', (e) => {
  const target = e.target.closest('[data-side]');
  if (!target || !shown) return;
  const side = Number(target.dataset.side);
  if (shown.answer.sides[side].side === 'simulated') drawCharts(side);
});
$('explain').addEventListener('click', explain);
const drop = $('drop');
for (const name of ['dragenter', 'dragover']) {
  document.addEventListener(name, (e) => { e.preventDefault(); drop.classList.add('over'); });
}
document.addEventListener('dragleave', () => drop.classList.remove('over'));
document.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  if (e.dataTransfer.files.length) give(e.dataTransfer.files[0]);
});

createAllocsimCore().then((module) => {
  core = module;
  setState('ready', 'ready: drop a snapshot');
  run();
}, (error) => setState('error', `the simulator did not load: ${error}`));
