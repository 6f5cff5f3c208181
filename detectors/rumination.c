/* rumination.c: check_rumination, heuristic concept_containment 0.6.13.
 *
 * The question: has the person asked nearly this same thing several times in
 * the last while? rum_run answers it on plain text; rum_check is the tool's
 * JSON wrapper (arguments checked, the contract's output built).
 *
 * What a prompt is about. Its words (text.h) less the stoplist (function
 * words of eight languages, contractions, the light verbs make and get),
 * stemmed by Snowball in the language its function words say (stem.h); Han
 * characters alone and in neighbouring pairs, kana only in pairs. Words and
 * short phrases of one group in data/concepts.txt (English) or the prompt
 * language's data/concepts-<code>.txt count as one concept; a
 * stem of 4+ letters matches a longer stem it begins, one of 5+ a stem one
 * edit away. An earlier prompt's similarity is the share of this prompt's
 * words or concepts it also holds (containment).
 *
 * What is not asking again, and scores 0: the way a question is asked (a
 * shared run of 3 words with at most 1 content word, "how do I clear"), a
 * shared passage of 8+ words (pasted context), both left out on both sides;
 * the same question about another named thing ("a visa for Japan", "...
 * Canada"); the same frame about other things (objects_of: numbers,
 * identifiers, paths, quotes); the same sentence with a word or two swapped,
 * unless both name the same things (objects_same); the same opening about
 * another thing (other_after_opening); and a word that many prompts of the
 * window hold, ones the prompt does not match among them, is what the
 * session is about and counts on neither side (TOPIC_*). With only_asks (keel's
 * hooks and overlay) a prompt that asks nothing is an instruction, and an
 * earlier instruction is never an earlier ask; a short "continue" never
 * fires.
 *
 * What is asking again in other words: a plea for reassurance, or a prompt
 * that says it asks again (asking.h; or a plea as the reassurance count
 * reads one, cur_pleads), matches an earlier such ask sharing a
 * content word with it, and a prompt that says it asks again any earlier
 * such ask (same_worry); and an earlier ask reaching HOP_SIM with
 * one the prompt matched, on its words (not as the same worry), is the
 * same thing in words that drift (a hop).
 *
 * It fires when threshold_count (3) earlier prompts inside window_minutes
 * (90) reach similarity_threshold (0.28: one shared word in four is too
 * little); confidence grows with how far they clear it.
 *
 * Where it is done: this file holds the model (rum_run) and the tool
 * (rum_check); how a prompt's words are found and compared fast is in the
 * files rumparts.h names. Those make 500 items of 8,000 characters take 17
 * to 26 ms (make bench): ASCII text is cut into words 64 bytes at a time,
 * from a mask of its word bytes (the same words as the libunistring path;
 * tests/unit/test_rumination.c compares them); each distinct word of the
 * history is analysed once per call (a memo), an item's words are then only
 * looked up; a call's memory is one arena. History is the caller's and is
 * never kept: the detector is a pure function. */
#include "detect.h"
#include "text.h"
#include "timefmt.h"

#include "asking.h"
#include "rumparts.h"
#include "stem.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define RUM_MAX_PROMPT  8000
#define RUM_MAX_HISTORY 500
#define RUM_SKEW_MS     60000 /* history may be this far in the future (clock skew) */
#define RUM_SIM_DEFAULT 0.28

static int by_sim(const void *a, const void *b)
{
    const struct rum_match *x = a, *y = b;
    if (x->sim != y->sim)
        return x->sim < y->sim ? 1 : -1;
    return x->index < y->index ? 1 : -1; /* then the most recent first */
}

