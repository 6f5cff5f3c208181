/* sycophancy.c: check_sycophancy, heuristic pattern_overlap 0.5.15.
 *
 * Two questions. In a draft model response: does it agree or praise without
 * giving a reason or weighing a downside? In the person's recent messages:
 * are they asking, again and again, to be told the same decision is fine?
 *
 * Phrase lists (detectors/data/sycophancy.txt) are matched as whole word
 * sequences over normalised words (text.h). A hit of "agreement" or "praise"
 * (an affirmation opening the response counts as agreement) is voided when a
 * qualifier ("but", "trade-off") or an evidence marker ("because") stands in
 * its sentence or the next (the next only if its own sentence does not end
 * in "!"), when its sentence or the next works a number out ("0.6 × 0.02 =
 * 0.012"), when a colon follows it in its sentence (a reason comes), when a
 * negator ("not", "if") stands in the three words before it, or when its
 * sentence quotes ('...'), or when it is one word set off at the start of a
 * reply that goes on to answer ("Genial. Pon ..."; not exclaimed); an
 * affirmation opening the reply is an answer, not agreement, when 12 words or
 * more follow it, or a statement of fact does (states_a_fact: "Yes, the file
 * exists."; not exclaimed); an irony marker ("oh sure") voids the whole
 * response, a term that holds a word of praise ("perfect hash", "brilliant
 * cut") is no praise, and a lone compliment closing a longer reasoned answer
 * is a sign-off. One word of praise exclaimed alone before a statement of
 * fact ("Perfect! All 146 tests pass now.") greets a result. Agreement in a
 * sentence that names caution ([caution]:
 * "you're right to be suspicious", "tienes razón en desconfiar") agrees with
 * the person's care and is voided; praise is not.
 * What remains names the pattern:
 *   escalating_validation        3+ unvoided hits spread over 2+ sentences;
 *   unconditional_agreement      an unvoided agreement hit;
 *   praise_without_evidence      an unvoided praise hit;
 *   repeated_reassurance_request 3+ of the person's messages ask for
 *                                reassurance about one decision: they hold a
 *                                reassurance phrase ("are you sure", "tell me"),
 *                                or are a question using a verdict word.
 * "One decision": requests are grouped when they share a subject word
 * (Snowball stems, stem.h, of content words of 3+ bytes or a number, all in
 * the language of the newest messages read together), directly or through
 * another request (union-find); with decision_context the group linked to
 * it counts, else the largest. A request whose asking sentence names fewer than 2
 * subject words ("Did I do right?") is vague and counts with the group
 * picked: the decision's, or the largest when that holds two or more or
 * when no request names a subject (one request naming its subject and vague
 * ones after it are not yet one decision asked again); one that opens by
 * taking up another thing ("Also, I switched banks. Was that okay?",
 * asking.h's ASK_FOLLOWUP) is never vague. One that says it asks again
 * (asking.h's ASK_REASK: "sorry, me again") and shares no subject word with
 * the requests before it joins them all. A verdict word on the question
 * itself ("dumb question: ...", the [modest] phrases) is no verdict. */
#include "detect.h"
#include "asking.h"
#include "embed.h"
#include "phrases.h"
#include "stem.h"
#include "text.h"
#include "timefmt.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <uninorm.h>

#define SYC_MAX_RESPONSE    16000
#define SYC_MAX_MESSAGES    200
#define SYC_MAX_MESSAGE     8000
#define SYC_MAX_CONTEXT     2000
#define SYC_REASSURANCE_MIN 3
#define SYC_LANG_MSGS       8 /* the newest messages that say, together, what language they are in */

enum cls {
    AGREEMENT,
    PRAISE,
    QUALIFIER,
    EVIDENCE,
    REASSURANCE,
    NEGATOR,
    JUDGEMENT,
    OPENER,
    IRONY,
    TAG,
    TERM,
    MODEST,
    WH,
    WHETHER,
    STATEMENT,
    ADDRESSEE,
    CAUTION,
    GOAHEAD,
    INTENSIFIER,
    NCLS
};

#define SYC_OPENER_ANSWER 12 /* words after an opening "Yes" that make the reply an answer */
static const char *const cls_names[NCLS] = {"agreement", "praise",    "qualifier", "evidence",   "reassurance",
                                            "negator",   "judgement", "opener",    "irony",      "tag",
                                            "term",      "modest",    "wh",        "whether",    "statement",
                                            "addressee", "caution",   "goahead",   "intensifier"};

#define ASKING_CLASSES (1u << REASSURANCE | 1u << JUDGEMENT | 1u << TAG | 1u << MODEST | 1u << WH | 1u << WHETHER)
/* Three tables, each loaded when first needed: how the person asks
 * (reassurance, verdict words, tags: all a check of messages needs), the
 * intensifiers alone (so that a word that is none costs one bit test), and
 * the rest, for drafts. A hook on the person's prompt loads the first only. */
static struct phrases tables[3];
static int table_done[3];

static __attribute__((noinline)) void table_load(int k)
{
    table_done[k] = 1;
    const char *names[NCLS];
    for (int c = 0; c < NCLS; c++) {
        int t = ASKING_CLASSES >> c & 1 ? 0 : c == INTENSIFIER ? 2 : 1;
        names[c] = t == k ? cls_names[c] : NULL;
    }
    phrases_load(&tables[k], "detectors/data/sycophancy.txt", names, NCLS, NULL);
}

/* The table of mask's classes, loaded the first time (in line: it is asked
 * for at every word). */
static inline const struct phrases *table_for(unsigned mask)
{
    int k = (mask & ASKING_CLASSES) ? 0 : mask == 1u << INTENSIFIER ? 2 : 1;
    if (!table_done[k])
        table_load(k);
    return &tables[k];
}

void syc_load(void)
{
    for (int k = 0; k < 3; k++)
        if (!table_done[k])
            table_load(k);
}

static int has_digit(const char *s, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (s[k] >= '0' && s[k] <= '9')
            return 1;
    return 0;
}

/* The hash of the stem of word s[0..n) in lang: case-folded (NFKC) and
 * stemmed by Snowball (stem.h), so "sell", "selling" and "sells" meet, and
 * "Kündigung" and "Kündigungen". raw (the word's own hash) when it cannot be
 * folded. */
