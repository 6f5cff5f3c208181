// docs.mjs: what the README and docs/ show a person works as shown. Every
// JSON block parses (a fragment of an object's members, as a config entry is
// shown, inside braces); every YAML block is a profile keel accepts (keel
// profile check) or a rule file keel lints clean (keel rules lint); every
// link to a file of the tree, and to a heading in it, leads somewhere. The
// README stays short enough to read in minutes.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel, root, sandbox } from './lib/keel.mjs';

const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
const box = sandbox();

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes.
const slug = (h) => h.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
const anchors = (text) => new Set(text.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ''))));

let blocks = 0, n = 0;
for (const page of pages) {
  const text = readFileSync(join(root, page), 'utf8');
  const re = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m; (m = re.exec(text));) {
    const [, lang, body] = m;
    const line = text.slice(0, m.index).split('\n').length;
    const where = `${page}:${line}`;
    if (lang === 'json') {
      blocks++;
      let parsed = null;
      for (const t of [body, `{${body.trim().replace(/,$/, '')}}`]) {
        try { parsed = JSON.parse(t); break; } catch { /* try as members */ }
      }
      ok(parsed !== null, `${where}: the JSON block parses`, body.slice(0, 200));
    } else if (lang === 'yaml') {
      blocks++;
      const dir = join(box.dir, `block-${++n}`);
      mkdirSync(dir);
      const isRuleFile = /^rules:\n\s+- /m.test(body);
      let r;
      if (isRuleFile) {
        writeFileSync(join(dir, 'rules.yml'), body);
        r = spawnSync(keel, ['rules', 'lint', '--rules', dir], { encoding: 'utf8', env: { ...process.env, ...box.env } });
      } else {
        writeFileSync(join(dir, 'profile.yaml'), body);
        r = spawnSync(keel, ['profile', 'check', '--profile', join(dir, 'profile.yaml')], { encoding: 'utf8', env: { ...process.env, ...box.env } });
      }
      ok(r.status === 0 && !/"problems"/.test(r.stdout),
        `${where}: the YAML block is ${isRuleFile ? 'a rule file keel lints clean' : 'a profile keel accepts'}`, (r.stdout + r.stderr).slice(0, 600));
    }
  }
  // links into the tree
  const bad = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1];
    if (/^(https?:|mailto:)/.test(target)) continue;
    const [file, hash] = target.split('#');
    const path = file ? resolve(join(root, dirname(page)), file) : join(root, page);
    if (!existsSync(path)) { bad.push(`${target} (no such file)`); continue; }
    if (hash && path.endsWith('.md') && !anchors(readFileSync(path, 'utf8')).has(hash)) bad.push(`${target} (no such heading)`);
  }
  ok(bad.length === 0, `${page}: every link into the tree leads to a file and heading that exist`, bad);
}
ok(blocks >= 10, `${blocks} code blocks checked`);
const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length;
ok(lines <= 400, `README.md is ${lines} lines (at most 400; the reference is in docs/)`);
ok(/^make test\b/m.test(readFileSync(join(root, 'README.md'), 'utf8')) && /make test/.test(readFileSync(join(root, '.ci', 'run'), 'utf8')),
  'the README names the test command CI runs');
done();
