/* test_frame.c: the line reader over a real pipe. */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include "frame.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Feeds data through a pipe and collects what the reader hands out. */
static enum frame_status next(struct frame_reader *r, const char **line, size_t *n)
{
    for (;;) {
        enum frame_status st = frame_next(r, line, n);
        if (st != FRAME_NEED)
            return st;
        assert_true(frame_fill(r) >= 0);
    }
}

static struct frame_reader *open_with(const char *data, size_t len, size_t max)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    /* small inputs fit the pipe buffer; write then close */
    assert_int_equal(write(p[1], data, len), (ssize_t)len);
    close(p[1]);
    struct frame_reader *r = malloc(sizeof *r);
    frame_init(r, p[0], max);
    return r;
}

static void close_reader(struct frame_reader *r)
{
    close(r->fd);
    frame_free(r);
    free(r);
}

static void splits_lines_and_strips_cr(void **state)
{
    (void)state;
    const char in[] = "{\"a\":1}\n{\"b\":2}\r\n\nlast";
    struct frame_reader *r = open_with(in, sizeof in - 1, 1024);
    const char *l;
    size_t n;
    assert_int_equal(next(r, &l, &n), FRAME_LINE);
    assert_int_equal(n, 7);
    assert_memory_equal(l, "{\"a\":1}", 7);
    assert_int_equal(next(r, &l, &n), FRAME_LINE);
    assert_int_equal(n, 7); /* CR removed */
    assert_int_equal(next(r, &l, &n), FRAME_LINE);
    assert_int_equal(n, 0); /* empty line */
    assert_int_equal(next(r, &l, &n), FRAME_LINE);
    assert_int_equal(n, 4); /* last line, no newline */
    assert_memory_equal(l, "last", 4);
    assert_int_equal(next(r, &l, &n), FRAME_EOF);
    close_reader(r);
}

static void oversize_line_is_skipped_not_held(void **state)
{
    (void)state;
    size_t big = 40000;
    char *in = malloc(big + 32);
    strcpy(in, "{\"id\":7,\"x\":\"");
    memset(in + 13, 'a', big);
    strcpy(in + 13 + big, "\"}\nok\n");
    size_t len = strlen(in);
    int p[2];
    assert_int_equal(pipe(p), 0);
    if (fork() == 0) { /* writer: more than a pipe holds */
        close(p[0]);
        ssize_t w = write(p[1], in, len);
        _exit(w == (ssize_t)len ? 0 : 1);
    }
    close(p[1]);
    struct frame_reader r;
    frame_init(&r, p[0], 1000);
    const char *l;
    size_t n;
    assert_int_equal(next(&r, &l, &n), FRAME_OVERSIZE);
    assert_int_equal(r.oversize_bytes, len - 4);
    assert_int_equal(n, FRAME_HEAD); /* only the head is kept */
    assert_memory_equal(l, "{\"id\":7,", 8);
    assert_true(r.cap <= 1000 + 4 * FRAME_CHUNK); /* memory stays bounded */
    assert_int_equal(next(&r, &l, &n), FRAME_LINE);
    assert_memory_equal(l, "ok", 2);
    assert_int_equal(next(&r, &l, &n), FRAME_EOF);
    close(p[0]);
    frame_free(&r);
    free(in);
}

static void line_at_the_cap_is_accepted(void **state)
{
    (void)state;
    char in[80];
    memset(in, 'x', 32);
    in[32] = '\n';
    memset(in + 33, 'y', 33);
    in[33 + 33 - 1] = '\n';
    struct frame_reader *r = open_with(in, 66, 32);
    const char *l;
    size_t n;
    assert_int_equal(next(r, &l, &n), FRAME_LINE); /* exactly 32: fine */
    assert_int_equal(n, 32);
    assert_int_equal(next(r, &l, &n), FRAME_LINE); /* 32 y's then newline */
    assert_int_equal(n, 32);
    assert_int_equal(next(r, &l, &n), FRAME_EOF);
    close_reader(r);
    memset(in, 'z', 33);
    in[33] = '\n';
    r = open_with(in, 34, 32);
    assert_int_equal(next(r, &l, &n), FRAME_OVERSIZE); /* 33: one over */
    assert_int_equal(r->oversize_bytes, 33);
    assert_int_equal(next(r, &l, &n), FRAME_EOF);
    close_reader(r);
}

/* Pinned, a reader keeps the lines it handed out where they are: it reads
 * on only into the room after them, says EAGAIN (and frame_room 0) when
 * there is none, and drops nothing: unpinned, it reads on as before. */
static void pinned_lines_stay_put(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_true(fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= 1 << 20); /* both writes fit: nobody else reads */
    struct frame_reader r;
    frame_init(&r, p[0], 1 << 20);
    char big[100000];
    memset(big, 'a', sizeof big);
    big[sizeof big - 1] = '\n';
    assert_int_equal(write(p[1], big, sizeof big), (ssize_t)sizeof big);
    const char *l, *l2;
    size_t n, n2;
    assert_int_equal(next(&r, &l, &n), FRAME_LINE);
    assert_int_equal(n, sizeof big - 1);
    assert_true(frame_holds(&r, l));
    frame_pin(&r, 1);
    char copy[sizeof big];
    memcpy(copy, l, n);
    /* more than the room left: the next line arrives in part */
    size_t room = r.cap - r.start - r.len;
    char *more = malloc(room + 5000);
    memset(more, 'b', room + 5000);
    more[room + 4999] = '\n';
    assert_int_equal(write(p[1], more, room + 5000), (ssize_t)(room + 5000));
    fcntl(p[0], F_SETFL, O_NONBLOCK); /* a reader that would move the line reads the pipe dry instead */
    for (int k = 0; k < 100 && frame_room(&r) && frame_fill(&r) > 0; k++)
        ;
    assert_false(frame_room(&r));
    assert_int_equal(frame_next(&r, &l2, &n2), FRAME_NEED);
    errno = 0;
    assert_int_equal(frame_fill(&r), -1);
    assert_int_equal(errno, EAGAIN);
    assert_memory_equal(l, copy, n); /* never moved, never read over */
    frame_pin(&r, 0);
    assert_int_equal(next(&r, &l2, &n2), FRAME_LINE);
    assert_int_equal(n2, room + 4999);
    assert_true(l2[0] == 'b' && l2[n2 - 1] == 'b');
    free(more);
    close(p[1]);
    close(p[0]);
    frame_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_lines_and_strips_cr),
        cmocka_unit_test(oversize_line_is_skipped_not_held),
        cmocka_unit_test(line_at_the_cap_is_accepted),
        cmocka_unit_test(pinned_lines_stay_put),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
