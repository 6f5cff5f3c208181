// install.mjs: keel install and uninstall on sample configurations of each
// client (tests/install/), in a private HOME: servers wrapped (the first with
// keel's tools, the others --expose none; a remote server left alone),
// hooks registered (beside the person's own), everything else byte for
// byte, a diff printed, a second install changing nothing, --dry-run writing
// nothing, a file that does not parse left alone, uninstall restoring each
// file exactly, and refusing when something else changed it since.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel as keelArg, root, sandbox } from './lib/keel.mjs';

const keel = realpathSync(keelArg);   // what install writes: the executable's own path

const src = join(root, 'tests', 'install');
const FILES = {
  'claude.json': '.claude.json',
  'claude-settings.json': '.claude/settings.json',
  'cursor-mcp.json': '.cursor/mcp.json',
  'codex-config.toml': '.codex/config.toml',
  'gemini-settings.json': '.gemini/settings.json',
  'claude-desktop-config.json': '.config/Claude/claude_desktop_config.json',
};
function home() {
  const h = join(sandbox().dir, 'home');
  for (const [from, to] of Object.entries(FILES)) {
    mkdirSync(dirname(join(h, to)), { recursive: true });
    cpSync(join(src, from), join(h, to));
  }
  return h;
}
const run = (h, ...args) => spawnSync(keel, args, { env: { PATH: process.env.PATH, HOME: h }, encoding: 'utf8' });
const read = (h, f) => readFileSync(join(h, f), 'utf8');
const snapshot = (h) => Object.fromEntries(Object.values(FILES).concat(['.codex/hooks.json']).map((f) => [f, existsSync(join(h, f)) ? read(h, f) : null]));

const h = home();
const before = snapshot(h);
const dry = run(h, 'install', '--dry-run');
ok(JSON.stringify(snapshot(h)) === JSON.stringify(before) && /^\+.*"wrap"/m.test(dry.stdout) && !existsSync(join(h, '.claude.json.keel-backup')),
  'install --dry-run prints the diff and writes nothing', dry.stdout.slice(0, 400));

const r = run(h, 'install');
ok(r.status === 1 && /claude_desktop_config.json is not valid JSON/.test(r.stderr) &&
   read(h, FILES['claude-desktop-config.json']) === before[FILES['claude-desktop-config.json']],
  'a configuration that does not parse is left alone, with an error naming it (exit 1)', r.stderr);
ok(/^--- a.*\.claude\.json$/m.test(r.stdout) && /^\+\+\+ b/m.test(r.stdout), 'install prints a unified diff of each change', r.stdout.slice(0, 300));

const cj = JSON.parse(read(h, '.claude.json'));
const fs = cj.mcpServers.filesystem, gh = cj.mcpServers.github;
ok(fs.command === keel && JSON.stringify(fs.args) === JSON.stringify(['wrap', '--', 'npx', '-y', '@modelcontextprotocol/server-filesystem', '/home/ana']) &&
   JSON.stringify(gh.args.slice(0, 5)) === JSON.stringify(['wrap', '--expose', 'none', '--', 'docker']) &&
   cj.mcpServers.remote.url === 'https://mcp.example.com/mcp' && !('command' in cj.mcpServers.remote),
  'Claude Code: the first server keeps keel\'s tools, the next gets --expose none, the remote one is left', cj.mcpServers);
ok(read(h, '.claude.json').includes('"projects": {"/home/ana/shop": {"allowedTools": []}}') && read(h, '.claude.json').includes('"numStartups": 12,'),
  'everything else in the file stays byte for byte');
const cs = JSON.parse(read(h, '.claude/settings.json'));
ok(cs.model === 'opus' && cs.hooks.Stop.length === 2 && cs.hooks.Stop[0].hooks[0].command === 'notify-send done' &&
   ['UserPromptSubmit', 'Stop', 'SubagentStop', 'SessionStart'].every((e) => JSON.stringify(cs.hooks[e]).includes(`${keel} hook ${e}`)),
  'Claude Code hooks: keel\'s registered for its four events, beside the person\'s own Stop hook', cs.hooks);
const cmd = cs.hooks.UserPromptSubmit[0].hooks[0].command;
const hk = spawnSync('sh', ['-c', cmd], { input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's', prompt: 'hello', transcript_path: '/nonexistent' }),
  env: { PATH: process.env.PATH, HOME: h, KEEL_STATE_DIR: join(h, 'state') }, encoding: 'utf8' });
