/* text.c: word segmentation and normalisation (see text.h).
 *
 * libunistring does the Unicode work: u8_wordbreaks finds UAX #29 word
 * boundaries in the original text, u8_casefold with UNINORM_NFKC folds each
 * word. A word made only of ASCII is lower-cased in place instead, which is
 * exactly what NFKC + case folding would do to it, at a fraction of the cost.
 * A segment is a word when it holds at least one letter or digit; segments
 * between words that hold a sentence terminator advance the sentence count. */
#include "text.h"

#include "embed.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>
#include <uniwbrk.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME  1099511628211ULL

size_t text_ascii_prefix(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    for (; i + 64 <= n; i += 64) { /* sixty-four bytes a step: a large message is mostly ASCII */
        const __m128i *v = (const __m128i *)(const void *)(s + i);
        __m128i x = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(v), _mm_loadu_si128(v + 1)),
                                 _mm_or_si128(_mm_loadu_si128(v + 2), _mm_loadu_si128(v + 3)));
        if (_mm_movemask_epi8(x))
            break;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        if (x & 0x8080808080808080ULL)
            break;
    }
    while (i < n && !((unsigned char)s[i] & 0x80))
        i++;
    return i;
}

int text_valid_utf8(const char *s, size_t n)
{
    size_t a = text_ascii_prefix(s, n); /* ASCII is UTF-8: only the rest needs checking */
    return a == n || u8_check((const uint8_t *)s + a, n - a) == NULL;
}

size_t text_char_count(const char *s, size_t n)
{
    size_t a = text_ascii_prefix(s, n);
    return a + (a < n ? u8_mbsnlen((const uint8_t *)s + a, n - a) : 0);
}

static uint64_t fnv(uint64_t h, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= FNV_PRIME;
    }
    return h;
}

#define FOLD_MEMO 4096
static struct fold_memo {
    uint64_t raw, h;
} fold_memo[FOLD_MEMO];

/* 1 when every character of valid UTF-8 s[0..n) is its own NFKC case
 * fold whatever stands beside it: lower-case ASCII and digits, the
 * lower-case letters U+00E0-U+00FF (not U+00F7), lower-case Cyrillic
 * U+0430-U+045F, hiragana U+3041-U+3096, katakana U+30A1-U+30FA, the
 * CJK ideographs U+4E00-U+9FFF and the Hangul syllables U+AC00-U+D7A3 (none
 * decomposes under compatibility, none changes case, and none is a
 * combining mark or a jamo that composes with its neighbour). Such a word
 * (most words of the phrase lists and of text not in English) is hashed as
 * it stands. */
static int folded_already(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        ucs4_t c;
        int l = u8_mbtouc_unsafe(&c, s + i, n - i);
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 0xE0 && c <= 0xFF && c != 0xF7) ||
              (c >= 0x430 && c <= 0x45F) || (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
              (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3)))
            return 0;
        i += (size_t)l;
    }
    return 1;
}

/* Hash the normalised form of one word. */
static uint64_t word_hash(const uint8_t *s, size_t n)
{
    size_t i;
    for (i = 0; i < n && s[i] < 0x80; i++)
        ;
    if (i == n) { /* ASCII: NFKC + casefold == tolower */
        uint64_t h = FNV_OFFSET;
        for (i = 0; i < n; i++) {
            uint8_t c = s[i];
            if (c >= 'A' && c <= 'Z')
                c += 'a' - 'A';
            h ^= c;
            h *= FNV_PRIME;
        }
        return h;
    }
    if (folded_already(s, n))
        return fnv(FNV_OFFSET, s, n);
    /* Folding is the costly part, and the same words come back (a phrase
     * list's characters, a conversation's words): a small direct-mapped
     * memo of raw word -> hash, keyed by the raw bytes' hash (a 64-bit
     * collision is below 1e-15 among the words of a process). */
    uint64_t raw = fnv(FNV_OFFSET ^ n, s, n);
    struct fold_memo *m = &fold_memo[raw % FOLD_MEMO];
    if (m->raw == raw && raw)
        return m->h;
    uint8_t stackbuf[256];
    size_t len = sizeof stackbuf;
    uint8_t *f = u8_casefold(s, n, NULL, UNINORM_NFKC, stackbuf, &len);
    if (!f) /* out of memory: hash the raw word */
        return fnv(FNV_OFFSET, s, n);
    /* Fold typographic apostrophes (U+2018, U+2019, U+02BC) to ASCII '. */
    uint64_t h = FNV_OFFSET;
    for (i = 0; i < len; i++) {
        if (i + 2 < len && f[i] == 0xE2 && f[i + 1] == 0x80 && (f[i + 2] == 0x98 || f[i + 2] == 0x99)) {
            h = fnv(h, (const uint8_t *)"'", 1);
            i += 2;
        } else if (i + 1 < len && f[i] == 0xCA && f[i + 1] == 0xBC) {
            h = fnv(h, (const uint8_t *)"'", 1);
            i += 1;
        } else {
            h = fnv(h, f + i, 1);
        }
    }
    if (f != stackbuf)
        free(f);
    m->raw = raw;
    m->h = h;
    return h;
}

