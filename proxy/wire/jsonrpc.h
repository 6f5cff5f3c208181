/* jsonrpc.h: JSON-RPC 2.0 framing on keel's side of the wire.
 *
 * Builders for the messages keel itself writes (results and errors) and the
 * one function that puts a message on a file descriptor: the whole line and
 * its newline in as few write(2) calls as the kernel allows, retried on EINTR
 * and short writes, never buffered past the call (a stdio buffer that is not
 * flushed hangs the MCP handshake). */
#ifndef KEEL_JSONRPC_H
#define KEEL_JSONRPC_H

#include <cjson/cJSON.h>
#include <stddef.h>

enum {
    JR_PARSE_ERROR = -32700,
    JR_INVALID_REQUEST = -32600,
    JR_METHOD_NOT_FOUND = -32601,
    JR_INVALID_PARAMS = -32602,
    JR_INTERNAL_ERROR = -32603,
};

/* Writes s[0..n) and a newline, waiting (poll) when the descriptor is
 * non-blocking and full. 0, or -1 (errno set; EPIPE when the peer left). */
int jr_write_line(int fd, const char *s, size_t n);

/* The text of a reply: {"jsonrpc":"2.0","id":ID,"MEMBER":VALUE}. id is the
 * raw JSON text of the request's id, echoed byte for byte (NULL: null).
 * Takes ownership of value. NULL when memory runs out. */
char *jr_reply(const char *id, size_t id_n, const char *member, cJSON *value);

/* cJSON's unformatted print of a value, as a JSON string (quotes included):
 * each quote and backslash escaped. That print has no raw control
 * characters, so nothing else needs escaping. NULL when memory runs out. */
char *jr_quote_printed(const char *json);

/* An error object {code, message[, data: {code: keel_code}]}. */
cJSON *jr_error_value(int code, const char *message, const char *keel_code);

/* The longest request id keel wrap relays, as raw JSON text. It keeps a copy
 * of each id in flight (up to PENDING_MAX of them each way), so an id as long
 * as a message would let a peer make keel hold gigabytes; no SDK comes near
 * it (they number requests or use UUIDs). A request with a longer id is
 * answered -32600 and not relayed. */
#define JR_ID_MAX 1024

/* 1 if v is a valid request id: a string or a number. */
int jr_valid_id(const cJSON *v);

/* 1 if the raw text is a valid request id: a JSON string or number. */
int jr_valid_raw_id(const char *id, size_t n);

/* 1 when the JSON number id[0..n) has an integer value (1, 1.0, 1e3; not
 * 1.5, 1e-3 or 1e400): what MCP's SDKs take as an id. */
int jr_integer_id(const char *id, size_t n);

#endif
