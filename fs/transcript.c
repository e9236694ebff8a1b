/* transcript.c — the Markdown transcript of a thread, one record at a time. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transcript.h"

/* Calls waiting for their result; past this many the oldest is shown without one, so a
 * thread of unanswered calls stays linear. */
#define PENDING_MAX 64

typedef struct pending_call {
    char *id;
    char *text; /* "`name` args" */
} pending_call;

struct rfs_transcript {
    char *thread_id;
    rfs_run_status_fn status;
    void *ctx;
    int started;
    char run_id[RS_ID_MAX + 1];
    pending_call calls[PENDING_MAX];
    size_t n_calls;
};

int rfs_transcript_new(rfs_transcript **out, const char *thread_id, rfs_run_status_fn status,
                       void *ctx)
{
    rfs_transcript *t = calloc(1, sizeof *t);
    if (!t || !(t->thread_id = strdup(thread_id))) {
        free(t);
        return -ENOMEM;
    }
    t->status = status;
    t->ctx = ctx;
    *out = t;
    return 0;
}

static void drop_call(rfs_transcript *t, size_t i)
{
    free(t->calls[i].id);
    free(t->calls[i].text);
    memmove(&t->calls[i], &t->calls[i + 1], (t->n_calls - i - 1) * sizeof t->calls[0]);
    t->n_calls--;
}

void rfs_transcript_free(rfs_transcript *t)
{
    if (!t)
        return;
    while (t->n_calls)
        drop_call(t, 0);
    free(t->thread_id);
    free(t);
}

/* Text on one line: newlines become the two characters \n. */
static int add_one_line(rs_buf *out, const char *s)
{
    int rc = 0;
    for (const char *p = s; !rc && *p; p++)
        rc = *p == '\n' ? rs_buf_addstr(out, "\\n") : *p == '\r' ? 0 : rs_buf_addch(out, *p);
    return rc;
}

/* A JSON value as text: a string as itself, parts lists by their text, the rest as JSON. */
static int add_value(rs_buf *out, const cJSON *v, int one_line)
{
    if (!v || cJSON_IsNull(v))
        return 0;
    if (cJSON_IsString(v))
        return one_line ? add_one_line(out, v->valuestring) : rs_buf_addstr(out, v->valuestring);
    if (cJSON_IsArray(v)) {
        int texts = 0, rc = 0;
        const cJSON *part;
        cJSON_ArrayForEach(part, v)
        {
            const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (!cJSON_IsString(text))
                continue;
            if ((texts++ && (rc = rs_buf_addch(out, one_line ? ' ' : '\n'))) ||
                (rc = add_value(out, text, one_line)))
                return rc;
        }
        if (texts)
            return 0;
    }
    char *json = cJSON_PrintUnformatted(v);
    if (!json)
        return -ENOMEM;
    int rc = rs_buf_addstr(out, json);
    cJSON_free(json);
    return rc;
}

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int flush_calls(rfs_transcript *t, rs_buf *out, size_t keep)
{
    int rc = 0;
    while (!rc && t->n_calls > keep) {
        rc = rs_buf_addf(out, "- tool %s -> (no result)\n", t->calls[0].text);
        drop_call(t, 0);
    }
    return rc;
}

static int header(rfs_transcript *t, rs_buf *out)
{
    if (t->started)
        return 0;
    t->started = 1;
    return rs_buf_addf(out, "# Thread %s\n", t->thread_id);
}

static int run_heading(rfs_transcript *t, const char *run_id, rs_buf *out)
{
    int rc = flush_calls(t, out, 0);
    snprintf(t->run_id, sizeof t->run_id, "%s", run_id);
    rs_buf terminal = RS_BUF_INIT;
    if (!rc)
        rc = t->status(t->ctx, run_id, &terminal);
    cJSON *ev = !rc && terminal.len ? cJSON_ParseWithLength(terminal.buf, terminal.len) : NULL;
    const char *status = str_of(cJSON_GetObjectItemCaseSensitive(ev, "content"), "status");
    int bad = status && strcmp(status, "success") != 0;
    if (!rc)
        rc = rs_buf_addf(out, "\n## Run %s (%s)%s\n\n", run_id,
                         status ? status : "no terminal event yet", bad ? " **[error]**" : "");
    cJSON_Delete(ev);
    rs_buf_release(&terminal);
    return rc;
}

