/* test_oom.c: out of memory never gives a wrong answer. Each detector tool
 * is called with its Nth allocation failing, for every N its call makes (in
 * a child process each, so the tables loaded once stay loaded); the answer
 * must be the one given with memory enough, or an error, never another
 * answer and never a crash. The allocations of keel's own code are failed
 * (the binary is linked with --wrap=malloc,calloc,realloc); cJSON's,
 * PCRE2's and libc's own are not. */
#include "asking.h"
#include "detect.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static long fail_at = -1, count;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);

#include <execinfo.h>
static int fails(void)
{
    int f = fail_at >= 0 && count++ == fail_at;
    if (f && getenv("OOM_TRACE")) {
        void *b[16];
        int k = backtrace(b, 16);
        backtrace_symbols_fd(b, k, 2);
    }
    return f;
}
void *__wrap_malloc(size_t n)
{
    return fails() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n)
{
    return fails() ? NULL : __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n)
{
    return fails() ? NULL : __real_realloc(p, n);
}

typedef int (*tool_fn)(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e);

#define NOW        1778931000000LL /* 2026-05-16T11:30:00Z */
#define ANSWER_MAX 65536

/* The answer with allocation n failing (n < 0: none fails), in a child:
 * "rc injected json". 0, or -1 when the child did not end by itself. */
static int answer_at(tool_fn fn, const char *args_json, long n, char *buf, size_t cap)
{
    int fd[2];
    if (pipe(fd) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        cJSON *args = cJSON_Parse(args_json);
        cJSON *out = NULL;
        kerr e = {0};
        count = 0;
        fail_at = n;
        int rc = fn(args, NOW, 0, &out, &e);
        int injected = n >= 0 && count > n;
        fail_at = -1;
        char *json = out ? cJSON_PrintUnformatted(out) : NULL;
        FILE *f = fdopen(fd[1], "w");
        fprintf(f, "%d %d %s", rc, injected, rc == 0 ? (json ? json : "null") : (e.code ? e.code : "no code"));
        fclose(f);
        exit(0); /* exit, not _exit: a coverage build writes what the child ran */
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd[0], buf + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void every_failure_an_error_or_the_answer(tool_fn fn, const char *args_json)
{
    static char want[ANSWER_MAX], got[ANSWER_MAX];
    cJSON *args = cJSON_Parse(args_json), *out = NULL;
    kerr e = {0};
    assert_int_equal(fn(args, NOW, 0, &out, &e), 0); /* the tables load here, once */
    cJSON_Delete(out);
    cJSON_Delete(args);
    assert_int_equal(answer_at(fn, args_json, -1, want, sizeof want), 0);
    assert_int_equal(strncmp(want, "0 0 ", 4), 0);
    int errors = 0;
    for (long n = 0;; n++) {
        if (answer_at(fn, args_json, n, got, sizeof got) < 0)
            fail_msg("allocation %ld failing: the call did not come back", n);
        if (got[2] == '0') /* the call made fewer than n + 1 allocations: done */
            break;
        if (!strncmp(got, "-1 1 ", 5)) {
            if (strcmp(got + 5, "INTERNAL_ERROR"))
                fail_msg("allocation %ld failing: the error is %s, not INTERNAL_ERROR", n, got + 5);
            errors++;
        } else if (strcmp(got + 4, want + 4)) {
            size_t k = 4;
            while (got[k] == want[k])
                k++;
            k = k > 60 ? k - 60 : 0;
            fail_msg("allocation %ld failing: a different answer\n  %.160s\n  not %.160s", n, got + k, want + k);
        }
        assert_true(n < 100000);
    }
    assert_true(errors > 0); /* some allocation could fail, and was said to */
}

static void rumination(void **state)
{
    (void)state;
    every_failure_an_error_or_the_answer(
        rum_check,
        "{\"current_prompt\": \"Sorry to ask again, but is the vendor contract safe to sign?\", "
        "\"history\": [{\"text\": \"Is it safe to sign the vendor contract as it is?\", \"at\": "
        "\"2026-05-16T10:00:00Z\"}, {\"text\": \"Did I make a mistake agreeing to the contract terms?\", "
        "\"at\": \"2026-05-16T10:20:00Z\"}, {\"text\": \"Be honest, was signing the contract a bad "
        "call?\", \"at\": \"2026-05-16T10:40:00Z\"}]}");
}

static void sycophancy(void **state)
{
    (void)state;
    every_failure_an_error_or_the_answer(
        syc_check,
        "{\"candidate_response\": \"You're absolutely right, brilliant plan. Great question!\", "
        "\"recent_user_messages\": [{\"text\": \"is it safe to merge?\", \"at\": \"2026-05-16T10:00:00Z\"}, "
        "{\"text\": \"are you sure the merge is safe?\", \"at\": \"2026-05-16T10:20:00Z\"}]}");
}

static void self_inspect(void **state)
{
    (void)state;
    every_failure_an_error_or_the_answer(insp_check, "{\"thought\": \"I am sure the cache is the cause\"}");
}

/* ask_text says 0, or -1 out of memory: every failure inside it is -1. */
static void how_a_prompt_asks(void **state)
{
    (void)state;
    const char *s = "Sorry to ask again, but is it really safe to merge the reviewed change tonight?";
    unsigned kinds;
    assert_int_equal(ask_text(s, strlen(s), &kinds), 0); /* its tables load here, once */
    for (long n = 0;; n++) {
        count = 0;
        fail_at = n;
        int rc = ask_text(s, strlen(s), &kinds);
        int injected = count > n;
        fail_at = -1;
        if (!injected)
            break;
        if (rc != -1)
            fail_msg("allocation %ld failing: ask_text answered %d, not -1", n, rc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rumination),
        cmocka_unit_test(sycophancy),
        cmocka_unit_test(self_inspect),
        cmocka_unit_test(how_a_prompt_asks),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