static const char rum_check_description[] =
    "Share of this prompt's content words (NFKC, case-folded, stoplist removed, stems in the prompt's language "
    "(Snowball; Korean particles taken off), words and phrases of one concept group as one concept, a stem of 4+ "
    "letters matching a longer one it begins, a stem of 5+ matching one edit away; Han characters alone and kana only "
    "with a neighbour) found in each "
    "prompt in the window; shared runs of 3 words with at most 1 content word, and shared passages of 8+ words, are "
    "the question's frame and are left out; the same question about another named thing, about other things named "
    "(numbers, identifiers, paths, quoted text), with a word or two swapped for others, or opening the same way about"
    " another thing does not count, nor does an item saying more about other things than a prompt of one or two "
    "content words; a prompt asking for reassurance or saying it asks again also counts an earlier such ask on its "
    "subject, and one saying it asks again any earlier such ask ('once more', an apology, a promise or a verb of "
    "asking within 6 words of 'again', 'back to' or 'last time', or 'still' within 6 words of not understanding, "
    "says so only in a question, a plea or a request to be told); an earlier ask found through another that matched, "
    "sharing 0.35 of its words, counts too; a word held by 5 or more prompts of the window, over 3 in 10 of them and "
    "2 or more not matched, is what the session is about and counts on neither side; a short instruction to go on "
    "never fires."
    " Fires when threshold_count or more reach similarity_threshold.";

double rum_confidence(double mean, double sim_thr)
{
    double excess = sim_thr < 1 ? (mean - sim_thr) / (1 - sim_thr) : 1;
    return 0.6 + 0.39 * (excess < 0 ? 0 : excess > 1 ? 1 : excess);
}

/* How the prompt asks, and the keys of its words outside those phrases. */
static int cur_asking(struct cur *c)
{
    unsigned char *mark = ar_zalloc(c->ar, c->nw + 1);
    c->subj = ar_alloc(c->ar, (c->nw + 1) * sizeof *c->subj);
    if (!mark || !c->subj)
        return -1;
    c->asks =
        c->nw ? ask_again(ask_kinds(&c->w[0].raw, sizeof *c->w, c->nw, mark), ask_question_mark(c->pt, c->pn)) : 0;
    c->nsubj = 0;
    for (size_t i = 0; i < c->nw; i++)
        if (!mark[i] && c->ki[i] >= 0)
            c->subj[c->nsubj++] = c->ki[i];
    return 0;
}

/* A history item that did not reach the bar but asks about what the prompt
 * asks about (a content word of the prompt outside its asking phrases), when
 * the prompt asks again in other words: it says it asks again ("sorry to ask
 * again", "I know you said") and the item is a question (a question mark, or
 * a question word where a question has it: "what time does the job start
 * now") or a request for reassurance, or both ask to be reassured ("is it safe", "did I make a
 * mistake"). When the prompt says it asks again, an item of at most
 * WORRY_BYTES that pleads or says it asks again too is the same worry
 * whatever its words: the person says they are one question (a worry is put
 * in new words each time: "is it safe to ship on Friday?", "am I making a
 * mistake going ahead tomorrow?"). 1 when it is the same worry, 0 not, -1
 * out of memory. */
#define WORRY_BYTES 1024 /* a plea is a message, not a paste: longer items are linked on their words only */
static int same_worry(struct cur *c, const char *s, size_t n, struct text_words *tw, uint32_t stamp)
{
    int about = 0;
    for (size_t q = 0; q < c->nsubj && !about; q++)
        about = c->hit[c->subj[q]] == stamp;
    if (!about && (!(c->asks & ASK_REASK) || n > WORRY_BYTES))
        return 0;
    tw->n = 0;
    if (text_words(s, n, tw) < 0)
        return -1;
    unsigned k = ask_text_words(s, n, tw);
    if (!about)
        return (k & (ASK_REASSURE | ASK_REASK)) != 0;
    if ((k & (ASK_REASSURE | ASK_REASK)) && cur_pleads(c))
        return 1;
    return (c->asks & ASK_REASK) && (k & (ASK_REASSURE | ASK_REASK | ASK_QUESTION));
}

/* What the session is about is not what a prompt asks: a key of the prompt
 * held by TOPIC_ITEMS or more of the window's items, more than TOPIC_SHARE of
 * them, TOPIC_OTHER or more of those items the prompt did not match, counts
 * on neither side (the fare asked of a flight and then of a houseboat; a
 * function word no stoplist has). Asked again, a worry's words are held by
 * its asks, which the prompt matches: they stay. */
