/* test_relay_parts.c: the relay's small parts: argument splitting, the
 * pending-request table, the output queue over a real non-blocking pipe. */
#include "argsplit.h"
#include "outq.h"
#include "pending.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void splits_like_a_shell_without_one(void **state)
{
    (void)state;
    const char *err = NULL;
    char **v = argsplit("npx -y  'my server' \"a \\\"b\\\" $HOME\" c\\ d e''f", &err);
    assert_non_null(v);
    const char *want[] = {"npx", "-y", "my server", "a \"b\" $HOME", "c d", "ef", NULL};
    for (int i = 0; want[i]; i++)
        assert_string_equal(v[i], want[i]);
    assert_null(v[6]);
    free(v);
    assert_null(argsplit("a 'b", &err));
    assert_string_equal(err, "unterminated quote");
    assert_null(argsplit("a \"b", &err));
    assert_null(argsplit("   ", &err));
    assert_string_equal(err, "empty command");
    v = argsplit("''", &err);                 /* an empty argument is still an argument */
    assert_non_null(v);
    assert_string_equal(v[0], "");
    assert_null(v[1]);
    free(v);
}

static void pending_keys_on_direction_and_raw_id(void **state)
{
    (void)state;
    struct pending p = {0};
    int kind;
    assert_int_equal(pending_add(&p, FROM_CLIENT, "0", 1, PK_INITIALIZE, NULL), 0);
    assert_int_equal(pending_add(&p, FROM_SERVER, "0", 1, PK_OTHER, NULL), 0);   /* the same id, the other way */
    assert_int_equal(pending_add(&p, FROM_CLIENT, "\"0\"", 3, PK_TOOLS_LIST, NULL), 0);
    assert_int_equal(pending_take(&p, FROM_CLIENT, "0", 1, &kind, NULL), 1);
    assert_int_equal(kind, PK_INITIALIZE);
    assert_int_equal(pending_take(&p, FROM_CLIENT, "0", 1, &kind, NULL), 0);     /* taken once */
    assert_int_equal(pending_take(&p, FROM_SERVER, "0", 1, &kind, NULL), 1);
    assert_int_equal(pending_take(&p, FROM_CLIENT, "\"0\"", 3, &kind, NULL), 1);
    assert_int_equal(kind, PK_TOOLS_LIST);
    /* Many in flight, through several resizes and tombstones. */
    char id[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "%d", i);
        assert_int_equal(pending_add(&p, FROM_CLIENT, id, (size_t)n, PK_OTHER, NULL), 0);
        if (i % 2) {
            n = snprintf(id, sizeof id, "%d", i - 1);
            assert_int_equal(pending_take(&p, FROM_CLIENT, id, (size_t)n, &kind, NULL), 1);
        }
    }
    assert_int_equal(p.live, 2500);
    int count = 0;
    pending_drain(&p, FROM_CLIENT, NULL, NULL);
    for (int i = 1; i < 5000; i += 2) {
        int n = snprintf(id, sizeof id, "%d", i);
        count += pending_take(&p, FROM_CLIENT, id, (size_t)n, &kind, NULL);
    }
    assert_int_equal(count, 0);               /* drained */
    assert_int_equal(p.live, 0);
    pending_free(&p);
}

static void outq_keeps_order_when_the_reader_is_slow(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fcntl(fd[1], F_SETFL, O_NONBLOCK);
    struct outq q;
    outq_init(&q, fd[1]);
    char line[1000];
    memset(line, 'a', sizeof line);
    for (int i = 0; i < 500; i++) {           /* ~500 KB: far more than a pipe holds */
        line[0] = (char)('A' + i % 26);
        assert_int_equal(outq_line(&q, line, sizeof line), 0);
        if (i % 7 == 0)
            assert_int_equal(outq_flush(&q), 0);   /* writes what fits, never blocks */
    }
    assert_true(q.bytes > 0);                 /* the rest is queued, nothing lost */
    size_t total = 0;
    int i = 0;
    char buf[1001];
    size_t have = 0;
    while (total < 500 * 1001) {
        outq_flush(&q);
        ssize_t got = read(fd[0], buf + have, sizeof buf - have);
        assert_true(got > 0);
        have += (size_t)got;
        total += (size_t)got;
        if (have == sizeof buf) {
            assert_int_equal(buf[0], 'A' + i % 26);   /* in order */
            assert_int_equal(buf[1000], '\n');
            have = 0;
            i++;
        }
    }
    assert_int_equal(i, 500);
    assert_int_equal(q.bytes, 0);
    close(fd[0]);                             /* the reader leaves */
    assert_int_equal(outq_line(&q, "x", 1), 0);
    assert_int_equal(outq_flush(&q), -1);
    assert_int_equal(q.failed, 1);
    assert_int_equal(outq_line(&q, "y", 1), 0);   /* later lines are dropped quietly */
    assert_int_equal(q.bytes, 0);
    outq_free(&q);
    close(fd[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_like_a_shell_without_one),
        cmocka_unit_test(pending_keys_on_direction_and_raw_id),
        cmocka_unit_test(outq_keeps_order_when_the_reader_is_slow),
    };
    signal(SIGPIPE, SIG_IGN);                 /* as keel does */
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
