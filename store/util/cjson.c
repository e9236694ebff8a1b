/* cjson.c — cJSON's parse under the process's one lock. Linked into librunstore only, never
 * into the programs (which call the library's rs_buf_add_cjson): a second copy in a program
 * would be a second lock. */
#include <errno.h>
#include <pthread.h>

#include "jtext.h"
#include "rs_util.h"

cJSON *rs_cjson_parse(const char *text, size_t len)
{
    /* cJSON's parser keeps its last error in a global: parses run one at a time, under
     * lock, which guards nothing else. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    cJSON *v = cJSON_ParseWithLength(text, len);
    pthread_mutex_unlock(&lock);
    return v;
}

int rs_buf_add_cjson(rs_buf *b, const char *text, size_t len)
{
    cJSON *tree = rs_cjson_parse(text, len);
    if (!tree)
        return -EINVAL;
    char *json = cJSON_PrintUnformatted(tree);
    cJSON_Delete(tree);
    if (!json)
        return -ENOMEM;
    int rc = rs_buf_addstr(b, json);
    cJSON_free(json);
    return rc;
}
