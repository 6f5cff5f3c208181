// shapes.mjs: large tool results in the layouts servers write, as the fixture
// upstream's "shaped" tool sends them (id, then arguments: layout, kb, n;
// last_byte's n is how many times the fixture has sent it).
export function shaped(rawId, a) {
  const id = JSON.stringify(rawId), big = 'x'.repeat((a.kb || 1536) << 10);
  const block = `{"type":"text","text":"${big}"}`;
  const shapes = {
    plain: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[${block}]}}`,
    last_byte: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"${big}${a.n % 10}"}]}}`,
    idlast: () => `{"result":{"content":[${block}]},"jsonrpc":"2.0","id":${id}}`,
    meta_first: () => `{"jsonrpc":"2.0","id":${id},"result":{"_meta":{"trace":"t1"},"content":[${block}]}}`,
    meta_after: () => `{"result":{"content":[ ${block} ],"_meta":{ }},"jsonrpc":"2.0","id":${id}}`,
    structured: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[${block}],"structuredContent":{"size":${big.length},"blob":"${big.slice(0, 4096)}"}}}`,
    string_content: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":"${big}"}}`,
    no_content: () => `{"jsonrpc":"2.0","id":${id},"result":{"structuredContent":{"blob":"${big}"}}}`,
    error: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"Error: build failed after ${a.n} ms"},${block}],"isError":true}}`,
    big_error: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"Error ${a.n}: ${big}"}],"isError":true}}`,
    crlf: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[${block}]}}\r`,
    wide_chars: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"${'\u6f22'.repeat(big.length / 3 | 0)}"}]}}`,
    bad_utf8: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"${big}\ufffd${big.slice(0, 1000)}"}]}}`,
    dup: () => `{"jsonrpc":"2.0","id":${id},"result":{"content":[${block}]},"result":{}}`,
  };
  return shapes[a.layout]();
}
