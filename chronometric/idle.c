/* idle.c: idle_status and the OS idle probe.
 *
 * Two clocks of inactivity: the client's (time since keel last saw a
 * request, always known) and the operating system's (time since the last
 * keyboard or mouse input), read only with consent (privacy.os_idle_consent)
 * by a probe command that prints idle milliseconds: privacy.idle_probe_command,
 * or xprintidle when DISPLAY is set. The probe runs under /bin/sh with a 1 s
 * limit and its own process group; a missing, failing, slow or garbled probe
 * means "unknown", never an error. Without consent the answer is
 * consent_granted: false and hyperfocus_signal: unknown, also never an error.
 * With consent:
 *
 *   client idle < 5 min                     active
 *   client idle >= 5 min, OS idle < 1 min   hyperfocus-elsewhere
 *   client idle >= 5 min, OS idle >= 5 min  distraction-or-break
 *   anything else                           unknown */
#include "chrono.h"

#include "detect.h"
#include "timefmt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CLIENT_IDLE_S    300
#define OS_ACTIVE_S      60
#define OS_AWAY_S        300
#define PROBE_TIMEOUT_MS 1000

long long chrono_probe_idle_ms(const char *command, int timeout_ms)
{
    int p[2];
    if (!command || !*command || pipe(p) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    char *argv[] = {"sh", "-c", (char *)command, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return -1;
    }
    char buf[64];
    size_t n = 0;
    int64_t deadline = chrono_mono_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        int64_t left = deadline - chrono_mono_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pf = {p[0], POLLIN, 0};
        int r = poll(&pf, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        ssize_t got = read(p[0], buf + n, sizeof buf - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
        if (n == sizeof buf - 1)
            break;
    }
    close(p[0]);
    int status = 0;
    if (timed_out)
        kill(-pid, SIGKILL);
    /* Wait for the exit, but never past the deadline (plus a grace for SIGKILL). */
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            status = -1;
            break;
        }
        if (chrono_mono_ms() > deadline) {
            kill(-pid, SIGKILL);
            timed_out = 1;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    while (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t')
        end++;
    if (end == buf || *end || errno || v < 0)
        return -1;
    return v;
}

int chrono_idle_status(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {NULL};
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;
    const struct profile *p = env->profile;
    cJSON *o = cJSON_CreateObject();
    int consent = !p->unreadable && p->idle_consent;
    cJSON_AddBoolToObject(o, "consent_granted", consent);

    long long client_s = -1;
    kerr se = {0};
    cJSON *state = chrono_read_state(env, &se);
    int64_t at;
    const char *last = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, "last_prompt_at"));
    if (last && tf_parse_rfc3339(last, &at, NULL) == 0)
        client_s = env->now.ms > at ? (env->now.ms - at) / 1000 : 0;
    cJSON_Delete(state);
    if (client_s >= 0)
        cJSON_AddNumberToObject(o, "client_idle_seconds", (double)client_s);

    long long os_s = -1;
    if (consent) {
        const char *cmd = p->idle_probe[0] ? p->idle_probe : getenv("DISPLAY") ? "xprintidle" : NULL;
        long long ms = chrono_probe_idle_ms(cmd, PROBE_TIMEOUT_MS);
        if (ms >= 0) {
            os_s = ms / 1000;
            cJSON_AddNumberToObject(o, "os_idle_seconds", (double)os_s);
        }
    }
    const char *signal = "unknown";
    if (!consent)
        ; /* without consent keel does not judge presence at all */
    else if (client_s >= 0 && client_s < CLIENT_IDLE_S)
        signal = "active";
    else if (client_s >= CLIENT_IDLE_S && os_s >= 0 && os_s < OS_ACTIVE_S)
        signal = "hyperfocus-elsewhere";
    else if (client_s >= CLIENT_IDLE_S && os_s >= OS_AWAY_S)
        signal = "distraction-or-break";
    cJSON_AddStringToObject(o, "hyperfocus_signal", signal);
    cJSON *warnings = cJSON_CreateArray();
    if (p->unreadable)
        cJSON_AddItemToArray(warnings,
                             cJSON_CreateString("PROFILE_UNREADABLE: consent cannot be read, so the OS is not asked"));
    if (se.code) {
        char w[1500];
        snprintf(w, sizeof w, "%s: %s", se.code, se.message);
        cJSON_AddItemToArray(warnings, cJSON_CreateString(w));
    }
    if (cJSON_GetArraySize(warnings))
        cJSON_AddItemToObject(o, "warnings", warnings);
    else
        cJSON_Delete(warnings);
    *out = o;
    return 0;
}