uint64_t text_word_hash(const char *s, size_t n)
{
    return word_hash((const uint8_t *)s, n);
}

static int is_terminator(ucs4_t c)
{
    switch (c) {
    case '.':
    case '!':
    case '?':
    case ';':
    case '\n':
    case 0x3002:
    case 0xFF01:
    case 0xFF1F:
    case 0xFF0E:
    case 0x0964:
    case 0x061F:
        return 1;
    default:
        return 0;
    }
}

static int grow(struct text_words *w)
{
    size_t cap = w->cap ? w->cap * 2 : 64;
    struct text_word *v = realloc(w->v, cap * sizeof *v);
    if (!v)
        return -1;
    w->v = v;
    w->cap = cap;
    return 0;
}

static int push(struct text_words *w, uint32_t a, uint32_t b, uint32_t sent, uint64_t h)
{
    if (w->n == w->cap && grow(w) < 0)
        return -1;
    w->v[w->n++] = (struct text_word){a, b, sent, h};
    return 0;
}

#define TEXT_LETTERS(c) [c] = TEXT_L | TEXT_W, [c - 'a' + 'A'] = TEXT_L | TEXT_W
#define TEXT_DIGIT(c)   [c] = TEXT_D | TEXT_W
const unsigned char text_ascii_class[256] = {
    TEXT_LETTERS('a'), TEXT_LETTERS('b'), TEXT_LETTERS('c'), TEXT_LETTERS('d'),         TEXT_LETTERS('e'),
    TEXT_LETTERS('f'), TEXT_LETTERS('g'), TEXT_LETTERS('h'), TEXT_LETTERS('i'),         TEXT_LETTERS('j'),
    TEXT_LETTERS('k'), TEXT_LETTERS('l'), TEXT_LETTERS('m'), TEXT_LETTERS('n'),         TEXT_LETTERS('o'),
    TEXT_LETTERS('p'), TEXT_LETTERS('q'), TEXT_LETTERS('r'), TEXT_LETTERS('s'),         TEXT_LETTERS('t'),
    TEXT_LETTERS('u'), TEXT_LETTERS('v'), TEXT_LETTERS('w'), TEXT_LETTERS('x'),         TEXT_LETTERS('y'),
    TEXT_LETTERS('z'), TEXT_DIGIT('0'),   TEXT_DIGIT('1'),   TEXT_DIGIT('2'),           TEXT_DIGIT('3'),
    TEXT_DIGIT('4'),   TEXT_DIGIT('5'),   TEXT_DIGIT('6'),   TEXT_DIGIT('7'),           TEXT_DIGIT('8'),
    TEXT_DIGIT('9'),   ['_'] = TEXT_W,    [':'] = TEXT_JL,   ['.'] = TEXT_JL | TEXT_JD, ['\''] = TEXT_JL | TEXT_JD,
    [','] = TEXT_JD,   [';'] = TEXT_JD,
};

/* The same words, offsets and sentences as the libunistring path, for text
 * that is all ASCII: runs of letters, digits and underscores (WB5, WB8-10,
 * WB13a-b), joined across a ' . or : between letters (WB6-7) and across a
 * , ; ' or . between digits (WB11-12); a run of underscores alone is no
 * word. Each word is hashed lower-cased. A test compares the two paths on
 * random text. */
