/* myers.c — see myers.h. The structure is GNU diffutils' (lib/diffseq.h): compareseq trims
 * the common ends of a stretch, diag finds where a shortest edit path crosses its middle
 * by searching from both ends at once, and the two halves are compared in turn. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "myers.h"

typedef struct myers {
    const int *xv, *yv;
    unsigned char *xchg, *ychg;
    ptrdiff_t *fdiag, *bdiag; /* furthest x reached on each diagonal (x - y), both ways */
    ptrdiff_t too_expensive;  /* edit cost after which diag settles for a good split */
} myers;

typedef struct split {
    ptrdiff_t xmid, ymid;
    int lo_minimal, hi_minimal; /* whether each half must still be found minimal */
} split;

/* Where a shortest path from (xoff, yoff) to (xlim, ylim) crosses the middle: the forward
 * and backward searches extend one edit at a time until they overlap. Past too_expensive
 * edits (and unless find_minimal), the furthest-reaching point found so far will do, as
 * GNU diff does: a good diff at a bounded cost rather than the smallest at any cost. */
static void diag(myers *m, ptrdiff_t xoff, ptrdiff_t xlim, ptrdiff_t yoff, ptrdiff_t ylim,
                 int find_minimal, split *part)
{
    ptrdiff_t *const fd = m->fdiag, *const bd = m->bdiag;
    const int *const xv = m->xv, *const yv = m->yv;
    const ptrdiff_t dmin = xoff - ylim, dmax = xlim - yoff;
    const ptrdiff_t fmid = xoff - yoff, bmid = xlim - ylim;
    ptrdiff_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
    const int odd = (fmid - bmid) & 1;
    fd[fmid] = xoff;
    bd[bmid] = xlim;
    for (ptrdiff_t cost = 1;; cost++) {
        ptrdiff_t d;
        if (fmin > dmin)
            fd[--fmin - 1] = -1;
        else
            ++fmin;
        if (fmax < dmax)
            fd[++fmax + 1] = -1;
        else
            --fmax;
        for (d = fmax; d >= fmin; d -= 2) {
            ptrdiff_t tlo = fd[d - 1], thi = fd[d + 1];
            ptrdiff_t x = tlo >= thi ? tlo + 1 : thi, y = x - d;
            while (x < xlim && y < ylim && xv[x] == yv[y])
                x++, y++;
            fd[d] = x;
            if (odd && bmin <= d && d <= bmax && bd[d] <= x) {
                *part = (split){x, y, 1, 1};
                return;
            }
        }
        if (bmin > dmin)
            bd[--bmin - 1] = PTRDIFF_MAX;
        else
            ++bmin;
        if (bmax < dmax)
            bd[++bmax + 1] = PTRDIFF_MAX;
        else
            --bmax;
        for (d = bmax; d >= bmin; d -= 2) {
            ptrdiff_t tlo = bd[d - 1], thi = bd[d + 1];
            ptrdiff_t x = tlo < thi ? tlo : thi - 1, y = x - d;
            while (xoff < x && yoff < y && xv[x - 1] == yv[y - 1])
                x--, y--;
            bd[d] = x;
            if (!odd && fmin <= d && d <= fmax && x <= fd[d]) {
                *part = (split){x, y, 1, 1};
                return;
            }
        }
        if (find_minimal || cost < m->too_expensive)
            continue;
        /* The forward diagonal reaching furthest (max x + y), and the backward one. */
        ptrdiff_t fxybest = -1, fxbest = xoff;
        for (d = fmax; d >= fmin; d -= 2) {
            ptrdiff_t x = fd[d] < xlim ? fd[d] : xlim, y = x - d;
            if (ylim < y) {
                x = ylim + d;
                y = ylim;
            }
            if (fxybest < x + y) {
                fxybest = x + y;
                fxbest = x;
            }
        }
        ptrdiff_t bxybest = PTRDIFF_MAX, bxbest = xlim;
        for (d = bmax; d >= bmin; d -= 2) {
            ptrdiff_t x = bd[d] > xoff ? bd[d] : xoff, y = x - d;
            if (y < yoff) {
                x = yoff + d;
                y = yoff;
            }
            if (x + y < bxybest) {
                bxybest = x + y;
                bxbest = x;
            }
        }
        if ((xlim + ylim) - bxybest < fxybest - (xoff + yoff))
            *part = (split){fxbest, fxybest - fxbest, 1, 0};
        else
            *part = (split){bxbest, bxybest - bxbest, 0, 1};
        return;
    }
}

/* Mark the changes between xv[xoff..xlim) and yv[yoff..ylim). The recursion halves the
 * edit distance at each level, so its depth is about log2 of the number of changes. */
static void compareseq(myers *m, ptrdiff_t xoff, ptrdiff_t xlim, ptrdiff_t yoff, ptrdiff_t ylim,
                       int find_minimal)
{
    const int *xv = m->xv, *yv = m->yv;
    while (xoff < xlim && yoff < ylim && xv[xoff] == yv[yoff])
        xoff++, yoff++;
    while (xoff < xlim && yoff < ylim && xv[xlim - 1] == yv[ylim - 1])
        xlim--, ylim--;
    if (xoff == xlim) {
        while (yoff < ylim)
            m->ychg[yoff++] = 1;
    } else if (yoff == ylim) {
        while (xoff < xlim)
            m->xchg[xoff++] = 1;
    } else {
        split part;
        diag(m, xoff, xlim, yoff, ylim, find_minimal, &part);
        compareseq(m, xoff, part.xmid, yoff, part.ymid, part.lo_minimal);
        compareseq(m, part.xmid, xlim, part.ymid, ylim, part.hi_minimal);
    }
}

int rfs_myers(const int *a, size_t na, const int *b, size_t nb, unsigned char *a_chg,
              unsigned char *b_chg)
{
    if ((size_t)PTRDIFF_MAX / 2 / sizeof(ptrdiff_t) - 3 < na + nb)
        return -ENOMEM;
    size_t diags = na + nb + 3;
    ptrdiff_t *mem = malloc(2 * diags * sizeof *mem);
    if (!mem)
        return -ENOMEM;
    myers m = {.xv = a, .yv = b, .xchg = a_chg, .ychg = b_chg};
    /* Diagonals run from -(nb + 1) to na + 1. */
    m.fdiag = mem + nb + 1;
    m.bdiag = m.fdiag + diags;
    /* GNU diff's bound: about the square root of the lengths, at least 4096. */
    m.too_expensive = 1;
    for (size_t n = diags; n; n >>= 2)
        m.too_expensive <<= 1;
    if (m.too_expensive < 4096)
        m.too_expensive = 4096;
    compareseq(&m, 0, (ptrdiff_t)na, 0, (ptrdiff_t)nb, 0);
    free(mem);
    return 0;
}
