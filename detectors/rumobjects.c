/* rumobjects.c: the things a text names, by which two prompts in the same
 * words ask about different things (or the same thing again). */
#include "rumparts.h"

#include <string.h>
#include <unistr.h>

static void obj_add(struct objs *o, const char *s, size_t n, int number)
{
    while (n && (*s == '#' || *s == '@'))
        s++, n--;
    if (!n)
        return;
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        h ^= ch >= 'A' && ch <= 'Z' ? ch | 0x20 : ch;
        h *= FNV_PRIME;
    }
    for (unsigned i = 0; i < o->n; i++)
        if (o->h[i] == h)
            return;
    if (o->n == OBJ_MAX)
        o->many = 1;
    else {
        o->num |= (uint64_t)(number != 0) << o->n;
        o->h[o->n++] = h;
    }
}

static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* One whitespace-delimited token, its edge punctuation trimmed. */
static void obj_token(struct objs *o, const char *s, size_t n, int foreign_text)
{
    static const char edge[] = "()[]{}<>\"'`,;:!?.*";
    while (n && memchr(edge, s[0], sizeof edge - 1))
        s++, n--;
    while (n && memchr(edge, s[n - 1], sizeof edge - 1))
        n--;
    if (n < 2 && !(n == 1 && s[0] >= '0' && s[0] <= '9'))
        return;
    int digit = 0, lower = 0, camel = 0, code = 0, ascii = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            ascii = 0;
            continue;
        }
        digit |= c >= '0' && c <= '9';
        camel |= lower && c >= 'A' && c <= 'Z'; /* an upper-case letter after a lower-case one */
        lower |= c >= 'a' && c <= 'z';
        if (c && i > 0 && i + 1 < n && strchr("_/\\@#=.", c))
            code |= c != '.' ||
                (i >= 2 && is_alnum((unsigned char)s[i - 1]) && is_alnum((unsigned char)s[i + 1]) && n - i > 2);
    }
    int latin = foreign_text && ascii && n >= 3 && (lower || (s[0] >= 'A' && s[0] <= 'Z'));
    if (digit && ascii && s[0] >= '0' && s[0] <= '9') {
        /* a number however it is written: 5,000 5000 5k are one, and
         * 50-minute and 50 minutes say 50 */
        char b[32];
        size_t k = 0, q = 0;
        int whole = 1;
        while (q < n && k + 4 < sizeof b) {
            unsigned char ch = (unsigned char)s[q];
            if (ch >= '0' && ch <= '9')
                b[k++] = (char)ch;
            else if (ch == ',' && q + 1 < n && s[q + 1] >= '0' && s[q + 1] <= '9')
                ;
            else if ((ch | 0x20) == 'k' && q + 1 == n)
                b[k++] = '0', b[k++] = '0', b[k++] = '0';
            else {
                /* 50-minute, 2GB, 3x: the number, and a unit or a word */
                size_t r = q + (ch == '-');
                while (r < n && (s[r] | 0x20) >= 'a' && (s[r] | 0x20) <= 'z')
                    r++;
                whole = r == n && r > q + (ch == '-') ? 2 : 0;
                break;
            }
            q++;
        }
        if (whole) { /* digits, commas and letters: no code punctuation */
            obj_add(o, b, k, 1);
            return;
        }
    }
    if (digit || code || camel || latin)
        obj_add(o, s, n, 0);
}

/* The length of the character at s[0..n) when it is one of a script written
 * without spaces between words, or with its particles joined to them (CJK
 * ideographs and punctuation, kana, hangul, full-width forms): it ends a
 * thing's name as a space does ("ALTの52" names ALT and 52, "E0502가" names
 * E0502). 0 for any other character. */
static size_t joined_script(const char *s, size_t n)
{
    ucs4_t c;
    if ((unsigned char)s[0] < 0xE0)
        return 0; /* every such character takes three bytes or more */
    int l = u8_mbtouc(&c, (const uint8_t *)s, n);
    if (l < 1)
        return 0;
    int joined = (c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0xF900 && c <= 0xFAFF) ||
        (c >= 0xFF00 && c <= 0xFFEF) || (c >= 0x20000 && c <= 0x3FFFF);
    return joined ? (size_t)l : 0;
}

void objects_of(const char *s, size_t n, struct objs *o)
{
    o->n = 0;
    o->num = 0;
    o->many = n > OBJ_TEXT_MAX;
    if (o->many)
        return;
    /* Mostly another script: more bytes of multi-byte letters than ASCII letters. */
    size_t hi = 0, lo = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        hi += c >= 0xC0;
        lo += (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    }
    int foreign_text = hi > lo;
    size_t i = 0;
    while (i < n && !o->many) {
        unsigned char c = (unsigned char)s[i];
        /* a quoted span: `x`, "x", 'x' (an apostrophe inside a word is
         * inside its token, never looked at here) */
        if ((c == '`' || c == '"' || c == '\'') && !(c == '`' && i + 1 < n && s[i + 1] == '`')) {
            const char *e = memchr(s + i + 1, c, n - i - 1 < 65 ? n - i - 1 : 65);
            if (e && e > s + i + 1 && !memchr(s + i + 1, '\n', (size_t)(e - s - i - 1))) {
                obj_add(o, s + i + 1, (size_t)(e - s - i - 1), 0); /* the span, and its tokens below */
                i++;
                continue;
            }
        }
        size_t j = joined_script(s + i, n - i);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || j) {
            i += j ? j : 1;
            continue;
        }
        size_t a = i;
        while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' && !joined_script(s + i, n - i))
            i++;
        obj_token(o, s + a, i - a, foreign_text);
    }
}

int all_numbers(const struct objs *o)
{
    return o->n && !o->many && o->num == (o->n < 64 ? ((uint64_t)1 << o->n) - 1 : ~(uint64_t)0);
}

/* Both name things, each one the other does not, and what they share is
 * numbers at most ("chapter 3 (membrane transport), 10 questions" and
 * "chapter 6 (cell signaling), 10 questions"): they ask about different
 * things. A name they share (the same file, the same error) is the same
 * thing asked about again, whatever line or time it gives. */
int objects_differ(const struct objs *a, const struct objs *b)
{
    if (!a->n || !b->n || a->many || b->many)
        return 0;
    unsigned a_only = 0, shared_b = 0;
    for (unsigned i = 0; i < a->n; i++) {
        unsigned k = 0;
        while (k < b->n && a->h[i] != b->h[k])
            k++;
        if (k == b->n)
            a_only++;
        else if (!(a->num >> i & 1))
            return 0;
        else
            shared_b++;
    }
    return a_only > 0 && shared_b < b->n;
}

/* They name the same things: the same set, or a name (not a number) both
 * hold. */
int objects_same(const struct objs *a, const struct objs *b)
{
    if (!a->n || !b->n || a->many || b->many)
        return 0;
    unsigned common = 0;
    for (unsigned i = 0; i < a->n; i++)
        for (unsigned k = 0; k < b->n; k++)
            if (a->h[i] == b->h[k]) {
                if (!(a->num >> i & 1))
                    return 1;
                common++;
            }
    return common == a->n && common == b->n;
}
