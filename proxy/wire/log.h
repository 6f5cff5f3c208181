/* log.h: events on stderr, never content.
 *
 * A log line is an event name and numbers or fixed identifiers:
 *   keel: info tool_invoked name=check_rumination bytes=812
 * Nothing a person or a model wrote (prompts, arguments, results, intents)
 * is ever passed to these functions; callers log sizes instead. */
#ifndef KEEL_LOG_H
#define KEEL_LOG_H

enum { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* "error", "warn", "info", "debug" (or "quiet" = error); -1 if unknown. */
int log_set_level(const char *name);
int log_enabled(int level);
/* The level when --log-level was not given (info for the relays, warn for
 * one-shot commands, whose stderr a person reads). */
void log_default_level(int level);

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void log_event(int level, const char *event, const char *fmt, ...);

#endif
