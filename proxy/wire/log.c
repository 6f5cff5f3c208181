/* log.c: one line per event on stderr (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int threshold = LOG_INFO;
static int chosen; /* set by log_set_level: a default no longer applies */
static const char *const names[] = {"error", "warn", "info", "debug"};

int log_set_level(const char *name)
{
    if (strcmp(name, "quiet") == 0) {
        threshold = LOG_ERROR;
        chosen = 1;
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) {
            threshold = i;
            chosen = 1;
            return 0;
        }
    return -1;
}

void log_default_level(int level)
{
    if (!chosen)
        threshold = level;
}

int log_enabled(int level)
{
    return level <= threshold;
}

void log_event(int level, const char *event, const char *fmt, ...)
{
    if (level > threshold)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "keel: %s %s", names[level], event);
    if (fmt && *fmt && n > 0 && (size_t)n < sizeof line - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
    }
    /* One write per line so lines from several keel processes don't interleave. */
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
}