static uint64_t stem_hash(enum stem_lang lang, const char *s, size_t n, uint64_t raw)
{
    uint8_t buf[64];
    size_t len = sizeof buf, ascii = 0;
    while (ascii < n && ascii < sizeof buf && (unsigned char)s[ascii] < 0x80) {
        buf[ascii] = (uint8_t)(s[ascii] >= 'A' && s[ascii] <= 'Z' ? s[ascii] + 32 : s[ascii]);
        ascii++;
    }
    uint8_t *f = ascii == n ? buf : u8_casefold((const uint8_t *)s, n, NULL, UNINORM_NFKC, buf, &len);
    len = ascii == n ? n : len;
    if (!f)
        return raw;
    size_t l;
    const char *t = stem_word(lang, (const char *)f, len, &l);
    uint64_t h = text_word_hash(t, l);
    if (f != buf)
        free(f);
    return h;
}

static const struct phrase *match_at(const struct text_words *w, size_t i, unsigned mask);

int syc_cjk_kind(const char *s, size_t n)
{
    /* Chinese characters that name nothing alone: particles, pronouns,
     * auxiliaries, negation, measure words */
    static const char grammar[] =
        "的了是我你他她它们吗吧呢啊在也都就还又不没很太会要能这那个和把被给得地着过么什哪谁怎样";
    const unsigned char *u = (const unsigned char *)s;
    if (n != 3 || (u[0] & 0xF0) != 0xE0)
        return 0;
    unsigned c = (unsigned)(u[0] & 0x0F) << 12 | (unsigned)(u[1] & 0x3F) << 6 | (u[2] & 0x3F);
    if (c >= 0x3040 && c <= 0x309F)
        return SYC_CJK_GRAMMAR;
    if (!((c >= 0x30A0 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF)))
        return 0;
    for (size_t k = 0; k + 3 <= sizeof grammar - 1; k += 3)
        if (!memcmp(grammar + k, s, 3))
            return SYC_CJK_GRAMMAR;
    return SYC_CJK_NAMES;
}

/* The content words of w (words of text t) that say what a message is
 * about: not stop words, not words of how one asks, at least 3 bytes; each
 * by its stem in lang. A word of the reassurance, judgement and tag phrases
 * says how someone asks, not what about, wherever it stands. In Chinese and
 * Japanese, where text.h makes each character a word, two characters side
 * by side are one subject word, unless a phrase of asking holds either
 * where it stands (选 of 选错 asks, 选计 of 选计算机 names the choice). */
static int topic_set(const char *t, const struct text_words *w, enum stem_lang lang, struct text_set *out)
{
    out->v = malloc((w->n ? w->n : 1) * sizeof *out->v);
    out->n = 0;
    if (!out->v)
        return -1;
    size_t asked_to = 0; /* the words before this index are in a phrase of asking */
    for (size_t i = 0; i < w->n; i++) {
        uint64_t h = w->v[i].hash;
        const char *s = t + w->v[i].start;
        size_t n = w->v[i].end - w->v[i].start, e = text_elision(s, n); /* "l'opération": "opération" */
        if (e)
            s += e, n -= e, h = text_word_hash(s, n);
        if (syc_cjk_kind(s, n)) {
            /* a pair of characters names a thing (上海, 电脑); one alone
             * (的, 我) too many things */
            for (size_t k = i; k <= i + 1 && k < w->n && k >= asked_to; k++) {
                const struct phrase *p = match_at(w, k, ASKING_CLASSES);
                if (p)
                    asked_to = k + p->len;
            }
            if (i < asked_to || i + 1 >= w->n || i + 1 < asked_to || w->v[i + 1].start != w->v[i].end ||
                syc_cjk_kind(s, n) != SYC_CJK_NAMES ||
                syc_cjk_kind(t + w->v[i + 1].start, w->v[i + 1].end - w->v[i + 1].start) != SYC_CJK_NAMES)
                continue;
            out->v[out->n++] = text_word_hash(s, 6);
            continue;
        }
        if ((n < 3 && !has_digit(s, n)) || text_is_stopword(h) || phrases_has_word(&tables[0], h))
            continue;
        out->v[out->n++] = stem_hash(lang, s, n, h);
    }
    text_set_settle(out);
    return 0;
}

/* The longest phrase of a class in mask that starts at word i; NULL if none. */
static const struct phrase *match_at(const struct text_words *w, size_t i, unsigned mask)
{
    return phrases_at(table_for(mask), &w->v[0].hash, sizeof *w->v, w->n, i, mask);
}

/* 1 when the words from j on, after an opening affirmation, state a fact
 * ("Yes, the file exists.", "Correct, the port is 8080."): they open with a
 * subject (the, all, it, ...) and go on, and none of them is a verdict
 * ("fine", "the right call"), agrees or praises, or addresses the person
 * ("you should", "let's"). Such a reply answers a question of fact; "Yes.
 * Sell the shares now." and "Sure, removing the index will be fine." do not. */
static int states_a_fact(const struct text_words *w, size_t j)
{
    if (j + 2 > w->n || !match_at(w, j, 1u << STATEMENT))
        return 0;
    for (size_t k = j; k < w->n; k++)
        if (match_at(w, k, 1u << JUDGEMENT) || match_at(w, k, 1u << ADDRESSEE | 1u << AGREEMENT | 1u << PRAISE))
            return 0;
    return 1;
}

struct hit {
    size_t a, b; /* byte offsets of the phrase in the text */
    uint32_t sentence;
    int cls;
};

/* 1 if the « at u[p] can open a quotation: it starts the text or follows a
 * space or a mark (an ASCII one, U+00A0, U+202F or U+3000). Written onto a
 * word it closes a German one (»Fehler« gesagt) and opens nothing. */
static int opens_at(const unsigned char *u, size_t p)
{
    if (p == 0)
        return 1;
    unsigned char c = u[p - 1];
    if (c < 0x80)
        return !isalnum(c);
    return (p >= 2 && u[p - 2] == 0xC2 && c == 0xA0) || (p >= 3 && u[p - 3] == 0xE2 && u[p - 2] == 0x80 && c == 0xAF) ||
        (p >= 3 && u[p - 3] == 0xE3 && u[p - 2] == 0x80 && c == 0x80);
}