#define TOPIC_ITEMS 5
#define TOPIC_SHARE 0.3
#define TOPIC_OTHER 2

#define OPENING_MIN   3
#define OBJECT_MIN    2
#define OPENING_BYTES 64

/* 0 when the first OPENING_MIN words of a and b surely differ, read as
 * ASCII letters and digits, case aside (most items that reach the bar open
 * otherwise, and then none is cut into words); 1 when they are alike or
 * text other than ASCII leaves it to text_words. */
static int opens_alike(const char *a, size_t an, const char *b, size_t bn)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t i = 0, j = 0;
    for (int word = 0; word < OPENING_MIN; word++) {
        for (; i < an && !isalnum(x[i]); i++)
            if (x[i] >= 0x80)
                return 1;
        for (; j < bn && !isalnum(y[j]); j++)
            if (y[j] >= 0x80)
                return 1;
        for (; i < an && j < bn && isalnum(x[i]) && isalnum(y[j]); i++, j++)
            if (tolower(x[i]) != tolower(y[j]))
                return 0;
        if ((i < an && x[i] >= 0x80) || (j < bn && y[j] >= 0x80))
            return 1;
        if ((i < an && isalnum(x[i])) || (j < bn && isalnum(y[j])))
            return 0; /* one word goes on where the other ends */
    }
    return 1;
}

/* The same opening about another thing: the item opens with the prompt's
 * first OPENING_MIN words or more ("can you review my draft", "what's the
 * best way to split", "ile kosztuje wymiana") and holds none of the prompt's
 * content words after them, of which the prompt has OBJECT_MIN or more, and
 * it goes on past them too: the opening is the question's frame and what
 * follows it is its object ("... wedding toast", "... PR description"); one
 * word more ("... tonight") is a circumstance of the same question. 1 when
 * so, 0 not, -1 out of memory. */
