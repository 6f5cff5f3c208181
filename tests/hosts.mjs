// hosts.mjs: the agent hosts themselves judge keel install and uninstall.
// Claude Code, Codex and Gemini CLI (pinned in package-lock.json) run on a
// private HOME with their own offline commands: each must parse the
// configuration keel wrote, reach its servers through keel wrap (a real MCP
// server behind it: its tools listed, "Connected"), list keel's hooks, and
// after uninstall show exactly what it showed before, plus a server the host
// itself added in between.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel as keelArg, root, sandbox } from './lib/keel.mjs';

const keel = realpathSync(keelArg);
const bin = (name) => join(root, 'tests', 'node_modules', '.bin', name);
const upstream = join(root, 'tests', 'fixtures', 'upstream.mjs');
const node = process.execPath;

function fakeHome(files) {
  const box = sandbox();
  const h = join(box.dir, 'home'), proj = join(box.dir, 'proj');
  mkdirSync(proj, { recursive: true });
  for (const [to, text] of Object.entries(files(proj))) {
    mkdirSync(dirname(join(h, to)), { recursive: true });
    writeFileSync(join(h, to), text);
  }
  return { h, proj, state: box.stateDir };
}
const env = (x) => ({ PATH: `${dirname(node)}:${process.env.PATH}`, HOME: x.h, KEEL_STATE_DIR: x.state, NO_COLOR: '1', CI: '1' });
const host = (x, name, ...args) => {
  const r = spawnSync(bin(name), args, { cwd: x.proj, env: env(x), encoding: 'utf8', timeout: 60000 });
  return { ...r, out: `${r.stdout}\n${r.stderr}` };            // Gemini CLI lists on stderr
};
const keelRun = (x, ...args) => spawnSync(keel, args, { cwd: x.proj, env: env(x), encoding: 'utf8' });
const lines = (s) => s.split('\n').map((l) => l.trim()).filter((l) => l && !/^(Checking|Configured|WARNING|Warning)/.test(l)).sort();

// --- Claude Code: user and local scope ------------------------------------
{
  const x = fakeHome((proj) => ({
    '.claude.json': JSON.stringify({ numStartups: 4, mcpServers: { up: { command: node, args: [upstream, 'normal'] } },
      projects: { [proj]: { mcpServers: { loc: { command: node, args: [upstream, 'normal'] } } } } }, null, 2),
    '.claude/settings.json': '{}\n',
  }));
  const before = host(x, 'claude', 'mcp', 'list');
  const i = keelRun(x, 'install', '--client', 'claude-code', '--project', x.proj);
  const get = host(x, 'claude', 'mcp', 'get', 'up');
  const list = host(x, 'claude', 'mcp', 'list');
  ok(i.status === 0 && get.status === 0 && new RegExp(`Command: ${keel.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`).test(get.stdout) &&
     /Args: wrap -- .*upstream\.mjs normal/.test(get.stdout),
    'Claude Code reads the server keel wrapped: keel wrap -- the server', get.stdout + get.stderr);
  ok(/up: .*keel wrap -- .* - \S+ Connected/.test(list.stdout) && /loc: .*keel wrap --expose none -- .* - \S+ Connected/.test(list.stdout),
    'claude mcp list reaches the user-scope and the local-scope server through keel wrap (Connected)', list.stdout + list.stderr);
  const add = host(x, 'claude', 'mcp', 'add', '-s', 'user', 'added', '--', node, upstream, 'normal');
  const u = keelRun(x, 'uninstall', '--client', 'claude-code', '--project', x.proj);
  const after = host(x, 'claude', 'mcp', 'list');
  const want = lines(before.stdout);
  const got = lines(after.stdout).filter((l) => !l.startsWith('added:'));
  ok(add.status === 0 && u.status === 0 && JSON.stringify(got) === JSON.stringify(want) && /added: .* - \S+ Connected/.test(after.stdout),
    'after uninstall claude mcp list shows what it showed before, plus the server it added itself', { before: before.stdout, after: after.stdout, u: u.stderr });
  const cj = JSON.parse(readFileSync(join(x.h, '.claude.json'), 'utf8'));
  ok(cj.numStartups >= 4 && !JSON.stringify(cj).includes(keel), 'the counters Claude Code kept meanwhile stay; nothing of keel is left', cj.numStartups);
}