static int ascii_words(const uint8_t *s, size_t n, struct text_words *out)
{
    uint32_t sent = 0;
    int pending_break = 0;
    size_t i = 0;
    while (i < n) {
        if (!(text_ascii_class[s[i]] & TEXT_W)) {
            if (is_terminator(s[i]))
                pending_break = 1;
            i++;
            continue;
        }
        size_t j = text_ascii_word_end((const char *)s, n, i);
        unsigned classes = 0;
        uint64_t h = FNV_OFFSET;
        for (size_t q = i; q < j; q++) { /* a letter's 0x20 bit lower-cases it */
            unsigned cls = text_ascii_class[s[q]];
            classes |= cls;
            h ^= s[q] | (cls & TEXT_L ? 0x20u : 0);
            h *= FNV_PRIME;
        }
        if (classes & (TEXT_L | TEXT_D)) {
            if (pending_break && out->n > 0)
                sent++;
            pending_break = 0;
            if (out->n == out->cap && grow(out) < 0)
                return -1;
            out->v[out->n++] = (struct text_word){(uint32_t)i, (uint32_t)j, sent, h};
        }
        i = j;
    }
    return 0;
}

int text_words(const char *str, size_t n, struct text_words *out)
{
    if (text_ascii_prefix(str, n) == n)
        return ascii_words((const uint8_t *)str, n, out);
    return text_words_unicode(str, n, out);
}

int text_words_unicode(const char *str, size_t n, struct text_words *out)
{
    const uint8_t *s = (const uint8_t *)str;
    char *brk = malloc(n ? n : 1);
    if (!brk)
        return -1;
    u8_wordbreaks(s, n, brk);
    uint32_t sent = 0;
    int pending_break = 0; /* a terminator was seen since the last word */
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && !brk[j])
            j++;
        /* Segment [i, j): a word if it holds a letter or digit. */
        int word = 0, term = 0;
        for (size_t k = i; k < j;) {
            ucs4_t c;
            int l = u8_mbtouc(&c, s + k, j - k);
            if (l <= 0)
                break;
            if (uc_is_alnum(c))
                word = 1;
            else if (is_terminator(c))
                term = 1;
            k += (size_t)l;
        }
        if (word) {
            if (pending_break && out->n > 0)
                sent++;
            pending_break = 0;
            if (push(out, (uint32_t)i, (uint32_t)j, sent, word_hash(s + i, j - i)) < 0) {
                free(brk);
                return -1;
            }
        } else if (term) {
            pending_break = 1;
        }
        i = j;
    }
    free(brk);
    return 0;
}

void text_words_free(struct text_words *w)
{
    free(w->v);
    w->v = NULL;
    w->n = w->cap = 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The stoplist: word hashes in an open-addressing set (a power of two, at
 * most a quarter full: STOP_MAX words, of the list's 1,077 today), built
 * once. unit_text checks that every word of the list is in it. */
#define STOP_SET 8192
#define STOP_MAX (STOP_SET / 4)
static uint64_t *stop_v;
static size_t stop_n;
static uint64_t stop_set[STOP_SET];

static void add_stop(const char *line, size_t n, void *ctx)
{
    size_t *cap = ctx;
    if (stop_n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        uint64_t *v = realloc(stop_v, nc * sizeof *v);
        if (!v)
            return;
        stop_v = v;
        *cap = nc;
    }
    stop_v[stop_n++] = word_hash((const uint8_t *)line, n);
}

static void stop_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const struct embed_blob *b = embed_find("detectors/data/stopwords.txt");
    size_t cap = 0;
    if (b)
        text_each_line(b->data, add_stop, &cap);
    for (size_t i = 0; i < stop_n && i < STOP_MAX; i++) {
        size_t j = stop_v[i] & (STOP_SET - 1);
        while (stop_set[j] && stop_set[j] != stop_v[i])
            j = (j + 1) & (STOP_SET - 1);
        stop_set[j] = stop_v[i];
    }
}

size_t text_elision_at(const char *s, size_t n, size_t k)
{
    /* French: l' d' j' c' n' s' m' t' qu' jusqu' lorsqu' puisqu' quoiqu'
     * presqu'; Italian: un' dell' dall' nell' sull' all' coll' quest' quell'
     * ch' v' (and l' d' c' m' t' s' above) */
    static const char *const pre[] = {"l",     "d",      "j",      "c",      "n",      "s",  "m",    "t",    "qu",
                                      "jusqu", "lorsqu", "puisqu", "quoiqu", "presqu", "un", "dell", "dall", "nell",
                                      "sull",  "all",    "coll",   "quest",  "quell",  "ch", "v"};
    size_t a = s[k] == '\'' ? 1 : k + 3 <= n && !memcmp(s + k, "\xE2\x80\x99", 3) ? 3 : 0; /* ' or ’ */
    if (!a || k + a == n)
        return 0;
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        if (strlen(pre[i]) == k && !strncasecmp(s, pre[i], k))
            return k + a;
    return 0;
}

int text_is_stopword(uint64_t h)
{
    stop_init();
    if (!h)
        return 0;
    for (size_t j = h & (STOP_SET - 1); stop_set[j]; j = (j + 1) & (STOP_SET - 1))
        if (stop_set[j] == h)
            return 1;
    return 0;
}

/* Sorts n 64-bit values: insertion sort when few, else LSD radix sort by
 * bytes (no comparator calls: sets of thousands of words are common), or
 * qsort when the radix sort's buffer cannot be had. */
static void sort_u64(uint64_t *v, size_t n)
{
    if (n < 48) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x = v[i];
            size_t j = i;
            while (j && v[j - 1] > x) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
        return;
    }
    uint64_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        qsort(v, n, sizeof *v, cmp_u64);
        return;
    }
    uint64_t *from = v, *to = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((from[i] >> shift) & 0xFF) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            to[count[(from[i] >> shift) & 0xFF]++] = from[i];
        uint64_t *t = from;
        from = to;
        to = t;
    }
    free(tmp); /* 8 passes: the result is back in v */
}

