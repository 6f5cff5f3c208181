// keel.mjs: shared test helpers: run `keel check`, talk to `keel serve`, and
// validate outputs against the schemas in schemas/ with ajv (2020-12).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const keel = process.argv[2] || join(root, 'build', 'keel');

export function loadSchemas() {
  const out = {};
  for (const f of readdirSync(join(root, 'schemas')).filter((f) => f.endsWith('.json')).sort())
    out[f.replace(/\.json$/, '')] = JSON.parse(readFileSync(join(root, 'schemas', f), 'utf8'));
  return out;
}

const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
addFormats(ajv);
const compiled = new Map();
export function validator(tool, part) {
  const key = `${tool}#${part}`;
  if (!compiled.has(key)) compiled.set(key, ajv.compile(loadSchemas()[tool][part]));
  return compiled.get(key);
}
// Returns null when value is valid, else ajv's error list.
export function invalid(tool, part, value) {
  const v = validator(tool, part);
  return v(value) ? null : v.errors;
}

// A private home for one test: its own state directory and profile path, so
// no test reads or writes the real ~/.local/state/keel.
const sandboxes = [];
process.on('exit', () => { for (const d of sandboxes) rmSync(d, { recursive: true, force: true }); });
export function sandbox({ state, profile } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'keel-test-'));
  sandboxes.push(dir);                 // removed when the test process exits
  const stateDir = join(dir, 'state');
  if (state !== undefined) {
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(join(stateDir, 'state.json'), typeof state === 'string' ? state : JSON.stringify(state));
  }
  // an empty profile (the defaults) unless one is given: KEEL_PROFILE names
  // a file, and keel says so when a profile it is told to read is not there
  writeFileSync(join(dir, 'profile.yaml'), profile === undefined ? '' : profile);
  return { dir, stateDir, env: { KEEL_STATE_DIR: stateDir, KEEL_PROFILE: join(dir, 'profile.yaml') } };
}

// A private HOME holding just the given texts (path under HOME -> text); a
// .claude directory beside a .claude.json, as Claude Code leaves it.
export function homeWith(texts) {
  const h = join(sandbox().dir, 'home');
  for (const [to, text] of Object.entries(texts)) {
    mkdirSync(dirname(join(h, to)), { recursive: true });
    writeFileSync(join(h, to), text);
  }
  if (existsSync(join(h, '.claude.json'))) mkdirSync(join(h, '.claude'), { recursive: true });
  return h;
}

// opts: {now, tz, state, profile, env, box}; returns {status, stdout, stderr, json, box}.
function checkSetup(args, opts) {
  const box = opts.box || sandbox(opts);
  const env = { ...process.env, ...box.env, ...(opts.now ? { KEEL_NOW: opts.now } : {}), ...(opts.tz ? { TZ: opts.tz } : {}), ...(opts.env || {}) };
  return { input: typeof args === 'string' ? args : JSON.stringify(args), box, env };
}
function checked(status, stdout, stderr, box) {
  let json = null;
  try { json = JSON.parse(stdout); } catch { /* left null */ }
  return { status, stdout, stderr, json, box };
}
export function check(tool, args, opts = {}) {
  const { input, box, env } = checkSetup(args, opts);
  const r = spawnSync(keel, ['--log-level', 'error', 'check', tool], {
    input, env, encoding: 'utf8', maxBuffer: 64 << 20,
  });
  return checked(r.status, r.stdout, r.stderr, box);
}

// check() without waiting for it: resolves to the same result.
export function checkAsync(tool, args, opts = {}) {
  const { input, box, env } = checkSetup(args, opts);
  return new Promise((resolve) => {
    const p = spawn(keel, ['--log-level', 'error', 'check', tool], { env });
    let stdout = '', stderr = '';
    p.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    p.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    p.stdin.on('error', () => {});
    p.stdin.end(input);
    p.on('close', (status) => resolve(checked(status, stdout, stderr, box)));
  });
}

// A keel process (any command line) with a line-based request/response API.
export class Proc {
  constructor(argv, env = {}) {
    this.box = sandbox();
    this.p = spawn(keel, argv, { env: { ...process.env, ...this.box.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.p.stdin.on('error', () => {});
    this.lines = []; this.waiters = []; this.stderr = ''; this.buf = '';
    this.p.stdout.setEncoding('utf8');
    this.p.stdout.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i); this.buf = this.buf.slice(i + 1);
        const w = this.waiters.shift();
        if (w) w(line); else this.lines.push(line);
      }
    });
    this.p.stderr.setEncoding('utf8');
    this.p.stderr.on('data', (d) => { this.stderr += d; });
    this.exited = new Promise((res) => this.p.on('exit', (code, signal) => res({ code, signal })));
  }
  send(obj) { this.p.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n'); }
  next(timeoutMs = 10000) {
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    return new Promise((res, rej) => {
      const w = (l) => { clearTimeout(t); res(l); };
      // a wait that timed out takes no later line with it
      const t = setTimeout(() => { this.waiters = this.waiters.filter((x) => x !== w); rej(new Error('timed out waiting for a line')); }, timeoutMs);
      this.waiters.push(w);
    });
  }
  async ask(obj) { this.send(obj); return JSON.parse(await this.next()); }
  // The next line that parses and satisfies pred (other lines are kept in skipped).
  async until(pred, timeoutMs = 10000) {
    const held = (this.skipped || []).findIndex(pred);
    if (held >= 0) return this.skipped.splice(held, 1)[0];
    const end = Date.now() + timeoutMs;
    for (;;) {
      const line = await this.next(Math.max(1, end - Date.now()));
      const m = JSON.parse(line);
      if (pred(m)) return m;
      (this.skipped ||= []).push(m);
    }
  }
  async close() { this.p.stdin.end(); return this.exited; }
}

export class Server extends Proc {
  constructor(args = [], env = {}) { super(['serve', ...args], env); }
}

// A fault server of the project's own (fixtures/httpfault.mjs by default), on
// an ephemeral port: {port, url, stats(), stop()}; killed when the test exits.
const faultChildren = [];
process.on('exit', () => { for (const c of faultChildren) c.kill('SIGKILL'); });
export async function httpFault(args = [], script = join(root, 'tests', 'fixtures', 'httpfault.mjs')) {
  const p = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  faultChildren.push(p);
  const line = await new Promise((res) => { let b = ''; p.stdout.on('data', (d) => { b += d; if (b.includes('\n')) res(b); }); });
  const { port } = JSON.parse(line);
  return {
    port, url: `http://127.0.0.1:${port}/mcp`,
    stats: async () => (await fetch(`http://127.0.0.1:${port}/stats`)).json(),
    stop: () => { p.stdin.end(); p.kill(); },
  };
}
