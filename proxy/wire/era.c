/* era.c: which era a request is in, and what a modern answer carries (see era.h). */
#include "era.h"

#include "jscan.h"

#include <stdlib.h>
#include <string.h>

const char *const era_versions[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL};

static int copy_version(const char *s, char *v, size_t vcap)
{
    if (!s)
        return -1;
    size_t l = strlen(s);
    if (l >= vcap)
        l = vcap - 1;
    memcpy(v, s, l);
    v[l] = '\0';
    return 1;
}

int era_requested_raw(const char *params, size_t pn, char *v, size_t vcap)
{
    const char *meta, *ver;
    size_t mn, vn;
    if (!params || params[0] != '{' || jscan_member(params, pn, "_meta", &meta, &mn) != 1 || meta[0] != '{' ||
        jscan_member(meta, mn, ERA_VERSION_KEY, &ver, &vn) != 1)
        return 0;
    char *s = ver[0] == '"' ? jscan_string_prefix(ver, vn, vcap) : NULL;
    int rc = copy_version(s, v, vcap);
    free(s);
    return rc;
}

int era_requested(const cJSON *params, char *v, size_t vcap)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    const cJSON *ver = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, ERA_VERSION_KEY) : NULL;
    if (!ver)
        return 0;
    return copy_version(cJSON_GetStringValue(ver), v, vcap);
}

int era_modern_supported(const char *v)
{
    for (int i = 0; i < ERA_FIRST_LEGACY; i++)
        if (!strcmp(v, era_versions[i]))
            return 1;
    return 0;
}

cJSON *era_unsupported_error(const char *requested)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "code", ERA_UNSUPPORTED_VERSION);
    cJSON_AddStringToObject(e, "message", "Unsupported protocol version");
    cJSON *data = cJSON_AddObjectToObject(e, "data");
    cJSON *sup = cJSON_AddArrayToObject(data, "supported");
    for (int i = 0; era_versions[i]; i++)
        cJSON_AddItemToArray(sup, cJSON_CreateString(era_versions[i]));
    cJSON_AddStringToObject(data, "requested", requested ? requested : "");
    return e;
}

void era_complete(cJSON *result)
{
    if (cJSON_IsObject(result) && !cJSON_GetObjectItemCaseSensitive(result, "resultType"))
        cJSON_AddStringToObject(result, "resultType", "complete");
}