static int tool_calls(rfs_transcript *t, const cJSON *calls, rs_buf *out)
{
    const cJSON *call;
    int rc = 0;
    cJSON_ArrayForEach(call, calls)
    {
        rs_buf text = RS_BUF_INIT;
        const char *name = str_of(call, "name");
        rc = rs_buf_addf(&text, "`%s` ", name ? name : "?");
        if (!rc)
            rc = add_value(&text, cJSON_GetObjectItemCaseSensitive(call, "args"), 1);
        const char *id = str_of(call, "id");
        if (!rc && !id) {
            rc = rs_buf_addf(out, "- tool %s\n", text.buf);
        } else if (!rc) {
            rc = flush_calls(t, out, PENDING_MAX - 1);
            pending_call *p = &t->calls[t->n_calls];
            if (!rc && (!(p->id = strdup(id)) || !(p->text = rs_buf_detach(&text, NULL)))) {
                free(p->id);
                rc = -ENOMEM;
            } else if (!rc) {
                t->n_calls++;
            }
        }
        rs_buf_release(&text);
        if (rc)
            break;
    }
    return rc;
}

static int tool_result(rfs_transcript *t, const cJSON *content, rs_buf *out)
{
    const char *id = str_of(content, "tool_call_id");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(content, "content");
    int rc = 0;
    size_t i = 0;
    while (id && i < t->n_calls && strcmp(t->calls[i].id, id) != 0)
        i++;
    if (id && i < t->n_calls) {
        rc = rs_buf_addf(out, "- tool %s -> ", t->calls[i].text);
        drop_call(t, i);
    } else {
        rc = rs_buf_addf(out, "- tool result for %s -> ", id ? id : "?");
    }
    if (rc || (rc = add_value(out, result, 1)))
        return rc;
    return rs_buf_addch(out, '\n');
}

static int message(const char *role, const cJSON *content, rs_buf *out)
{
    const cJSON *text =
        cJSON_IsObject(content) ? cJSON_GetObjectItemCaseSensitive(content, "content") : content;
    rs_buf body = RS_BUF_INIT;
    int rc = add_value(&body, text, 0);
    if (!rc && body.len)
        rc = rs_buf_addf(out, "\n**%s:** %s\n\n", role, body.buf);
    rs_buf_release(&body);
    return rc;
}

static int generic(const char *type, const cJSON *content, const char *mark, rs_buf *out)
{
    int rc;
    if ((rc = rs_buf_addf(out, "- %s`%s`: ", mark, type)) || (rc = add_value(out, content, 1)))
        return rc;
    return rs_buf_addch(out, '\n');
}

static int render(rfs_transcript *t, const rs_record *rec, const cJSON *ev, rs_buf *out)
{
    const char *type = rec->event_type;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(ev, "content");
    const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(ev, "metadata");
    if (strcmp(type, "run.start") == 0)
        return 0; /* the run's heading says it */
    if (strcmp(type, "llm.human.input") == 0)
        return message("user", content, out);
    if (strcmp(type, "llm.ai.response") == 0) {
        const char *caller = str_of(metadata, "caller");
        int rc = message(caller && strcmp(caller, "lead_agent") != 0 ? caller : "assistant",
                         content, out);
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(content, "tool_calls");
        return rc ? rc : cJSON_IsArray(calls) ? tool_calls(t, calls, out) : 0;
    }
    if (strcmp(type, "llm.tool.result") == 0 && cJSON_IsObject(content))
        return tool_result(t, content, out);
    if (strcmp(type, "llm.error") == 0 || strcmp(type, "run.error") == 0)
        return generic(type, content, "**[error]** ", out);
    if (strcmp(type, "run.terminal") == 0 || strcmp(type, "run.end") == 0) {
        const char *status = str_of(content, "status");
        if (!status)
            status = str_of(metadata, "status");
        int bad = status && strcmp(status, "success") != 0;
        return rs_buf_addf(out, "\n_%s: %s_%s\n", type, status ? status : "?",
                           bad ? " **[error]**" : "");
    }
    return generic(type, content, "", out);
}

int rfs_transcript_feed(rfs_transcript *t, const rs_record *rec, rs_buf *out)
{
    int rc = header(t, out);
    if (!rc && strcmp(rec->run_id, t->run_id) != 0)
        rc = run_heading(t, rec->run_id, out);
    if (rc)
        return rc;
    cJSON *ev = cJSON_ParseWithLength(rec->line, rec->line_len);
    if (!ev)
        return generic(rec->event_type, NULL, "", out);
    rc = render(t, rec, ev, out);
    cJSON_Delete(ev);
    return rc;
}

int rfs_transcript_finish(rfs_transcript *t, rs_buf *out)
{
    int rc = header(t, out);
    return rc ? rc : flush_calls(t, out, 0);
}
