// Each shared PyTorch recording replayed twice under the same settings: by allocsim_core.js
// (the wasm build) in node and by a native `allocsim replay`. The --csv text must be
// byte-identical, every CSV column a field of each side of the module's JSON under the same name
// and value, and replay-check's verdict and each side's run verdict and OOMs at the request the same.
// Usage: node replay_matches_native.mjs CORE.js NATIVE_ALLOCSIM TRACES_DIR
// Exit 77 (skipped) without a native binary or recordings.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [core, native, traces] = process.argv.slice(2);
const skip = (why) => { console.log(`skipped: ${why}`); process.exit(77); };
if (!existsSync(native)) skip(`no native allocsim at ${native} (build the release preset)`);
if (!existsSync(traces)) skip(`no shared recordings at ${traces}`);
const recordings = readdirSync(traces).filter((f) => f.endsWith('.pickle')).sort();
if (recordings.length === 0) skip(`no .pickle in ${traces}`);

const createAllocsimCore = createRequire(import.meta.url)(resolve(core));
const module = await createAllocsimCore();

// The module's one call: the recording's bytes in its memory, the request as a C string.
function replay(bytes, request) {
  const data = module._malloc(bytes.length);
  module.HEAPU8.set(bytes, data);
  const text = JSON.stringify(request);
  const size = module.lengthBytesUTF8(text) + 1;
  const requestText = module._malloc(size);
  module.stringToUTF8(text, requestText, size);
  try {
    return JSON.parse(module.UTF8ToString(module._allocsim_replay(data, bytes.length, requestText)));
  } finally {
    module._free(data);
    module._free(requestText);
  }
}

// The two rows of an OOM's names, as the command line prints them: the side's cells, the
// recording's "-" first.
function rowCells(stdout, label) {
  const row = stdout.split('\n').find((line) => line.startsWith(`  ${label}   `));
  return row ? row.trim().slice(label.length).trim().split(/\s{3,}/) : null;
}

// The cells of a CSV line (RFC 4180: a quoted cell may hold commas and doubled quotes).
function csvCells(line) {
  const cells = [''];
  let quoted = false;
  for (let i = 0; i < line.length; ++i) {
    const c = line[i];
    if (quoted && c === '"' && line[i + 1] === '"') { cells[cells.length - 1] += '"'; ++i; }
    else if (c === '"') quoted = !quoted;
    else if (c === ',' && !quoted) cells.push('');
    else cells[cells.length - 1] += c;
  }
  return cells;
}

const settings = [
  { policies: 'caching,expandable,caching:max_split_size=128MiB,caching:gc_threshold=0.8,fraction=0.95', capacity: null },
  { policies: 'caching,expandable', capacity: '3GiB' },
];
const folder = mkdtempSync(join(tmpdir(), 'allocsim-wasm-test-'));
let failures = 0;
const fail = (what) => { console.log(`FAIL ${what}`); ++failures; };
try {
  for (const recording of recordings) {
    const pickle = join(traces, recording);
    const bytes = readFileSync(pickle);
    for (const { policies, capacity } of settings) {
      const label = `${recording} --policy ${policies}${capacity ? ` --capacity ${capacity}` : ''}`;
      const started = performance.now();
      const answer = replay(bytes, { name: pickle, policies, capacity });
      const wasmSeconds = (performance.now() - started) / 1000;
      const nativeCsv = join(folder, 'native.csv');
      const args = ['replay', pickle, '--policy', policies, '--csv', nativeCsv, ...(capacity ? ['--capacity', capacity] : [])];
      const nativeStarted = performance.now();
      const stdout = execFileSync(native, args, { encoding: 'utf8' });
      const nativeSeconds = (performance.now() - nativeStarted) / 1000;
      console.log(`${label}: wasm ${wasmSeconds.toFixed(3)} s (replay), native ${nativeSeconds.toFixed(3)} s (whole command)`);
      if (answer.error) { fail(`${label}: wasm said ${answer.error}`); continue; }
      if (answer.csv !== readFileSync(nativeCsv, 'utf8')) fail(`${label}: the CSV differs\nwasm:\n${answer.csv}\nnative:\n${readFileSync(nativeCsv, 'utf8')}`);
      const verdict = answer.replay_check === 'exact' ? 'replay-check: exact' : `replay-check: diverged (${answer.replay_check_divergence})`;
      if (!stdout.includes(verdict)) fail(`${label}: native does not say "${verdict}"`);
      // Every CSV column is a field of each side under its name, with the same value (bytes and
      // counts as JSON numbers, none as null).
      const [header, ...csvRows] = readFileSync(nativeCsv, 'utf8').trimEnd().split('\n').map(csvCells);
      if (csvRows.length !== answer.sides.length) fail(`${label}: ${answer.sides.length} sides, ${csvRows.length} CSV rows`);
      csvRows.forEach((row, i) => header.forEach((name, c) => {
        const value = answer.sides[i]?.[name];
        if (value === undefined) fail(`${label}: side ${i} has no ${name}`);
        else if (String(value ?? '') !== row[c]) fail(`${label}: side ${i} ${name} ${JSON.stringify(value)}, CSV ${row[c]}`);
      }));
      for (const [row, key] of [['run verdict', 'verdict'], ['OOMs at the request', 'at_the_request']]) {
        const cells = rowCells(stdout, row);
        const expected = answer.sides.map((side) => side.text[key]);
        if (JSON.stringify(cells) !== JSON.stringify(expected)) fail(`${label}: ${row} ${JSON.stringify(expected)}, native ${JSON.stringify(cells)}`);
      }
    }
  }
  // A bad spec is the command line's one-line error, caught in the module.
  const bad = replay(new Uint8Array(), { name: 'x.pickle', policies: 'caching:no_such_key=1' });
  let nativeError = '';
  try {
    execFileSync(native, ['replay', join(traces, recordings[0]), '--policy', 'caching:no_such_key=1'], { stdio: 'pipe' });
  } catch (error) {
    nativeError = error.stderr.toString();
  }
  if (!bad.error || !nativeError.includes(bad.error)) fail(`bad spec: wasm "${bad.error}", native "${nativeError.trim()}"`);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
console.log(failures === 0 ? `wasm replays match the native ones on ${recordings.length} recordings` : `${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
