#!/usr/bin/env node
// notes-server.mjs: a tiny MCP server to wrap in the demo. Plain Node, no
// dependencies: one JSON-RPC message per line on stdin and stdout.
// Tools: add_note {text}, search_notes {query}, read_note {id}.
import { createInterface } from 'node:readline';

const notes = ['migration plan: move the orders table first', 'lunch on Friday with the platform team',
  'orders table: 41 million rows, 3 indexes', 'rollback: restore from the 02:00 snapshot', 'owners: Dana (db), Lee (api)'];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tools = [
  { name: 'add_note', description: 'Store a short note.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'search_notes', description: 'Find notes containing a word.', inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
  { name: 'read_note', description: 'Read one note by its number (from 1).', inputSchema: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] } },
];
createInterface({ input: process.stdin }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined || m.method === undefined) return;
  const reply = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  switch (m.method) {
    case 'initialize':
      return reply({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'notes', version: '1.0.0' } });
    case 'ping': return reply({});
    case 'tools/list': return reply({ tools });
    case 'tools/call': {
      const a = m.params.arguments || {};
      if (m.params.name === 'add_note') { notes.push(String(a.text)); return reply({ content: [{ type: 'text', text: `saved (${notes.length} notes)` }] }); }
      if (m.params.name === 'read_note') {
        const n = notes[Number(a.id) - 1];
        return reply(n ? { content: [{ type: 'text', text: n }] } : { content: [{ type: 'text', text: `no note ${a.id}` }], isError: true });
      }
      if (m.params.name === 'search_notes') {
        const q = String(a.query || '').toLowerCase().split(/\s+/).filter(Boolean);
        const hits = notes.filter((n) => q.some((w) => n.includes(w)));
        return reply({ content: [{ type: 'text', text: hits.length ? hits.join('\n') : 'no notes match' }] });
      }
      return send({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: `unknown tool ${m.params.name}` } });
    }
    default: return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
