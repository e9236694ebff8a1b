/* fuzz_line.c — libFuzzer target for the one gate into the store and the one encoder out of
 * it (store/record/event.c, json.c, contract.c), with the shipped contract.
 *
 * Properties checked (abort on violation):
 *   1. rs_event_parse never crashes; a refusal is -EINVAL or -EMSGSIZE with a one-line reason.
 *   2. Round trip: an accepted line, stored as DeerFlow stores it (content_db, metadata_db,
 *      created_db) and rendered by rs_event_encode, gives a canonical line that
 *      rs_event_parse accepts again (less the store's "seq") with the same fields, and that
 *      renders to the same bytes again.
 *   3. rs_json_canon is idempotent and never longer than its input; rs_time_parse reads
 *      nothing past len.
 *   4. A foreign row (any bytes as content / metadata / created_at) renders to one valid
 *      UTF-8 line that lenient canonical JSON leaves unchanged.
 *   5. rs_event_line (the line built from the parsed event as it is stored) is byte for byte
 *      what rs_event_encode renders from the stored row, with and without an owner.
 * Build and run: scripts/fuzz. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "event.h"
#include "json.h"
#include "utf8_ref.h"
#include "rs_util.h"

#ifndef RS_CONTRACT_SOURCE
#define RS_CONTRACT_SOURCE "contracts/run_event_stream_contract.json"
#endif

static rs_contract *contract;
static int verbose; /* RUNFS_FUZZ_VERBOSE=1: say which inputs are accepted */

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_line: property violated: %s\n  ", #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            abort(); \
        } \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *path = getenv("RUNFS_CONTRACT");
    verbose = getenv("RUNFS_FUZZ_VERBOSE") != NULL;
    rs_err err = {0};
    if (rs_contract_load(&contract, path ? path : RS_CONTRACT_SOURCE, &err)) {
        fprintf(stderr, "fuzz_line: contract: %s\n", err.msg);
        exit(2);
    }
    return 0;
}

static void check_reason(int rc, const rs_err *err, const char *line, size_t len)
{
    CHECK(rc == -EINVAL || rc == -EMSGSIZE, "rc %d for %.*s", rc, (int)(len > 200 ? 200 : len),
          line);
    CHECK(err->code == rc, "err.code %d != rc %d", err->code, rc);
    CHECK(err->msg[0] != '\0', "empty reason");
    for (const char *p = err->msg; *p; p++)
        CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte in reason '%s'", err->msg);
}

/* ev's stored row rendered; canonical: as a row put stored (its columns copied). */
static int render(rs_buf *out, const rs_event *ev, const char *user, int canonical)
{
    rs_row row = {
        .thread_id = ev->thread_id,
        .run_id = ev->run_id,
        .seq = 1,
        .event_type = ev->event_type,
        .category = ev->category,
        .content = ev->content_db.buf,
        .content_len = ev->content_db.len,
        .metadata = ev->metadata_db.buf,
        .metadata_len = ev->metadata_db.len,
        .created_at = ev->created_db,
        .user_id = user,
        .canonical = canonical,
    };
    rs_err err = {0};
    return rs_event_encode(out, &row, &err);
}

static void same_buf(const rs_buf *a, const rs_buf *b, const char *what)
{
    CHECK(a->len == b->len && !memcmp(a->buf, b->buf, a->len), "%s differs: '%.200s' vs '%.200s'",
          what, a->buf, b->buf);
}

