// The page: reads a dropped or picked snapshot, replays it through allocsim_core (the module
// inlined above) under the settings below and a capacity the user sets, and shows the answer.
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

// What a user sets in PyTorch for each setting. `caching` is the recorded setting itself.
function torchSetting(spec) {
  if (spec === 'caching') return '# the recorded settings: keep PYTORCH_CUDA_ALLOC_CONF as it was';
  if (spec === 'expandable') return 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True';
  const split = /^caching:max_split_size=(\d+)MiB$/.exec(spec);
  if (split) return `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:${split[1]}`;
  const gc = /^caching:gc_threshold=([\d.]+),fraction=([\d.]+)$/.exec(spec);
  // The fraction is not an ALLOC_CONF key: PyTorch sets it from Python.
  if (gc) return `PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:${gc[1]}\n` +
                 `# and in Python, before the first allocation:\ntorch.cuda.set_per_process_memory_fraction(${gc[2]})`;
  return `# ${spec}`;
}

const $ = (id) => document.getElementById(id);
let core = null;
let recording = null;  // {name, bytes} of the last file given

function setState(status, text) {
  document.body.setAttribute('data-status', status);
  $('state').textContent = text;
}

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
  $('result').hidden = true;
}

// The module's one call: the bytes copied into its memory, the request as a C string.
function replay(bytes, request) {
  const data = core._malloc(Math.max(bytes.length, 1));
  core.HEAPU8.set(bytes, data);
  const text = JSON.stringify(request);
  const size = core.lengthBytesUTF8(text) + 1;
  const requestText = core._malloc(size);
  core.stringToUTF8(text, requestText, size);
  try {
    return JSON.parse(core.UTF8ToString(core._allocsim_replay(data, bytes.length, requestText)));
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

// The lowest peak reserved among simulated sides without an OOM; the first on a tie.
function bestSide(sides) {
  let best = -1;
  sides.forEach((side, i) => {
    if (side.side !== 'simulated' || side.ooms > 0) return;
    if (best < 0 || side.peak_reserved < sides[best].peak_reserved) best = i;
  });
  return best;
}

// "6.74 GiB (7235174400 B)" shown as "6.74 GiB"; the exact count is the cell's title.
const short = (text) => text.replace(/ \(\d+ B\)$/, '');

function show(answer) {
  const recorded = answer.sides[0];
  $('recording').textContent =
    `${answer.recording.name}: device ${answer.recording.device}, ${answer.recording.events} events, ` +
    `${answer.recording.blocks_live_at_start} blocks live at the start. Recorded: peak reserved ` +
    `${recorded.peak_reserved_text}, peak allocated ${recorded.peak_allocated_text}, ${recorded.ooms} OOMs. ` +
    `Capacity: ${answer.capacity_text} (${answer.capacity_source.replace('--capacity', 'the Capacity field')}).`;
  const verdict = $('verdict');
  verdict.dataset.verdict = answer.replay_check;
  verdict.className = answer.replay_check;
  verdict.textContent = answer.replay_check === 'exact'
    ? 'replay-check: exact, caching replays what PyTorch did'
    : `replay-check: diverged (${answer.replay_check_divergence})`;
  if (answer.replay_check !== 'exact') verdict.dataset.divergence = answer.replay_check_divergence;

  const best = bestSide(answer.sides);
  const head = $('sides').tHead;
  head.innerHTML = '';
  const headRow = head.insertRow();
  headRow.appendChild(document.createElement('th')).textContent = '';
  answer.sides.forEach((side) => {
    headRow.appendChild(document.createElement('th')).textContent = side.side;
  });
  const body = $('sides').tBodies[0];
  body.innerHTML = '';
  const rows = [
    ['policy', (s) => [s.policy, s.policy]],
    ['peak reserved', (s) => [short(s.peak_reserved_text), s.peak_reserved], 'peak_reserved'],
    ['peak allocated', (s) => [short(s.peak_allocated_text), s.peak_allocated], 'peak_allocated'],
    ['OOMs', (s) => [String(s.ooms), s.ooms], 'ooms'],
    ['first OOM kind', (s) => (s.side === 'recorded' ? ['-', '-'] : [s.first_oom_kind ?? 'none', s.first_oom_kind ?? 'none'])],
  ];
  for (const [label, get, name] of rows) {
    const row = body.insertRow();
    row.appendChild(document.createElement('th')).textContent = label;
    answer.sides.forEach((side, i) => {
      const [text, value] = get(side);
      const title = label === 'first OOM kind' ? side.first_oom ?? '' : (name ? side[`${name}_text`] : '');
      const td = cell(row, text, name ?? label.replaceAll(' ', '_'), value, title);
      td.dataset.side = i;
      if (i === best) td.classList.add('best');
      if (label === 'OOMs' && side.ooms > 0) td.classList.add('oom');
    });
  }
  for (const failure of answer.failed) showError(`${failure.policy}: ${failure.error}`);
  $('best').dataset.policy = best >= 0 ? answer.sides[best].policy : '';
  $('best').textContent = best >= 0
    ? `${answer.sides[best].policy}: peak reserved ${answer.sides[best].peak_reserved_text}\n${torchSetting(answer.sides[best].policy)}`
    : 'every setting ran out of memory at this capacity';
  $('result').hidden = false;
}

function run() {
  if (!core || !recording) return;
  const started = performance.now();
  setState('running', `replaying ${recording.name}…`);
  $('error').hidden = true;
  // Let the browser paint the state before the replay holds the thread.
  setTimeout(() => {
    const answer = replay(recording.bytes, { name: recording.name, policies: SETTINGS, capacity: capacityRequest() });
    document.body.dataset.milliseconds = (performance.now() - started).toFixed(0);
    if (answer.error) {
      showError(answer.error);
      setState('error', 'could not read that file');
      return;
    }
    show(answer);
    setState('done', `${recording.name}: replayed in ${document.body.dataset.milliseconds} ms`);
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

$('file').addEventListener('change', (e) => { if (e.target.files.length) give(e.target.files[0]); });
$('capacity').addEventListener('change', run);
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