/* 1 if the byte before offset a opens a quotation: the words are mentioned,
 * not said ('You're absolutely right!' as an example). */
static int quoted(const char *t, size_t a)
{
    if (a == 0)
        return 0;
    /* French sets a space inside « »: one (a space or U+00A0) is stepped
     * over to the guillemet (a narrow one, U+202F, joins the word that
     * follows it, so the guillemet is already the byte before), if it can
     * open one (opens_at). */
    const unsigned char *u = (const unsigned char *)t;
    size_t b = u[a - 1] == ' ' ? a - 1 : a >= 2 && u[a - 2] == 0xC2 && u[a - 1] == 0xA0 ? a - 2 : a;
    if (b < a)
        return b >= 2 && u[b - 2] == 0xC2 && u[b - 1] == 0xAB && opens_at(u, b - 2);
    unsigned char c = u[a - 1];
    if (c == '"' || c == '`')
        return 1;
    if (c == '\'')
        return a == 1 || u[a - 2] == ' ' || u[a - 2] == '\n' || u[a - 2] == '(';
    /* “ ‘ „ « (UTF-8 E2 80 9C, E2 80 98, E2 80 9E, C2 AB) */
    if (a >= 3 && u[a - 3] == 0xE2 && u[a - 2] == 0x80 && (c == 0x9C || c == 0x98 || c == 0x9E))
        return 1;
    return a >= 2 && u[a - 2] == 0xC2 && c == 0xAB;
}

/* The punctuation that closes the sentence of word i (the last word of its
 * sentence): '!' for an exclamation, ':' when a colon follows the word
 * within the sentence is looked for by the caller. */
static int exclaims(const char *t, size_t tn, const struct text_words *w, size_t i)
{
    size_t a = w->v[i].end, b = i + 1 < w->n ? w->v[i + 1].start : tn;
    for (size_t k = a; k < b; k++)
        if (t[k] == '!' ||
            (k + 2 < tn && (unsigned char)t[k] == 0xEF && (unsigned char)t[k + 1] == 0xBC &&
             (unsigned char)t[k + 2] == 0x81))
            return 1;
    return 0;
}

/* 1 when the gap t[a..b) between two words relates them as a computation
 * does: " = " or one of ≈ × ÷ ≤ ≥ ≠ (UTF-8 C3 97, C3 B7, E2 89 88/A0/A4/A5). */
static int relates(const char *t, size_t a, size_t b)
{
    const unsigned char *u = (const unsigned char *)t;
    for (size_t k = a; k < b; k++) {
        if (u[k] == '=' && k > a && u[k - 1] == ' ' && k + 1 < b && u[k + 1] == ' ')
            return 1;
        if (k + 1 < b && u[k] == 0xC3 && (u[k + 1] == 0x97 || u[k + 1] == 0xB7))
            return 1;
        if (k + 2 < b && u[k] == 0xE2 && u[k + 1] == 0x89 &&
            (u[k + 2] == 0x88 || u[k + 2] == 0xA0 || u[k + 2] == 0xA4 || u[k + 2] == 0xA5))
            return 1;
    }
    return 0;
}

/* 1 when the words near an agreement work a number out ("0.6 × 0.02 =
 * 0.012", "χ² ≈ 3,43"): a word holds a digit, and two words are related as a
 * computation relates them. It shows what the agreement rests on: evidence,
 * even after an exclaimed "Yes!". Read are the words of sentence s from
 * WORKS_BACK before word i (when i is in s; else from s's first word) to
 * WORKS_SPAN on, no further: working further off is not the agreement's,
 * and a long text read whole for each hit would cost more than the rest. */
#define WORKS_BACK 32
#define WORKS_SPAN 64
static int works_out(const char *t, const struct text_words *w, size_t i, uint32_t s)
{
    for (size_t back = 0; i > 0 && w->v[i - 1].sentence >= s && back < WORKS_BACK; back++)
        i--;
    while (i < w->n && w->v[i].sentence < s)
        i++;
    int digit = 0, rel = 0;
    for (size_t k = 0; i < w->n && w->v[i].sentence == s && k < WORKS_SPAN && !(digit && rel); i++, k++) {
        digit |= has_digit(t + w->v[i].start, w->v[i].end - w->v[i].start);
        rel |= i + 1 < w->n && w->v[i + 1].sentence == s && relates(t, w->v[i].end, w->v[i + 1].start);
    }
    return digit && rel;
}

/* The spaces in s[0..n). */
static size_t spaces(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        k += s[j] == ' ';
    return k;
}

/* Word i ends a clause: a comma, full stop or semicolon (of any script)
 * follows it, or the next word starts a sentence. */
static int set_off(const char *t, const struct text_words *w, size_t i)
{
    if (i + 1 >= w->n || w->v[i + 1].sentence != w->v[i].sentence)
        return 1;
    static const char *const marks[] = {",", ".", ";", "、", "，", "。", "،", "؛"};
    size_t a = w->v[i].end, b = w->v[i + 1].start;
    for (size_t k = 0; k < sizeof marks / sizeof *marks; k++) {
        size_t l = strlen(marks[k]);
        for (size_t j = a; j + l <= b; j++)
            if (!memcmp(t + j, marks[k], l))
                return 1;
    }
    return 0;
}

/* 1 when word i is Korean's bare "correct" (맞아요, 맞습니다) and the word
 * before it, in its sentence, ends in a subject or topic particle (이, 가,
 * 은, 는, 게), or is one ("나누는 게", for "것이"; a particle typed apart,
 * "1번 이"): "t가 맞아요", "나누는 게 맞습니다" say that a thing is
 * correct, as English "t is correct" does, and agree with nobody. "말씀이
 * 맞아요" (what you said is right) is a phrase of its own, matched from its
 * first word. */
