/* myers.h — which lines of two sequences to delete and insert to turn one into the other,
 * as GNU diff finds them: Myers' O(ND) algorithm with its linear-space refinement (the
 * middle snake) and diff's heuristic for costly stretches. Lines are compared as ints
 * (equal lines, equal ints), so the caller hashes them first. */
#ifndef RFS_MYERS_H
#define RFS_MYERS_H

#include <stddef.h>

/* Mark a_chg[i] = 1 for each a[i] not in the common subsequence and b_chg[j] = 1 for each
 * such b[j] (both zeroed by the caller). Memory: O(na + nb). 0 or -ENOMEM. */
int rfs_myers(const int *a, size_t na, const int *b, size_t nb, unsigned char *a_chg,
              unsigned char *b_chg);

#endif
