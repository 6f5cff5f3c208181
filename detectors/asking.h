/* asking.h: how a prompt asks, whatever it asks about.
 *
 * The kinds of phrase, listed per language in detectors/data/asking.txt:
 * a request to be told that something is fine (reassurance: "is it safe",
 * "did I make a mistake"), a sign that the person asks again ("sorry to ask
 * again", "I know you said"), "once more" and its kind (a sign of asking
 * again only in an ask: ask_again; so is a pair of words within six of each
 * other: an apology, a promise or a verb of asking and a word of coming
 * back, "sorry to circle back", "son bir kez soruyorum"; "still" and not
 * understanding, "I'm still confused"), a request to be told ("explain", "tell
 * me"), and a short instruction to go on with the task ("continue", "do the
 * same for the rest"); and the words a question opens
 * with (among a sentence's first four words: "why", "is it", "warum", "por
 * qué") or, in languages that end a question with a particle, closes with
 * (its last two: "吗", "か"). Phrases are whole-word sequences
 * over text.h's normalised words (every ideograph and kana a word of its
 * own), so one list serves every script. */
#ifndef KEEL_ASKING_H
#define KEEL_ASKING_H

#include <stddef.h>
#include <stdint.h>

enum {
    ASK_REASSURE = 1u,
    ASK_REASK = 2u,
    ASK_COMMAND = 4u,
    ASK_QUESTION = 8u,
    ASK_FOLLOWUP = 16u,
    ASK_ERROR = 32u,
    ASK_AGAIN = 64u, /* "once more", "otra vez": see ask_again */
    ASK_TELL = 128u, /* "explain", "tell me": a request to be told */
};

/* The kinds of phrase a text's n words hold, as ASK_* flags; their text.h
 * hashes are at h, h + stride bytes, ... (the hash member of the caller's
 * own words). When mark is given, mark[i] |= the kind of each phrase word i
 * is part of. */
unsigned ask_kinds(const uint64_t *h, size_t stride, size_t n, unsigned char *mark);
/* Loads the phrase table now, as the first ask_kinds would. */
void ask_load(void);

/* kinds, with ASK_REASK added when it holds an "again" phrase ("once
 * more", "otra vez", "noch einmal") and asks: a question (question: 1), a
 * plea for reassurance or a request to be told ("explain it once more").
 * "Run the tests once more" is the work going on; "once more, is it safe?"
 * asks again. */
unsigned ask_again(unsigned kinds, int question);

/* All of how a text asks, its words read once: the ASK_* kinds of phrase it
 * holds (ask_again applied), ASK_QUESTION when it is a question (a question
 * mark, or in one of its sentences a question word among the first four
 * words or a closing particle among the last two; another Latin-script
 * language's question word only when the text does not read as English),
 * ASK_FOLLOWUP when it opens by taking up the next thing ("and the second
 * one?", "what about staging", "e a luz?"), ASK_ERROR when it holds an error
 * report (ask_error_report). 0, or -1 out of memory. */
int ask_text(const char *s, size_t n, unsigned *kinds);

struct text_words;
/* ask_text's kinds, of s[0..n) already cut into words w (text_words). */
unsigned ask_text_words(const char *s, size_t n, const struct text_words *w);

/* 1 when s[0..n) holds an error report as tools print it ("TypeError:",
 * "error[E0382]:", "exit code 137", "npm ERR!", a traceback). */
int ask_error_report(const char *s, size_t n);

/* 1 when s[0..n) holds a question mark: ? ？ or ؟. */
int ask_question_mark(const char *s, size_t n);

/* 1 when a question mark starts at byte i of s[0..n). */
int ask_question_mark_at(const char *s, size_t n, size_t i);

#endif