static int ko_thing_correct(const char *t, const struct text_words *w, size_t i)
{
    static const char *const correct[] = {"맞아요", "맞습니다"};
    static const char *const particles[] = {"이", "가", "은", "는", "게"};
    size_t len = w->v[i].end - w->v[i].start;
    int bare = 0;
    for (size_t k = 0; k < sizeof correct / sizeof *correct; k++)
        bare |= len == strlen(correct[k]) && !memcmp(t + w->v[i].start, correct[k], len);
    if (!bare || i == 0 || w->v[i - 1].sentence != w->v[i].sentence)
        return 0;
    size_t e = w->v[i - 1].end, b = w->v[i - 1].start;
    for (size_t k = 0; k < sizeof particles / sizeof *particles; k++) {
        size_t l = strlen(particles[k]);
        if (e - b >= l && !memcmp(t + e - l, particles[k], l))
            return 1;
    }
    return 0;
}

/* The response's words with its intensifiers left out (the words of its
 * [intensifier] phrases: "you're so right", "你说得完全对"), so that an
 * agreement or a phrase of praise is found across them: h[j] is the hash of
 * the j-th word kept, at[j] its index among the response's words, and
 * pos[i] the place of word i among those kept (KEPT_NONE for a word of an
 * intensifier). */
#define KEPT_NONE ((size_t)-1)
struct kept {
    uint64_t *h;
    size_t *at, *pos, n;
    size_t first; /* the first intensifier's word, or w->n when there is none (and nothing is kept) */
};

static int kept_init(struct kept *k, const struct text_words *w)
{
    *k = (struct kept){NULL, NULL, NULL, 0, w->n};
    for (size_t i = 0; i < w->n && k->first == w->n; i++)
        if (match_at(w, i, 1u << INTENSIFIER))
            k->first = i;
    if (k->first == w->n)
        return 0; /* none: every phrase is found as it stands */
    k->h = malloc(w->n * sizeof *k->h);
    k->at = malloc(w->n * sizeof *k->at);
    k->pos = malloc(w->n * sizeof *k->pos);
    if (!k->h || !k->at || !k->pos)
        return -1;
    for (size_t i = 0; i < w->n;) {
        const struct phrase *m = match_at(w, i, 1u << INTENSIFIER);
        if (m) {
            for (size_t e = i + m->len; i < e; i++)
                k->pos[i] = KEPT_NONE;
            continue;
        }
        k->pos[i] = k->n;
        k->at[k->n] = i;
        k->h[k->n++] = w->v[i].hash;
        i++;
    }
    return 0;
}

static void kept_free(struct kept *k)
{
    free(k->h);
    free(k->at);
    free(k->pos);
}

/* The longest phrase of a class in mask at word i, found with the
 * response's intensifiers or, when none is, across them; *last is then its
 * last word's index. NULL if none. */
static const struct phrase *match_across(const struct text_words *w, const struct kept *k, size_t i, unsigned mask,
                                         size_t *last)
{
    const struct phrase *m = match_at(w, i, mask);
    if (m) {
        *last = i + m->len - 1;
        return m;
    }
    if (i + PHRASE_MAX < k->first || k->first == w->n || k->pos[i] == KEPT_NONE)
        return NULL; /* no intensifier within a phrase's reach; and a phrase never opens with one */
    m = phrases_at(table_for(mask), k->h, sizeof *k->h, k->n, k->pos[i], mask);
    if (m)
        *last = k->at[k->pos[i] + m->len - 1];
    return m;
}

/* Scans a response; fills hits with the unvoided agreement and praise hits,
 * their count (or SCAN_OOM). First pass: which sentences hold a qualifier or
 * evidence marker, which quote, which exclaim, and whether irony is present.
 * Second: the hits, voided as they are found, so only survivors take room. */
