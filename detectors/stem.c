/* stem.c: see stem.h. */
#include "stem.h"

#include <dlfcn.h>
#include <libstemmer.h>
#include <stdint.h>
#include <string.h>

/* libstemmer, loaded the first time a word is stemmed: its relocations
 * cost about 400 KiB of resident memory, which a keel that only relays
 * (keel wrap at rest) should not carry. Without it, words stay as they are. */
static struct {
    __typeof__(sb_stemmer_new) *make;
    __typeof__(sb_stemmer_stem) *stem;
    __typeof__(sb_stemmer_length) *length;
} sb;

static int sb_load(void)
{
    static int state; /* 0 not tried, 1 loaded, -1 missing */
    if (!state) {
        void *lib = dlopen("libstemmer.so.0d", RTLD_LAZY | RTLD_LOCAL);
        sb.make = lib ? (__typeof__(sb.make))dlsym(lib, "sb_stemmer_new") : NULL;
        sb.stem = lib ? (__typeof__(sb.stem))dlsym(lib, "sb_stemmer_stem") : NULL;
        sb.length = lib ? (__typeof__(sb.length))dlsym(lib, "sb_stemmer_length") : NULL;
        state = sb.make && sb.stem && sb.length ? 1 : -1;
    }
    return state > 0;
}

int stem_ready(void)
{
    return sb_load();
}

static const char *const algo[STEM_NLANG] = {
    [STEM_EN] = "english",    [STEM_DE] = "german", [STEM_FR] = "french",  [STEM_ES] = "spanish", [STEM_IT] = "italian",
    [STEM_PT] = "portuguese", [STEM_NL] = "dutch",  [STEM_SV] = "swedish", [STEM_RU] = "russian", [STEM_EL] = "greek",
    [STEM_AR] = "arabic",     [STEM_HI] = "hindi",  [STEM_TR] = "turkish",
};

/* The commonest function words of the Latin-script languages, lower case:
 * words frequent in one language and rare in the others. */
static const char *const fwords[][24] = {
    [STEM_EN] = {"the", "is", "and", "of",  "to",  "it", "what", "how", "should", "this", "that",  "with",
                 "do",  "my", "are", "can", "you", "i",  "for",  "was", "why",    "will", "would", "which"},
    [STEM_DE] = {"der", "die", "das",  "und",  "ist", "ich", "nicht", "ein",  "eine", "wie",  "was",  "mit",
                 "auf", "es",  "sich", "auch", "den", "dem", "mein",  "kann", "soll", "wenn", "oder", "warum"},
    [STEM_FR] = {"le",   "la", "les", "et",  "est", "je",  "pas", "un",  "une", "des",    "que",   "pour",
                 "dans", "ce", "du",  "qui", "ne",  "sur", "au",  "mon", "ma",  "est-ce", "c'est", "j'ai"},
    [STEM_ES] = {"el",  "los", "las", "y",    "es",   "que", "no", "un",  "una",  "por",  "para",  "mi",
                 "con", "del", "lo",  "como", "pero", "se",  "al", "qué", "cómo", "está", "puedo", "debería"},
    [STEM_IT] = {"il",  "che",   "non", "è",   "di", "un",     "una", "per",  "mi",    "come", "perché", "sono",
                 "gli", "della", "nel", "con", "ma", "questo", "ho",  "cosa", "anche", "del",  "lo",     "se"},
    [STEM_PT] = {"o",    "os", "que", "não", "é",  "um",  "uma", "de",   "para", "com",   "meu",   "minha",
                 "como", "do", "da",  "no",  "na", "mas", "tô",  "você", "isso", "estou", "posso", "em"},
    [STEM_NL] = {"de", "het",  "een",  "en",   "is",   "niet", "ik",   "van", "dat", "wat", "hoe", "met",
                 "op", "zijn", "voor", "maar", "mijn", "kan",  "moet", "ook", "als", "er",  "nog", "wel"},
    [STEM_SV] = {"och", "att", "det",  "är",  "jag", "inte", "en",  "ett", "som", "på", "med", "för",
                 "har", "av",  "till", "den", "vad", "hur",  "min", "kan", "ska", "om", "men", "så"},
    /* Turkish's own: not "ne", "mi", "mu", "ben", "var", "ile", "ve", "bu",
     * "ama" or "bana", which French, Spanish, Polish, Dutch, Swedish or
     * English text (an identifier "mu") writes as well */
    [STEM_TR] = {"bir",   "için",  "çok",  "gibi", "daha",   "değil",   "şey",   "bunu",
                 "nasıl", "neden", "mı",   "mü",   "mısın",  "miyim",   "şimdi", "sonra",
                 "kadar", "benim", "yani", "olur", "olarak", "değilim", "bence", "sence"},
};