static void roundtrip(const rs_event *ev, const rs_event_ctx *ctx)
{
    rs_buf line = RS_BUF_INIT, again = RS_BUF_INIT, prefix = RS_BUF_INIT;
    CHECK(render(&line, ev, NULL, 0) == 0, "encode failed");
    CHECK(line.len >= 2 && line.buf[line.len - 1] == '\n', "line not newline-terminated");
    CHECK(memchr(line.buf, '\n', line.len - 1) == NULL, "raw newline inside the line");
    CHECK(utf8_ref_valid(line.buf, line.len), "line is not valid UTF-8: %s", line.buf);
    /* canonical: its canonical form is itself */
    rs_buf c = RS_BUF_INIT;
    CHECK(rs_json_canon(&c, line.buf, line.len - 1, 0, NULL) == 0, "line is not strict JSON: %s",
          line.buf);
    CHECK(c.len == line.len - 1 && !memcmp(c.buf, line.buf, c.len), "line not canonical: %s",
          line.buf);
    rs_buf_release(&c);

    /* the append path's line is the reader's line */
    rs_buf built = RS_BUF_INIT, owned = RS_BUF_INIT;
    CHECK(rs_event_line(&built, ev, 1, NULL) == 0, "rs_event_line failed");
    same_buf(&built, &line, "rs_event_line vs rs_event_encode");
    CHECK(rs_event_line(&owned, ev, 1, "u-1") == 0 && render(&again, ev, "u-1", 0) == 0,
          "owned lines failed");
    same_buf(&owned, &again, "rs_event_line vs rs_event_encode with an owner");
    CHECK(rs_event_line_len(ev, 1, NULL) == built.len &&
              rs_event_line_len(ev, 1, "u-1") == owned.len,
          "rs_event_line_len %zu/%zu vs rs_event_line %zu/%zu", rs_event_line_len(ev, 1, NULL),
          rs_event_line_len(ev, 1, "u-1"), built.len, owned.len);
    rs_buf_reset(&again);
    /* a row put stored is copied on read: the same bytes as rendering it */
    CHECK(render(&again, ev, NULL, 1) == 0, "copying a stored row failed");
    same_buf(&again, &line, "copied vs rendered");
    rs_buf_reset(&again);
    CHECK(render(&again, ev, "u-1", 1) == 0, "copying a stored row failed");
    same_buf(&owned, &again, "copied vs rendered with an owner");
    rs_buf_reset(&again);
    rs_buf_release(&built);
    rs_buf_release(&owned);

    /* the store's seq out, then back through the gate */
    rs_buf_addstr(&prefix, "{\"thread_id\":");
    rs_buf_add_json_string(&prefix, ev->thread_id, strlen(ev->thread_id));
    rs_buf_addstr(&prefix, ",\"run_id\":");
    rs_buf_add_json_string(&prefix, ev->run_id, strlen(ev->run_id));
    size_t keep = prefix.len;
    rs_buf_addstr(&prefix, ",\"seq\":1");
    CHECK(line.len > prefix.len && !memcmp(line.buf, prefix.buf, prefix.len),
          "unexpected line start: %.200s", line.buf);
    rs_buf in = RS_BUF_INIT;
    rs_buf_add(&in, line.buf, keep);
    rs_buf_add(&in, line.buf + prefix.len, line.len - 1 - prefix.len);

    rs_event *ev2 = NULL;
    rs_err err = {0};
    rs_event_ctx big = *ctx;
    big.max_bytes = 0; /* the envelope makes the line longer than the input was */
    int rc = rs_event_parse(&ev2, in.buf, in.len, &big, &err);
    CHECK(rc == 0, "the encoder's line is refused (%s): %.300s", err.msg, in.buf);
    CHECK(!strcmp(ev->event_type, ev2->event_type), "event_type");
    CHECK(!strcmp(ev->category, ev2->category), "category");
    CHECK(!strcmp(ev->thread_id, ev2->thread_id) && !strcmp(ev->run_id, ev2->run_id), "ids");
    CHECK(!strcmp(ev->created_at, ev2->created_at), "created_at %s vs %s", ev->created_at,
          ev2->created_at);
    CHECK(!strcmp(ev->created_db, ev2->created_db), "created_db");
    same_buf(&ev->content, &ev2->content, "content");
    same_buf(&ev->metadata, &ev2->metadata, "metadata");
    same_buf(&ev->content_db, &ev2->content_db, "content_db");
    same_buf(&ev->metadata_db, &ev2->metadata_db, "metadata_db");
    CHECK(render(&again, ev2, NULL, 0) == 0, "encode failed");
    same_buf(&line, &again, "second rendering");

    /* with an owner: the same line plus user_id */
    rs_buf_reset(&again);
    CHECK(render(&again, ev2, "u-1", 0) == 0, "encode failed");
    CHECK(again.len == line.len + 16 && !memcmp(again.buf, line.buf, line.len - 2) &&
              !memcmp(again.buf + line.len - 2, ",\"user_id\":\"u-1\"}\n", 18),
          "owner rendering: %.300s", again.buf);

    rs_event_free(ev2);
    rs_buf_release(&in);
    rs_buf_release(&prefix);
    rs_buf_release(&again);
    rs_buf_release(&line);
}

static void parse_one(const char *data, size_t size, const rs_event_ctx *ctx)
{
    rs_event *ev = (rs_event *)1;
    rs_err err = {0};
    int rc = rs_event_parse(&ev, data, size, ctx, &err);
    if (rc) {
        CHECK(ev == NULL, "out set on refusal");
        check_reason(rc, &err, data, size);
        return;
    }
    CHECK(ev != NULL, "no event");
    if (verbose)
        fprintf(stderr, "accepted (allow_unknown %d, max %zu): %s\n", ctx->allow_unknown,
                ctx->max_bytes, ev->event_type);
    /* an event type is a file name */
    CHECK(ev->event_type[0] && !strchr(ev->event_type, '/') && strcmp(ev->event_type, ".") &&
              strcmp(ev->event_type, ".."),
          "event_type '%s' is not a file name", ev->event_type);
    for (const char *p = ev->event_type; *p; p++)
        CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte in event_type");
    CHECK(rs_id_valid(ev->thread_id) && rs_id_valid(ev->run_id), "bad ids");
    CHECK(strlen(ev->created_at) == RS_TIME_LEN, "created_at");
    roundtrip(ev, ctx);
    rs_event_free(ev);
}