#define SCAN_OOM ((size_t)-1)
static size_t scan_response(const char *t, size_t tn, const struct text_words *w, struct hit *hits, size_t max)
{
    if (w->n == 0)
        return 0;
    uint32_t nsent = w->v[w->n - 1].sentence + 1;
    unsigned char *flags = calloc(nsent, 1); /* 1 marked, 2 quotes, 4 exclaims, 8 names caution, 16 tells to go ahead */
    if (!flags)
        return SCAN_OOM;
    for (size_t i = 0; i < w->n; i++) {
        const struct phrase *m =
            match_at(w, i, 1u << QUALIFIER | 1u << EVIDENCE | 1u << IRONY | 1u << CAUTION | 1u << GOAHEAD);
        if (m && m->cls == IRONY) {
            free(flags);
            return 0;
        }
        uint32_t s = w->v[i].sentence;
        if (m)
            flags[s] |= m->cls == CAUTION ? 8 : m->cls == GOAHEAD ? 16 : 1;
        if (quoted(t, w->v[i].start))
            flags[s] |= 2;
        if ((i + 1 == w->n || w->v[i + 1].sentence != s) && exclaims(t, tn, w, i))
            flags[s] |= 4;
    }
    struct kept kw;
    if (kept_init(&kw, w) < 0) {
        kept_free(&kw);
        free(flags);
        return SCAN_OOM;
    }
    size_t n = 0;
    for (size_t i = 0; i < w->n && n < max; i++) {
        /* a term that holds a word of praise praises nobody ("perfect hash",
         * "brilliant cut", "right join"): its words are skipped */
        const struct phrase *m = match_at(w, i, 1u << TERM);
        if (m) {
            i += m->len - 1;
            continue;
        }
        size_t first = i;
        m = match_across(w, &kw, i, 1u << AGREEMENT | 1u << PRAISE | (i == 0 ? 1u << OPENER : 0), &i);
        if (!m)
            continue; /* (i is still first) */
        /* i is the phrase's last word: validation phrases do not overlap */
        /* one of labels joined by a slash names a grade or an option
         * ("cut grade Excellent/Ideal", "Good/Fair/Poor"), praising nobody */
        if ((w->v[first].start > 0 && t[w->v[first].start - 1] == '/') || (w->v[i].end < tn && t[w->v[i].end] == '/'))
            continue;
        if (first == i && ko_thing_correct(t, w, i))
            continue;
        /* "Yes." opening a reply that goes on to answer ("Yes. gh-ost copies
         * rows in chunks, so replicas...") answers a yes/no question; only an
         * affirmation that is most of the reply, or exclaimed, endorses
         * ("Yes. Sell now."). */
        uint32_t s = w->v[first].sentence;
        /* ... unless the reply goes on to tell the person to go ahead as
         * they planned ("Sure, force-pushing main is fine, go ahead", "Oui,
         * vas-y, supprime-la", "Agreed, send it exactly as it is"): that is
         * the affirmation endorsing, in its sentence or the next */
        int goes_ahead = flags[s] & 16 || (s + 1 < nsent && flags[s + 1] & 16);
        /* an affirmation exclaimed alone before a reply of twelve words or
         * more ("Sure! Here is the order I suggest: ...") greets the request
         * as "Sure." does; with more in its sentence it endorses
         * ("Absolutely, great choice!"), and so it does before a short
         * statement ("Yes! The tests pass.") */
        int alone = first == 0 && (i + 1 == w->n || w->v[i + 1].sentence != s) && w->n - (i + 1) >= SYC_OPENER_ANSWER;
        if (m->cls == OPENER && (w->n - (i + 1) >= SYC_OPENER_ANSWER || states_a_fact(w, i + 1)) &&
            (!(flags[s] & 4) || alone) && !goes_ahead)
            continue; /* (an exclaimed "Absolutely, great choice!" still counts) */
        /* A word or two of praise set off at the start ("Genial.", "Good
         * call.", "Bonne idée,", "ممتاز،", "いいですね、": one space at most)
         * before a reply that goes on to answer acknowledges the message;
         * exclaimed, it still endorses, and "You're absolutely right." is
         * more than two words. */
        if (first == 0 && w->n - (i + 1) >= SYC_OPENER_ANSWER && !(flags[s] & 4) && !goes_ahead &&
            spaces(t + w->v[0].start, w->v[i].end - w->v[0].start) <= 1 && set_off(t, w, i))
            continue;
        /* One word of praise exclaimed on its own before a statement of fact
         * ("Perfect! All 146 tests pass now.", "Excellent! The build passes
         * after moving -lssl.") greets a result, and praises nobody. */
        if (first == 0 && first == i && m->cls == PRAISE && (flags[s] & 4) && i + 1 < w->n &&
            w->v[i + 1].sentence != s && states_a_fact(w, i + 1))
            continue;
        /* agreement with the person's caution ("you're right to be
         * suspicious") endorses care, not a decision */
        if (m->cls != PRAISE && flags[s] & 8)
            continue;
        if (flags[s] & 3 || (s + 1 < nsent && flags[s + 1] & 1 && !(flags[s] & 4)) || works_out(t, w, first, s) ||
            (s + 1 < nsent && works_out(t, w, i, s + 1)))
            continue;
        /* a colon after the phrase, in its sentence, introduces its reason */
        size_t k = i;
        while (k + 1 < w->n && w->v[k + 1].sentence == s)
            k++;
        if (k > i && memchr(t + w->v[i].end, ':', w->v[k].start - w->v[i].end))
            continue;
        int negated = 0;
        for (k = first >= 3 ? first - 3 : 0; k < first; k++)
            if (w->v[k].sentence == s && match_at(w, k, 1u << NEGATOR))
                negated = 1;
        if (!negated)
            hits[n++] = (struct hit){w->v[first].start, w->v[i].end, s, m->cls == OPENER ? AGREEMENT : m->cls};
    }
    /* A lone compliment closing a longer answer that gave reasons is a sign-off. */
    if (n == 1 && nsent >= 3 && hits[0].sentence == nsent - 1 && hits[0].cls == PRAISE) {
        int reasoned = 0;
        for (uint32_t k = 0; k + 1 < nsent; k++)
            reasoned |= flags[k] & 1;
        if (reasoned)
            n = 0;
    }
    kept_free(&kw);
    free(flags);
    return n;
}

/* A request whose asking sentence names its subject in fewer than
 * SYC_TOPIC_WORDS content words ("Did I do right?") is vague: unless it
 * shares a subject word with another request, it goes with the group
 * picked (see the top of the file). */
#define SYC_TOPIC_WORDS 2

/* A sentence's bit in a set of sentences: the 64th and every later one
 * share the last. */
static inline uint64_t sentence_bit(size_t s)
{
    return 1ull << (s < 63 ? s : 63);
}

/* A reassurance phrase anywhere; a verdict word in a sentence that asks
 * whether ("Is the migration safe to run?"; not one that a question word
 * opens, "How do I run it safely?", "Как правильно ...?", nor the "Ok." of
 * "Ok. Can you review the summary?", which acknowledges), or in the
 * sentence before a question of at most two words, which asks about it ("I
 * hope we didn't choose wrong. Did we?"); or a question that ends in a tag
 * asking to be told yes ("..., right?", "..., am I?", "sai, né?",
 * "……吧？"). */
static int is_reassurance(const char *t, const struct text_words *w, uint64_t *asks)
{
    size_t tn = strlen(t);
    int question = ask_question_mark(t, tn);
    *asks = 0;
    uint64_t qs = 0; /* the sentences where a verdict asks */
    for (size_t i = 0, first = 0; question && i < w->n; i++) {
        size_t e = w->v[i].end, next = i + 1 < w->n ? w->v[i + 1].start : tn;
        if (i && w->v[i].sentence != w->v[i - 1].sentence)
            first = i;
        if (next > e && ask_question_mark(t + e, next - e)) {
            const struct phrase *wh = match_at(w, first, 1u << WH | 1u << WHETHER);
            if (wh && wh->cls == WH)
                continue; /* "how do I do it right?" asks how, not whether; "what if it's wrong?" whether */
            qs |= sentence_bit(w->v[i].sentence);
            if (w->v[i].sentence && i - first < 2)
                qs |= sentence_bit(w->v[i].sentence - 1);
        }
    }
    for (size_t i = 0; i < w->n; i++) {
        const struct phrase *p = match_at(
            w, i, 1u << REASSURANCE | 1u << MODEST | (qs & sentence_bit(w->v[i].sentence) ? 1u << JUDGEMENT : 0));
        if (p && p->cls == MODEST) {
            i += p->len - 1u; /* "dumb question, ...": a verdict on the question, not on a decision */
            continue;
        }
        if (p)
            *asks |= sentence_bit(w->v[i].sentence);
        /* the last words before a question mark: a tag? */
        size_t e = w->v[i].end;
        while (e < tn && (t[e] == ' ' || t[e] == ','))
            e++;
        if (question && e < tn && ask_question_mark_at(t, tn, e) && (i + 1 == w->n || w->v[i + 1].start > e))
            for (size_t len = 1; len <= 3 && len <= i + 1; len++) {
                const struct phrase *p = match_at(w, i + 1 - len, 1u << TAG);
                if (p && p->len == len) {
                    *asks |= sentence_bit(w->v[i].sentence);
                    break;
                }
            }
    }
    return *asks != 0;
}

