/* era.h: MCP's two eras, as keel speaks them.
 *
 * Legacy (2024-11-05 to 2025-11-25): an initialize handshake opens the
 * connection, then requests follow. Modern (2026-07-28): no handshake; every
 * request names its protocol version (and the client's capabilities) in
 * params._meta, every result says its resultType, and list results say how
 * long they may be cached (ttlMs, cacheScope). A request is modern when it
 * names a version in _meta; otherwise it is legacy. keel serves both, request
 * by request, and answers server/discover in either. */
#ifndef KEEL_ERA_H
#define KEEL_ERA_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define ERA_VERSION_KEY         "io.modelcontextprotocol/protocolVersion"
#define ERA_SERVER_INFO_KEY     "io.modelcontextprotocol/serverInfo"
#define ERA_UNSUPPORTED_VERSION (-32022)
#define ERA_LIST_TTL_MS         3600000 /* keel's tool list does not change while it runs */

/* Every version keel speaks, newest first ("2026-07-28" ... "2024-11-05"),
 * NULL-terminated; the modern ones are those before ERA_FIRST_LEGACY. */
extern const char *const era_versions[];
#define ERA_FIRST_LEGACY 1

/* The version a request names in params._meta: 1 and v filled (cut to vcap,
 * NUL-terminated), 0 when it names none (a legacy request), -1 when _meta
 * holds the key with something other than a string (treated as unsupported).
 * params is the raw JSON of the request's params (valid JSON), or NULL. */
int era_requested_raw(const char *params, size_t pn, char *v, size_t vcap);
/* The same from a parsed params object. */
int era_requested(const cJSON *params, char *v, size_t vcap);

/* 1 if v is a modern version keel speaks. */
int era_modern_supported(const char *v);

/* The error value for a request naming a version keel does not speak:
 * {code: -32022, message, data: {supported: [...], requested}}. */
cJSON *era_unsupported_error(const char *requested);

/* Adds resultType "complete" to a result object (a modern answer). */
void era_complete(cJSON *result);

#endif
