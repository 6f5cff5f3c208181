/* test_embed.c: every embedded data file equals the file in the tree. */
#include "embed.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void embedded_copies_equal_files(void **state)
{
    (void)state;
    int count = 0;
    for (const struct embed_blob *b = embed_table; b->path; b++, count++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", KEEL_SOURCE_DIR, b->path);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        char *buf = malloc(b->len + 1);
        size_t got = fread(buf, 1, b->len + 1, f);
        fclose(f);
        if (got != b->len || memcmp(buf, b->data, b->len) != 0)
            fail_msg("embedded %s differs from the file: rebuild", b->path);
        assert_int_equal(b->data[b->len], '\0');
        free(buf);
    }
    assert_true(count >= 5); /* three schemas and the detector data at least */
    assert_non_null(embed_find("schemas/check_rumination.json"));
    assert_non_null(embed_find("detectors/data/stopwords.txt"));
    assert_null(embed_find("schemas/nope.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(embedded_copies_equal_files)};
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