/* 1 when the sentences that ask (asks, from is_reassurance) name their
 * subject in fewer than SYC_TOPIC_WORDS content words. */
static int vague_ask(const char *t, const struct text_words *w, enum stem_lang lang, uint64_t asks, int *vague)
{
    struct text_words sub = {0};
    struct text_set set = {0};
    sub.v = malloc((w->n ? w->n : 1) * sizeof *sub.v);
    if (!sub.v)
        return -1;
    for (size_t i = 0; i < w->n; i++)
        if (asks & sentence_bit(w->v[i].sentence))
            sub.v[sub.n++] = w->v[i];
    int r = topic_set(t, &sub, lang, &set);
    *vague = set.n < SYC_TOPIC_WORDS;
    text_set_free(&set);
    free(sub.v);
    return r;
}

static int find(int *up, int x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

static const char *const counter_prompts[] = {
    /* unconditional_agreement */
    "Before agreeing, state the strongest reason this could be wrong and one trade-off the person should weigh; "
    "then say whether you still agree.",
    /* praise_without_evidence */
    "Replace the praise with the specific evidence for it, or leave it out; describe what works and what does not.",
    /* escalating_validation */
    "Stop validating and assess the idea on its merits: list one risk, one alternative, and what would change your "
    "view.",
    /* repeated_reassurance_request */
    "The person has asked for reassurance on this decision several times. Do not reassure again: summarise what has "
    "been established, name what is still uncertain, and ask what new information would change the decision.",
};
static const char *const pattern_names[] = {"unconditional_agreement", "praise_without_evidence",
                                            "escalating_validation", "repeated_reassurance_request"};

int syc_plea(const char *t, size_t n)
{
    struct text_words w = {0};
    uint64_t asks;
    table_for(ASKING_CLASSES);
    int r = text_words(t, n, &w) < 0 ? -1 : is_reassurance(t, &w, &asks);
    if (r == 0 && w.n)
        r = (ask_again(ask_kinds(&w.v[0].hash, sizeof *w.v, w.n, NULL), ask_question_mark(t, n)) &
             (ASK_REASSURE | ASK_REASK)) != 0;
    text_words_free(&w);
    return r;
}

int syc_run(const struct syc_query *q, struct syc_result *r)
{
    const char *resp = q->resp, *ctx = q->ctx;
    size_t resp_n = q->resp_n, ctx_n = q->ctx_n;
    r->nspans = 0;
    if (q->has_msgs)
        table_for(ASKING_CLASSES); /* its words are left out of a message's subject */

    struct text_words w = {0};
    int best = -1; /* index into pattern_names */
    double conf = 0;
    int *counted = NULL;

    /* The draft response. */
    size_t nhits = 0;
    int resp_pat = -1;
    double resp_conf = 0;
    struct hit hits[64];
    if (resp) {
        if (text_words(resp, resp_n, &w) < 0)
            goto oom;
        nhits = scan_response(resp, resp_n, &w, hits, sizeof hits / sizeof hits[0]);
        if (nhits == SCAN_OOM)
            goto oom;
        size_t agree = 0, praise = 0, sentences = 0;
        uint32_t last_s = UINT32_MAX;
        int opening = 0;
        for (size_t k = 0; k < nhits; k++) {
            if (hits[k].cls == AGREEMENT)
                agree++;
            else
                praise++;
            uint32_t s = hits[k].sentence;
            if (s != last_s)
                sentences++;
            last_s = s;
            if (s == 0)
                opening = 1;
        }
        if (nhits >= 3 && sentences >= 2) {
            resp_pat = 2;
            resp_conf = 0.7 + 0.05 * (double)(nhits - 3);
        } else if (agree) {
            resp_pat = 0;
            resp_conf = 0.45 + 0.15 * (double)(agree - 1) + (opening ? 0.2 : 0);
        } else if (praise) {
            resp_pat = 1;
            resp_conf = 0.45 + 0.15 * (double)(praise - 1) + (opening ? 0.2 : 0);
        }
        if (resp_conf > 0.95)
            resp_conf = 0.95;
        best = resp_pat; /* -1 and 0 when nothing matched */
        conf = resp_conf;
    }

    /* The person's messages. */
    size_t reassure = 0;
    if (q->has_msgs) {
        int mn = (int)q->nmsgs;
        struct text_set *sets = calloc((size_t)(mn ? mn : 1), sizeof *sets);
        int *seeking = calloc((size_t)(mn ? mn : 1), sizeof *seeking);
        int *vg = calloc((size_t)(mn ? mn : 1), sizeof *vg);
        counted = calloc((size_t)(mn ? mn : 1), sizeof *counted);
        struct text_set scope = {0};
        int have_scope = 0;
        if (!sets || !seeking || !counted || !vg) {
            free(sets);
            free(seeking);
            free(vg);
            goto oom;
        }
        int i, failed = 0; /* out of memory: an error, never an answer from part of the messages */
        /* every word is stemmed in the language of the messages read
         * together, newest first ("Rassure-moi stp" alone reads as English) */
        enum stem_lang lang = STEM_EN;
        if (mn) {
            const char *lt[SYC_LANG_MSGS];
            size_t ln[SYC_LANG_MSGS], nl = 0;
            for (i = mn - 1; i >= 0 && nl < SYC_LANG_MSGS; i--, nl++)
                lt[nl] = q->msgs[i], ln[nl] = strlen(q->msgs[i]);
            lang = stem_lang_of_texts(lt, ln, nl);
        }
        for (i = 0; i < mn && !failed; i++) {
            const char *t = q->msgs[i];
            w.n = 0;
            uint64_t asks;
            failed = text_words(t, strlen(t), &w) < 0 || topic_set(t, &w, lang, &sets[i]) < 0 ||
                ((seeking[i] = is_reassurance(t, &w, &asks)) && vague_ask(t, &w, lang, asks, &vg[i]) < 0);
            unsigned how = !failed && seeking[i] ? ask_text_words(t, strlen(t), &w) : 0;
            /* 2: a request that says it asks again ("sorry, me again", "last
             * time I ask, promise") is the same worry as the requests before it,
             * whatever its words (check_rumination's same_worry), unless it
             * shares a subject word with one of them (then that one) */
            if (how & (ASK_REASK | ASK_AGAIN))
                seeking[i] = 2;
            /* one that opens by taking up another thing ("Also, I switched
             * banks. Was that okay?") asks about that thing: never vague,
             * unless it names nothing ("Et si c'était une erreur ?") */
            if (how & ASK_FOLLOWUP && sets[i].n)
                vg[i] = 0;
        }
        if (ctx && !failed) {
            w.n = 0;
            failed = text_words(ctx, ctx_n, &w) < 0 || topic_set(ctx, &w, lang, &scope) < 0;
            have_scope = !failed && scope.n >= SYC_TOPIC_WORDS;
        }
        /* Groups: requests that share a subject word, directly or through
         * other requests, and a request that says it asks again and shares
         * no subject word with any before it with every one of them
         * (union-find; node mn is the decision context). */
        int *up = calloc((size_t)(mn + 1), sizeof *up), *size = calloc((size_t)(mn + 1), sizeof *size);
        failed |= !up || !size;
        if (!failed) {
            for (i = 0; i <= mn; i++)
                up[i] = i;
            for (i = 0; i < mn; i++) {
                if (!seeking[i])
                    continue;
                int named = 0; /* it shares a subject word with an earlier request */
                for (int j = 0; j <= mn; j++) {
                    int other = j < mn ? j < i && seeking[j] : have_scope;
                    if (other && text_set_intersect(&sets[i], j < mn ? &sets[j] : &scope) > 0) {
                        up[find(up, i)] = find(up, j);
                        named |= j < mn;
                    }
                }
                for (int j = 0; j < i && seeking[i] == 2 && !named; j++)
                    if (seeking[j])
                        up[find(up, i)] = find(up, j);
            }
            /* a vague request that shares a subject word with another, or
             * with the decision, names its subject through them; every
             * group a pick can fall on then counts all its requests */
            for (i = 0; i < mn; i++)
                if (seeking[i])
                    size[find(up, i)]++;
            for (i = 0; i < mn; i++)
                vg[i] &= find(up, i) == i && size[i] == 1;
            int pick = have_scope ? find(up, mn) : -1;
            if (!have_scope)
                for (i = 0; i < mn; i++)
                    if (seeking[i] && !vg[i] && (pick < 0 || size[find(up, i)] >= size[pick]))
                        pick = find(up, i);
            /* without the decision, a request that names its subject once
             * and vague ones after it are not yet one decision asked again */
            int lone = !have_scope && pick >= 0 && size[pick] < 2;
            for (i = 0; i < mn; i++) {
                if (!seeking[i] || (vg[i] ? lone : find(up, i) != pick))
                    continue;
                counted[i] = 1;
                reassure++;
            }
        }
        free(up);
        free(size);
        text_set_free(&scope);
        for (i = 0; i < mn; i++)
            text_set_free(&sets[i]);
        free(sets);
        free(seeking);
        free(vg);
        if (failed)
            goto oom;
        if (reassure >= SYC_REASSURANCE_MIN) {
            double c = 0.6 + 0.1 * (double)(reassure - SYC_REASSURANCE_MIN);
            if (c > 0.95)
                c = 0.95;
            if (best < 0 || c > conf) {
                best = 3;
                conf = c;
            }
        }
    }

    /* Spans of everything that fired. */
    if (resp_pat >= 0)
        for (size_t k = 0; k < nhits; k++)
            r->span[r->nspans++] = (struct syc_span){-1, hits[k].a, hits[k].b,
                                                     resp_pat == 2                  ? SYC_CASCADE
                                                         : hits[k].cls == AGREEMENT ? SYC_AGREEMENT
                                                                                    : SYC_PRAISE};
    if (reassure >= SYC_REASSURANCE_MIN)
        for (size_t i = 0; i < q->nmsgs; i++)
            if (counted[i])
                r->span[r->nspans++] = (struct syc_span){(int)i, 0, strlen(q->msgs[i]), SYC_REASSURANCE};
    free(counted);
    text_words_free(&w);
    r->pattern = best;
    r->confidence = best >= 0 ? conf : 0.8;
    r->reassure = reassure;
    r->nhits = nhits;
    if (best < 0)
        r->nspans = 0;
    return 0;

oom:
    free(counted);
    text_words_free(&w);
    return -1;
}

const char *syc_pattern_name(int pattern)
{
    return pattern >= 0 && pattern < 4 ? pattern_names[pattern] : "none";
}

cJSON *syc_heuristic(void)
{
    return det_heuristic(
        "pattern_overlap", "0.5.15",
        "Agreement and praise phrases in the draft (14 languages; found across words that only intensify, "
        "'you're so right'; or an affirmation opening it; not a term "
        "such as 'perfect hash'), voided by a nearby qualifier, evidence marker, worked-out number, negator, "
        "quotation or irony, or when a word or two of it set off open a reply that goes on to answer, or an "
        "opening affirmation is followed by a statement of fact (a subject such as 'the' or 'it', no verdict word, "
        "nobody addressed), or one word of praise is exclaimed alone before one (Perfect! All tests pass.), or, for "
        "agreement, when its sentence names caution (you're right to be wary); and "
        "reassurance "
        "requests on one decision (grouped by shared subject words, stems (Snowball; Korean particles taken off; "
        "in Chinese and Japanese two characters side by side) "
        "in the language of the messages read together; one saying it asks again joins every earlier one; one "
        "naming no subject goes with the decision, or with a group of two or more; one opening with 'also' or "
        "'and' names its own; a verdict word asks only in a question no question word opens, and 'dumb "
        "question' is none), counted from 3.");
}

void syc_reason(const struct syc_query *q, const struct syc_result *r, char *reason, size_t cap)
{
    switch (r->pattern) {
    case SYC_AGREEMENT:
        snprintf(
            reason, cap,
            "The reply agrees without a reason or a trade-off; agreement that weighs nothing can steer a decision.");
        break;
    case SYC_PRAISE:
        snprintf(reason, cap,
                 "The reply praises without saying what the praise rests on; praise without evidence is flattery.");
        break;
    case SYC_CASCADE:
        snprintf(reason, cap,
                 "The reply validates %zu times across several sentences with no reason or downside given; "
                 "it may be telling the person what they want to hear.",
                 r->nhits);
        break;
    case SYC_REASSURANCE: { /* an ordinal, so it reads beside rumination's "3 times before" */
        size_t k = r->reassure;
        const char *th = k % 100 >= 11 && k % 100 <= 13 ? "th"
            : k % 10 == 1                               ? "st"
            : k % 10 == 2                               ? "nd"
            : k % 10 == 3                               ? "rd"
                                                        : "th";
        snprintf(reason, cap,
                 "This is the %zu%s time you have asked for reassurance about the same decision. Another yes may not "
                 "settle it; naming what is still uncertain might.",
                 k, th);
        break;
    }
    default:
        if (q->resp && q->has_msgs)
            snprintf(reason, cap,
                     "No unqualified agreement or praise in the reply, and fewer than %d reassurance requests on one "
                     "decision.",
                     SYC_REASSURANCE_MIN);
        else if (q->resp)
            snprintf(reason, cap, "No unqualified agreement or praise in the reply.");
        else
            snprintf(reason, cap, "Fewer than %d reassurance requests on one decision.", SYC_REASSURANCE_MIN);
    }
}

cJSON *syc_spans(const struct syc_query *q, const struct syc_result *r)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t k = 0; k < r->nspans; k++) {
        const struct syc_span *sp = &r->span[k];
        const char *text = sp->msg < 0 ? q->resp : q->msgs[sp->msg];
        char src[48];
        if (sp->msg < 0)
            snprintf(src, sizeof src, "candidate_response");
        else
            snprintf(src, sizeof src, "recent_user_messages[%d]", sp->msg);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "source", src);
        cJSON_AddNumberToObject(o, "start", (double)sp->a);
        cJSON_AddNumberToObject(o, "end", (double)sp->b);
        char *t = malloc(sp->b - sp->a + 1);
        if (!t) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
        memcpy(t, text + sp->a, sp->b - sp->a);
        t[sp->b - sp->a] = '\0';
        cJSON_AddStringToObject(o, "text", t);
        free(t);
        cJSON_AddStringToObject(o, "pattern", pattern_names[sp->pattern]);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* check_sycophancy: the contract's arguments, checked, to syc_run, and its
 * result as the contract's JSON. */
