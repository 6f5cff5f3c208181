/* lend.c: the upstream's lines queued for the client in keel wrap.
 *
 * A large line is not copied into the client's queue: it is lent from the
 * upstream reader's buffer (outq_lend), and the reader is pinned (frame_pin)
 * until the line is written, or until its bytes must go and what is still
 * lent is copied. The router (route.c) and the overlay's annotation
 * (annotate.c) queue through here. */
#include "relay.h"

/* Lines at least this large go out from the upstream reader's buffer itself. */
#define LEND_MIN (256u << 10)

void relay_queue_server_line(struct relay *r, const char *line, size_t n, const struct jscan_insert *ins, int k)
{
    if (n >= LEND_MIN && frame_holds(&r->sout, line) && !r->cout.open) {
        /* Out of memory part way, what was queued stays queued (as for a copy): never queued twice. */
        if (k)
            outq_lend_splice(&r->cout, line, n, ins, k);
        else
            outq_lend(&r->cout, line, n);
        frame_pin(&r->sout, r->cout.lent > 0); /* kept in place until written */
        return;
    }
    if (k)
        outq_splice(&r->cout, line, n, ins, k);
    else
        outq_line(&r->cout, line, n);
}

void relay_lent_written(struct relay *r)
{
    if (r->sout.pinned && !r->cout.lent)
        frame_pin(&r->sout, 0);
}

void relay_lent_keep(struct relay *r)
{
    if (r->sout.pinned && outq_keep(&r->cout) == 0)
        frame_pin(&r->sout, 0);
}
