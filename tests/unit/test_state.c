/* test_state.c: the state file under concurrency and under kill -9.
 *
 * 8 processes x 200 start/end cycles against one state file must end with a
 * parseable file in which every session started is accounted for (closed,
 * or the one left open) and every session id is distinct. A writer killed
 * with SIGKILL at random moments, 100 times, must never leave a state file
 * that does not parse. A lock another process lets go of within the wait is
 * waited for; one held past it is STATE_BUSY, and then not waited for again
 * at once. The directory is $KEEL_STATE_DIR, $XDG_STATE_HOME/keel or
 * ~/.local/state/keel, the first that is an absolute path. */
#include "chrono.h"
#include "state.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCS  8
#define CYCLES 200

static struct profile profile;
static char dir[256];

static cJSON *read_state(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/state.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return cJSON_Parse(buf);
}

static int cycle(struct chrono_env *env, FILE *ids)
{
    cJSON *args = cJSON_Parse("{\"intent\":\"concurrent work\"}"), *out = NULL;
    kerr e = {0};
    int rc = chrono_mark_session_start(args, env, &out, &e);
    cJSON_Delete(args);
    if (rc < 0)
        return -1;
    fprintf(ids, "%s\n", cJSON_GetStringValue(cJSON_GetObjectItem(out, "session_id")));
    cJSON_Delete(out);
    out = NULL;
    args = cJSON_CreateObject();
    rc = chrono_mark_session_end(args, env, &out, &e);
    cJSON_Delete(args);
    cJSON_Delete(out);
    /* Another process may have closed "our" session first: that is fine. */
    return rc < 0 && strcmp(e.code, "NO_OPEN_SESSION") != 0 ? -1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void concurrent_processes_account_for_every_session(void **state)
{
    (void)state;
    char idfile[300];
    snprintf(idfile, sizeof idfile, "%s/ids", dir);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            FILE *ids = fopen(idfile, "a");
            setvbuf(ids, NULL, _IOLBF, 0);
            struct chrono_env env = {{1778922000000LL + p, 3600}, &profile, dir, 0, NULL};
            int bad = 0;
            for (int i = 0; i < CYCLES; i++)
                bad += cycle(&env, ids) < 0;
            fclose(ids);
            _exit(bad ? 1 : 0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int st;
        assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    cJSON *s = read_state();
    assert_non_null(s);
    double started = cJSON_GetNumberValue(cJSON_GetObjectItem(s, "sessions_started"));
    double closed = cJSON_GetNumberValue(cJSON_GetObjectItem(s, "sessions_closed"));
    int open = cJSON_IsObject(cJSON_GetObjectItem(s, "open_session"));
    assert_int_equal((int)started, PROCS * CYCLES);
    assert_int_equal((int)closed + open, PROCS * CYCLES);
    cJSON_Delete(s);

    FILE *f = fopen(idfile, "r");
    assert_non_null(f);
    char **ids = calloc(PROCS * CYCLES + 1, sizeof *ids);
    char line[64];
    int n = 0;
    while (n <= PROCS * CYCLES && fgets(line, sizeof line, f))
        ids[n++] = strdup(line);
    fclose(f);
    assert_int_equal(n, PROCS * CYCLES);
    qsort(ids, (size_t)n, sizeof *ids, cmp_str);
    for (int i = 1; i < n; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

static void kill_9_never_tears_the_file(void **state)
{
    (void)state;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/crash", dir);
    srand(42);
    for (int round = 0; round < 100; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            struct chrono_env env = {{1778922000000LL, 3600}, &profile, sub, 0, NULL};
            FILE *devnull = fopen("/dev/null", "w");
            for (;;)
                cycle(&env, devnull);
        }
        struct timespec ts = {0, (rand() % 3000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        char path[400];
        snprintf(path, sizeof path, "%s/state.json", sub);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue; /* killed before the first write */
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        cJSON *s = cJSON_Parse(buf);
        if (!s)
            fail_msg("round %d: state.json does not parse after kill -9", round);
        assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "version")), STATE_VERSION);
        cJSON_Delete(s);
    }
    /* No state was ever judged corrupt and moved aside. */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c corrupt >/dev/null", sub);
    assert_int_not_equal(system(cmd), 0);
}

/* A process that takes the state lock, says so on a pipe, holds it hold_ms
 * and exits. */
static pid_t hold_lock(int hold_ms)
{
    char lock[300];
    snprintf(lock, sizeof lock, "%s/state.lock", dir);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(lock, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0)
            _exit(1);
        if (write(p[1], "x", 1) != 1)
            _exit(1);
        struct timespec ts = {hold_ms / 1000, hold_ms % 1000 * 1000000L};
        nanosleep(&ts, NULL);
        _exit(0);
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

static int touch(cJSON *st, void *ctx, kerr *e)
{
    (void)ctx, (void)e;
    cJSON_DeleteItemFromObject(st, "test_touch");
    cJSON_AddNumberToObject(st, "test_touch", 1);
    return 0;
}

static int64_t update_ms(kerr *e, int *rc)
{
    int64_t t0 = chrono_mono_ms();
    *rc = state_update(dir, 1778922000000LL, touch, NULL, e);
    return chrono_mono_ms() - t0;
}

static void a_lock_let_go_within_the_wait_is_waited_for(void **state)
{
    (void)state;
    pid_t pid = hold_lock(400);
    kerr e = {0};
    int rc;
    int64_t ms = update_ms(&e, &rc);
    waitpid(pid, NULL, 0);
    if (rc != 0)
        fail_msg("the update failed (%s: %s) after %lld ms", e.code, e.message, (long long)ms);
    assert_true(ms >= 300);
    assert_true(ms < 2500); /* as soon as the lock is free, not at the end of the wait */
}

/* Last: it leaves the process not waiting for STATE_STUCK_MS. */
static void a_lock_held_past_the_wait_is_busy_then_not_waited_for(void **state)
{
    (void)state;
    state_lock_wait(300);
    pid_t pid = hold_lock(3000);
    kerr e = {0};
    int rc;
    int64_t ms = update_ms(&e, &rc);
    assert_int_equal(rc, -1);
    assert_string_equal(e.code, "STATE_BUSY");
    assert_true(ms >= 250 && ms < 2000);
    kerr e2 = {0};
    ms = update_ms(&e2, &rc);
    assert_int_equal(rc, -1);
    assert_string_equal(e2.code, "STATE_BUSY");
    assert_true(ms < 200);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void the_directory_is_the_first_absolute_one_named(void **state)
{
    (void)state;
    static const struct {
        const char *own, *xdg, *home, *want;
    } cases[] = {
        {"/k", "/x", "/h", "/k"},
        {"rel", "/x", "/h", NULL}, /* keel's own, relative: an error, not the next one unsaid */
        {NULL, "/x", "/h", "/x/keel"},
        {NULL, "x", "/h", "/h/.local/state/keel"},
        {"", "", "/h", "/h/.local/state/keel"},
        {"k", "x", "h", NULL},
        {NULL, NULL, NULL, NULL},
        /* a path that does not fit (255 bytes here) is refused, not cut short */
        {NULL, NULL,
         "/hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
         "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
         "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh",
         NULL},
        /* 255 bytes fit, 256 do not: XDG_STATE_HOME of 250 bytes and "/keel" */
        {NULL,
         "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
         NULL,
         "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/keel"},
        {NULL,
         "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
         NULL, NULL},
        {"/kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
         NULL, NULL, NULL},
    };
    const char *names[] = {"KEEL_STATE_DIR", "XDG_STATE_HOME", "HOME"};
    char *saved[3];
    for (int v = 0; v < 3; v++)
        saved[v] = getenv(names[v]) ? strdup(getenv(names[v])) : NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *vals[] = {cases[i].own, cases[i].xdg, cases[i].home};
        for (int v = 0; v < 3; v++)
            vals[v] ? setenv(names[v], vals[v], 1) : unsetenv(names[v]);
        char buf[256] = "";
        kerr e = {0};
        int rc = state_dir(buf, sizeof buf, &e);
        if (cases[i].want) {
            assert_int_equal(rc, 0);
            assert_string_equal(buf, cases[i].want);
        } else {
            assert_int_equal(rc, -1);
            assert_string_equal(e.code, "STATE_UNWRITABLE");
        }
    }
    for (int v = 0; v < 3; v++) {
        saved[v] ? setenv(names[v], saved[v], 1) : unsetenv(names[v]);
        free(saved[v]);
    }
}

static void a_missing_directory_is_made_and_a_broken_file_moved_aside(void **state)
{
    (void)state;
    char nested[600], path[700];
    struct stat st;
    snprintf(nested, sizeof nested, "%s/made/two/deep", dir);
    kerr e = {0};
    assert_int_equal(state_update(nested, 1778922000000LL, touch, NULL, &e), 0);
    assert_int_equal(stat(nested, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* a file that does not parse: moved aside, named by when it was found, never deleted */
    snprintf(path, sizeof path, "%s/state.json", nested);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{not json", f);
    fclose(f);
    e = (kerr){0};
    state_update(nested, 1778922000000LL, touch, NULL, &e);
    snprintf(path, sizeof path, "%s/state.json.corrupt-2026-05-16T09-00-00Z-%ld", nested, (long)getpid());
    assert_int_equal(stat(path, &st), 0);
}

static int write_member(cJSON *st, void *ctx, kerr *e)
{
    (void)e;
    cJSON_DeleteItemFromObject(st, "test_member");
    cJSON_AddNumberToObject(st, "test_member", ctx ? *(int *)ctx : 1);
    return 1;
}

static int read_only(cJSON *st, void *ctx, kerr *e)
{
    (void)e;
    *(int *)ctx = cJSON_GetObjectItem(st, "test_member") != NULL;
    return 0;
}

/* An update that changes nothing writes nothing, nor one that says it
 * changed the state and leaves it as it was (a prompt hook records the
 * same things twice): the file keeps its inode and the generation (what
 * tells other processes to read again) stays. */
static void a_read_writes_nothing(void **state)
{
    (void)state;
    char path[300];
    struct stat a, b;
    kerr e = {0};
    assert_int_equal(state_update(dir, 1778922000000LL, write_member, NULL, &e), 0);
    const uint64_t *gen = state_generation(dir);
    assert_non_null(gen);
    uint64_t g = *gen;
    snprintf(path, sizeof path, "%s/state.json", dir);
    assert_int_equal(stat(path, &a), 0);
    int seen = 0;
    assert_int_equal(state_update(dir, 1778922000000LL, read_only, &seen, &e), 0);
    assert_int_equal(seen, 1);
    assert_int_equal(stat(path, &b), 0);
    assert_true(a.st_ino == b.st_ino);
    assert_true(*gen == g);
    assert_int_equal(state_update(dir, 1778922000000LL, write_member, NULL, &e), 0);
    assert_int_equal(stat(path, &b), 0);
    assert_true(a.st_ino == b.st_ino);
    assert_true(*gen == g);
    /* while a write moves both */
    int two = 2;
    assert_int_equal(state_update(dir, 1778922000000LL, write_member, &two, &e), 0);
    assert_int_equal(stat(path, &b), 0);
    assert_true(a.st_ino != b.st_ino);
    assert_true(*gen != g);
    cJSON *st = read_state();
    assert_int_equal(cJSON_GetObjectItem(st, "test_member")->valueint, 2);
    cJSON_Delete(st);
}

static size_t mappings_of(const char *path)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1600];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, path) != NULL;
    fclose(f);
    return n;
}

/* The generation of a state directory nobody used yet: made, mapped, 0, and
 * moved by the first write; given back, its mapping is gone. */
static void a_new_directory_s_generation_moves_with_writes(void **state)
{
    (void)state;
    char fresh[400], lock[450];
    snprintf(fresh, sizeof fresh, "%s/fresh", dir);
    snprintf(lock, sizeof lock, "%s/state.lock", fresh);
    const uint64_t *gen = state_generation(fresh);
    assert_non_null(gen);
    assert_true(state_generation_now(gen) == 0);
    assert_int_equal(mappings_of(lock), 1);
    kerr e = {0};
    assert_int_equal(state_update(fresh, 1778922000000LL, write_member, NULL, &e), 0);
    assert_true(state_generation_now(gen) != 0);
    state_generation_release(gen);
    assert_int_equal(mappings_of(lock), 0);
}

static void make_file(const char *name)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"half", f);
    fclose(f);
}

static int exists_in_dir(const char *name)
{
    char path[400];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* A temporary file left by a writer killed mid-write is removed by the next
 * update, under the lock; anything else in the directory is left. */
static void a_killed_writer_s_temporary_file_is_removed(void **state)
{
    (void)state;
    make_file("state.json.tmp.99999");
    make_file("pins.json.tmp.99999");
    make_file("state.json.bak");
    make_file("notes.tmp.1");
    kerr e = {0};
    assert_int_equal(state_update(dir, 1778922000000LL, write_member, NULL, &e), 0);
    assert_false(exists_in_dir("state.json.tmp.99999"));
    assert_true(exists_in_dir("pins.json.tmp.99999")); /* another file's: its own update removes it */
    assert_true(exists_in_dir("state.json.bak"));
    assert_true(exists_in_dir("notes.tmp.1"));
}

/* A state.lock that is not a regular file (a FIFO: never waited on; a
 * symbolic link: never followed): STATE_UNWRITABLE, saying to remove it. */
static void a_lock_that_is_not_a_file_is_named(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/state.lock", dir);
    for (int k = 0; k < 2; k++) {
        unlink(path);
        assert_int_equal(k ? symlink("state.json", path) : mkfifo(path, 0600), 0);
        kerr e = {0};
        int rc = state_update(dir, 1778922000000LL, write_member, NULL, &e);
        unlink(path);
        assert_int_equal(rc, -1);
        assert_string_equal(e.code, "STATE_UNWRITABLE");
        if (!strstr(e.message, "not a regular file: remove it"))
            fail_msg("%s", e.message);
    }
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR"); /* scripts/mutate's scratch directory, removed even when a test dies */
    snprintf(dir, sizeof dir, "%s/keel-state-test-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    profile_load_text(&profile, "", 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_processes_account_for_every_session),
        cmocka_unit_test(kill_9_never_tears_the_file),
        cmocka_unit_test(the_directory_is_the_first_absolute_one_named),
        cmocka_unit_test(a_missing_directory_is_made_and_a_broken_file_moved_aside),
        cmocka_unit_test(a_read_writes_nothing),
        cmocka_unit_test(a_new_directory_s_generation_moves_with_writes),
        cmocka_unit_test(a_killed_writer_s_temporary_file_is_removed),
        cmocka_unit_test(a_lock_that_is_not_a_file_is_named),
        cmocka_unit_test(a_lock_let_go_within_the_wait_is_waited_for),
        cmocka_unit_test(a_lock_held_past_the_wait_is_busy_then_not_waited_for),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, setup, teardown);
}