// --- Codex: TOML in several forms, servers reached, hooks listed -------------
function appServer(x, requests) {
  return new Promise((resolve) => {
    const p = spawn(bin('codex'), ['app-server'], { cwd: x.proj, env: env(x), stdio: ['pipe', 'pipe', 'pipe'] });
    const got = {};
    let buf = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), 30000);
    p.stdout.on('data', (d) => {
      buf += d;
      let k;
      while ((k = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, k);
        buf = buf.slice(k + 1);
        try { const m = JSON.parse(line); if (m.id !== undefined) got[m.id] = m; } catch { /* not ours */ }
        if (requests.every((r, j) => got[j + 2])) p.stdin.end();
      }
    });
    p.on('close', () => { clearTimeout(timer); resolve(got); });
    p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'keel-test', version: '1' } } }) + '\n');
    p.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'initialized' }) + '\n');
    requests.forEach((method, j) => p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: j + 2, method, params: {} }) + '\n'));
  });
}
{
  const q = JSON.stringify(upstream);
  const x = fakeHome(() => ({
    '.codex/config.toml': `model = "o4"\nmcp_servers.inline = { command = ${JSON.stringify(node)}, args = [${q}, "normal"], env = { A = "1" } }\n\n` +
      `[mcp_servers.lit]\ncommand = '${node}'\nargs = ['${upstream}', 'normal']\n\n` +
      `[mcp_servers."my.server"]\ncommand = ${JSON.stringify(node)}\nargs = [\n  ${q},   # the fixture\n  "normal",\n]\n\n[profiles.x]\nmodel = "o3"\n`,
  }));
  const listJson = () => { const r = host(x, 'codex', 'mcp', 'list', '--json'); try { return JSON.parse(r.stdout); } catch { return r.stdout + r.stderr; } };
  const before = listJson();
  const i = keelRun(x, 'install', '--client', 'codex');
  const mid = listJson();
  const wrapped = Array.isArray(mid) && mid.length === 3 && mid.every((s) => s.transport.command === keel && s.transport.args[0] === 'wrap' &&
    s.transport.args.includes(upstream));
  ok(i.status === 0 && wrapped, 'codex mcp list reads all three servers (literal strings, a quoted name with a multi-line array, an inline table) as keel wrap', { mid, out: i.stdout + i.stderr });
  const st = await appServer(x, ['mcpServerStatus/list', 'hooks/list']);
  const servers = st[2]?.result?.data || [];
  const tools = Object.fromEntries(servers.map((s) => [s.name, Object.keys(s.tools || {})]));
  ok(servers.length === 3 && servers.every((s) => tools[s.name].includes('echo')) && servers.some((s) => tools[s.name].includes('get_time_context')),
    'Codex reaches every server through keel wrap: the server\'s tools, and keel\'s own on the first', tools);
  const hooks = (st[3]?.result?.data || []).flatMap((d) => d.hooks || []);
  const errors = (st[3]?.result?.data || []).flatMap((d) => (d.errors || []).concat(d.warnings || []));
  const keels = hooks.filter((hk) => hk.command.includes(`${keel} hook`));
  ok(keels.length >= 3 && errors.length === 0 && keels.every((hk) => hk.trustStatus === 'untrusted') && /run \/hooks in Codex and trust keel's hooks/.test(i.stdout),
    'Codex lists keel\'s hooks with no error, untrusted until reviewed, as install told the person', { keels: keels.map((k) => [k.eventName, k.trustStatus]), errors });
  const add = host(x, 'codex', 'mcp', 'add', 'added', '--', node, upstream, 'normal');
  const u = keelRun(x, 'uninstall', '--client', 'codex');
  const after = listJson();
  const strip = (a) => JSON.stringify((Array.isArray(a) ? a : []).filter((s) => s.name !== 'added'));
  ok(add.status === 0 && u.status === 0 && strip(after) === strip(before) && Array.isArray(after) && after.some((s) => s.name === 'added') &&
     !existsSync(join(x.h, '.codex/hooks.json')),
    'after uninstall codex mcp list shows what it showed before, plus the server it added itself; keel\'s hooks file is gone', { before, after, u: u.stderr });
}

// --- Gemini CLI: JSON with comments, a trusted folder -------------------------
{
  const x = fakeHome((proj) => ({
    '.gemini/settings.json': `{\n  // my servers\n  "mcpServers": {"fs": {"command": ${JSON.stringify(node)}, "args": [${JSON.stringify(upstream)}, "normal"]}} /* end */\n}\n`,
    '.gemini/trustedFolders.json': JSON.stringify({ [proj]: 'TRUST_FOLDER' }),
  }));
  const before = host(x, 'gemini', 'mcp', 'list');
  const i = keelRun(x, 'install', '--client', 'gemini');
  const mid = host(x, 'gemini', 'mcp', 'list');
  const text = readFileSync(join(x.h, '.gemini/settings.json'), 'utf8');
  ok(i.status === 0 && /fs: .*keel wrap -- .*Connected/.test(mid.out) && text.includes('// my servers') && text.includes('/* end */'),
    'gemini mcp list reaches the server through keel wrap (Connected); the comments in settings.json stay', mid.out + mid.stderr);
  const add = host(x, 'gemini', 'mcp', 'add', '-s', 'user', 'added', node, upstream, 'normal');
  const u = keelRun(x, 'uninstall', '--client', 'gemini');
  const after = host(x, 'gemini', 'mcp', 'list');
  ok(add.status === 0 && u.status === 0 && JSON.stringify(lines(after.out).filter((l) => !/\badded:/.test(l))) === JSON.stringify(lines(before.out)) &&
     /added: .*Connected/.test(after.out),
    'after uninstall gemini mcp list shows what it showed before, plus the server it added itself', { before: before.out, after: after.out, u: u.stderr });
}

done();