static void canon_props(const char *data, size_t size, unsigned flags)
{
    rs_buf a = RS_BUF_INIT, b = RS_BUF_INIT;
    rs_err err = {0};
    if (rs_json_canon(&a, data, size, flags, &err) == 0) {
        CHECK(a.len <= size, "canonical longer than input");
        CHECK(utf8_ref_valid(a.buf, a.len), "canonical not UTF-8");
        CHECK(rs_json_canon(&b, a.buf, a.len, flags, &err) == 0, "canonical refused: %s", err.msg);
        same_buf(&a, &b, "canonical twice");
    } else {
        CHECK(err.code == -EINVAL || err.code == -ENOMEM, "canon rc %d", err.code);
    }
    rs_buf_release(&a);
    rs_buf_release(&b);
}

/* The input as a foreign row: content \x01 metadata \x01 created_at. */
static void foreign_row(const char *data, size_t size)
{
    const char *s1 = memchr(data, 1, size);
    const char *s2 = s1 ? memchr(s1 + 1, 1, size - (size_t)(s1 + 1 - data)) : NULL;
    if (!s2)
        return;
    char *ts = strndup(s2 + 1, size - (size_t)(s2 + 1 - data));
    rs_row row = {
        .thread_id = "t1",
        .run_id = "r1",
        .seq = 42,
        .event_type = "ai_message",
        .category = "message",
        .content = data,
        .content_len = (size_t)(s1 - data),
        .metadata = s1 + 1,
        .metadata_len = (size_t)(s2 - s1 - 1),
        .created_at = ts,
    };
    rs_buf out = RS_BUF_INIT, c = RS_BUF_INIT;
    rs_err err = {0};
    CHECK(rs_event_encode(&out, &row, &err) == 0, "foreign encode failed");
    CHECK(out.len >= 2 && out.buf[out.len - 1] == '\n' && !memchr(out.buf, '\n', out.len - 1),
          "foreign line is not one line");
    CHECK(utf8_ref_valid(out.buf, out.len), "foreign line not UTF-8");
    /* a NUL in foreign text (content, or metadata that is no JSON and so shows as the
     * string it holds) renders as \u0000: JSON, though the gate refuses it */
    if (!memchr(data, 0, (size_t)(s2 - data))) {
        CHECK(rs_json_canon(&c, out.buf, out.len - 1, RS_JSON_LENIENT, &err) == 0,
              "foreign line is not JSON (%s): %.300s", err.msg, out.buf);
        CHECK(c.len == out.len - 1 && !memcmp(c.buf, out.buf, c.len), "foreign line not canonical");
    }
    rs_buf_release(&c);
    rs_buf_release(&out);
    free(ts);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t size)
{
    const char *data = (const char *)buf;
    rs_event_ctx ctx = {.contract = contract, .thread_id = "t1", .run_id = "r1", .max_bytes = 4096};
    parse_one(data, size, &ctx);
    ctx.allow_unknown = 1;
    parse_one(data, size, &ctx);
    /* once/<type>: the type comes from the file name; ids from the line */
    rs_event_ctx once = {.contract = contract, .event_type = "run.terminal", .max_bytes = 4096};
    parse_one(data, size, &once);
    /* a small limit: EMSGSIZE */
    ctx.max_bytes = 64;
    parse_one(data, size, &ctx);

    char canon[RS_TIME_LEN + 1], db[27];
    if (rs_time_parse(data, size, canon, db) == 0) {
        CHECK(strlen(canon) == RS_TIME_LEN && strlen(db) == 26, "time forms");
        char again[RS_TIME_LEN + 1];
        CHECK(rs_time_parse(canon, RS_TIME_LEN, again, NULL) == 0 && !strcmp(again, canon),
              "canonical time not stable: %s", canon);
        CHECK(rs_time_parse(db, 26, again, NULL) == 0 && !strcmp(again, canon),
              "db time not stable: %s", db);
    }
    canon_props(data, size, 0);
    canon_props(data, size, RS_JSON_LENIENT);
    foreign_row(data, size);
    return 0;
}