int text_set_from_words(const struct text_words *w, int drop_stop, struct text_set *out)
{
    out->n = 0;
    out->v = malloc((w->n ? w->n : 1) * sizeof *out->v);
    if (!out->v)
        return -1;
    for (size_t i = 0; i < w->n; i++)
        if (!drop_stop || !text_is_stopword(w->v[i].hash))
            out->v[out->n++] = w->v[i].hash;
    text_set_settle(out);
    return 0;
}

void text_set_settle(struct text_set *s)
{
    sort_u64(s->v, s->n);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (k == 0 || s->v[k - 1] != s->v[i])
            s->v[k++] = s->v[i];
    s->n = k;
}

void text_set_free(struct text_set *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

size_t text_set_intersect(const struct text_set *a, const struct text_set *b)
{
    size_t i = 0, j = 0, k = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i] < b->v[j])
            i++;
        else if (a->v[i] > b->v[j])
            j++;
        else {
            k++;
            i++;
            j++;
        }
    }
    return k;
}

size_t text_each_line(const char *data, void (*fn)(const char *line, size_t n, void *ctx), void *ctx)
{
    size_t count = 0;
    const char *p = data;
    while (*p) {
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        const char *a = p, *b = e;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
            b--;
        if (b > a && *a != '#') {
            fn(a, (size_t)(b - a), ctx);
            count++;
        }
        p = *e ? e + 1 : e;
    }
    return count;
}

/* --- a general hash of bytes ------------------------------------------------ */

