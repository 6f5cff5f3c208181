// filesystem.mjs: keel wrap around the real @modelcontextprotocol/server-filesystem,
// driven by the real SDK client, as an agent uses it: the files it reads
// reach it byte for byte, secrets included (keel advises, it does not edit a
// file's text on its way to an agent that may write it back); reading forty
// different files is work, not a loop; reading one unchanged file again and
// again is.
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ok, done } from './lib/tap.mjs';
import { keel, sandbox } from './lib/keel.mjs';

const require = createRequire(import.meta.url);
const FS = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const box = sandbox();
const dir = mkdtempSync(join(tmpdir(), 'keel-fs-'));
const env = { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...box.env };

async function connect(command, args) {
  const client = new Client({ name: 'keel-fs-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StdioClientTransport({ command, args, env, stderr: 'pipe' }));
  return client;
}
const textOf = (r) => r.content.filter((b) => b.type === 'text' && !b.text.startsWith('keel advisory')).map((b) => b.text).join('\n');
const advisories = (r) => (r._meta && r._meta['keel/advisories']) || [];

const envFile = join(dir, '.env');
const secretText = 'AWS_ACCESS_KEY_ID=AKIA2E0A8F3B244C9986\nREGION=eu-west-1\n\u001b[1mbold\u001b[0m\n';
writeFileSync(envFile, secretText);
const direct = await connect(process.execPath, [FS, dir]);
const wrapped = await connect(keel, ['wrap', '--', process.execPath, FS, dir]);
const tools = (await direct.listTools()).tools.map((t) => t.name);
const read = tools.includes('read_text_file') ? 'read_text_file' : 'read_file';
const d = await direct.callTool({ name: read, arguments: { path: envFile } });
const w = await wrapped.callTool({ name: read, arguments: { path: envFile } });
ok(textOf(d) === secretText && textOf(w) === secretText, `${read} of a file holding a credential and escape codes: the agent gets the file's exact text through keel`, { direct: textOf(d), wrapped: textOf(w) });
ok(JSON.stringify(w.structuredContent) === JSON.stringify(d.structuredContent), 'structuredContent identical through keel');
const a = advisories(w).find((x) => x.detector === 'rules');
ok(a && a.rules.includes('redact-credentials') && a.where.length >= 1, 'and an advisory says a credential is in it, and where', advisories(w));

// Forty different files: work.
for (let i = 0; i < 40; i++) writeFileSync(join(dir, `module_${i}.py`), `def f${i}():\n    return ${i}\n`);
let advised = 0;
for (let i = 0; i < 40; i++) {
  const r = await wrapped.callTool({ name: read, arguments: { path: join(dir, `module_${i}.py`) } });
  if (advisories(r).some((x) => x.detector === 'loop' || x.detector === 'rumination')) advised++;
}
ok(advised === 0, `40 reads of 40 different files: no loop or rumination advisory (${advised})`);

// The same unchanged file four times: one loop advisory, on the 4th.
const notes = join(dir, 'NOTES.md');
writeFileSync(notes, '# notes\nnothing new\n');
const loopOf = (r) => advisories(r).filter((x) => x.detector === 'loop');
const same = [];
for (let i = 0; i < 4; i++) same.push(await wrapped.callTool({ name: read, arguments: { path: notes } }));
ok(same.slice(0, 3).every((r) => loopOf(r).length === 0) && loopOf(same[3]).length === 1 && loopOf(same[3])[0].pattern === 'repeat'
  && textOf(same[3]) === '# notes\nnothing new\n', 'the same unchanged file read 4 times: one loop advisory, on the 4th, the text intact', same.map(loopOf));

// The file changes between reads: progress.
const log = join(dir, 'build.log');
let changed = 0;
for (let i = 0; i < 6; i++) {
  writeFileSync(log, `step ${i} of 6\n`);
  if (loopOf(await wrapped.callTool({ name: read, arguments: { path: log } })).length) changed++;
}
ok(changed === 0, 'a file that changed between each of 6 reads: no advisory');

// Pinned definitions: restarted on the same state, the server's tools are
// listed exactly as the first time, nothing held back, and calls go through.
{
  const first = (await wrapped.listTools()).tools;
  const again = await connect(keel, ['wrap', '--', process.execPath, FS, dir]);
  const second = (await again.listTools()).tools;
  const pins = JSON.parse(readFileSync(join(box.stateDir, 'pins.json'), 'utf8'));
  const pinned = Object.values(pins.servers)[0].tools;
  const r = await again.callTool({ name: read, arguments: { path: notes } });
  ok(JSON.stringify(second) === JSON.stringify(first) && tools.every((t) => pinned[t] && !pinned[t].pending) && textOf(r) === '# notes\nnothing new\n',
    `restarted with pinning on (the default): the same ${tools.length} tools, all pinned, none held, calls answered`, Object.keys(pinned));
  await again.close();
}

await direct.close();
await wrapped.close();
rmSync(dir, { recursive: true, force: true });
rmSync(box.dir, { recursive: true, force: true });
done();