ok(hk.status === 0, 'the registered hook command runs as the host would run it (through a shell): exit 0', hk);
const codex = read(h, '.codex/config.toml');
ok(codex.includes('# my codex settings') && codex.includes(`command = "${keel}"   # the docs server`) &&
   codex.includes('args = ["wrap", "--", "npx", "-y", "docs-mcp"]') && codex.includes('args = ["wrap", "--expose", "none", "--", "uvx"]') &&
   codex.includes('[mcp_servers.docs.env]\nTOKEN = "x"') && /\[features\]\ncodex_hooks = true/.test(codex),
  'Codex config.toml: servers wrapped, comments and other tables kept, hooks switched on', codex);
const ch = JSON.parse(read(h, '.codex/hooks.json'));
ok(JSON.stringify(ch.hooks.Stop).includes('hook Stop --host codex'), 'Codex hooks.json created with keel\'s hooks (--host codex)', ch);
const gs = JSON.parse(read(h, '.gemini/settings.json'));
ok(gs.theme === 'dark' && gs.mcpServers.fs.command === keel && JSON.stringify(gs.hooks.AfterAgent).includes('hook AfterAgent --host gemini') &&
   gs.hooks.BeforeAgent[0].hooks[0].timeout === 10000, 'Gemini: the server wrapped and BeforeAgent/AfterAgent/SessionStart hooks registered (timeouts in ms)', gs);
ok(JSON.parse(read(h, '.cursor/mcp.json')).mcpServers.notes.args[0] === 'wrap', 'Cursor: the server wrapped');

const after = snapshot(h);
const again = run(h, 'install');
ok(JSON.stringify(snapshot(h)) === JSON.stringify(after) && (again.stdout.match(/unchanged/g) || []).length === 6,
  'a second install changes nothing', again.stdout);

const un = run(h, 'uninstall');
const restored = snapshot(h);
ok(un.status === 0 && Object.entries(before).every(([f, v]) => restored[f] === v) && restored['.codex/hooks.json'] === null &&
   !existsSync(join(h, '.claude.json.keel-backup')) && !existsSync(join(h, '.claude.json.keel-installed')),
  'uninstall restores every file exactly (and removes the one keel created)', un.stderr);

// Changed by something else since: left alone, and the original's place named.
const h2 = home();
run(h2, 'install', '--client', 'cursor');
writeFileSync(join(h2, '.cursor/mcp.json'), read(h2, '.cursor/mcp.json').replace('"notes"', '"my-notes"'));
const changed = read(h2, '.cursor/mcp.json');
const un2 = run(h2, 'uninstall', '--client', 'cursor');
ok(un2.status === 1 && read(h2, '.cursor/mcp.json') === changed && /changed since keel install/.test(un2.stderr) &&
   /mcp\.json\.keel-backup/.test(un2.stderr), 'a file changed since the install is left as it is; the original\'s place is named', un2.stderr);
const only = run(h2, 'install', '--client', 'codex');
ok(only.status === 0 && !/\.claude/.test(only.stdout), '--client limits install to that client', only.stdout.slice(0, 200));
const bad = run(h2, 'install', '--client', 'vscode');
ok(bad.status === 64 && /claude-code, claude-desktop, cursor, codex or gemini/.test(bad.stderr), 'an unknown client: usage error naming the known ones', bad.stderr);

// Hooks objects keel must add to without breaking them: empty, and an event with an empty list.
for (const [name, text] of [['an empty hooks object', '{"hooks": {}}'], ['an event with an empty list', '{"hooks": {"Stop": []}, "x": 1}']]) {
  const h3 = join(sandbox().dir, 'home');
  mkdirSync(join(h3, '.claude'), { recursive: true });
  writeFileSync(join(h3, '.claude/settings.json'), text);
  const r3 = run(h3, 'install', '--client', 'claude-code');
  let parsed = null;
  try { parsed = JSON.parse(read(h3, '.claude/settings.json')); } catch { /* left null */ }
  ok(r3.status === 0 && parsed && ['UserPromptSubmit', 'Stop', 'SubagentStop', 'SessionStart'].every((e) => JSON.stringify(parsed.hooks[e] || '').includes('hook ' + e)),
    `hooks added to ${name}: valid JSON with all four`, read(h3, '.claude/settings.json'));
}

done();