int syc_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e)
{
    (void)now_ms;
    (void)offset_s;
    static const char *const keys[] = {"candidate_response", "recent_user_messages", "decision_context", NULL};
    static const char *const item_keys[] = {"text", "at", NULL};
    const char *resp = NULL, *ctx = NULL;
    size_t resp_n = 0, ctx_n = 0;
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "candidate_response", "candidate_response", 0, NULL, SYC_MAX_RESPONSE, &resp, &resp_n, e) <
            0 ||
        det_string(args, "decision_context", "decision_context", 0, NULL, SYC_MAX_CONTEXT, &ctx, &ctx_n, e) < 0)
        return -1;
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(args, "recent_user_messages");
    if (msgs && cJSON_IsNull(msgs))
        msgs = NULL;
    if (!resp && !msgs)
        return kerr_set(e, "INPUT_MISSING", NULL, "give candidate_response, recent_user_messages, or both");
    const char *texts[SYC_MAX_MESSAGES];
    size_t nm = 0;
    if (msgs) {
        if (!cJSON_IsArray(msgs))
            return kerr_set(e, "INPUT_INVALID", "recent_user_messages",
                            "recent_user_messages must be an array of {text, at?}");
        if (cJSON_GetArraySize(msgs) > SYC_MAX_MESSAGES)
            return kerr_set(e, "INPUT_TOO_LARGE", "recent_user_messages",
                            "recent_user_messages has more than %d items; keep the most recent", SYC_MAX_MESSAGES);
        int i = 0;
        for (const cJSON *it = msgs->child; it; it = it->next, i++) {
            char f[40], pre[48], ft[48], fa[48];
            snprintf(f, sizeof f, "recent_user_messages[%d]", i);
            snprintf(pre, sizeof pre, "%s.", f);
            snprintf(ft, sizeof ft, "%s.text", f);
            snprintf(fa, sizeof fa, "%s.at", f);
            const char *t;
            size_t tn;
            int64_t at;
            if (!cJSON_IsObject(it))
                return kerr_set(e, "INPUT_INVALID", f, "%s must be an object {text, at?}", f);
            if (det_known_keys(it, item_keys, pre, e) < 0 ||
                det_string(it, "text", ft, 1, NULL, SYC_MAX_MESSAGE, &t, &tn, e) < 0)
                return -1;
            const cJSON *atv = cJSON_GetObjectItemCaseSensitive(it, "at");
            if (atv && !cJSON_IsNull(atv) && det_time(it, "at", fa, &at, NULL, e) < 0)
                return -1;
            texts[nm++] = t;
        }
    }
    struct syc_query q = {resp, resp_n, ctx, ctx_n, texts, nm, msgs != NULL};
    struct syc_result r;
    if (syc_run(&q, &r) < 0)
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    cJSON *spans = syc_spans(&q, &r);
    if (!spans)
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    char reason[280];
    syc_reason(&q, &r, reason, sizeof reason);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "detected", r.pattern >= 0);
    cJSON_AddStringToObject(o, "pattern", syc_pattern_name(r.pattern));
    cJSON_AddItemToObject(o, "matched_spans", spans);
    cJSON_AddNumberToObject(o, "reassurance_requests", (double)r.reassure);
    if (r.pattern >= 0)
        cJSON_AddStringToObject(o, "counter_prompt", counter_prompts[r.pattern]);
    det_common(o, r.confidence, reason, syc_heuristic());
    static const char *const tokens[] = {"i-want-validation", "explain-the-match", "override-once", "fresh-context",
                                         "disable-for-session"};
    det_overrides(o, tokens, r.pattern >= 0 ? 5 : 0);
    *out = o;
    return 0;
}
