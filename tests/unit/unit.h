/* unit.h — what the unit tests share: where the contract and DeerFlow's sample database are
 * (meson passes both; RS_CONTRACT_SOURCE / RS_DEERFLOW_SAMPLE in the environment override),
 * and private temp dirs under $TMPDIR. */
#ifndef RS_UNIT_H
#define RS_UNIT_H

#include <stdio.h>
#include <stdlib.h>

#ifndef RS_CONTRACT_SOURCE
#error "meson passes RS_CONTRACT_SOURCE, the source tree's contract"
#endif

static inline const char *unit_path(const char *env, const char *built_in)
{
    const char *p = getenv(env);
    return p && *p ? p : built_in;
}

#define UNIT_CONTRACT unit_path("RS_CONTRACT_SOURCE", RS_CONTRACT_SOURCE)
#ifdef RS_DEERFLOW_SAMPLE
#define UNIT_DEERFLOW_SAMPLE unit_path("RS_DEERFLOW_SAMPLE", RS_DEERFLOW_SAMPLE)
#endif

/* "$TMPDIR/<prefix>-XXXXXX" (TMPDIR unset: /tmp) into out, for mkdtemp or mkstemp. */
static inline void unit_tmp_template(char *out, size_t size, const char *prefix)
{
    snprintf(out, size, "%s/%s-XXXXXX", unit_path("TMPDIR", "/tmp"), prefix);
}

#endif