static inline uint64_t hmix(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t read8(const unsigned char *s)
{
    uint64_t v;
    memcpy(&v, s, 8);
    return v;
}

char *text_dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *text_repair(const char *s, size_t n, size_t *len, int *repaired)
{
    *repaired = !text_valid_utf8(s, n) || memchr(s, '\0', n);
    if (!*repaired) {
        *len = n;
        return text_dup(s, n);
    }
    uint8_t *t = malloc(3 * n + 1), *q = t; /* U+FFFD is 3 bytes: at most 3 for each byte */
    if (!t)
        return NULL;
    for (const uint8_t *c = (const uint8_t *)s, *end = c + n; c < end;) {
        ucs4_t u;
        int l = u8_mbtouc(&u, c, (size_t)(end - c));
        if (u == 0)
            *q++ = ' ';
        else if (u == 0xFFFD)
            q += u8_uctomb(q, u, 3);
        else
            memcpy(q, c, (size_t)l), q += l;
        c += l;
    }
    *q = '\0';
    *len = (size_t)(q - t);
    return (char *)t;
}

static const uint64_t hk0 = 0xa0761d6478bd642fULL, hk1 = 0xe7037ed1a0b428dbULL, hk2 = 0x8ebc6af09c88c6e3ULL;

/* Four independent lanes over each 64-byte block, so a long text is not one
 * chain of multiplies. */
static void hash_blocks(uint64_t lane[4], const unsigned char *s, size_t blocks)
{
    uint64_t h0 = lane[0], h1 = lane[1], h2 = lane[2], h3 = lane[3];
    for (; blocks; blocks--, s += 64) {
        h0 = hmix(read8(s) ^ hk1 ^ h0, read8(s + 8) ^ hk2);
        h1 = hmix(read8(s + 16) ^ hk1 ^ h1, read8(s + 24) ^ hk2);
        h2 = hmix(read8(s + 32) ^ hk1 ^ h2, read8(s + 40) ^ hk2);
        h3 = hmix(read8(s + 48) ^ hk1 ^ h3, read8(s + 56) ^ hk2);
    }
    lane[0] = h0, lane[1] = h1, lane[2] = h2, lane[3] = h3;
}

uint64_t text_hash(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = seed ^ hmix(seed ^ hk0, (uint64_t)n ^ hk1);
    if (n >= 256) {
        uint64_t lane[4] = {h, h ^ hk0, h ^ hk1, h ^ hk2};
        hash_blocks(lane, s, n / 64);
        s += n / 64 * 64;
        n %= 64;
        h = hmix(lane[0] ^ hk0, lane[1] ^ hk1) ^ hmix(lane[2] ^ hk2, lane[3] ^ hk0);
    }
    while (n >= 16) {
        h = hmix(read8(s) ^ hk1 ^ h, read8(s + 8) ^ hk2);
        s += 16;
        n -= 16;
    }
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        a = read8(s);
        b = read8(s + n - 8);
    } else if (n) {
        for (size_t i = 0; i < n; i++)
            a |= (uint64_t)s[i] << (8 * i);
    }
    return hmix(hk1 ^ (uint64_t)n, hmix(a ^ hk1 ^ h, b ^ hk2));
}

void text_hasher_init(struct text_hasher *t, uint64_t seed)
{
    t->lane[0] = seed ^ hk0;
    t->lane[1] = seed ^ hk1;
    t->lane[2] = seed ^ hk2;
    t->lane[3] = ~seed;
    t->total = 0;
    t->bufn = 0;
}

void text_hasher_add(struct text_hasher *t, const void *p, size_t n)
{
    const unsigned char *s = p;
    t->total += n;
    if (t->bufn) { /* a block begun in an earlier piece */
        size_t k = 64 - t->bufn < n ? 64 - t->bufn : n;
        memcpy(t->buf + t->bufn, s, k);
        t->bufn += k, s += k, n -= k;
        if (t->bufn < 64)
            return;
        hash_blocks(t->lane, t->buf, 1);
        t->bufn = 0;
    }
    hash_blocks(t->lane, s, n / 64);
    memcpy(t->buf, s + n / 64 * 64, n % 64);
    t->bufn = n % 64;
}

uint64_t text_hasher_end(const struct text_hasher *t)
{
    uint64_t h = hmix(t->lane[0] ^ hk0, t->lane[1] ^ hk1) ^ hmix(t->lane[2] ^ hk2, t->lane[3] ^ hk0);
    return text_hash(t->buf, t->bufn, h ^ t->total);
}

uint64_t text_hash_pieces(const void *p, size_t n, uint64_t seed)
{
    struct text_hasher t;
    text_hasher_init(&t, seed);
    text_hasher_add(&t, p, n);
    return text_hasher_end(&t);
}

int text_yaml_flow_depth(const char *s, size_t n, int max)
{
    int depth = 0, deepest = 0;
    char quote = 0;
    for (size_t i = 0; i < n && deepest <= max; i++) {
        char c = s[i];
        if (quote) {
            if (c == '\\' && quote == '"' && i + 1 < n)
                i++;
            else if (c == quote && !(quote == '\'' && i + 1 < n && s[i + 1] == '\'' && ++i))
                quote = 0;
            continue;
        }
        if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n')) {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '"' || c == '\'') {
            /* a quote opens a scalar only where a scalar starts (after
             * ": ", "- ", "[", "{", "," or at a line's start); in "don't"
             * it is a letter */
            size_t k = i;
            while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t'))
                k--;
            if (k == 0 || strchr("\n:-[{,?", s[k - 1]))
                quote = c;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return deepest > max ? max + 1 : deepest;
}