#define FW_SIZE 512
static uint64_t fw_k[FW_SIZE];
static uint32_t fw_v[FW_SIZE]; /* bit per language */
static int fw_ready;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

static void fw_init(void)
{
    for (int l = 0; l < (int)(sizeof fwords / sizeof fwords[0]); l++)
        for (int i = 0; i < 24 && fwords[l][i]; i++) {
            uint64_t h = fnv(fwords[l][i], strlen(fwords[l][i]));
            size_t j = h & (FW_SIZE - 1);
            while (fw_k[j] && fw_k[j] != h)
                j = (j + 1) & (FW_SIZE - 1);
            fw_k[j] = h;
            fw_v[j] |= 1u << l;
        }
    fw_ready = 1;
}

static uint32_t fw_get(uint64_t h)
{
    for (size_t j = h & (FW_SIZE - 1); fw_k[j]; j = (j + 1) & (FW_SIZE - 1))
        if (fw_k[j] == h)
            return fw_v[j];
    return 0;
}

/* The code point at s (valid UTF-8), its length in *len. */
static unsigned cp_at(const unsigned char *s, size_t *len)
{
    if (s[0] < 0x80)
        return *len = 1, s[0];
    if (s[0] < 0xE0)
        return *len = 2, (unsigned)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    if (s[0] < 0xF0)
        return *len = 3, (unsigned)(s[0] & 0x0F) << 12 | (unsigned)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    return *len = 4,
           (unsigned)(s[0] & 0x07) << 18 | (unsigned)(s[1] & 0x3F) << 12 | (unsigned)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

/* What the first STEM_LANG_WORDS words of one or more texts say: letters by
 * script, and the function words of each language among them. */
struct lang_count {
    size_t cyr, grk, arb, dev, cjk, hangul, latin, words;
    unsigned votes[STEM_NLANG];
};

/* Counts the words of s[0..n) (valid UTF-8) into a, until it holds
 * STEM_LANG_WORDS words; the text's end ends a word. */
static void lang_count(struct lang_count *a, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t wl = 0;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i <= n && a->words < STEM_LANG_WORDS;) {
        size_t len = 1;
        unsigned c = i == n ? ' ' : s[i] < 0x80 ? s[i] : cp_at(s + i, &len);
        int letter = c < 0x80 ? (c | 0x20) - 'a' < 26 || c == '\'' : c >= 0xC0 && c != 0xD7 && c != 0xF7;
        if (letter) {
            if (c < 0x80)
                a->latin++;
            else if (c >= 0x400 && c < 0x530)
                a->cyr++;
            else if (c >= 0x370 && c < 0x400)
                a->grk++;
            else if (c >= 0x600 && c < 0x700)
                a->arb++;
            else if (c >= 0x900 && c < 0x980)
                a->dev++;
            else if (c >= 0x3040) {
                a->cjk++;
                a->hangul += (c >= 0xAC00 && c < 0xD7B0) || (c >= 0x3130 && c < 0x3190);
            } else
                a->latin++;
            for (size_t q = 0; q < len; q++) { /* ASCII lower-cased; accented letters are written lower case */
                h ^= c < 0x80 && c >= 'A' && c <= 'Z' ? c | 0x20 : s[i + q];
                h *= 1099511628211ULL;
            }
            wl += len;
        } else if (wl) {
            if (wl <= 32)
                for (uint32_t v = fw_get(h ? h : 1), l = 0; v; l++, v >>= 1)
                    a->votes[l] += v & 1;
            a->words++;
            wl = 0;
            h = 1469598103934665603ULL;
        }
        i += len;
    }
}

/* The language a's counts say: the script of the most letters, then in
 * Latin script the language of the most function words. */
static enum stem_lang lang_of_count(const struct lang_count *a)
{
    size_t most = a->latin;
    enum stem_lang by_script = STEM_NONE;
    if (a->cyr > most)
        most = a->cyr, by_script = STEM_RU;
    if (a->grk > most)
        most = a->grk, by_script = STEM_EL;
    if (a->arb > most)
        most = a->arb, by_script = STEM_AR;
    if (a->dev > most)
        most = a->dev, by_script = STEM_HI;
    if (a->cjk > most)
        return a->hangul * 2 > a->cjk ? STEM_KO : STEM_NONE;
    if (by_script != STEM_NONE)
        return by_script;
    enum stem_lang best = STEM_EN;
    for (int l = STEM_EN + 1; l < STEM_NLANG; l++)
        if (a->votes[l] > a->votes[best] &&
            (l != STEM_TR || a->votes[l] >= 2)) /* one Turkish word is not Turkish yet */
            best = (enum stem_lang)l;
    return best;
}