static int other_after_opening(struct cur *c, const char *pt, size_t pn, const char *s, size_t n, struct text_words *tw,
                               uint32_t stamp)
{
    if (!opens_alike(pt, pn, s, n))
        return 0;
    /* An opening is a few words: only the item's first OPENING_BYTES are cut
     * into words (not the whole of a long item), less the last word when the
     * cut may have split it. */
    size_t cut = n;
    if (cut > OPENING_BYTES) {
        cut = OPENING_BYTES;
        while (cut && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--;
    }
    tw->n = 0;
    if (text_words(s, cut, tw) < 0)
        return -1;
    if (cut < n && tw->n)
        tw->n--;
    size_t r = 0;
    while (r < c->nw && r < tw->n && c->w[r].raw == tw->v[r].hash && tw->v[r].sentence == 0)
        r++;
    if (r < OPENING_MIN || r == c->nw || r == tw->n)
        return 0;
    int object = 0;
    for (size_t i = r; i < c->nw; i++) {
        long k = c->ki[i];
        if (k < 0)
            continue;
        if (c->hit[k] == stamp)
            return 0; /* it shares a word past the opening */
        object++;
    }
    return object >= OBJECT_MIN;
}

/* 1 when an earlier prompt asks something: a question (a question mark, or a
 * question word where a question has it), a plea for reassurance, a sign
 * of asking again or an error report; 0 an instruction or a statement;
 * -1 out of memory. */
static int item_asks(const char *s, size_t n)
{
    unsigned k;
    if (ask_text(s, n, &k) < 0)
        return -1;
    return (k & (ASK_QUESTION | ASK_REASSURE | ASK_REASK | ASK_ERROR)) != 0;
}

/* A history item as validated: its text and time, kept so that comparing
 * does not look them up and parse them again. */
/* One history item's shape, {text, at}, with errors that name the field
 * (history[3].at). */
static int check_item(const cJSON *it, int i, struct rum_item *h, kerr *e)
{
    static const char *const item_keys[] = {"text", "at", NULL};
    char f[48], pre[48], ft[48], fa[48];
    snprintf(pre, sizeof pre, "history[%d].", i);
    snprintf(f, sizeof f, "history[%d]", i);
    snprintf(ft, sizeof ft, "history[%d].text", i);
    snprintf(fa, sizeof fa, "history[%d].at", i);
    if (!cJSON_IsObject(it))
        return kerr_set(e, "INPUT_INVALID", f, "%s must be an object {text, at}", f);
    if (det_known_keys(it, item_keys, pre, e) < 0 ||
        det_string(it, "text", ft, 1, NULL, RUM_MAX_PROMPT, &h->t, &h->n, e) < 0 ||
        det_time(it, "at", fa, &h->at, NULL, e) < 0)
        return -1;
    return 0;
}

/* check_item's checks in one walk over the item's members, for the item
 * that passes them (nearly all): -1 where check_item would fail, or might,
 * and then check_item names the fault. */
static int item_ok(const cJSON *it, struct rum_item *h)
{
    const cJSON *t = NULL, *at = NULL;
    if (!cJSON_IsObject(it))
        return -1;
    for (const cJSON *m = it->child; m; m = m->next) {
        if (!m->string)
            return -1;
        if (!strcmp(m->string, "text"))
            t = t ? t : m;
        else if (!strcmp(m->string, "at"))
            at = at ? at : m;
        else
            return -1;
    }
    if (!cJSON_IsString(t) || !t->valuestring || !cJSON_IsString(at) || !at->valuestring)
        return -1;
    size_t n = strlen(t->valuestring);
    if (!text_valid_utf8(t->valuestring, n) ||
        (n > RUM_MAX_PROMPT && text_char_count(t->valuestring, n) > RUM_MAX_PROMPT) ||
        tf_parse_rfc3339(at->valuestring, &h->at, NULL) < 0)
        return -1;
    h->t = t->valuestring;
    h->n = n;
    return 0;
}

/* How far history item h asks about what the text c was made of (pt) asks
 * about: similarity, less the ways of asking about something else (another
 * thing in the same frame, a word or two swapped, an earlier instruction
 * with only_asks). po holds the text's things once *po_known; ho is scratch.
 * c->worry says the item was linked as the same worry rather than by its
 * words. 0, or -1 out of memory. */
static int related(struct cur *c, const char *pt, size_t pn, struct objs *po, int *po_known, const struct rum_item *h,
                   struct objs *ho, struct text_words *w, uint32_t stamp, int only_asks, double sim_thr, double *out,
                   int *other)
{
    double j;
    *out = 0;
    c->worry = 0;
    if (cur_similarity(c, h->t, h->n, w, stamp, &j) < 0)
        return -1;
    *other = c->other;
    /* A prompt that names its subject in a word or two ("why is that one
     * failing?") says too little to be matched by an item that says more
     * about other things than they share ("and the upsides of failing
     * hard?"). */
    if (c->keys.n + c->pwords <= THIN_KEYS && c->o.only > c->shared)
        j = 0;
    if (j < sim_thr && (j > 0 || (c->asks & ASK_REASK)) && cur_pleads(c)) {
        int r = same_worry(c, h->t, h->n, w, stamp);
        if (r < 0)
            return -1;
        if (r)
            j = sim_thr, c->worry = 1;
    }
    if (j >= sim_thr && j > 0 && !*po_known) {
        objects_of(pt, pn, po);
        *po_known = 1;
    }
    if (j >= sim_thr && j > 0 && c->o.swap) {
        /* a word or two swapped: another thing asked about, unless they
         * name the same things (5k for 5,000; the same file, another
         * line) */
        objects_of(h->t, h->n, ho);
        if (!objects_same(po, ho))
            j = 0, *other = 1;
    } else if (j >= sim_thr && j > 0 && po->n && !po->many && (c->o.any_run || (all_numbers(po) && !cur_pleads(c)))) {
        /* the same frame of words about other things; or, without a
         * frame, numbers only ("outline chapter 4" after chapter 3),
         * unless the prompt asks again for reassurance (a worry's
         * figures change as it is asked again) */
        objects_of(h->t, h->n, ho);
        if (!c->o.any_run && !all_numbers(ho))
            ho->n = 0;
        if (objects_differ(po, ho) && !(cur_pleads(c) && all_numbers(po) && all_numbers(ho)))
            j = 0, *other = 1;
    }
    if (j >= sim_thr && j > 0 && !cur_pleads(c)) {
        /* the same opening about another thing, unless both name the same
         * thing in it (the same file, another line; po is known above) */
        int o = other_after_opening(c, pt, pn, h->t, h->n, w, stamp);
        if (o < 0)
            return -1;
        if (o) {
            objects_of(h->t, h->n, ho);
            if (!objects_same(po, ho))
                j = 0, *other = 1;
        }
    }
    if (only_asks && j >= sim_thr && j > 0) { /* an earlier instruction is not an earlier ask */
        int a = item_asks(h->t, h->n);
        if (a < 0)
            return -1;
        if (!a)
            j = 0, *other = 1;
    }
    *out = j;
    return 0;
}

int rum_run(const struct rum_query *q, int64_t now_ms, struct rum_result *r)
{
    const struct rum_item *items = q->hist;
    const char *cur = q->prompt;
    size_t cur_n = q->n, hn = q->nhist, threshold = (size_t)q->threshold;
    double sim_thr = q->similarity;
    int only_asks = q->only_asks;
    int64_t window_start = now_ms - (int64_t)q->window_min * 60000;
    struct rum_match *m = r->match;
    _Alignas(16) char stack[32768];
    struct arena ar;
    ar_init(&ar, stack, sizeof stack);
    struct text_words w = {0};
    struct cur c;
    memset(&c, 0, sizeof c);
    rum_lang = stem_lang_of(cur, cur_n);
    lex_init(rum_lang);
    int oom = cur_init(&c, cur, cur_n, &w, &ar) < 0 || cur_asking(&c) < 0;
    /* A plea asked again is the strongest sign there is (keel's hooks ask
     * for fewer earlier asks when the prompt pleads or says it asks again). */
    if (!oom && q->plea_threshold && (size_t)q->plea_threshold < threshold && cur_pleads(&c))
        threshold = (size_t)q->plea_threshold;
    struct objs *po = ar_alloc(&ar, sizeof *po), *ho = ar_alloc(&ar, sizeof *ho);
    oom |= !po || !ho;
    int po_known = 0; /* the prompt's things, worked out when an item first reaches the bar */
    /* A short instruction to go on ("continue", "weiter", "do the same for
     * the rest") asks nothing: sent again and again, it is work going on. */
    int command = !oom && (c.asks & ASK_COMMAND) && c.nw <= COMMAND_WORDS && !ask_question_mark(cur, cur_n);
    /* With only_asks (keel's hooks and overlay, keel eval), only an ask can
     * be asked again: a prompt that is no question (no question mark, no
     * question word where a question has it), no plea for reassurance and
     * no error report pasted from a tool (asking.h: it asks for help with the
     * error) ("write the migration", "Tests für die Filter") is an instruction, the
     * work going on; and "and the second one?", "e a luz?" is the next thing
     * in the same frame, unless it pleads or says it asks again. */
    unsigned how = 0;
    if (only_asks && !oom && !command && ask_text(cur, cur_n, &how) < 0)
        oom = 1;
    c.asks |= how & ASK_REASK; /* "once more" in a question asked by its words alone */
    int statement = only_asks && !oom && !command &&
        (!(how & (ASK_QUESTION | ASK_REASSURE | ASK_REASK | ASK_ERROR)) ||
         ((how & ASK_FOLLOWUP) && !(how & (ASK_REASSURE | ASK_REASK))));
    size_t count = 0, i;
    double best = 0, sum = 0;
    unsigned char *away = ar_zalloc(&ar, hn + 1); /* items that ask the same way about another thing */
    /* per key of the prompt: how many window items hold it, and how many of
     * those the prompt matched */
    uint32_t *held = ar_zalloc(&ar, (c.keys.n + 1) * sizeof *held);
    uint32_t *held_m = ar_zalloc(&ar, (c.keys.n + 1) * sizeof *held_m);
    oom |= !away || !held || !held_m;
    size_t nwin = 0; /* items in the window */
    double best_other = 0; /* the best of the items not matched */
    for (i = 0; i < hn && !oom && !command && !statement; i++) {
        if (items[i].at < window_start)
            continue;
        double j;
        int other;
        if (related(&c, cur, cur_n, po, &po_known, &items[i], ho, &w, (uint32_t)i + 1, only_asks, sim_thr, &j, &other) <
            0) {
            oom = 1;
            break;
        }
        if (other || j <= 0)
            away[i] = 1;
        if (j > best)
            best = j;
        int hit = j >= sim_thr && j > 0;
        if (hit) {
            m[count++] = (struct rum_match){i, j};
            sum += j;
        } else if (j > best_other)
            best_other = j;
        nwin++;
        for (size_t q = 0; q < c.keys.n; q++)
            if (c.hit[q] == (uint32_t)i + 1) {
                held[q]++;
                held_m[q] += (uint32_t)hit;
            }
    }
    /* What the session is about: a key of the prompt that many of the
     * window's items hold (TOPIC_*), items it did not match among them, is
     * left out on both sides and each match is weighed again. */
    if (!oom && count) {
        size_t ntopic = 0;
        unsigned char *topic = ar_zalloc(&ar, c.keys.n + 1);
        oom = !topic;
        for (size_t q = 0; topic && q < c.keys.n; q++)
            if (held[q] >= TOPIC_ITEMS && (double)held[q] > TOPIC_SHARE * (double)nwin &&
                held[q] - held_m[q] >= TOPIC_OTHER)
                topic[q] = 1, ntopic++;
        if (ntopic) {
            size_t kept = 0;
            c.topic = topic, c.ntopic = ntopic;
            sum = 0, best = best_other;
            for (size_t k = 0; k < count && !oom; k++) {
                double j;
                int other;
                i = m[k].index;
                /* new stamps: the item's keys are counted afresh */
                if (related(&c, cur, cur_n, po, &po_known, &items[i], ho, &w, (uint32_t)(hn + 1 + i), only_asks,
                            sim_thr, &j, &other) < 0) {
                    oom = 1;
                    break;
                }
                if (j > best)
                    best = j;
                if (j >= sim_thr && j > 0) {
                    m[kept++] = (struct rum_match){i, j};
                    sum += j;
                }
            }
            count = kept;
        }
    }
    /* Asked again in words that drift: an earlier ask about the same thing
     * as one the prompt matched is the same thing asked again, though it
     * shares too few words with the prompt itself ("did I make a mistake
     * turning down the offer", "was saying no to that job a bad call"). Each
     * ask found stands in for the prompt in turn, until threshold are found
     * or none is left. A link of two pleas that share a word (same_worry)
     * is not one: it counts at the bar, whatever the bar. */
    unsigned char *in = !oom && count > 0 && count < threshold ? ar_zalloc(&ar, hn + 1) : NULL;
    if (!oom && count > 0 && count < threshold && !in)
        oom = 1;
    for (size_t k = 0; k < count && in; k++)
        in[m[k].index] = 1;
    for (size_t s = 0; in && !oom && s < count && count < threshold; s++) {
        const struct rum_item *hs = &items[m[s].index];
        struct cur cs;
        struct objs *so = ar_alloc(&ar, sizeof *so);
        int so_known = 0;
        if (!so || cur_init(&cs, hs->t, hs->n, &w, &ar) < 0 || cur_asking(&cs) < 0) {
            oom = 1;
            break;
        }
        for (i = 0; i < hn && count < threshold; i++) {
            if (items[i].at < window_start || in[i] || away[i])
                continue;
            double j;
            int other;
            if (related(&cs, hs->t, hs->n, so, &so_known, &items[i], ho, &w, (uint32_t)i + 1, only_asks, sim_thr, &j,
                        &other) < 0) {
                oom = 1;
                break;
            }
            if (j >= HOP_SIM && j >= sim_thr && !cs.worry) { /* a hop is made of words (HOP_SIM > 0) */
                in[i] = 1;
                m[count++] = (struct rum_match){i, j * m[s].sim};
                sum += j * m[s].sim;
            }
        }
    }
    text_words_free(&w);
    ar_release(&ar);
    if (oom)
        return -1;
    r->count = count;
    r->threshold = (long)threshold;
    r->best = best;
    r->detected = count >= threshold;
    r->kind = r->detected ? RUM_DETECTED
        : count           ? RUM_SOME
        : command         ? RUM_COMMAND
        : statement       ? ((how & ASK_FOLLOWUP) && (how & ASK_QUESTION) ? RUM_FOLLOWUP : RUM_STATEMENT)
                          : RUM_NONE;
    if (r->detected) {
        qsort(m, count, sizeof *m, by_sim);
        r->confidence = rum_confidence(sum / (double)count, sim_thr);
    } else
        r->confidence = count ? 0.9 - 0.3 * (double)count / (double)threshold : 0.9;
    return 0;
}

cJSON *rum_heuristic(void)
{
    return det_heuristic("concept_containment", "0.6.15", rum_check_description);
}

/* check_rumination: the contract's arguments, checked, to rum_run, and its
 * result as the contract's JSON. */
int rum_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e)
{
    (void)offset_s;
    static const char *const keys[] = {"current_prompt",
                                       "history",
                                       "window_minutes",
                                       "threshold_count",
                                       "plea_threshold_count",
                                       "similarity_threshold",
                                       "only_asks",
                                       NULL};
    struct rum_query q = {0};
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "current_prompt", "current_prompt", 1, NULL, RUM_MAX_PROMPT, &q.prompt, &q.n, e) < 0 ||
        det_int(args, "window_minutes", "window_minutes", 1, 1440, 90, "WINDOW_OUT_OF_RANGE", &q.window_min, e) < 0 ||
        det_int(args, "threshold_count", "threshold_count", 2, 50, 3, NULL, &q.threshold, e) < 0 ||
        det_int(args, "plea_threshold_count", "plea_threshold_count", 2, 50, 0, NULL, &q.plea_threshold, e) < 0 ||
        det_number(args, "similarity_threshold", "similarity_threshold", 0, 1, RUM_SIM_DEFAULT, &q.similarity, e) < 0)
        return -1;
    const cJSON *oa = cJSON_GetObjectItemCaseSensitive(args, "only_asks");
    if (oa && !cJSON_IsBool(oa))
        return kerr_set(e, "INPUT_INVALID", "only_asks", "only_asks must be true or false");
    q.only_asks = cJSON_IsTrue(oa);
    const cJSON *hist = cJSON_GetObjectItemCaseSensitive(args, "history");
    if (!hist)
        return kerr_set(e, "INPUT_INVALID", "history", "history is required (an empty array is fine)");
    if (!cJSON_IsArray(hist))
        return kerr_set(e, "INPUT_INVALID", "history", "history must be an array of {text, at}");
    int hn = cJSON_GetArraySize(hist);
    if (hn > RUM_MAX_HISTORY)
        return kerr_set(e, "INPUT_TOO_LARGE", "history", "history has more than %d items; keep the most recent",
                        RUM_MAX_HISTORY);

    /* Every item is checked before any work is done. */
    size_t cap = (size_t)(hn ? hn : 1);
    struct rum_item *items = malloc(cap * sizeof *items);
    const cJSON **its = malloc(cap * sizeof *its);
    struct rum_match *m = malloc(cap * sizeof *m);
    if (!items || !its || !m) {
        free(items), free(its), free(m);
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    }
    int64_t prev = INT64_MIN;
    int i = 0, bad = 0;
    for (const cJSON *it = hist->child; it && !bad; it = it->next, i++) {
        struct rum_item *h = &items[i];
        its[i] = it;
        /* Field names are written out only for an item that is at fault. */
        bad = item_ok(it, h) < 0 ? check_item(it, i, h, e) : 0;
        if (!bad && (h->at < prev || h->at > now_ms + RUM_SKEW_MS)) {
            char fa[48];
            snprintf(fa, sizeof fa, "history[%d].at", i);
            bad = h->at < prev ? kerr_set(e, "HISTORY_OUT_OF_ORDER", fa,
                                          "history must be oldest first; %s is earlier than the item before it", fa)
                               : kerr_set(e, "HISTORY_OUT_OF_ORDER", fa, "%s is in the future", fa);
        }
        prev = h->at;
    }
    q.hist = items;
    q.nhist = (size_t)hn;
    struct rum_result r = {.match = m};
    if (!bad && rum_run(&q, now_ms, &r) < 0)
        bad = kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    if (bad) {
        free(items), free(its), free(m);
        return bad;
    }

    /* Keys are literals: added by reference (CS), not copied. */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObjectCS(o, "detected", cJSON_CreateBool(r.detected));
    cJSON_AddItemToObjectCS(o, "count", cJSON_CreateNumber((double)r.count));
    cJSON_AddItemToObjectCS(o, "threshold", cJSON_CreateNumber((double)r.threshold));
    cJSON_AddItemToObjectCS(o, "window_seconds", cJSON_CreateNumber((double)(q.window_min * 60)));
    cJSON_AddItemToObjectCS(o, "similarity_threshold", cJSON_CreateNumber(det_round(q.similarity)));
    cJSON_AddItemToObjectCS(o, "best_similarity", cJSON_CreateNumber(det_round(r.best)));
    if (r.detected) {
        cJSON *arr = cJSON_CreateArray();
        cJSON_AddItemToObjectCS(o, "similar_prompts", arr);
        for (size_t k = 0; k < r.count; k++) {
            /* The prompts are quoted by reference: a long history is not
             * copied again (detect.h: the result is deleted before args). */
            size_t x = m[k].index;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddItemToObjectCS(p, "text", cJSON_CreateStringReference(items[x].t));
            cJSON_AddItemToObjectCS(
                p, "at", cJSON_CreateStringReference(cJSON_GetObjectItemCaseSensitive(its[x], "at")->valuestring));
            cJSON_AddItemToObjectCS(p, "similarity", cJSON_CreateNumber(det_round(m[k].sim)));
            cJSON_AddItemToArray(arr, p);
        }
    }
    free(items), free(its), free(m);

    char reason[280];
    long window = q.window_min;
    switch (r.kind) {
    case RUM_DETECTED:
        snprintf(reason, sizeof reason,
                 "This prompt closely matches %zu earlier prompts from the last %ld minutes (best word overlap %d%%). "
                 "Asking again may not bring a new answer; a different angle or a decision might.",
                 r.count, window, (int)(r.best * 100 + 0.5));
        break;
    case RUM_SOME:
        snprintf(reason, sizeof reason,
                 "%zu earlier prompt%s from the last %ld minutes look%s similar; a loop is flagged at %ld.", r.count,
                 r.count == 1 ? "" : "s", window, r.count == 1 ? "s" : "", r.threshold);
        break;
    case RUM_COMMAND:
        snprintf(reason, sizeof reason, "This prompt is a short instruction to go on, not a question asked again.");
        break;
    case RUM_STATEMENT:
        snprintf(reason, sizeof reason,
                 "This prompt asks nothing (no question, no plea for reassurance): an instruction "
                 "is the work going on, not a question asked again.");
        break;
    case RUM_FOLLOWUP:
        snprintf(reason, sizeof reason,
                 "This prompt takes up the next thing (\"and the second one?\"): a new question in the same frame, "
                 "not the same one asked again.");
        break;
    default:
        snprintf(reason, sizeof reason, "No earlier prompt from the last %ld minutes is similar to this one.", window);
    }
    det_common(o, r.confidence, reason, rum_heuristic());
    static const char *const tokens[] = {"fresh-context", "override-once", "disable-for-session", "lower-sensitivity"};
    det_overrides(o, tokens, r.detected ? 4 : 0);
    *out = o;
    return 0;
}