enum stem_lang stem_lang_of(const char *text, size_t n)
{
    return stem_lang_of_texts(&text, &n, 1);
}

enum stem_lang stem_lang_of_texts(const char *const *t, const size_t *n, size_t k)
{
    if (!fw_ready)
        fw_init();
    struct lang_count a = {0};
    for (size_t i = 0; i < k; i++)
        lang_count(&a, t[i], n[i]);
    return lang_of_count(&a);
}

/* Stems already made, for the words a process sees again and again (the
 * overlay and keel serve compare the same history on every call): a
 * direct-mapped table of STEM_CACHE entries, a word of up to STEM_CACHED
 * bytes with a stem as long at most, keyed by a 64-bit hash of the word and
 * its language. */
#define STEM_CACHE  2048
#define STEM_CACHED 22
struct stem_slot {
    uint64_t key;
    unsigned char len;
    char s[STEM_CACHED + 1];
};
static struct stem_slot cache[STEM_CACHE];

/* Korean particles, written onto the noun they follow: case ("이", "를",
 * "에서"), topic and focus ("는", "도", "만"), the copula's "에요" and
 * "예요", and those combined ("에서는"). A particle of two syllables or more
 * whose first syllable ends many nouns and is followed by a particle ("로는":
 * "경로는" is "경로" and "는"; "라는", "이랑", "인데") is not listed: taken
 * whole, it would cut the noun ("경"); the one-syllable particles take such
 * words apart one at a time. */
static const char *const ko_particles[] = {
    "이",     "가",     "을",     "를",     "은",     "는",     "의",     "에",     "도",    "만",
    "로",     "와",     "과",     "랑",     "에서",   "에게",   "한테",   "께서",   "으로",  "까지",
    "부터",   "처럼",   "보다",   "마다",   "조차",   "밖에",   "에는",   "에도",   "에요",  "예요",
    "에서는", "에서도", "으로는", "으로도", "에게는", "한테는", "까지는", "부터는", "보다는"};

/* 1 when valid UTF-8 s[0..n) holds min characters or more (min 1 or 2):
 * it reads no further than the second character's lead byte. */
static int holds(const char *s, size_t n, unsigned min)
{
    unsigned c = 0;
    for (size_t i = 0; i < n && c < min; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c >= min;
}

/* w[0..n) without the particles that end it, longest first and again until
 * none is left: "고양이가" and "고양이" are both "고양". A one-syllable
 * particle leaves at least two characters, so that a two-syllable word
 * ending as a particle does ("나이", "정도") stays whole; a longer one leaves
 * at least one. */
static size_t ko_strip(const char *w, size_t n)
{
    for (;;) {
        size_t best = 0;
        for (size_t i = 0; i < sizeof ko_particles / sizeof *ko_particles; i++) {
            size_t l = strlen(ko_particles[i]);
            if (l > best && l < n && !memcmp(w + n - l, ko_particles[i], l) && holds(w, n - l, l == 3 ? 2u : 1u))
                best = l;
        }
        if (!best)
            return n;
        n -= best;
    }
}

const char *stem_word(enum stem_lang lang, const char *w, size_t n, size_t *len)
{
    static struct sb_stemmer *st[STEM_NLANG];
    static unsigned char tried[STEM_NLANG];
    *len = n;
    if (lang <= STEM_NONE || lang >= STEM_NLANG || n == 0 || n > 256)
        return w;
    if (lang == STEM_KO) {
        *len = ko_strip(w, n);
        return w;
    }
    uint64_t key = 0;
    struct stem_slot *slot = NULL;
    if (n <= STEM_CACHED) {
        key = fnv(w, n) ^ (uint64_t)lang * 0x9E3779B97F4A7C15ULL;
        key = key ? key : 1;
        slot = &cache[key % STEM_CACHE];
        if (slot->key == key) {
            *len = slot->len;
            return slot->s;
        }
    }
    if (!tried[lang]) {
        tried[lang] = 1;
        st[lang] = sb_load() ? sb.make(algo[lang], "UTF_8") : NULL;
    }
    if (!st[lang])
        return w;
    const sb_symbol *o = sb.stem(st[lang], (const sb_symbol *)w, (int)n);
    if (!o)
        return w;
    *len = (size_t)sb.length(st[lang]);
    if (slot && *len <= STEM_CACHED) {
        slot->key = key;
        slot->len = (unsigned char)*len;
        memcpy(slot->s, o, *len);
    }
    return (const char *)o;
}
